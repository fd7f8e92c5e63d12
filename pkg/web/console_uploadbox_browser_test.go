package web_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserConsoleUploadBoxFailure: the upload box of a channel's page (issue 34), at desktop
// and phone size. Choosing a file with a long name leaves the changelog label where it was (the
// name is cut on a line of its own), and a refused upload (an Android build dropped on an iOS
// channel) shows in the bar, which is marked failed and not full, with the refusal beside it;
// the refusal comes from the file's first bytes, before a part of it is sent.
func TestBrowserConsoleUploadBoxFailure(t *testing.T) {
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
	path := filepath.Join(t.TempDir(), "harbor-android-release-candidate-with-a-very-long-file-name-from-the-ci-pipeline-2026-12-02-build-4711-universal-signed.apk")
	apk := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.harbor", VersionName: "2.1", VersionCode: 21, Label: "Harbor"}})
	if err := os.WriteFile(path, apk, 0o600); err != nil {
		t.Fatal(err)
	}
	id := func(name string) string { return fmt.Sprintf("%s-%d", name, chID) }
	label := fmt.Sprintf(`(() => { const r = document.getElementById(%q).closest("label").getBoundingClientRect(); return [r.left, r.top, r.width, r.height].join(","); })()`, id("upload-changelog"))

	ctx := tab(t, browser(t))
	for _, size := range []struct {
		name     string
		viewport chromedp.Action[chromedp.Void]
	}{{"desktop", desktop}, {"phone", phone}} {
		navigate(t, ctx, "a page of the server", size.viewport, chromedp.Navigate(e.URL+"/healthz"))
		run(t, ctx, "sign in", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.cookie = "slipway_session=%s; path=/console"; return true; })()`, url.QueryEscape(session))))
		navigate(t, ctx, "channel page", chromedp.Navigate(fmt.Sprintf("%s/console/channels/%d", e.URL, chID)), chromedp.WaitVisible(chromedp.ID(id("upload-file"))))
		before := run(t, ctx, "changelog label", chromedp.Evaluate[string](label))
		steps(t, ctx, "choose a file with a long name", chromedp.SetUploadFiles(chromedp.ID(id("upload-file")), []string{path}))
		run(t, ctx, "the file is named", chromedp.Poll[bool](fmt.Sprintf(`document.querySelector("#%s .upload-file").textContent.includes(".apk")`, id("upload"))))
		if after := run(t, ctx, "changelog label", chromedp.Evaluate[string](label)); after != before {
			t.Errorf("%s: the chosen file moved the changelog label: %s before, %s after (left, top, width, height)", size.name, before, after)
		}
		if w := run(t, ctx, "page width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
			t.Errorf("%s: with the long file name chosen, the page is %v px wider than the screen", size.name, w)
		}
		// Parts are PUT with XMLHttpRequest: count them.
		run(t, ctx, "count parts", chromedp.Evaluate[bool](`(() => { const send = XMLHttpRequest.prototype.send; window.puts = 0;
			XMLHttpRequest.prototype.send = function () { window.puts++; return send.apply(this, arguments); }; return true; })()`))
		steps(t, ctx, "upload it", chromedp.Click(chromedp.ID(id("upload-submit"))))
		run(t, ctx, "the upload fails", chromedp.Poll[bool](fmt.Sprintf(`document.getElementById(%q).textContent.includes("Upload failed")`, id("upload-status"))))
		status := run(t, ctx, "status", chromedp.Text(chromedp.ID(id("upload-status"))))
		// The first bytes say it is an Android build: refused before any of it is sent.
		if puts := run(t, ctx, "parts sent", chromedp.Evaluate[int](`window.puts`)); puts != 0 {
			t.Errorf("%s: %d parts of the Android build were sent to the iOS channel before the refusal", size.name, puts)
		}
		bar := run(t, ctx, "bar", chromedp.Evaluate[string](fmt.Sprintf(`(() => { const b = document.getElementById(%q); return b.className + "|" + b.value + "|" + b.hidden; })()`, id("upload-progress"))))
		if bar != "failed|0|false" {
			t.Errorf("%s: after the refusal the bar is %q (class|value|hidden), want it marked failed and empty", size.name, bar)
		}
		if !strings.Contains(status, "iOS") || !strings.Contains(status, "Android") || !strings.Contains(run(t, ctx, "status class", chromedp.Evaluate[string](fmt.Sprintf(`document.getElementById(%q).className`, id("upload-status")))), "error") {
			t.Errorf("%s: the refusal beside the box: %q", size.name, status)
		}
	}
}
