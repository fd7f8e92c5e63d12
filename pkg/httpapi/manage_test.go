package httpapi_test

// Integration tests of the management API (Zealot 6's schemes, channels, releases, devices,
// tokens, debug-file lookups) on Postgres, with filesystem storage and MinIO.

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// mgmt drives the management API of one test server.
type mgmt struct {
	t *testing.T
	e *apptest.Env
}

func newMgmt(t *testing.T, opts apptest.Options) *mgmt { return &mgmt{t: t, e: apptest.New(t, opts)} }

// call sends a JSON body (or none) with a token ("" for none).
func (m *mgmt) call(method, path, token, body string) *apptest.Response {
	m.t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if token != "" {
		h.Set("Authorization", "Token "+token)
	}
	var r *strings.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	if r == nil {
		return m.e.Do(m.t, method, path, nil, h)
	}
	return m.e.Do(m.t, method, path, r, h)
}

// want checks a status and returns the JSON object answered (nil for other bodies).
func (m *mgmt) want(r *apptest.Response, status int, what string) map[string]any {
	m.t.Helper()
	if r.Status != status {
		m.t.Fatalf("%s: status %d, want %d: %.400s", what, r.Status, status, r.Body)
	}
	if status >= 400 {
		if r.Error(m.t) == "" {
			m.t.Fatalf("%s: no error message", what)
		}
		return nil
	}
	if len(r.Body) > 0 && r.Body[0] == '{' {
		return r.Map(m.t)
	}
	return nil
}

func id(v map[string]any) int64 { return int64(v["id"].(float64)) }

// state is what a refused request must leave as it was: every management row.
func (m *mgmt) state() string {
	m.t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT coalesce(string_agg(concat_ws('|', id, name), ',' ORDER BY id), '') FROM apps`,
		`SELECT coalesce(string_agg(concat_ws('|', id, release_id, state, body), ',' ORDER BY id), '') FROM feedback`,
		`SELECT coalesce(string_agg(concat_ws('|', id, app_id, name, new_build_callout, retained_builds), ',' ORDER BY id), '') FROM schemes`,
		`SELECT coalesce(string_agg(concat_ws('|', id, scheme_id, name, slug, device_type, bundle_id, git_url, password_hash, download_filename_type), ',' ORDER BY id), '') FROM channels`,
		`SELECT coalesce(string_agg(concat_ws('|', id, release_version, build_version, release_type, source, branch, git_commit, ci_url, changelog::text, custom_fields::text), ',' ORDER BY id), '') FROM releases`,
		`SELECT coalesce(string_agg(concat_ws('|', id, udid, name, model), ',' ORDER BY id), '') FROM devices`,
		`SELECT coalesce(string_agg(concat_ws('|', id, name, scope, revoked_at IS NULL), ',' ORDER BY id), '') FROM api_tokens`,
		`SELECT coalesce(string_agg(concat_ws('|', g.alias, g.name, t.email), ',' ORDER BY g.alias, t.email), '') FROM tester_groups g
			LEFT JOIN tester_group_members m ON m.group_id = g.id LEFT JOIN testers t ON t.id = m.tester_id`,
		`SELECT coalesce(string_agg(concat_ws('|', release_id, tester_id, direct), ',' ORDER BY release_id, tester_id), '') FROM release_testers`,
		`SELECT coalesce(string_agg(concat_ws('|', id, tester_only), ',' ORDER BY id), '') FROM channels`,
		`SELECT count(*)::text FROM testers`,
	} {
		var s string
		if err := m.e.DB.Pool.QueryRow(context.Background(), q).Scan(&s); err != nil {
			m.t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

// fixture makes an app with a scheme and an iOS channel, and one release in it uploaded by the
// upload token.
func (m *mgmt) fixture() (app, scheme, channel, release map[string]any) {
	m.t.Helper()
	app = m.want(m.call("POST", "/api/apps", m.e.AdminToken, `{"name":"Harbor"}`), 201, "create app")
	scheme = m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), m.e.AdminToken, `{"name":"Adhoc"}`), 201, "create scheme")
	channel = m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), m.e.AdminToken,
		`{"name":"iOS","slug":"harbor-ios","device_type":"ios","bundle_id":"com.example.*"}`), 201, "create channel")
	release = m.e.UploadApp(m.t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor",
		Version: "1.0", Build: "1", Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}}),
		apptest.Field("channel_key", "harbor-ios"), apptest.Field("changelog", "First"))
	return
}

// Every management endpoint refuses a missing or wrong token (401), an upload token where admin
// is needed (403), unknown ids (404) and bad input (422 or 409), and changes nothing when it does.
func TestManagementRefusals(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	app, scheme, channel, release := m.fixture()
	a, s, c, r := id(app), id(scheme), id(channel), id(release)
	admin, upload := m.e.AdminToken, m.e.UploadToken
	long := strings.Repeat("x", 256)
	cases := []struct {
		name, method, path, token, body string
		status                          int
	}{
		// Authentication and scope.
		{"list schemes without token", "GET", fmt.Sprintf("/api/apps/%d/schemes", a), "", "", 401},
		{"get scheme with a wrong token", "GET", fmt.Sprintf("/api/schemes/%d", s), "slw_wrong", "", 401},
		{"create scheme with upload scope", "POST", fmt.Sprintf("/api/apps/%d/schemes", a), upload, `{"name":"X"}`, 403},
		{"update scheme with upload scope", "PATCH", fmt.Sprintf("/api/schemes/%d", s), upload, `{"name":"X"}`, 403},
		{"delete scheme with upload scope", "DELETE", fmt.Sprintf("/api/schemes/%d", s), upload, "", 403},
		{"create channel with upload scope", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), upload, `{"name":"X","device_type":"ios"}`, 403},
		{"update channel with upload scope", "PUT", fmt.Sprintf("/api/channels/%d", c), upload, `{"password":"x"}`, 403},
		{"delete channel with upload scope", "DELETE", fmt.Sprintf("/api/channels/%d", c), upload, "", 403},
		{"delete release with upload scope", "DELETE", fmt.Sprintf("/api/releases/%d", r), upload, "", 403},
		{"edit release without token", "PATCH", fmt.Sprintf("/api/releases/%d", r), "", `{"changelog":"x"}`, 401},
		{"sync device without token", "PUT", "/api/devices/00008030-001A2B3C4D5E6F70", "", `{"name":"x"}`, 401},
		{"list devices without token", "GET", "/api/devices", "", "", 401},
		{"list tokens with upload scope", "GET", "/api/tokens", upload, "", 403},
		{"create token with upload scope", "POST", "/api/tokens", upload, `{"name":"x"}`, 403},
		{"revoke token with upload scope", "DELETE", "/api/tokens/1", upload, "", 403},
		{"me without token", "GET", "/api/users/me", "", "", 401},
		// Unknown ids.
		{"schemes of an unknown app", "GET", "/api/apps/999/schemes", admin, "", 404},
		{"scheme into an unknown app", "POST", "/api/apps/999/schemes", admin, `{"name":"X"}`, 404},
		{"unknown scheme", "GET", "/api/schemes/999", admin, "", 404},
		{"update an unknown scheme", "PUT", "/api/schemes/999", admin, `{"name":"X"}`, 404},
		{"delete an unknown scheme", "DELETE", "/api/schemes/999", admin, "", 404},
		{"channels of an unknown scheme", "GET", "/api/schemes/999/channels", admin, "", 404},
		{"channel into an unknown scheme", "POST", "/api/schemes/999/channels", admin, `{"name":"X","device_type":"ios"}`, 404},
		{"unknown channel", "GET", "/api/channels/999", admin, "", 404},
		{"update an unknown channel", "PATCH", "/api/channels/999", admin, `{"name":"X"}`, 404},
		{"delete an unknown channel", "DELETE", "/api/channels/999", admin, "", 404},
		{"unknown release", "GET", "/api/releases/999", admin, "", 404},
		{"edit an unknown release", "PUT", "/api/releases/999", admin, `{"changelog":"x"}`, 404},
		{"delete an unknown release", "DELETE", "/api/releases/999", admin, "", 404},
		{"revoke an unknown token", "DELETE", "/api/tokens/999", admin, "", 404},
		{"non-integer id", "GET", "/api/schemes/abc", admin, "", 422},
		// Bad input.
		{"scheme without name", "POST", fmt.Sprintf("/api/apps/%d/schemes", a), admin, `{}`, 422},
		{"scheme with a blank name", "POST", fmt.Sprintf("/api/apps/%d/schemes", a), admin, `{"name":"  "}`, 422},
		{"scheme with a long name", "POST", fmt.Sprintf("/api/apps/%d/schemes", a), admin, `{"name":"` + long + `"}`, 422},
		{"scheme with a taken name", "POST", fmt.Sprintf("/api/apps/%d/schemes", a), admin, `{"name":"Adhoc"}`, 409},
		{"negative retained_builds", "PATCH", fmt.Sprintf("/api/schemes/%d", s), admin, `{"retained_builds":-1}`, 422},
		{"retained_builds not a number", "PATCH", fmt.Sprintf("/api/schemes/%d", s), admin, `{"retained_builds":"abc"}`, 422},
		{"new_build_callout not a boolean", "PATCH", fmt.Sprintf("/api/schemes/%d", s), admin, `{"new_build_callout":"maybe"}`, 422},
		{"name not a string", "PATCH", fmt.Sprintf("/api/schemes/%d", s), admin, `{"name":5}`, 422},
		{"channel without device_type", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), admin, `{"name":"X"}`, 422},
		{"unknown device_type", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), admin, `{"name":"X","device_type":"symbian"}`, 422},
		{"slug with a space", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), admin, `{"name":"X","device_type":"ios","slug":"a b"}`, 422},
		{"slug of 65 characters", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), admin, `{"name":"X","device_type":"ios","slug":"` + strings.Repeat("a", 65) + `"}`, 422},
		{"taken slug", "POST", fmt.Sprintf("/api/schemes/%d/channels", s), admin, `{"name":"X","device_type":"ios","slug":"harbor-ios"}`, 409},
		{"bundle_id with a space", "PATCH", fmt.Sprintf("/api/channels/%d", c), admin, `{"bundle_id":"com example"}`, 422},
		{"git_url javascript:", "PATCH", fmt.Sprintf("/api/channels/%d", c), admin, `{"git_url":"javascript:alert(1)"}`, 422},
		{"download_filename_type unknown", "PATCH", fmt.Sprintf("/api/channels/%d", c), admin, `{"download_filename_type":"x"}`, 422},
		{"password over 72 bytes", "PATCH", fmt.Sprintf("/api/channels/%d", c), admin, `{"password":"` + strings.Repeat("p", 73) + `"}`, 422},
		{"device_type change with releases", "PATCH", fmt.Sprintf("/api/channels/%d", c), admin, `{"device_type":"android"}`, 422},
		{"ci_url not http", "PATCH", fmt.Sprintf("/api/releases/%d", r), admin, `{"ci_url":"ftp://ci.example.com/1"}`, 422},
		{"blank release_version", "PATCH", fmt.Sprintf("/api/releases/%d", r), admin, `{"release_version":" "}`, 422},
		{"custom_fields not an array", "PATCH", fmt.Sprintf("/api/releases/%d", r), admin, `{"custom_fields":"{\"a\":1}"}`, 422},
		{"changelog with a number as message", "PATCH", fmt.Sprintf("/api/releases/%d", r), admin, `{"changelog":[{"message":1}]}`, 422},
		{"release_type with spaces", "PATCH", fmt.Sprintf("/api/releases/%d", r), admin, `{"release_type":"not a word"}`, 422},
		{"short UDID", "PUT", "/api/devices/00008030-001A", upload, `{"name":"x"}`, 422},
		{"non-hex UDID", "PUT", "/api/devices/" + strings.Repeat("z", 40), upload, `{"name":"x"}`, 422},
		{"device without name", "PUT", "/api/devices/00008030-001A2B3C4D5E6F70", upload, `{"model":"iPhone"}`, 422},
		{"token without name", "POST", "/api/tokens", admin, `{"scope":"upload"}`, 422},
		{"token with an unknown scope", "POST", "/api/tokens", admin, `{"name":"x","scope":"root"}`, 422},
		{"token with a taken name", "POST", "/api/tokens", admin, `{"name":"admin"}`, 409},
		{"exists/version without versions", "GET", "/api/debug_files/exists/version?channel_key=harbor-ios", "", "", 422},
		{"exists/binary with a bad checksum", "GET", "/api/debug_files/exists/binary?checksum=xyz", "", "", 422},
		{"exists/uuid with a bad uuid", "GET", "/api/debug_files/exists/uuid?uuid=nope", "", "", 422},
		{"exists/version of an unknown channel", "GET", "/api/debug_files/exists/version?channel_key=nope&release_version=1&build_version=1", "", "", 404},
	}
	before := m.state()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &mgmt{t: t, e: m.e}
			m.want(m.call(tc.method, tc.path, tc.token, tc.body), tc.status, tc.name)
		})
	}
	if after := m.state(); after != before {
		t.Errorf("refused requests changed something:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// Schemes and channels: create, read back, change only what is sent (PUT and PATCH alike), and
// delete with everything in them, objects included, on both storage kinds.
func TestManagementSchemesAndChannels(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			m := newMgmt(t, apptest.Options{Storage: storage})
			app, scheme, channel, release := m.fixture()
			admin := m.e.AdminToken
			if scheme["new_build_callout"] != true || scheme["retained_builds"] != float64(0) || len(scheme["channels"].([]any)) != 0 {
				t.Fatalf("new scheme: %v", scheme)
			}
			if channel["slug"] != "harbor-ios" || channel["bundle_id"] != "com.example.*" || channel["has_password"] != false ||
				channel["download_filename_type"] != "original" || channel["git_url"] != nil {
				t.Fatalf("new channel: %v", channel)
			}
			s := m.want(m.call("PUT", fmt.Sprintf("/api/schemes/%d", id(scheme)), admin, `{"retained_builds":7}`), 200, "put scheme")
			s = m.want(m.call("PATCH", fmt.Sprintf("/api/schemes/%d", id(scheme)), admin, `{"new_build_callout":false}`), 200, "patch scheme")
			if s["name"] != "Adhoc" || s["retained_builds"] != float64(7) || s["new_build_callout"] != false {
				t.Fatalf("scheme after two partial updates: %v", s)
			}
			// A form body works as well as JSON.
			form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Token " + admin}}
			r := m.e.Do(t, "PATCH", fmt.Sprintf("/api/schemes/%d", id(scheme)), strings.NewReader("name=Beta&new_build_callout=1"), form)
			if s = m.want(r, 200, "form patch"); s["name"] != "Beta" || s["new_build_callout"] != true {
				t.Fatalf("form patch: %v", s)
			}
			list := m.e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/schemes", id(app)), nil, http.Header{"Authorization": {"Token " + m.e.UploadToken}})
			var schemes []map[string]any
			list.JSON(t, &schemes)
			if len(schemes) != 1 || len(schemes[0]["channels"].([]any)) != 1 {
				t.Fatalf("schemes: %s", list.Body)
			}

			c := m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(channel)), admin,
				`{"name":"iPhone","git_url":"git@github.com:example/harbor.git","download_filename_type":"version_datetime"}`), 200, "patch channel")
			if c["name"] != "iPhone" || c["git_url"] != "git@github.com:example/harbor.git" || c["slug"] != "harbor-ios" ||
				c["download_filename_type"] != "version_datetime" || c["device_type"] != "ios" {
				t.Fatalf("patched channel: %v", c)
			}
			if c = m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(channel)), admin, `{"git_url":null}`), 200, "clear git_url"); c["git_url"] != nil {
				t.Fatalf("git_url not cleared: %v", c)
			}
			// The app listing (public, api.md's App) shows the change.
			apps := m.e.GetWith(t, fmt.Sprintf("/api/apps/%d", id(app)), m.e.AdminToken).Map(t)
			got := apps["schemes"].([]any)[0].(map[string]any)["channels"].([]any)[0].(map[string]any)
			if got["name"] != "iPhone" || got["id"] != channel["id"] {
				t.Fatalf("app listing: %v", got)
			}
			// An empty channel may change its device type.
			empty := m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), admin, `{"name":"Droid","device_type":"android"}`), 201, "empty channel")
			if len(empty["slug"].(string)) != 32 {
				t.Fatalf("generated slug %q", empty["slug"])
			}
			if c := m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(empty)), admin, `{"device_type":"harmonyos"}`), 200, "device type"); c["device_type"] != "harmonyos" {
				t.Fatalf("device type: %v", c)
			}

			// Delete the channel with its release: rows and objects go.
			keys := releaseKeys(t, m.e, id(release))
			m.want(m.call("DELETE", fmt.Sprintf("/api/channels/%d", id(channel)), admin, ""), 200, "delete channel")
			m.want(m.call("GET", fmt.Sprintf("/api/channels/%d", id(channel)), admin, ""), 404, "deleted channel")
			if rr := m.e.Get(t, "/api/apps/versions?channel_key=harbor-ios"); rr.Status != 404 {
				t.Fatalf("versions of a deleted channel: %d", rr.Status)
			}
			assertCollected(t, m.e, keys)
			m.want(m.call("DELETE", fmt.Sprintf("/api/schemes/%d", id(scheme)), admin, ""), 200, "delete scheme")
			if n := m.e.GetWith(t, fmt.Sprintf("/api/apps/%d", id(app)), m.e.AdminToken).Map(t)["schemes"].([]any); len(n) != 0 {
				t.Fatalf("schemes left: %v", n)
			}
		})
	}
}

// releaseKeys returns the package and icon keys of a release.
func releaseKeys(t *testing.T, e *apptest.Env, releaseID int64) []string {
	t.Helper()
	var pkg string
	var icon *string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT object_key, icon_key FROM releases WHERE id = $1`, releaseID).Scan(&pkg, &icon); err != nil {
		t.Fatal(err)
	}
	keys := []string{pkg}
	if icon != nil {
		keys = append(keys, *icon)
	}
	return keys
}

// assertCollected runs the collector and checks the objects are gone and nothing waits for it.
func assertCollected(t *testing.T, e *apptest.Env, keys []string) {
	t.Helper()
	if _, err := e.Service.Collector.CollectGarbage(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	objects := e.Objects(t)
	for _, k := range keys {
		if slices.Contains(objects, k) {
			t.Errorf("object %s is still stored", k)
		}
	}
	var pending int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM storage_objects`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("%d objects still waiting for the collector (%v)", pending, err)
	}
}

// A channel's password: set at creation, changed, cleared; downloads follow it, and the old
// password stops working the moment it changes.
func TestManagementChannelPassword(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	_, scheme, _, _ := m.fixture()
	admin := m.e.AdminToken
	ch := m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), admin,
		`{"name":"Private","slug":"private-droid","device_type":"android","password":"first"}`), 201, "channel with password")
	if ch["has_password"] != true {
		t.Fatalf("has_password: %v", ch)
	}
	rel := m.e.UploadApp(t, "p.apk", apk("com.example.private", "1.0", 1), apptest.Field("channel_key", "private-droid"))
	download := func(password string) int {
		return m.e.Get(t, fmt.Sprintf("/download/releases/%d?password=%s", id(rel), password)).Status
	}
	if got := m.e.Get(t, fmt.Sprintf("/download/releases/%d", id(rel))).Status; got != 401 {
		t.Fatalf("download without password: %d", got)
	}
	if got := download("first"); got != 302 {
		t.Fatalf("download with the password: %d", got)
	}
	m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d", id(ch)), admin, `{"password":"second"}`), 200, "change password")
	if old, fresh := download("first"), download("second"); old != 403 || fresh != 302 {
		t.Fatalf("after the change: old %d, new %d", old, fresh)
	}
	c := m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(ch)), admin, `{"password":""}`), 200, "clear password")
	if c["has_password"] != false {
		t.Fatalf("has_password after clearing: %v", c)
	}
	if got := m.e.Get(t, fmt.Sprintf("/download/releases/%d", id(rel))).Status; got != 302 {
		t.Fatalf("download after clearing the password: %d", got)
	}
	var hash *string
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT password_hash FROM channels WHERE id = $1`, id(ch)).Scan(&hash); err != nil || hash != nil {
		t.Fatalf("stored hash after clearing: %v %v", hash, err)
	}
}

// A chosen key works as channel_key for uploads and reads; changing it moves the channel (the old
// key is gone) and keeps its releases.
func TestManagementChannelKey(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	_, _, channel, _ := m.fixture()
	m.e.UploadApp(t, "h2.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}),
		apptest.Field("channel_key", "harbor-ios"))
	m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(channel)), m.e.AdminToken, `{"slug":"Zealot_Key-42"}`), 200, "new key")
	if r := m.e.Get(t, "/api/apps/versions?channel_key=harbor-ios"); r.Status != 404 {
		t.Fatalf("old key: %d", r.Status)
	}
	var l struct{ Releases []struct{ Version int } }
	m.e.Get(t, "/api/apps/versions?channel_key=Zealot_Key-42").JSON(t, &l)
	if len(l.Releases) != 2 || l.Releases[0].Version != 2 {
		t.Fatalf("releases under the new key: %+v", l)
	}
	// Wrong platform and bundle id for the channel's pattern are still refused.
	if r := m.e.Upload(t, "/api/apps/upload", m.e.UploadToken, apptest.Field("channel_key", "Zealot_Key-42"), apptest.File("a.apk", apk("com.example.x", "1", 1))); r.Status != 422 {
		t.Fatalf("android build into an iOS channel: %d", r.Status)
	}
}

// Releases: read, edited by the token that uploaded them or an admin (not another upload
// token), with the upload's rules; the edit shows in the read API; delete removes the objects.
func TestManagementReleases(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			m := newMgmt(t, apptest.Options{Storage: storage})
			_, _, _, release := m.fixture()
			rid := id(release)
			other := m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"other-ci"}`), 201, "second upload token")["token"].(string)
			m.want(m.call("PATCH", fmt.Sprintf("/api/releases/%d", rid), other, `{"changelog":"hijack"}`), 403, "another upload token")
			r := m.want(m.call("PATCH", fmt.Sprintf("/api/releases/%d", rid), m.e.UploadToken,
				`{"changelog":[{"message":"Fixed the crash","author":"Ada"}],"branch":"origin/release/1.0","custom_fields":[{"name":"QA","value":"passed","icon":"fa fa-check"}],"ci_url":"https://ci.example.com/9"}`),
				200, "edit own release")
			if r["text_changelog"] != "- Fixed the crash" || r["branch"] != "release/1.0" || r["ci_url"] != "https://ci.example.com/9" ||
				len(r["custom_fields"].([]any)) != 1 || r["release_version"] != "1.0" {
				t.Fatalf("edited release: %v", r)
			}
			r = m.want(m.call("PUT", fmt.Sprintf("/api/releases/%d", rid), m.e.AdminToken, `{"release_version":"1.0.1","build_version":"7","release_type":"Beta"}`), 200, "admin edit")
			if r["release_version"] != "1.0.1" || r["build_version"] != "7" || r["text_changelog"] != "- Fixed the crash" {
				t.Fatalf("admin edit: %v", r)
			}
			got := m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", rid), m.e.UploadToken, ""), 200, "get release")
			if got["release_version"] != "1.0.1" || got["channel"].(map[string]any)["slug"] != "harbor-ios" {
				t.Fatalf("get release: %v", got)
			}
			// The read API (cached) shows the edit at once.
			v := m.e.Get(t, "/api/apps/latest?channel_key=harbor-ios&release_version=0.1&build_version=1").Map(t)
			rel := v["releases"].(map[string]any)
			if rel["release_version"] != "1.0.1" || rel["changelog"].([]any)[0].(map[string]any)["author"] != "Ada" {
				t.Fatalf("latest after the edit: %v", rel)
			}
			keys := releaseKeys(t, m.e, rid)
			if len(keys) != 2 {
				t.Fatalf("the fixture's release has no icon: %v", keys)
			}
			if resp := m.call("DELETE", fmt.Sprintf("/api/releases/%d", rid), m.e.AdminToken, ""); resp.Status != 200 || string(resp.Body) != `{"mesage":"OK"}` {
				t.Fatalf("delete: %d %s", resp.Status, resp.Body)
			}
			m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", rid), m.e.AdminToken, ""), 404, "deleted release")
			if resp := m.e.Get(t, "/api/apps/latest?channel_key=harbor-ios&release_version=0.1&build_version=1"); resp.Status != 404 {
				t.Fatalf("latest of an emptied channel: %d", resp.Status)
			}
			assertCollected(t, m.e, keys)
		})
	}
}

// Devices: find-or-create by UDID (201, then 200 on the same row), any spelling of one UDID is one
// device, and concurrent syncs of one UDID make one row.
func TestManagementDevices(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	up := m.e.UploadToken
	d := m.want(m.call("PUT", "/api/devices/00008030-001a2b3c4d5e6f70", up, `{"name":"QA iPhone","model":"iPhone 15"}`), 201, "create")
	if d["udid"] != "00008030-001A2B3C4D5E6F70" || d["source"] != "api" {
		t.Fatalf("created: %v", d)
	}
	d = m.want(m.call("PATCH", "/api/devices/00008030-001A2B3C4D5E6F70", up, `{"name":"QA iPhone 15"}`), 200, "update")
	if d["name"] != "QA iPhone 15" || d["model"] != "iPhone 15" {
		t.Fatalf("updated (the model must stay): %v", d)
	}
	legacy := strings.Repeat("ab", 20)
	m.want(m.call("PUT", "/api/devices/"+strings.ToUpper(legacy), up, `{"name":"Old iPad"}`), 201, "40-hex UDID")
	mac := "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6"
	m.want(m.call("PUT", "/api/devices/"+strings.ToLower(mac), up, `{"name":"Mac","platform":"MAC_OS"}`), 201, "Mac UUID")
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			r := m.e.Do(t, "PUT", "/api/devices/00008110-00AA11BB22CC33DD", strings.NewReader(fmt.Sprintf(`{"name":"Race %d"}`, i)),
				http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + up}})
			if r.Status != 200 && r.Status != 201 {
				t.Errorf("concurrent sync: %d %s", r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	var list []map[string]any
	m.e.Do(t, "GET", "/api/devices?per_page=100", nil, http.Header{"Authorization": {"Token " + up}}).JSON(t, &list)
	var udids []string
	for _, d := range list {
		udids = append(udids, d["udid"].(string))
	}
	slices.Sort(udids)
	want := []string{"00008030-001A2B3C4D5E6F70", "00008110-00AA11BB22CC33DD", mac, legacy}
	slices.Sort(want)
	if !slices.Equal(udids, want) {
		t.Fatalf("devices %v, want %v", udids, want)
	}
}

// A device an upload token syncs waits for an admin: the export (Apple's device list, from which
// provisioning profiles are made) leaves it out until an admin approves it or an admin token syncs
// it, and an upload token cannot rewrite a device already verified. A device name a spreadsheet
// would run as a formula is quoted in the export.
func TestUploadTokenDevicesAwaitApproval(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	up, admin := m.e.UploadToken, m.e.AdminToken
	export := func() string {
		t.Helper()
		r := m.call("GET", "/api/devices/export", admin, "")
		if r.Status != 200 {
			t.Fatalf("export: %d %s", r.Status, r.Body)
		}
		return string(r.Body)
	}
	const udid, other = "00008030-001A2B3C4D5E6F70", "00008110-00AA11BB22CC33DD"
	if d := m.want(m.call("PUT", "/api/devices/"+udid, up, `{"name":"=HYPERLINK(\"https://evil.example\",\"x\")"}`), 201, "upload token sync"); d["verified"] != false {
		t.Fatalf("a device an upload token added is verified: %v", d)
	}
	if strings.Contains(export(), udid) {
		t.Fatalf("the export hands Apple a device nobody vouched for:\n%s", export())
	}
	m.want(m.call("POST", "/api/devices/"+udid+"/approve", admin, ""), 200, "approve")
	out := export()
	if !strings.Contains(out, udid+"\t'=HYPERLINK(") {
		t.Fatalf("the approved device is missing or its formula is not quoted:\n%s", out)
	}
	if d := m.want(m.call("PUT", "/api/devices/"+other, admin, `{"name":"QA iPad"}`), 201, "admin token sync"); d["verified"] != true {
		t.Fatalf("an admin token's device is not verified: %v", d)
	}
	if d := m.want(m.call("PATCH", "/api/devices/"+other, up, `{"name":"Renamed by CI"}`), 200, "upload token on a verified device"); d["name"] != "QA iPad" || d["verified"] != true {
		t.Fatalf("an upload token rewrote a verified device: %v", d)
	}
}

// Tokens over HTTP: the secret is shown once, works at once, is never listed, and a revoked token
// is refused at once.
func TestManagementTokens(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	tok := m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"laptop","scope":"admin"}`), 201, "create")
	secret, _ := tok["token"].(string)
	if !strings.HasPrefix(secret, "slw_") || tok["scope"] != "admin" || tok["revoked_at"] != nil {
		t.Fatalf("created: %v", tok)
	}
	me := m.want(m.call("GET", "/api/users/me", secret, ""), 200, "me")
	if me["name"] != "laptop" || me["username"] != "laptop" || me["scope"] != "admin" || me["id"] != tok["id"] {
		t.Fatalf("me: %v", me)
	}
	if def := m.want(m.call("POST", "/api/tokens", secret, `{"name":"ci-default"}`), 201, "default scope"); def["scope"] != "upload" {
		t.Fatalf("default scope: %v", def)
	}
	list := m.call("GET", "/api/tokens", secret, "")
	if list.Status != 200 || strings.Contains(string(list.Body), secret) || strings.Contains(string(list.Body), `"token"`) {
		t.Fatalf("list shows secrets or failed: %d %s", list.Status, list.Body)
	}
	m.want(m.call("DELETE", fmt.Sprintf("/api/tokens/%d", id(tok)), m.e.AdminToken, ""), 200, "revoke")
	m.want(m.call("GET", "/api/users/me", secret, ""), 401, "revoked token")
	m.want(m.call("DELETE", fmt.Sprintf("/api/tokens/%d", id(tok)), m.e.AdminToken, ""), 404, "revoke twice")
}

// The debug-file lookups Zealot's clients use: by version, by Mach-O UUID in any case, and by the
// archive's MD5 (Zealot's checksum) or SHA-256.
func TestManagementDebugFileLookups(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	m.fixture()
	zip := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Harbor.app.dSYM", Identifier: "com.example.harbor", ReleaseVersion: "1.0", BuildVersion: "1",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"}}})
	df := m.want(m.e.Upload(t, "/api/debug_files/upload", m.e.UploadToken, apptest.Field("channel_key", "harbor-ios"), apptest.File("d.zip", zip)), 201, "upload dSYM")
	md5sum, shasum := md5.Sum(zip), sha256.Sum256(zip)
	for _, path := range []string{
		"/api/debug_files/exists/version?channel_key=harbor-ios&release_version=1.0&build_version=1",
		"/api/debug_files/exists/uuid?uuid=0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9",
		"/api/debug_files/exists/uuid?uuid=0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9",
		"/api/debug_files/exists/binary?checksum=" + hex.EncodeToString(md5sum[:]),
		"/api/debug_files/exists/binary?checksum=" + strings.ToUpper(hex.EncodeToString(shasum[:])),
	} {
		if got := m.want(m.e.Get(t, path), 200, path); got["id"] != df["id"] {
			t.Fatalf("%s found %v", path, got["id"])
		}
	}
	for _, path := range []string{
		"/api/debug_files/exists/version?channel_key=harbor-ios&release_version=1.0&build_version=2",
		"/api/debug_files/exists/uuid?uuid=0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F0",
		"/api/debug_files/exists/binary?checksum=" + strings.Repeat("0", 32),
	} {
		m.want(m.e.Get(t, path), 404, path)
	}
}
