package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestZealotMigrationStory is a team moving from Zealot, with the real binary on Postgres and
// MinIO and no SQL at all: the first admin token from the command line on the server, then
// everything over HTTP. It creates a scheme and a channel that keeps its Zealot key and password,
// uploads to that key with the CLI, changes the password, deletes a release, and checks its
// objects are gone after `slipway gc`.
func TestZealotMigrationStory(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{Storage: e2e.S3})
	s := h.Start(t)

	// The only step on the server: the first admin token. The rest happens from a laptop.
	admin := h.CreateToken(t, "ops", "admin")
	adminEnv := []string{"SLIPWAY_TOKEN=" + admin}
	res := h.RunEnv(t, adminEnv, "token", "create", "--url", s.URL, "--name", "ci", "--scope", "upload")
	if res.ExitCode != 0 {
		t.Fatalf("token create --url:\n%s", res)
	}
	ci := res.LastLine()
	assertNoSecret(t, h.RunEnv(t, adminEnv, "token", "list", "--url", s.URL), ci, admin)
	if me := call(t, s, "GET", "/api/users/me", ci, ""); me.Status != 200 || !strings.Contains(string(me.Body), `"scope":"upload"`) {
		t.Fatalf("users/me with the new token: %d %s", me.Status, me.Body)
	}

	app := call(t, s, "POST", "/api/apps", admin, `{"name":"Harbor"}`)
	appID := idOf(t, app, 201)
	scheme := call(t, s, "POST", fmt.Sprintf("/api/apps/%d/schemes", appID), admin, `{"name":"Adhoc","retained_builds":10}`)
	schemeID := idOf(t, scheme, 201)
	const zealotKey = "Xq3Lm9PzHarborAdhocIOS"
	channel := call(t, s, "POST", fmt.Sprintf("/api/schemes/%d/channels", schemeID), admin,
		`{"name":"iOS","slug":"`+zealotKey+`","device_type":"ios","bundle_id":"com.example.*","password":"old-pw","git_url":"git@github.com:example/harbor.git"}`)
	channelID := idOf(t, channel, 201)

	// CI uploads to the Zealot key, twice, with the upload token.
	dir := t.TempDir()
	var releaseIDs []int64
	for _, build := range []string{"1", "2"} {
		ipa := writeFile(t, dir, "Harbor-"+build+".ipa", appletest.BuildIPA(appletest.IPAOptions{
			AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: build}))
		res := h.Run(t, "upload", ipa, "--url", s.URL, "--token", ci, "--channel-key", zealotKey, "--changelog", "Build "+build, "--progress", "none")
		if res.ExitCode != 0 {
			t.Fatalf("upload to the Zealot key:\n%s", res)
		}
		slug, id := releaseURLParts(t, s, res.LastLine())
		if slug != zealotKey {
			t.Fatalf("release URL %s is not under the Zealot key", res.LastLine())
		}
		releaseIDs = append(releaseIDs, id)
	}
	// The update check of installed Zealot-SDK builds answers under the old key.
	latest := s.Get(t, "/api/apps/latest?"+url.Values{"channel_key": {zealotKey}, "sdk": {"ios-1.0"},
		"release_version": {"2.0"}, "build_version": {"1"}}.Encode())
	if latest.Status != 200 || !strings.Contains(string(latest.Body), `"build_version":"2"`) {
		t.Fatalf("latest under the Zealot key: %d %s", latest.Status, latest.Body)
	}

	// The password protects downloads; changing it locks the old one out.
	download := func(password string) int {
		return s.Get(t, fmt.Sprintf("/download/releases/%d?password=%s", releaseIDs[0], url.QueryEscape(password))).Status
	}
	if got := download("old-pw"); got != 302 {
		t.Fatalf("download with the channel's password: %d", got)
	}
	if r := call(t, s, "PATCH", fmt.Sprintf("/api/channels/%d", channelID), admin, `{"password":"new-pw"}`); r.Status != 200 {
		t.Fatalf("change the password: %d %s", r.Status, r.Body)
	}
	if old, fresh := download("old-pw"), download("new-pw"); old != 403 || fresh != 302 {
		t.Fatalf("after the change: old password %d (want 403), new %d (want 302)", old, fresh)
	}

	// The CI token may edit its own release's changelog, but not delete it.
	if r := call(t, s, "PATCH", fmt.Sprintf("/api/releases/%d", releaseIDs[0]), ci, `{"changelog":"Rebuilt with the fix"}`); r.Status != 200 {
		t.Fatalf("edit own release: %d %s", r.Status, r.Body)
	}
	if r := call(t, s, "DELETE", fmt.Sprintf("/api/releases/%d", releaseIDs[0]), ci, ""); r.Status != 403 {
		t.Fatalf("delete with the upload token: %d %s", r.Status, r.Body)
	}

	// Delete the first release: its package and icon go with it.
	var keys []string
	for _, col := range []string{"object_key", "icon_key"} {
		var k *string
		if err := h.DB(t).QueryRow(t.Context(), `SELECT `+col+` FROM releases WHERE id = $1`, releaseIDs[0]).Scan(&k); err != nil {
			t.Fatal(err)
		}
		if k != nil {
			keys = append(keys, *k)
		}
	}
	if r := call(t, s, "DELETE", fmt.Sprintf("/api/releases/%d", releaseIDs[0]), admin, ""); r.Status != 200 || string(r.Body) != `{"mesage":"OK"}` {
		t.Fatalf("delete release: %d %s", r.Status, r.Body)
	}
	h.MustRun(t, "gc", "--grace", "0s")
	objects := h.Objects(t)
	for _, k := range keys {
		if slices.Contains(objects, k) {
			t.Errorf("object %s of the deleted release is still in the bucket after gc", k)
		}
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM storage_objects`); n != 0 {
		t.Errorf("%d objects still waiting for the collector", n)
	}
	if r := s.Get(t, "/api/apps/versions?channel_key="+zealotKey); !strings.Contains(string(r.Body), `"version":2`) || strings.Contains(string(r.Body), `"version":1,`) {
		t.Errorf("versions after the delete: %s", r.Body)
	}

	// Revoking the CI token over HTTP shuts it out at once.
	h.MustRun(t, "token", "revoke", "ci", "--url", s.URL, "--token", admin)
	if r := call(t, s, "GET", "/api/users/me", ci, ""); r.Status != 401 {
		t.Errorf("revoked token: %d", r.Status)
	}
}

// call sends a JSON request with a token.
func call(t *testing.T, s *e2e.Server, method, path, token, body string) *e2e.Response {
	t.Helper()
	return s.Do(t, method, path, strings.NewReader(body), "Content-Type", "application/json", "Authorization", "Token "+token)
}

// idOf checks the status of a create and returns the id it answered.
func idOf(t *testing.T, r *e2e.Response, status int) int64 {
	t.Helper()
	var v struct{ ID int64 }
	if r.Status != status || json.Unmarshal(r.Body, &v) != nil || v.ID == 0 {
		t.Fatalf("status %d (want %d): %s", r.Status, status, r.Body)
	}
	return v.ID
}
