package httpapi_test

// Integration tests of the management API, endpoint by endpoint: schemes, channels, releases,
// devices, tokens and the debug-file lookups, on a real server, Postgres and (where objects are
// deleted) both storage kinds. Every refused request is checked to have changed nothing by
// reading the resource back through the API before and after it.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// mc is a management-API client for one test server.
type mc struct {
	t *testing.T
	e *apptest.Env
}

func newMC(t *testing.T, storageKind string) mc {
	return mc{t: t, e: apptest.New(t, apptest.Options{Storage: storageKind})}
}

// at formats a path.
func at(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// idOf returns the "id" of a decoded JSON object.
func idOf(m map[string]any) int64 { return int64(m["id"].(float64)) }

// do sends a request with a JSON body (none when "") and a token (none when "").
func (c mc) do(method, path, token, body string) *apptest.Response {
	c.t.Helper()
	h := http.Header{}
	var r io.Reader
	if body != "" {
		h.Set("Content-Type", "application/json")
		r = strings.NewReader(body)
	}
	if token != "" {
		h.Set("Authorization", "Token "+token)
	}
	return c.e.Do(c.t, method, path, r, h)
}

// form sends an urlencoded body with the admin token.
func (c mc) form(method, path, body string) *apptest.Response {
	c.t.Helper()
	return c.e.Do(c.t, method, path, strings.NewReader(body), http.Header{
		"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Token " + c.e.AdminToken}})
}

// ok checks the status of r and returns the JSON object answered; a refusal (4xx) must carry an
// {"error"} body.
func (c mc) ok(r *apptest.Response, status int, what string) map[string]any {
	c.t.Helper()
	if r.Status != status {
		c.t.Fatalf("%s: status %d, want %d: %.500s", what, r.Status, status, r.Body)
	}
	if status >= 400 {
		r.Error(c.t)
	}
	return r.Map(c.t)
}

// call is do followed by ok.
func (c mc) call(method, path, token, body string, status int) map[string]any {
	c.t.Helper()
	return c.ok(c.do(method, path, token, body), status, method+" "+path)
}

// deleted DELETEs path with the admin token and checks the answer Zealot gives.
func (c mc) deleted(path string) {
	c.t.Helper()
	if r := c.do("DELETE", path, c.e.AdminToken, ""); r.Status != 200 || string(r.Body) != `{"mesage":"OK"}` {
		c.t.Fatalf("DELETE %s: %d %s", path, r.Status, r.Body)
	}
}

// sendAll sends one JSON request per body to path, all at once, and counts the statuses answered.
func (c mc) sendAll(method, path, token string, bodies ...string) map[int]int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	counts := map[int]int{}
	for _, b := range bodies {
		wg.Go(func() {
			r := c.e.Do(c.t, method, path, strings.NewReader(b), http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + token}})
			mu.Lock()
			defer mu.Unlock()
			counts[r.Status]++
		})
	}
	wg.Wait()
	return counts
}

// list GETs a JSON array of objects with the admin token.
func (c mc) list(path string) []map[string]any {
	c.t.Helper()
	r := c.do("GET", path, c.e.AdminToken, "")
	if r.Status != 200 {
		c.t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var out []map[string]any
	r.JSON(c.t, &out)
	return out
}

// readBack GETs path with the admin token and returns its status and body, without the tokens'
// last_used_at (which authenticating the read itself may set).
func (c mc) readBack(path string) string {
	c.t.Helper()
	r := c.do("GET", path, c.e.AdminToken, "")
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		c.t.Fatalf("read back %s: %d %s", path, r.Status, r.Body)
	}
	if items, ok := v.([]any); ok {
		for _, item := range items {
			delete(item.(map[string]any), "last_used_at")
		}
	}
	b, _ := json.Marshal(v)
	return fmt.Sprintf("%d %s", r.Status, b)
}

// hasFields reports the fields of got that differ from want (numbers as float64).
func hasFields(t *testing.T, what string, got map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		if !reflect.DeepEqual(got[k], w) {
			t.Errorf("%s: %s = %#v, want %#v", what, k, got[k], w)
		}
	}
}

// refusal is a request that must be refused with status and an {"error"} body, leaving what
// readBack (a GET path) answers as it was.
type refusal struct {
	name, method, path, token, body string
	status                          int
	readBack                        string
}

func (c mc) refuse(cases []refusal) {
	c.t.Helper()
	for _, tc := range cases {
		c.t.Run(tc.name, func(t *testing.T) {
			c := mc{t: t, e: c.e}
			before := c.readBack(tc.readBack)
			r := c.do(tc.method, tc.path, tc.token, tc.body)
			c.ok(r, tc.status, tc.method+" "+tc.path)
			if tc.status == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Token") {
				t.Errorf("401 without WWW-Authenticate")
			}
			if after := c.readBack(tc.readBack); after != before {
				t.Errorf("a refused request changed %s:\nbefore %s\nafter  %s", tc.readBack, before, after)
			}
		})
	}
}

// dockIPA is an iOS build of com.example.dock, with an icon (so its release has two objects).
func dockIPA(version, build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: "Dock", BundleID: "com.example.dock", Version: version, Build: build,
		Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}})
}

func dockAPK(version string, code int) []byte {
	return androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.example.dock", VersionCode: code, VersionName: version, Label: "Dock"}})
}

// dock is the fixture: app Dock, scheme Beta, iOS channel dock-ios with one release uploaded by
// the upload token.
type dock struct{ app, scheme, channel, release int64 }

func (c mc) dock() dock {
	c.t.Helper()
	admin := c.e.AdminToken
	app := c.call("POST", "/api/apps", admin, `{"name":"Dock"}`, 201)
	scheme := c.call("POST", at("/api/apps/%d/schemes", idOf(app)), admin, `{"name":"Beta"}`, 201)
	ch := c.call("POST", at("/api/schemes/%d/channels", idOf(scheme)), admin,
		`{"name":"iPhone","slug":"dock-ios","device_type":"ios","bundle_id":"com.example.dock"}`, 201)
	rel := c.e.UploadApp(c.t, "dock.ipa", dockIPA("1.0", "1"), apptest.Field("channel_key", "dock-ios"), apptest.Field("changelog", "First"))
	return dock{idOf(app), idOf(scheme), idOf(ch), idOf(rel)}
}

// ---------------------------------------------------------------------------------------------

func TestManagementSchemeEndpoints(t *testing.T) {
	c := newMC(t, apptest.FS)
	f := c.dock()
	admin, upload := c.e.AdminToken, c.e.UploadToken

	s := c.call("POST", at("/api/apps/%d/schemes", f.app), admin, `{"name":" Nightly ","new_build_callout":false,"retained_builds":5}`, 201)
	hasFields(t, "created", s, map[string]any{"name": "Nightly", "new_build_callout": false, "retained_builds": 5.0, "channels": []any{}})
	sid := idOf(s)
	if got := c.call("GET", at("/api/schemes/%d", sid), upload, "", 200); !reflect.DeepEqual(got, s) {
		t.Fatalf("read back %v, created %v", got, s)
	}
	if l := c.list(at("/api/apps/%d/schemes", f.app)); len(l) != 2 || l[0]["name"] != "Beta" || l[1]["name"] != "Nightly" ||
		len(l[0]["channels"].([]any)) != 1 {
		t.Fatalf("schemes of the app: %v", l)
	}
	// Defaults when only the name is given.
	d := c.call("POST", at("/api/apps/%d/schemes", f.app), admin, `{"name":"Store"}`, 201)
	hasFields(t, "defaults", d, map[string]any{"new_build_callout": true, "retained_builds": 0.0})

	// PUT and PATCH change only what they send; a form works as JSON does.
	c.call("PUT", at("/api/schemes/%d", sid), admin, `{"retained_builds":0}`, 200)
	c.call("PATCH", at("/api/schemes/%d", sid), admin, `{"name":"Nightly builds","new_build_callout":true}`, 200)
	hasFields(t, "after PUT and PATCH", c.call("GET", at("/api/schemes/%d", sid), admin, "", 200),
		map[string]any{"name": "Nightly builds", "new_build_callout": true, "retained_builds": 0.0})
	c.ok(c.form("PATCH", at("/api/schemes/%d", sid), "retained_builds=12&new_build_callout=0"), 200, "form patch")
	hasFields(t, "after the form", c.call("GET", at("/api/schemes/%d", sid), admin, "", 200),
		map[string]any{"name": "Nightly builds", "new_build_callout": false, "retained_builds": 12.0})

	one := at("/api/schemes/%d", sid)
	all := at("/api/apps/%d/schemes", f.app)
	c.refuse([]refusal{
		{"list without token", "GET", all, "", "", 401, all},
		{"list with a wrong token", "GET", all, "slw_nope", "", 401, all},
		{"get without token", "GET", one, "", "", 401, one},
		{"create with upload scope", "POST", all, upload, `{"name":"X"}`, 403, all},
		{"put with upload scope", "PUT", one, upload, `{"name":"X"}`, 403, one},
		{"patch with upload scope", "PATCH", one, upload, `{"name":"X"}`, 403, one},
		{"delete with upload scope", "DELETE", one, upload, "", 403, one},
		{"patch with a wrong token", "PATCH", one, "slw_nope", `{"name":"X"}`, 401, one},
		{"list of an unknown app", "GET", "/api/apps/9999/schemes", admin, "", 404, all},
		{"create in an unknown app", "POST", "/api/apps/9999/schemes", admin, `{"name":"X"}`, 404, all},
		{"get unknown", "GET", "/api/schemes/9999", admin, "", 404, all},
		{"put unknown", "PUT", "/api/schemes/9999", admin, `{"name":"X"}`, 404, all},
		{"patch unknown", "PATCH", "/api/schemes/9999", admin, `{"name":"X"}`, 404, all},
		{"delete unknown", "DELETE", "/api/schemes/9999", admin, "", 404, all},
		{"create without name", "POST", all, admin, `{"retained_builds":1}`, 422, all},
		{"create with a blank name", "POST", all, admin, `{"name":"   "}`, 422, all},
		{"create with a 256-character name", "POST", all, admin, `{"name":"` + strings.Repeat("n", 256) + `"}`, 422, all},
		{"create with a taken name", "POST", all, admin, `{"name":"Beta"}`, 409, all},
		{"rename to a blank name", "PATCH", one, admin, `{"name":""}`, 422, one},
		{"rename to a taken name", "PUT", one, admin, `{"name":"Beta"}`, 409, one},
		{"retained_builds -1", "PATCH", one, admin, `{"retained_builds":-1}`, 422, one},
		{"retained_builds abc", "PATCH", one, admin, `{"retained_builds":"abc"}`, 422, one},
		{"retained_builds 1.5", "PATCH", one, admin, `{"retained_builds":1.5}`, 422, one},
		{"new_build_callout maybe", "PATCH", one, admin, `{"new_build_callout":"maybe"}`, 422, one},
		{"a valid field beside a bad one", "PATCH", one, admin, `{"name":"Fine","retained_builds":-1}`, 422, one},
	})

	// Deleting a scheme (here an empty one; with contents in TestManagementDeletesCollectObjects).
	c.deleted(one)
	c.call("GET", one, admin, "", 404)
	if l := c.list(all); len(l) != 2 {
		t.Fatalf("schemes after the delete: %v", l)
	}
}

func TestManagementChannelEndpoints(t *testing.T) {
	c := newMC(t, apptest.FS)
	f := c.dock()
	admin, upload := c.e.AdminToken, c.e.UploadToken
	chans := at("/api/schemes/%d/channels", f.scheme)

	ch := c.call("POST", chans, admin, `{"name":"Droid","slug":"dock-droid","device_type":"android","bundle_id":"com.example.*",
		"git_url":"https://github.com/example/dock","download_filename_type":"version_datetime","password":"s3cret"}`, 201)
	hasFields(t, "created", ch, map[string]any{"name": "Droid", "slug": "dock-droid", "device_type": "android", "bundle_id": "com.example.*",
		"git_url": "https://github.com/example/dock", "download_filename_type": "version_datetime", "has_password": true})
	cid := idOf(ch)
	one := at("/api/channels/%d", cid)
	if got := c.call("GET", one, upload, "", 200); !reflect.DeepEqual(got, ch) {
		t.Fatalf("read back %v, created %v", got, ch)
	}
	if l := c.list(chans); len(l) != 2 || idOf(l[0]) != f.channel || idOf(l[1]) != cid {
		t.Fatalf("channels of the scheme: %v", l)
	}
	// Defaults: a random 32-hex key, bundle id *, original file names, no password.
	d := c.call("POST", chans, admin, `{"name":"Mac","device_type":"macos"}`, 201)
	hasFields(t, "defaults", d, map[string]any{"bundle_id": "*", "download_filename_type": "original", "has_password": false, "git_url": nil})
	if s, _ := d["slug"].(string); len(s) != 32 {
		t.Errorf("generated slug %q", s)
	}

	// PUT and PATCH change only what they send.
	want := maps.Clone(ch)
	want["name"] = "Droid QA"
	if got := c.call("PUT", one, admin, `{"name":"Droid QA"}`, 200); !reflect.DeepEqual(got, want) {
		t.Fatalf("PUT name: %v, want %v", got, want)
	}
	want["git_url"], want["bundle_id"] = nil, "*"
	if got := c.call("PATCH", one, admin, `{"git_url":"","bundle_id":""}`, 200); !reflect.DeepEqual(got, want) {
		t.Fatalf("PATCH clearing git_url and bundle_id: %v, want %v", got, want)
	}
	want["git_url"] = "git@github.com:example/dock.git"
	c.ok(c.form("PATCH", one, "git_url=git%40github.com%3Aexample%2Fdock.git"), 200, "form patch")
	if got := c.call("GET", one, admin, "", 200); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the form: %v, want %v", got, want)
	}

	// device_type may change on an empty channel, not on one holding releases (but setting the
	// same type there is fine).
	hasFields(t, "empty channel", c.call("PATCH", one, admin, `{"device_type":"harmonyos"}`, 200), map[string]any{"device_type": "harmonyos"})
	hasFields(t, "same type", c.call("PATCH", at("/api/channels/%d", f.channel), admin, `{"device_type":"ios"}`, 200), map[string]any{"device_type": "ios"})

	full := at("/api/channels/%d", f.channel)
	bad := func(field, value string) string { return `{"` + field + `":` + value + `}` }
	c.refuse([]refusal{
		{"list without token", "GET", chans, "", "", 401, chans},
		{"get with a wrong token", "GET", one, "slw_nope", "", 401, one},
		{"create with upload scope", "POST", chans, upload, `{"name":"X","device_type":"ios"}`, 403, chans},
		{"put with upload scope", "PUT", one, upload, `{"name":"X"}`, 403, one},
		{"patch with upload scope", "PATCH", one, upload, `{"password":""}`, 403, one},
		{"delete with upload scope", "DELETE", one, upload, "", 403, one},
		{"delete without token", "DELETE", one, "", "", 401, one},
		{"list of an unknown scheme", "GET", "/api/schemes/9999/channels", admin, "", 404, chans},
		{"create in an unknown scheme", "POST", "/api/schemes/9999/channels", admin, `{"name":"X","device_type":"ios"}`, 404, chans},
		{"get unknown", "GET", "/api/channels/9999", admin, "", 404, chans},
		{"put unknown", "PUT", "/api/channels/9999", admin, `{"name":"X"}`, 404, chans},
		{"delete unknown", "DELETE", "/api/channels/9999", admin, "", 404, chans},
		{"create without name", "POST", chans, admin, `{"device_type":"ios"}`, 422, chans},
		{"create with a blank name", "POST", chans, admin, `{"name":" ","device_type":"ios"}`, 422, chans},
		{"create without device_type", "POST", chans, admin, `{"name":"X"}`, 422, chans},
		{"create with device_type symbian", "POST", chans, admin, `{"name":"X","device_type":"symbian"}`, 422, chans},
		{"create with a slug with spaces", "POST", chans, admin, `{"name":"X","device_type":"ios","slug":"my key"}`, 422, chans},
		{"create with a 65-character slug", "POST", chans, admin, `{"name":"X","device_type":"ios","slug":"` + strings.Repeat("k", 65) + `"}`, 422, chans},
		{"create with a taken slug", "POST", chans, admin, `{"name":"X","device_type":"ios","slug":"dock-ios"}`, 409, chans},
		{"blank name", "PATCH", one, admin, bad("name", `"  "`), 422, one},
		{"slug with spaces", "PATCH", one, admin, bad("slug", `"a b"`), 422, one},
		{"65-character slug", "PATCH", one, admin, bad("slug", `"`+strings.Repeat("k", 65)+`"`), 422, one},
		{"slug of another channel", "PUT", one, admin, bad("slug", `"dock-ios"`), 409, one},
		{"device_type symbian", "PATCH", one, admin, bad("device_type", `"symbian"`), 422, one},
		{"device_type not a string", "PATCH", one, admin, bad("device_type", `7`), 422, one},
		{"device_type change with releases", "PATCH", full, admin, bad("device_type", `"android"`), 422, full},
		{"bundle_id with a space", "PATCH", one, admin, bad("bundle_id", `"com example"`), 422, one},
		{"git_url javascript:", "PATCH", one, admin, bad("git_url", `"javascript:alert(1)"`), 422, one},
		{"download_filename_type x", "PATCH", one, admin, bad("download_filename_type", `"x"`), 422, one},
		{"password of 73 bytes", "PATCH", one, admin, bad("password", `"`+strings.Repeat("p", 73)+`"`), 422, one},
		{"password of 37 characters, 74 bytes", "PATCH", one, admin, bad("password", `"`+strings.Repeat("é", 37)+`"`), 422, one},
		{"a valid field beside a bad one", "PATCH", one, admin, `{"name":"Fine","git_url":"javascript:alert(1)"}`, 422, one},
	})

	c.deleted(one)
	c.call("GET", one, admin, "", 404)
	if l := c.list(chans); len(l) != 2 {
		t.Fatalf("channels after the delete: %v", l)
	}
}

func TestManagementReleaseEndpoints(t *testing.T) {
	c := newMC(t, apptest.S3)
	f := c.dock()
	admin, upload := c.e.AdminToken, c.e.UploadToken
	one := at("/api/releases/%d", f.release)
	rel := c.call("GET", one, upload, "", 200)
	hasFields(t, "uploaded", rel, map[string]any{"release_version": "1.0", "build_version": "1", "text_changelog": "- First", "bundle_id": "com.example.dock"})
	if ch := rel["channel"].(map[string]any); ch["slug"] != "dock-ios" || idOf(rel["app"].(map[string]any)) != f.app {
		t.Fatalf("release's channel and app: %v", rel)
	}

	other := c.call("POST", "/api/tokens", admin, `{"name":"other-ci","scope":"upload"}`, 201)["token"].(string)
	versions := "/api/apps/versions?channel_key=dock-ios"
	c.ok(c.e.Get(t, versions), 200, "versions before the edits") // the read cache now holds the channel

	c.refuse([]refusal{
		{"get without token", "GET", one, "", "", 401, one},
		{"edit with a wrong token", "PATCH", one, "slw_nope", `{"branch":"x"}`, 401, one},
		{"edit by another upload token", "PATCH", one, other, `{"changelog":"hijacked"}`, 403, one},
		{"put by another upload token", "PUT", one, other, `{"release_version":"9"}`, 403, one},
		{"delete with upload scope", "DELETE", one, upload, "", 403, one},
		{"get unknown", "GET", "/api/releases/9999", admin, "", 404, one},
		{"edit unknown", "PATCH", "/api/releases/9999", admin, `{"branch":"x"}`, 404, one},
		{"delete unknown", "DELETE", "/api/releases/9999", admin, "", 404, one},
		{"ci_url ftp", "PATCH", one, admin, `{"ci_url":"ftp://ci.example.com/1"}`, 422, one},
		{"ci_url javascript", "PATCH", one, upload, `{"ci_url":"javascript:alert(1)"}`, 422, one},
		{"blank release_version", "PATCH", one, admin, `{"release_version":"  "}`, 422, one},
		{"empty build_version", "PUT", one, admin, `{"build_version":""}`, 422, one},
		{"custom_fields an object", "PATCH", one, admin, `{"custom_fields":{"QA":"passed"}}`, 422, one},
		{"custom_fields an object as text", "PATCH", one, admin, `{"custom_fields":"{\"QA\":\"passed\"}"}`, 422, one},
		{"custom_fields a number", "PATCH", one, admin, `{"custom_fields":5}`, 422, one},
		{"custom_fields entry without name", "PATCH", one, admin, `{"custom_fields":[{"value":"x"}]}`, 422, one},
		{"changelog with a number as message", "PATCH", one, admin, `{"changelog":[{"message":1}]}`, 422, one},
		{"changelog text with a number as message", "PATCH", one, admin, `{"changelog":"[{\"message\":\"ok\"},{\"message\":2}]"}`, 422, one},
		{"release_type with spaces", "PATCH", one, admin, `{"release_type":"two words"}`, 422, one},
		{"256-character branch", "PATCH", one, admin, `{"branch":"` + strings.Repeat("b", 256) + `"}`, 422, one},
		{"a valid field beside a bad one", "PATCH", one, admin, `{"branch":"main","ci_url":"ftp://x"}`, 422, one},
	})

	// The uploader edits its release; only what it sends changes.
	r := c.call("PATCH", one, upload, `{"changelog":[{"message":"Fixed the crash","author":"Ada"}],"branch":"origin/release/1.0",
		"custom_fields":[{"name":"QA","value":"passed","icon":"fa fa-check"}],"ci_url":"https://ci.example.com/9"}`, 200)
	hasFields(t, "edited by its uploader", r, map[string]any{"text_changelog": "- Fixed the crash", "branch": "release/1.0",
		"ci_url": "https://ci.example.com/9", "release_version": "1.0", "build_version": "1",
		"custom_fields": []any{map[string]any{"name": "QA", "value": "passed", "icon": "fa fa-check"}}})
	// An admin edits any release.
	r = c.call("PUT", one, admin, `{"release_version":"1.0.1","build_version":"7","release_type":"Beta","changelog":"- Second fix\n- Third"}`, 200)
	hasFields(t, "edited by an admin", r, map[string]any{"release_version": "1.0.1", "build_version": "7", "branch": "release/1.0",
		"text_changelog": "- Second fix\n- Third"})
	got := c.call("GET", one, other, "", 200)
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("read back %v\nanswered %v", got, r)
	}
	// The read API (cached above) shows the edit at once.
	if rels := c.ok(c.e.Get(t, versions), 200, "versions")["releases"].([]any); len(rels) != 1 {
		t.Fatalf("versions after the edits: %v", rels)
	} else {
		hasFields(t, "versions after the edits", rels[0].(map[string]any), map[string]any{"release_version": "1.0.1",
			"changelog": []any{map[string]any{"message": "Second fix"}, map[string]any{"message": "Third"}}})
	}
	// Sent as a form, changelog and custom_fields are text.
	c.ok(c.form("PATCH", one, "custom_fields="+url.QueryEscape(`[{"name":"Env","value":"staging","icon":""}]`)+"&changelog=Form+note"), 200, "form edit")
	hasFields(t, "after the form", c.call("GET", one, admin, "", 200), map[string]any{"text_changelog": "- Form note",
		"custom_fields": []any{map[string]any{"name": "Env", "value": "staging", "icon": ""}}})
}

// A channel password, set at creation, changed and cleared, governs downloads at once.
func TestManagementChannelPasswordLifecycle(t *testing.T) {
	c := newMC(t, apptest.FS)
	f := c.dock()
	admin := c.e.AdminToken
	ch := c.call("POST", at("/api/schemes/%d/channels", f.scheme), admin,
		`{"name":"Private","slug":"dock-private","device_type":"android","password":"open sesame"}`, 201)
	if ch["has_password"] != true {
		t.Fatalf("created: %v", ch)
	}
	one := at("/api/channels/%d", idOf(ch))
	rel := c.e.UploadApp(t, "p.apk", dockAPK("1.0", 1), apptest.Field("channel_key", "dock-private"))
	download := func(password string) int {
		t.Helper()
		p := at("/download/releases/%d", idOf(rel))
		if password != "" {
			p += "?password=" + url.QueryEscape(password)
		}
		return c.e.Get(t, p).Status
	}
	for _, step := range []struct {
		name, patch string
		hasPassword bool
		downloads   map[string]int // password given → status
	}{
		{"set at creation", "", true, map[string]int{"": 401, "open sesame": 302}},
		{"changed", `{"password":"clöse sesame"}`, true, map[string]int{"": 401, "open sesame": 403, "clöse sesame": 302}},
		{"cleared", `{"password":""}`, false, map[string]int{"": 302, "anything": 302}},
		{"set again", `{"password":"again"}`, true, map[string]int{"": 401, "again": 302}},
		{"cleared with null", `{"password":null}`, false, map[string]int{"": 302}},
	} {
		if step.patch != "" {
			c.call("PATCH", one, admin, step.patch, 200)
		}
		if got := c.call("GET", one, admin, "", 200)["has_password"]; got != step.hasPassword {
			t.Fatalf("%s: has_password %v", step.name, got)
		}
		for password, want := range step.downloads {
			if got := download(password); got != want {
				t.Fatalf("%s: download with password %q: %d, want %d", step.name, password, got, want)
			}
		}
	}
	// Changing other fields leaves a set password in place.
	c.call("PATCH", one, admin, `{"password":"kept"}`, 200)
	c.call("PATCH", one, admin, `{"name":"Private QA"}`, 200)
	if got := download("kept"); got != 302 || download("") != 401 {
		t.Fatalf("password after renaming: %d", got)
	}
}

// The channel key chosen at creation works for uploads and reads; changing it moves the
// channel at once (even with the old key cached), and the old key may then name a new channel.
func TestManagementChannelKeyLifecycle(t *testing.T) {
	c := newMC(t, apptest.FS)
	f := c.dock()
	admin := c.e.AdminToken
	ch := c.call("POST", at("/api/schemes/%d/channels", f.scheme), admin, `{"name":"QA","slug":"Dock_QA-1","device_type":"ios"}`, 201)
	for i, build := range []string{"10", "11"} {
		r := c.e.UploadApp(t, "q.ipa", dockIPA("2.0", build), apptest.Field("channel_key", "Dock_QA-1"))
		if idOf(r["channel"].(map[string]any)) != idOf(ch) || r["version"] != float64(i+1) {
			t.Fatalf("upload %d landed in %v", i+1, r["channel"])
		}
	}
	versions := func(key string) (int, []any) {
		r := c.e.Get(t, "/api/apps/versions?channel_key="+key)
		if r.Status != 200 {
			return r.Status, nil
		}
		return 200, r.Map(t)["releases"].([]any)
	}
	if st, rels := versions("Dock_QA-1"); st != 200 || len(rels) != 2 {
		t.Fatalf("versions under the chosen key: %d %v", st, rels)
	}
	c.ok(c.e.Get(t, "/api/apps/latest?channel_key=Dock_QA-1&release_version=1.0&build_version=1"), 200, "latest") // cached too

	c.ok(c.do("PATCH", at("/api/channels/%d", idOf(ch)), admin, `{"slug":"dock-qa-2"}`), 200, "new key")
	if st, rels := versions("dock-qa-2"); st != 200 || len(rels) != 2 {
		t.Fatalf("versions under the new key: %d %v", st, rels)
	}
	if st, _ := versions("Dock_QA-1"); st != 404 {
		t.Fatalf("versions under the old key: %d", st)
	}
	if r := c.e.Get(t, "/api/apps/latest?channel_key=Dock_QA-1&release_version=1.0&build_version=1"); r.Status != 404 {
		t.Fatalf("latest under the old key: %d", r.Status)
	}
	if r := c.e.Upload(t, "/api/apps/upload", c.e.UploadToken, apptest.Field("channel_key", "Dock_QA-1"), apptest.File("q.ipa", dockIPA("2.0", "12"))); r.Status != 404 {
		t.Fatalf("upload to the old key: %d %s", r.Status, r.Body)
	}
	r := c.e.UploadApp(t, "q.ipa", dockIPA("2.0", "12"), apptest.Field("channel_key", "dock-qa-2"))
	if r["version"] != float64(3) {
		t.Fatalf("upload to the new key: %v", r["version"])
	}
	// A taken key is refused (and nothing changes: see TestManagementChannelEndpoints).
	c.call("PATCH", at("/api/channels/%d", idOf(ch)), admin, `{"slug":"dock-ios"}`, 409)
	c.call("POST", at("/api/schemes/%d/channels", f.scheme), admin, `{"name":"Y","slug":"dock-qa-2","device_type":"ios"}`, 409)
	// The freed key names a new, empty channel, not the moved one.
	c.call("POST", at("/api/schemes/%d/channels", f.scheme), admin, `{"name":"Reused","slug":"Dock_QA-1","device_type":"ios"}`, 201)
	if st, rels := versions("Dock_QA-1"); st != 200 || len(rels) != 0 {
		t.Fatalf("versions of the channel reusing the old key: %d %v", st, rels)
	}
}

// Deleting a release, a channel and a scheme removes their rows and, once the collector has run,
// their objects (packages, icons, debug files), and nothing else.
func TestManagementDeletesCollectObjects(t *testing.T) {
	for _, kind := range []string{apptest.FS, apptest.S3} {
		t.Run(kind, func(t *testing.T) {
			c := newMC(t, kind)
			f := c.dock()
			admin := c.e.AdminToken
			c.e.UploadApp(t, "dock.ipa", dockIPA("1.1", "2"), apptest.Field("channel_key", "dock-ios"))
			zip := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Dock.app.dSYM", Identifier: "com.example.dock", ReleaseVersion: "1.1",
				BuildVersion: "2", Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"}}})
			c.ok(c.e.Upload(t, "/api/debug_files/upload", c.e.UploadToken, apptest.Field("channel_key", "dock-ios"), apptest.File("d.zip", zip)), 201, "dSYM")
			c.call("POST", at("/api/schemes/%d/channels", f.scheme), admin, `{"name":"Droid","slug":"dock-droid","device_type":"android"}`, 201)
			c.e.UploadApp(t, "d.apk", dockAPK("1.0", 1), apptest.Field("channel_key", "dock-droid"))
			other := c.call("POST", at("/api/apps/%d/schemes", f.app), admin, `{"name":"Store"}`, 201)
			c.call("POST", at("/api/schemes/%d/channels", idOf(other)), admin, `{"name":"Store","slug":"dock-store","device_type":"ios"}`, 201)
			c.e.UploadApp(t, "s.ipa", dockIPA("1.0", "1"), apptest.Field("channel_key", "dock-store"))

			steps := []struct {
				name, path, owned string // owned: the objects' condition, on o (release_id, channel_id) and c (the channel)
				id                int64
				gone              string // a GET answering 200 before (so the read cache holds it) and 404 after
			}{
				{"release", at("/api/releases/%d", f.release), "o.release_id = $1", f.release, at("/api/releases/%d", f.release)},
				{"channel", at("/api/channels/%d", f.channel), "c.id = $1", f.channel, "/api/apps/versions?channel_key=dock-ios"},
				{"scheme", at("/api/schemes/%d", f.scheme), "c.scheme_id = $1", f.scheme, "/api/apps/versions?channel_key=dock-droid"},
			}
			for _, st := range steps {
				keys := c.objects(st.owned, st.id)
				rest := c.objects("NOT coalesce("+st.owned+", false)", st.id)
				if len(keys) == 0 || len(rest) == 0 {
					t.Fatalf("%s: owns %v, others %v", st.name, keys, rest)
				}
				c.stored(keys, true)
				c.call("GET", st.gone, admin, "", 200)
				c.deleted(st.path)
				c.call("GET", st.gone, admin, "", 404)
				c.call("DELETE", st.path, admin, "", 404)
				if left := c.objects(st.owned, st.id); len(left) != 0 {
					t.Fatalf("%s: rows left owning %v", st.name, left)
				}
				if _, err := c.e.Service.Collector.CollectGarbage(context.Background(), 0); err != nil {
					t.Fatal(err)
				}
				c.stored(keys, false)
				c.stored(rest, true)
			}
			if l := c.list(at("/api/apps/%d/schemes", f.app)); len(l) != 1 || l[0]["name"] != "Store" {
				t.Fatalf("schemes left: %v", l)
			}
		})
	}
}

// objects returns the object keys of the releases and debug files matching cond.
func (c mc) objects(cond string, id int64) []string {
	c.t.Helper()
	rows, err := c.e.DB.Pool.Query(context.Background(), `SELECT o.key FROM (
		SELECT id, channel_id, object_key FROM releases
		UNION ALL SELECT id, channel_id, icon_key FROM releases WHERE icon_key IS NOT NULL
		UNION ALL SELECT NULL, channel_id, object_key FROM debug_files) AS o(release_id, channel_id, key)
		JOIN channels c ON c.id = o.channel_id
		WHERE coalesce(`+cond+`, false) ORDER BY 1`, id)
	if err != nil {
		c.t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		c.t.Fatal(err)
	}
	return keys
}

// stored checks that each key is (or is not) in storage, by Stat and by a ranged read.
func (c mc) stored(keys []string, want bool) {
	c.t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		_, err := c.e.Storage.Stat(ctx, k)
		rc, rerr := c.e.Storage.GetRange(ctx, k, 0, 1)
		if rerr == nil {
			rc.Close()
		}
		switch {
		case want && (err != nil || rerr != nil):
			c.t.Errorf("object %s should be stored: %v / %v", k, err, rerr)
		case !want && (!errors.Is(err, blob.ErrNotFound) || !errors.Is(rerr, blob.ErrNotFound)):
			c.t.Errorf("object %s should be gone: Stat %v, GetRange %v", k, err, rerr)
		}
	}
}

func TestManagementDeviceSync(t *testing.T) {
	c := newMC(t, apptest.FS)
	upload := c.e.UploadToken
	legacy := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct{ name, sent, again, stored string }{
		{"modern, lower case in", "00008030-001a2b3c4d5e6f70", "00008030-001A2B3C4D5E6F70", "00008030-001A2B3C4D5E6F70"},
		{"40 hex, upper case in", strings.ToUpper(legacy), legacy, legacy},
		{"Mac UUID, lower case in", "a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5d6", "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6", "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := mc{t: t, e: c.e}
			d := c.call("PUT", "/api/devices/"+tc.sent, upload, `{"name":"QA device","model":"iPhone 15","platform":"IOS","device_id":"ABC123","status":"ENABLED"}`, 201)
			hasFields(t, "created", d, map[string]any{"udid": tc.stored, "name": "QA device", "model": "iPhone 15", "platform": "IOS",
				"device_id": "ABC123", "status": "ENABLED", "source": "api"})
			u := c.call("PATCH", "/api/devices/"+tc.again, upload, `{"name":"QA device (renamed)"}`, 200)
			hasFields(t, "updated", u, map[string]any{"id": d["id"], "udid": tc.stored, "name": "QA device (renamed)", "model": "iPhone 15", "status": "ENABLED"})
			var n int
			if err := c.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM devices WHERE upper(udid) = upper($1)`, tc.stored).Scan(&n); err != nil || n != 1 {
				t.Fatalf("rows for %s: %d (%v)", tc.stored, n, err)
			}
		})
	}
	if l := c.list("/api/devices?per_page=100"); len(l) != 3 || l[0]["udid"] != "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6" {
		t.Fatalf("devices, newest first: %v", l)
	}

	all := "/api/devices?per_page=100"
	dev := "/api/devices/00008030-001A2B3C4D5E6F70"
	c.refuse([]refusal{
		{"list without token", "GET", "/api/devices", "", "", 401, all},
		{"sync without token", "PUT", dev, "", `{"name":"x"}`, 401, all},
		{"sync with a wrong token", "PATCH", dev, "slw_nope", `{"name":"x"}`, 401, all},
		{"short UDID", "PUT", "/api/devices/00008030-001A2B3C", upload, `{"name":"x"}`, 422, all},
		{"non-hex UDID", "PUT", "/api/devices/" + strings.Repeat("g", 40), upload, `{"name":"x"}`, 422, all},
		{"41 hex digits", "PUT", "/api/devices/" + legacy + "8", upload, `{"name":"x"}`, 422, all},
		{"modern UDID without its dash", "PUT", "/api/devices/00008030001A2B3C4D5E6F70", upload, `{"name":"x"}`, 422, all},
		{"Mac UUID with non-hex", "PUT", "/api/devices/Z1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6", upload, `{"name":"x"}`, 422, all},
		{"device without name", "PUT", dev, upload, `{"model":"iPhone 16"}`, 422, all},
		{"new device without name", "PUT", "/api/devices/00008110-000000000000AAAA", upload, `{"model":"iPhone 16"}`, 422, all},
		{"blank name", "PATCH", dev, upload, `{"name":"   ","model":"iPhone 16"}`, 422, all},
		{"name not a string", "PUT", dev, upload, `{"name":12}`, 422, all},
		{"platform not printable ASCII", "PUT", dev, upload, `{"name":"x","platform":"iOS\u00e9"}`, 422, all},
		{"page zero", "GET", "/api/devices?page=0", upload, "", 422, all},
	})

	// Ten concurrent syncs of a new UDID make one device: one of them creates it.
	const udid = "00008110-00AA11BB22CC33DD"
	var bodies []string
	for i := range 10 {
		bodies = append(bodies, at(`{"name":"Race %d"}`, i))
	}
	if counts := c.sendAll("PUT", "/api/devices/"+strings.ToLower(udid), upload, bodies...); counts[201] != 1 || counts[200] != 9 {
		t.Fatalf("concurrent syncs answered %v, want one 201 and nine 200", counts)
	}
	var n int
	if err := c.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM devices WHERE udid = $1`, udid).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows for the raced UDID: %d (%v)", n, err)
	}
	if l := c.list(all); len(l) != 4 {
		t.Fatalf("devices after the race: %d", len(l))
	}
}

func TestManagementTokenLifecycle(t *testing.T) {
	c := newMC(t, apptest.FS)
	admin, upload := c.e.AdminToken, c.e.UploadToken

	created := map[string]map[string]any{}
	for _, tc := range []struct{ name, body, scope string }{
		{"qa-bot", `{"name":"qa-bot"}`, "upload"},
		{"ops", `{"name":"ops","scope":"admin"}`, "admin"},
	} {
		tok := c.call("POST", "/api/tokens", admin, tc.body, 201)
		secret, _ := tok["token"].(string)
		if !strings.HasPrefix(secret, "slw_") || len(secret) < 20 || tok["scope"] != tc.scope || tok["name"] != tc.name || tok["revoked_at"] != nil {
			t.Fatalf("created %s: %v", tc.name, tok)
		}
		me := c.call("GET", "/api/users/me", secret, "", 200)
		if !reflect.DeepEqual(me, map[string]any{"id": tok["id"], "name": tc.name, "username": tc.name, "scope": tc.scope}) {
			t.Fatalf("me as %s: %v", tc.name, me)
		}
		created[tc.name] = tok
	}
	qa, ops := created["qa-bot"]["token"].(string), created["ops"]["token"].(string)

	// The new tokens work with their scope: the upload token uploads but manages no tokens, the
	// admin one lists them.
	c.ok(c.e.Upload(t, "/api/apps/upload", qa, apptest.File("d.apk", dockAPK("1.0", 1))), 201, "upload with the new token")
	r := c.do("GET", "/api/tokens", ops, "")
	if r.Status != 200 || bytes.Contains(r.Body, []byte(`"token"`)) || bytes.Contains(r.Body, []byte("slw_")) {
		t.Fatalf("list: %d, shows secrets: %s", r.Status, r.Body)
	}
	var names []string
	for _, tok := range c.list("/api/tokens") {
		names = append(names, tok["name"].(string))
	}
	if strings.Join(names, ",") != "ops,qa-bot,ci,admin" {
		t.Fatalf("tokens, newest first: %v", names)
	}

	tokens := "/api/tokens"
	c.refuse([]refusal{
		{"list with upload scope", "GET", tokens, upload, "", 403, tokens},
		{"list with the new upload token", "GET", tokens, qa, "", 403, tokens},
		{"create with the new upload token", "POST", tokens, qa, `{"name":"escalate","scope":"admin"}`, 403, tokens},
		{"revoke with upload scope", "DELETE", at("/api/tokens/%d", idOf(created["ops"])), upload, "", 403, tokens},
		{"list without token", "GET", tokens, "", "", 401, tokens},
		{"create with a wrong token", "POST", tokens, "slw_nope", `{"name":"x"}`, 401, tokens},
		{"me without token", "GET", "/api/users/me", "", "", 401, tokens},
		{"create without name", "POST", tokens, admin, `{"scope":"upload"}`, 422, tokens},
		{"create with a blank name", "POST", tokens, admin, `{"name":"  "}`, 422, tokens},
		{"create with scope root", "POST", tokens, admin, `{"name":"x","scope":"root"}`, 422, tokens},
		{"create with a taken name", "POST", tokens, admin, `{"name":"qa-bot"}`, 409, tokens},
		{"revoke unknown", "DELETE", "/api/tokens/9999", admin, "", 404, tokens},
	})

	// Revoking takes effect at once; revoking again is a 404; the name is free again.
	c.call("DELETE", at("/api/tokens/%d", idOf(created["qa-bot"])), ops, "", 200)
	c.ok(c.do("GET", "/api/users/me", qa, ""), 401, "me with a revoked token")
	if r := c.e.Upload(t, "/api/apps/upload", qa, apptest.File("d.apk", dockAPK("1.0", 2))); r.Status != 401 {
		t.Fatalf("upload with a revoked token: %d", r.Status)
	}
	c.call("DELETE", at("/api/tokens/%d", idOf(created["qa-bot"])), admin, "", 404)
	for _, tok := range c.list("/api/tokens") {
		if (tok["name"] == "qa-bot") != (tok["revoked_at"] != nil) {
			t.Fatalf("revoked_at after revoking qa-bot: %v", tok)
		}
	}
	again := c.call("POST", "/api/tokens", admin, `{"name":"qa-bot"}`, 201)
	if again["token"] == qa || idOf(again) == idOf(created["qa-bot"]) {
		t.Fatalf("the reused name got the old token: %v", again)
	}
	// A token may revoke itself.
	c.call("DELETE", at("/api/tokens/%d", idOf(created["ops"])), ops, "", 200)
	c.ok(c.do("GET", "/api/tokens", ops, ""), 401, "revoked admin token")
}

func TestManagementDebugFileExists(t *testing.T) {
	c := newMC(t, apptest.FS)
	c.dock()
	const arm, intel = "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9", "F0E1D2C3-B4A5-9687-7869-5A4B3C2D1E0F"
	zip := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Dock.app.dSYM", Identifier: "com.example.dock", ReleaseVersion: "1.0", BuildVersion: "1",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: arm}, {Name: "x86_64", UUID: intel}}})
	df := c.ok(c.e.Upload(t, "/api/debug_files/upload", c.e.UploadToken, apptest.Field("channel_key", "dock-ios"), apptest.File("Dock.dSYM.zip", zip)), 201, "upload dSYM")
	md5sum, shasum := md5.Sum(zip), sha256.Sum256(zip)
	md5hex, shahex := hex.EncodeToString(md5sum[:]), hex.EncodeToString(shasum[:])
	other := md5.Sum([]byte("another archive"))

	version, uuid, binary := "/api/debug_files/exists/version?channel_key=", "/api/debug_files/exists/uuid?uuid=", "/api/debug_files/exists/binary?checksum="
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"by version", version + "dock-ios&release_version=1.0&build_version=1", 200},
		{"by version, another build", version + "dock-ios&release_version=1.0&build_version=2", 404},
		{"by version, another release", version + "dock-ios&release_version=2.0&build_version=1", 404},
		{"by version of an unknown channel", version + "nope&release_version=1.0&build_version=1", 404},
		{"by version without build_version", version + "dock-ios&release_version=1.0", 422},
		{"by version without channel_key", "/api/debug_files/exists/version?release_version=1.0&build_version=1", 422},
		{"by UUID, upper case", uuid + arm, 200},
		{"by UUID, lower case", uuid + strings.ToLower(arm), 200},
		{"by the second slice's UUID, mixed case", uuid + "f0e1d2c3-B4A5-9687-7869-5a4b3c2d1e0f", 200},
		{"by an unknown UUID", uuid + "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F0", 404},
		{"by a UUID without dashes", uuid + strings.ReplaceAll(arm, "-", ""), 422},
		{"by a malformed UUID", uuid + "nope", 422},
		{"without uuid", "/api/debug_files/exists/uuid", 422},
		{"by MD5", binary + md5hex, 200},
		{"by MD5, upper case", binary + strings.ToUpper(md5hex), 200},
		{"by SHA-256", binary + shahex, 200},
		{"by an unknown MD5", binary + hex.EncodeToString(other[:]), 404},
		{"by an unknown SHA-256", binary + strings.Repeat("0", 64), 404},
		{"by a 31-digit checksum", binary + md5hex[:31], 422},
		{"by a non-hex checksum", binary + strings.Repeat("x", 32), 422},
		{"without checksum", "/api/debug_files/exists/binary", 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mc{t: t, e: c.e}.ok(c.e.Get(t, tc.path), tc.status, tc.path)
			if tc.status == 200 {
				hasFields(t, "found", got, map[string]any{"id": df["id"], "release_version": "1.0", "build_version": "1"})
			}
		})
	}
}

// Concurrent edits of different fields of one row all take effect: an edit whose row changed
// between its read and its write reads it again and re-applies its own fields. (A channel
// password change, slowed by bcrypt, used to restore the name that a concurrent rename had just
// saved, every time.)
func TestManagementConcurrentEditsKeepEveryField(t *testing.T) {
	c := newMC(t, apptest.FS)
	f := c.dock()
	admin := c.e.AdminToken
	concurrently := func(path string, bodies ...string) {
		if counts := c.sendAll("PATCH", path, admin, bodies...); counts[200] != len(bodies) {
			t.Errorf("concurrent PATCHes of %s answered %v", path, counts)
		}
	}
	channel, scheme, release := at("/api/channels/%d", f.channel), at("/api/schemes/%d", f.scheme), at("/api/releases/%d", f.release)
	for i := range 5 {
		concurrently(channel, at(`{"name":"iPhone %d"}`, i), at(`{"password":"pw%d"}`, i), at(`{"git_url":"https://github.com/example/dock%d"}`, i))
		hasFields(t, at("channel, round %d", i), c.call("GET", channel, admin, "", 200),
			map[string]any{"name": at("iPhone %d", i), "has_password": true, "git_url": at("https://github.com/example/dock%d", i)})
		c.call("PATCH", channel, admin, `{"password":""}`, 200)

		concurrently(scheme, at(`{"name":"Beta %d"}`, i), at(`{"new_build_callout":%t}`, i%2 == 1), at(`{"retained_builds":%d}`, i+1))
		hasFields(t, at("scheme, round %d", i), c.call("GET", scheme, admin, "", 200),
			map[string]any{"name": at("Beta %d", i), "new_build_callout": i%2 == 1, "retained_builds": float64(i + 1)})

		concurrently(release, at(`{"branch":"b%d"}`, i), at(`{"git_commit":"c%d"}`, i), at(`{"ci_url":"https://ci.example.com/%d"}`, i),
			at(`{"changelog":"note %d"}`, i))
		hasFields(t, at("release, round %d", i), c.call("GET", release, admin, "", 200), map[string]any{"branch": at("b%d", i),
			"git_commit": at("c%d", i), "ci_url": at("https://ci.example.com/%d", i), "text_changelog": at("- note %d", i)})
	}
}
