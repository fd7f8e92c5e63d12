package httpapi_test

// A channel made without a bundle id holds the app of its first build (issue 34): a build of
// another app uploaded to it is kept, as Zealot keeps it in a channel whose bundle id is `*`,
// but never silently: the upload's answer warns naming both ids, a request that says
// allow_other_bundle_id=false is refused with 422, the tester page's "Newest" stays the channel's
// own app, and keep-1 retention never deletes the real build because of the other app's.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
)

func otherAppIPA(bundleID, version, build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: bundleID, Version: version, Build: build})
}

// uploadAnswer uploads data with fields and returns the answer's status and JSON body.
func uploadAnswer(t *testing.T, e *apptest.Env, data []byte, fields ...apptest.Part) (int, map[string]any) {
	t.Helper()
	parts := append([]apptest.Part{apptest.Field("token", e.UploadToken)}, fields...)
	r := e.Upload(t, "/api/apps/upload", "", append(parts, apptest.File("h.ipa", data))...)
	return r.Status, r.Map(t)
}

func warningsOf(m map[string]any) []string {
	var out []string
	ws, _ := m["warnings"].([]any)
	for _, w := range ws {
		out = append(out, fmt.Sprint(w))
	}
	return out
}

func TestUploadOtherAppIntoChannel(t *testing.T) {
	m := retentionEnv(t, apptest.FS)
	e := m.e
	f := apptest.Field

	// The real app's build makes the channel (no channel_key: bundle_id "*").
	status, real := uploadAnswer(t, e, otherAppIPA("com.example.harbor", "2.0", "20"), f("name", "Harbor"))
	if status != http.StatusCreated || len(warningsOf(real)) != 0 {
		t.Fatalf("first build: %d %v", status, real)
	}
	ch := real["channel"].(map[string]any)
	slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
	if ch["bundle_id"] != "*" {
		t.Fatalf("a channel an upload makes shows bundle_id %v, want * (api.md)", ch["bundle_id"])
	}

	// A request that says it does not mean it is refused, naming both ids, and nothing is kept.
	status, refused := uploadAnswer(t, e, otherAppIPA("com.example.intruder", "1.0", "1"), f("channel_key", slug), f("allow_other_bundle_id", "false"))
	msg, _ := refused["error"].(string)
	if status != http.StatusUnprocessableEntity || !strings.Contains(msg, "com.example.harbor") || !strings.Contains(msg, "com.example.intruder") {
		t.Fatalf("refusal: %d %v", status, refused)
	}
	if got := m.remaining(chID); len(got) != 1 {
		t.Fatalf("a refused upload was kept: %v", got)
	}

	// Without the field (as every Zealot client sends it) the other app is kept, with a warning
	// naming both ids.
	status, other := uploadAnswer(t, e, otherAppIPA("com.example.intruder", "1.0", "1"), f("channel_key", slug))
	ws := strings.Join(warningsOf(other), "\n")
	if status != http.StatusCreated || !strings.Contains(ws, "com.example.harbor") || !strings.Contains(ws, "com.example.intruder") {
		t.Fatalf("other app's upload: %d, warnings %q: %v", status, ws, other)
	}
	// So is an auto-creating upload of the same app name that lands in the channel.
	status, again := uploadAnswer(t, e, otherAppIPA("com.example.intruder", "1.0", "2"), f("name", "Harbor"))
	if status != http.StatusCreated || again["channel"].(map[string]any)["slug"] != slug || len(warningsOf(again)) != 1 {
		t.Fatalf("auto-creating upload of another app: %d %v", status, again)
	}
	// A request that means it is kept (the warning still says what happened).
	status, meant := uploadAnswer(t, e, otherAppIPA("com.example.intruder", "1.0", "3"), f("channel_key", slug), f("allow_other_bundle_id", "true"))
	if status != http.StatusCreated || len(warningsOf(meant)) != 1 {
		t.Fatalf("meant upload: %d %v", status, meant)
	}

	// The tester page's Newest is still the channel's own app.
	page := string(e.Get(t, "/channels/"+slug).Body)
	newest := fmt.Sprintf(`href="%s" id="latest"`, real["release_url"])
	if !strings.Contains(page, newest) || !strings.Contains(page, "com.example.intruder") {
		t.Fatalf("tester page offers another app as Newest, or hides that it holds one:\n%s", page)
	}
	if page := string(e.Get(t, strings.TrimPrefix(other["release_url"].(string), e.URL)).Body); !strings.Contains(page, `id="other-app"`) {
		t.Errorf("the other app's release page does not say so:\n%s", page)
	}

	// Keep 1: the real build stays (the newest of its app), whatever came after it.
	m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), e.AdminToken, `{"keep_builds":1}`), 200, "set policy")
	if _, err := e.Service.Retention.EnforceRetention(context.Background()); err != nil {
		t.Fatal(err)
	}
	left := m.remaining(chID)
	if !slices.Contains(left, id(real)) || !slices.Contains(left, id(meant)) || len(left) != 2 {
		t.Fatalf("keep-1 left %v, want the real build %d and the other app's newest %d", left, id(real), id(meant))
	}

	// A channel whose `*` was chosen takes any app without a word.
	m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", chID), e.AdminToken, `{"bundle_id":"*"}`), 200, "choose *")
	status, any := uploadAnswer(t, e, otherAppIPA("com.example.third", "1.0", "1"), f("channel_key", slug), f("allow_other_bundle_id", "false"))
	if status != http.StatusCreated || len(warningsOf(any)) != 0 {
		t.Fatalf("upload into a channel that chose *: %d %v", status, any)
	}
}

// A desktop build whose version electron-updater cannot read (not semver) is kept, with a
// warning in the upload's answer (issue 34: electron-updater throws "Invalid Version: 1.0");
// a semver version, or a platform without electron feeds, says nothing.
func TestUploadWarnsOfAVersionElectronCannotRead(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	upload := func(name, version string, data []byte) []string {
		t.Helper()
		r := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.File(name, data))
		if r.Status != http.StatusCreated {
			t.Fatalf("uploading %s %s: %d %s", name, version, r.Status, r.Body)
		}
		return warningsOf(r.Map(t))
	}
	mac := func(version string) []byte {
		return appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: version, Build: "7"})
	}
	if ws := upload("Desk.zip", "1.0", mac("1.0")); !slices.ContainsFunc(ws, func(w string) bool {
		return strings.Contains(w, `version "1.0" is not semver`) && strings.Contains(w, "electron-updater")
	}) {
		t.Errorf("a macOS build versioned 1.0: warnings %q", ws)
	}
	if ws := upload("Desk.zip", "1.0.1", mac("1.0.1")); len(ws) != 0 {
		t.Errorf("a macOS build versioned 1.0.1: warnings %q", ws)
	}
	if ws := upload("h.ipa", "1.0", otherAppIPA("com.example.ios", "1.0", "1")); len(ws) != 0 {
		t.Errorf("an iOS build versioned 1.0: warnings %q", ws)
	}
}
