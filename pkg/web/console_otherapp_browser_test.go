package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserConsoleUploadOtherApp: a build of another app dropped on a channel's upload box is a
// question before it is kept (issue 34): the box shows the refusal naming both bundle ids with a
// "Keep it anyway" button, nothing is recorded meanwhile, and the button sends it again saying so.
func TestBrowserConsoleUploadOtherApp(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	real := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "20"}))
	chID := int64(real["channel"].(map[string]any)["id"].(float64))
	admin, _ := signedIn(t, e, "alice")
	var session string
	for _, c := range admin.Jar.Cookies(mustParse(t, e.URL+"/console")) {
		if c.Name == "slipway_session" {
			session = c.Value
		}
	}
	path := filepath.Join(t.TempDir(), "Intruder.ipa")
	if err := os.WriteFile(path, appletest.BuildIPA(appletest.IPAOptions{AppName: "Intruder", BundleID: "com.example.intruder", Version: "1.0", Build: "1"}), 0o600); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM releases WHERE channel_id = $1 AND bundle_id = 'com.example.intruder'`, chID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	ctx := tab(t, browser(t))
	navigate(t, ctx, "a page of the server", desktop, chromedp.Navigate(e.URL+"/healthz"))
	run(t, ctx, "sign in", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.cookie = "slipway_session=%s; path=/console"; return true; })()`, url.QueryEscape(session))))
	navigate(t, ctx, "channel page", chromedp.Navigate(fmt.Sprintf("%s/console/channels/%d", e.URL, chID)),
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))))
	steps(t, ctx, "drop the other app's build",
		chromedp.SetUploadFiles(chromedp.ID(fmt.Sprintf("upload-file-%d", chID)), []string{path}),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))),
		chromedp.WaitVisible(chromedp.ID("upload-keep-anyway")))
	status := run(t, ctx, "status", chromedp.Text(chromedp.ID(fmt.Sprintf("upload-status-%d", chID))))
	if !strings.Contains(status, "com.example.harbor") || !strings.Contains(status, "com.example.intruder") || !strings.Contains(status, "Not kept") {
		t.Errorf("the question: %q", status)
	}
	if n := count(); n != 0 {
		t.Fatalf("the other app's build was kept before the question was answered: %d", n)
	}
	steps(t, ctx, "keep it anyway", chromedp.Click(chromedp.ID("upload-keep-anyway")), chromedp.WaitVisible(chromedp.ID("upload-done")))
	if n := count(); n != 1 {
		t.Fatalf("after Keep it anyway: %d builds of the other app", n)
	}
	if status := run(t, ctx, "status", chromedp.Text(chromedp.ID(fmt.Sprintf("upload-status-%d", chID)))); !strings.Contains(status, "Uploaded 1.0 (1)") ||
		!strings.Contains(status, "another app") {
		t.Errorf("after keeping it: %q", status)
	}
}

// Without the script, the upload box's form asks too: a build of another app on the home page
// (its app name finds the channel of the real app) is refused in place naming both bundle ids,
// with a "Keep it anyway" box; sent again with it ticked, it is kept.
func TestConsoleUploadOtherAppWithoutScript(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	real := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "20"}))
	chID := int64(real["channel"].(map[string]any)["id"].(float64))
	admin, _ := signedIn(t, e, "alice")
	intruder := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.intruder", Version: "1.0", Build: "1"})
	count := func() (n int) {
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM releases WHERE bundle_id = 'com.example.intruder'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	resp, page := postUpload(t, e, admin, uploadBox(t, admin, e.URL+"/console"), "i.ipa", intruder)
	question := between(page, `id="upload-other-app"`, "</div>")
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(question, "com.example.harbor") || !strings.Contains(question, "com.example.intruder") ||
		!strings.Contains(question, `name="allow_other_bundle_id"`) || count() != 0 {
		t.Fatalf("another app's build without the script: %d, %d kept: %.3000s", resp.StatusCode, count(), page)
	}
	resp, _ = postUpload(t, e, admin, uploadBox(t, admin, e.URL+"/console"), "i.ipa", intruder, "allow_other_bundle_id", "true")
	if resp.StatusCode != http.StatusSeeOther || count() != 1 {
		t.Fatalf("kept anyway: %d, %d kept", resp.StatusCode, count())
	}
	// The channel's console page says which app it holds and marks the other app's build.
	var otherID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM releases WHERE bundle_id = 'com.example.intruder'`).Scan(&otherID); err != nil {
		t.Fatal(err)
	}
	_, page = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, chID), nil)
	if holds := between(page, `id="channel-holds"`, "</p>"); !strings.Contains(holds, "com.example.harbor") ||
		!strings.Contains(between(page, fmt.Sprintf(`id="other-app-%d"`, otherID), "</td>"), "com.example.intruder") {
		t.Errorf("the channel's console page does not say which app it holds, or hides the other app's build: %.4000s", between(page, `id="builds"`, "</section>"))
	}
}
