package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserConsoleForms walks the console's forms in chromium as a team lead on day one (issue
// 21): the header on every page, create an app and reload, go back, double-click "Create
// channel", a refused retention value shown in place with what was typed, and a revoke that
// asks first. After each step the database holds exactly one of each thing.
func TestBrowserConsoleForms(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ctx := tab(t, browser(t))
	db := func(sql string, args ...any) int { return count(t, e, sql, args...) }
	text := func(js string) string { return run(t, ctx, js, chromedp.Evaluate[string](js)) }

	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "sign in", desktop, chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
		chromedp.WaitVisible(chromedp.ID("create-app")))
	// One header: where to go, and who is signed in, said properly.
	header := text(`document.querySelector("header").innerText`)
	for _, want := range []string{"Apps", "API tokens", "People", "Audit log", "Administrator", "admin", "Sign out"} {
		if !strings.Contains(header, want) {
			t.Errorf("the header lacks %q: %q", want, header)
		}
	}
	if strings.Contains(header, " ,") {
		t.Errorf("the header names the user badly: %q", header)
	}

	// Create an app: the browser lands on its page with a green message; reloading makes no second.
	steps(t, ctx, "create an app",
		chromedp.SendKeys(chromedp.ID("app-new-name"), "Lighthouse"),
		chromedp.Click(chromedp.ID("create-app-submit")), waitNotice("App Lighthouse made"))
	loc := run(t, ctx, "url", chromedp.Location())
	if !strings.Contains(loc, "/console/apps/") {
		t.Fatalf("after create app: at %s", loc)
	}
	if cls := text(`document.getElementById("notice").className`); !strings.Contains(cls, "flash-ok") {
		t.Errorf("the success message is not shown as one: %q", cls)
	}
	navigate(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("create-channel")))
	if n := db(`SELECT count(*) FROM apps WHERE name = 'Lighthouse'`); n != 1 {
		t.Errorf("%d apps after create and reload", n)
	}
	if text(`String(!!document.getElementById("notice"))`) != "false" {
		t.Error("the message is shown again after a reload")
	}
	if crumbs := text(`document.getElementById("breadcrumbs").innerText`); !strings.Contains(crumbs, "Apps") || !strings.Contains(crumbs, "Lighthouse") {
		t.Errorf("breadcrumbs %q", crumbs)
	}
	navigate(t, ctx, "back", chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.ID("create-app")))
	navigate(t, ctx, "forward again", chromedp.Navigate(loc), chromedp.WaitVisible(chromedp.ID("create-channel")))
	if n := db(`SELECT count(*) FROM apps WHERE name = 'Lighthouse'`); n != 1 {
		t.Errorf("%d apps after going back", n)
	}

	// Double-click "Create channel": one channel.
	steps(t, ctx, "double-click create channel",
		chromedp.SendKeys(chromedp.ID("channel-name"), "QA"))
	run(t, ctx, "two clicks", chromedp.Evaluate[bool](`(() => { const b = document.getElementById("create-channel-submit"); b.click(); b.click(); return true; })()`))
	steps(t, ctx, "the answer", waitNotice("Channel QA made"))
	if n := db(`SELECT count(*) FROM channels WHERE name = 'QA'`); n != 1 {
		t.Errorf("a double click made %d channels", n)
	}
	var chID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM channels WHERE name = 'QA'`).Scan(&chID); err != nil {
		t.Fatal(err)
	}

	// The upload box: only the channel's package type offered, two dropped files refused with a
	// message, and an upload in flight cancelled (the session stays, to resume).
	// The channel's own page holds its upload box, builds, retention and settings.
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	if at := run(t, ctx, "url", chromedp.Location()); at != chURL {
		t.Errorf("after making a channel: at %s, want its page %s", at, chURL)
	}
	if crumbs := text(`document.getElementById("breadcrumbs").innerText`); !strings.Contains(crumbs, "Lighthouse") || !strings.Contains(crumbs, "QA") {
		t.Errorf("channel breadcrumbs %q", crumbs)
	}
	navigate(t, ctx, "channel page", chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))))
	if a := run(t, ctx, "accept", chromedp.AttributeValue(chromedp.ID(fmt.Sprintf("upload-file-%d", chID)), "accept")); a.Value != ".ipa" {
		t.Errorf("the file picker accepts %q", a.Value)
	}
	status := func() string {
		return text(fmt.Sprintf(`document.getElementById("upload-status-%d").textContent`, chID))
	}
	run(t, ctx, "drop two files", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(["a"], "a.ipa")); dt.items.add(new File(["b"], "b.ipa"));
		document.querySelector("#upload-%d .dropzone").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true; })()`, chID)))
	if st := status(); !strings.Contains(st, "Drop one build at a time") {
		t.Errorf("two dropped files: status %q", st)
	}
	path := filepath.Join(t.TempDir(), "Lighthouse.ipa")
	if err := os.WriteFile(path, ipa("Lighthouse", "1.0", "1"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The part's PUT never finishes until aborted, as on a slow network.
	run(t, ctx, "a network that hangs", chromedp.Evaluate[bool](`(() => {
		const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
		XMLHttpRequest.prototype.open = function (method) { this.slipwayMethod = method; return open.apply(this, arguments); };
		XMLHttpRequest.prototype.send = function () {
			if (this.slipwayMethod !== "PUT") { return send.apply(this, arguments); }
			window.hanging = true;
			this.abort = () => { window.hanging = false; this.onabort && this.onabort(new ProgressEvent("abort")); };
		};
		return true; })()`))
	steps(t, ctx, "start an upload",
		chromedp.SetUploadFiles(chromedp.ID(fmt.Sprintf("upload-file-%d", chID)), []string{path}),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))),
		waitTrue(`window.hanging === true`),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-cancel-%d", chID))),
		waitTrue(fmt.Sprintf(`document.getElementById("upload-status-%d").textContent.includes("Upload cancelled")`, chID)))
	if n := db(`SELECT count(*) FROM releases WHERE channel_id = $1`, chID); n != 0 {
		t.Errorf("%d releases after a cancelled upload", n)
	}
	if n := db(`SELECT count(*) FROM upload_sessions WHERE state = 'open'`); n != 1 {
		t.Errorf("%d open upload sessions after cancelling (want the one to resume)", n)
	}
	if hidden := text(fmt.Sprintf(`String(document.getElementById("upload-cancel-%d").hidden)`, chID)); hidden != "true" {
		t.Error("the cancel button is still shown")
	}

	// A refused value: the same page, the message beside the field, the typed values kept.
	keep, maxSize := fmt.Sprintf("keep-builds-%d", chID), fmt.Sprintf("max-bytes-%d", chID)
	steps(t, ctx, "a bad retention value",
		chromedp.SendKeys(chromedp.ID(keep), "lots"), chromedp.SendKeys(chromedp.ID(maxSize), "200 MB"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("save-retention-%d", chID))))
	steps(t, ctx, "the message in place", waitTrue(fmt.Sprintf(
		`(() => { const f = document.getElementById("retention-%d"); return !!f && f.innerText.includes("Keep builds must be a whole number"); })()`, chID)))
	// Values are read by script, as the click below the preview is made: the form's answer replaced
	// the document, and chromedp's node ids may still point into the old one (soak run 1 on
	// 2ba96b7: "No node with given id found" reading a value right after the preview).
	value := func(id string) string { return text(fmt.Sprintf(`document.getElementById(%q).value`, id)) }
	if v := value(keep); v != "lots" {
		t.Errorf("keep builds shows %q after the refusal", v)
	}
	if v := value(maxSize); v != "200 MB" {
		t.Errorf("max size shows %q after the refusal", v)
	}
	steps(t, ctx, "correct it",
		chromedp.SetValue(chromedp.ID(keep), "5"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("save-retention-%d", chID))), waitNotice("Retention saved"))
	if n := db(`SELECT count(*) FROM retention_policies WHERE channel_id = $1 AND keep_builds = 5 AND max_bytes = $2`, chID, 200<<20); n != 1 {
		t.Errorf("the corrected retention was not saved as 5 builds and 200 MB (%d rows)", n)
	}

	// Upload through the drop zone (on a page whose network works) and land on the build's page.
	navigate(t, ctx, "channel page again", chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "drop the build", chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const bytes = Uint8Array.from(atob(%q), c => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], "Lighthouse.ipa"));
		document.querySelector("#upload-%d .dropzone").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true; })()`, base64.StdEncoding.EncodeToString(data), chID)))
	steps(t, ctx, "upload the dropped build",
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("upload-changelog-%d", chID)), "First light"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))), chromedp.WaitVisible(chromedp.ID("upload-done")))
	if st := status(); !strings.Contains(st, "Uploaded 1.0 (1)") {
		t.Errorf("after the drop: status %q", st)
	}
	relID := db(`SELECT id::int FROM releases WHERE channel_id = $1`, chID)
	steps(t, ctx, "show it", chromedp.Click(chromedp.ID("upload-done")), waitTrue(`!!document.getElementById("build-version")`))
	if at := run(t, ctx, "url", chromedp.Location()); at != fmt.Sprintf("%s/console/releases/%d", e.URL, relID) {
		t.Errorf("Show it went to %s", at)
	}
	if v := text(`document.getElementById("build-version").innerText`); v != "Lighthouse 1.0 (1)" {
		t.Errorf("the build page's heading: %q", v)
	}
	facts := text(`document.querySelector("main").innerText`)
	if cl := text(fmt.Sprintf(`document.getElementById("changelog-%d").value`, relID)); !strings.Contains(cl, "First light") {
		t.Errorf("the build page's changelog: %q", cl)
	}
	for _, want := range []string{"com.example.lighthouse", "Administrator", "Open the tester page", "Share with testers", "0 installs"} {
		if !strings.Contains(facts, want) {
			t.Errorf("the build page lacks %q: %s", want, facts)
		}
	}
	if crumbs := text(`document.getElementById("breadcrumbs").innerText`); !strings.Contains(crumbs, "Lighthouse") || !strings.Contains(crumbs, "QA") || !strings.Contains(crumbs, "1.0 (1)") {
		t.Errorf("build breadcrumbs %q", crumbs)
	}
	if n := db(`SELECT count(*) FROM releases WHERE channel_id = $1`, chID); n != 1 {
		t.Errorf("%d releases after one upload", n)
	}
	if n := db(`SELECT count(*) FROM upload_sessions WHERE state = 'open'`); n > 1 {
		t.Errorf("%d upload sessions open after the upload completed (at most the cancelled one)", n)
	}

	// A second build, from CI; then preview a policy that keeps one: the plan names the older
	// build as the tester pages do, beside the form, which keeps what was typed.
	slug := ""
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT slug FROM channels WHERE id = $1`, chID).Scan(&slug); err != nil {
		t.Fatal(err)
	}
	e.UploadApp(t, "Lighthouse.ipa", ipa("Lighthouse", "1.1", "2"), apptest.Field("channel_key", slug),
		apptest.Field("branch", "main"), apptest.Field("git_commit", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"))
	navigate(t, ctx, "channel page with two builds", chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID(keep)))
	if rows := text(`document.getElementById("build-list").innerText`); !strings.Contains(rows, "9f86d081") || !strings.Contains(rows, "main") || !strings.Contains(rows, "Administrator") {
		t.Errorf("the build list does not tell the builds apart: %q", rows)
	}
	steps(t, ctx, "preview keeping one build",
		chromedp.SetValue(chromedp.ID(keep), "1"))
	run(t, ctx, "clear max size", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.getElementById(%q).value = ""; return true; })()`, maxSize)))
	steps(t, ctx, "preview",
		chromedp.Click(chromedp.ID(fmt.Sprintf("preview-retention-%d", chID))),
		waitTrue(fmt.Sprintf(`!!document.getElementById("retention-preview-%d")`, chID)))
	preview := text(fmt.Sprintf(`document.getElementById("retention-preview-%d").innerText`, chID))
	if !strings.Contains(preview, "would delete 1 build") || !strings.Contains(preview, "1.0 (1) · uploaded ") || !strings.Contains(preview, " KB") || strings.Contains(preview, "ids") {
		t.Errorf("the preview does not name the build as testers see it: %q", preview)
	}
	if v := value(keep); v != "1" {
		t.Errorf("keep builds shows %q after the preview", v)
	}
	if n := db(`SELECT count(*) FROM retention_policies WHERE channel_id = $1 AND keep_builds = 5`, chID); n != 1 {
		t.Error("the preview changed the saved policy")
	}
	// (Clicked by script: the preview's answer replaced the document chromedp's node ids point into.)
	run(t, ctx, "save what was previewed", chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.getElementById("save-retention-%d").click(); return true; })()`, chID)))
	steps(t, ctx, "saved", waitNotice("Retention saved"))
	if n := db(`SELECT count(*) FROM retention_policies WHERE channel_id = $1 AND keep_builds = 1 AND max_bytes IS NULL`, chID); n != 1 {
		t.Error("saving after the preview did not save the policy typed")
	}
	if n := db(`SELECT count(*) FROM releases WHERE channel_id = $1`, chID); n != 2 {
		t.Errorf("%d releases after saving retention (it applies at the next run)", n)
	}

	// At a phone's size no console page scrolls sideways; the build list becomes cards.
	buildURL := fmt.Sprintf("%s/console/releases/%d", e.URL, relID)
	for _, p := range []struct{ name, url, id string }{
		{"app", loc, "create-channel"}, {"channel", chURL, keep}, {"build", buildURL, "build-version"}, {"home", e.URL + "/console", "create-app"},
		{"audit", e.URL + "/console/audit", "nav-apps"}, {"devices", e.URL + "/console/devices", "nav-apps"}, {"people", e.URL + "/console/users", "nav-apps"},
	} {
		navigate(t, ctx, p.name+" at phone size", phone, chromedp.Navigate(p.url), chromedp.WaitVisible(chromedp.ID(p.id)))
		if w := run(t, ctx, "page width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
			t.Errorf("the %s page is %v px wider than a phone's screen", p.name, w)
		}
	}
	navigate(t, ctx, "channel at phone size", phone, chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID("build-list")))
	if d := text(`getComputedStyle(document.querySelector("#build-list tr")).display`); d != "block" {
		t.Errorf("the build list is not cards on a phone (rows display %q)", d)
	}

	// The README's pictures: the app, channel and build pages on a phone and a desktop
	// (docs/images/console-*.png with SLIPWAY_UPDATE_SCREENSHOT=1; test/artifacts/ always).
	e.UploadApp(t, "Lighthouse.ipa", ipa("Lighthouse", "1.2", "3"), apptest.Field("channel_key", slug),
		apptest.Field("branch", "feature/night-mode"), apptest.Field("git_commit", "2c26b46b68ffc68ff99b453c1d30413413422d70"),
		apptest.Field("changelog", "Night mode"))
	// A second channel, so the app page lists more than one.
	var schemeID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT scheme_id FROM channels WHERE id = $1`, chID).Scan(&schemeID); err != nil {
		t.Fatal(err)
	}
	r := e.Do(t, http.MethodPost, fmt.Sprintf("/api/schemes/%d/channels", schemeID), strings.NewReader(`{"name":"Beta","device_type":"ios"}`),
		http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("a second channel: %d %s", r.Status, r.Body)
	}
	e.UploadApp(t, "Lighthouse.ipa", ipa("Lighthouse", "1.3", "4"), apptest.Field("channel_key", r.Map(t)["slug"].(string)),
		apptest.Field("branch", "release/1.3"), apptest.Field("git_commit", "fcde2b2edba56bf408601fb721fe9b5c338d10ee"))
	for _, view := range []struct {
		name string
		size chromedp.Action[chromedp.Void]
	}{{"phone", phone}, {"desktop", desktop}} {
		for _, p := range []struct{ name, url, id string }{{"app", loc, "create-channel"}, {"channel", chURL, keep}, {"build", buildURL, "build-version"}} {
			navigate(t, ctx, p.name+" page", view.size, chromedp.Navigate(p.url), chromedp.WaitVisible(chromedp.ID(p.id)))
			readmeShot(t, ctx, "console-"+p.name+"-"+view.name)
		}
	}
	navigate(t, ctx, "back to desktop", desktop, chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID(keep)))

	// Tokens and the audit log have the header; revoking asks first.
	for _, p := range []string{"/console/tokens", "/console/audit", "/console/users"} {
		navigate(t, ctx, p, chromedp.Navigate(e.URL+p), chromedp.WaitVisible(chromedp.ID("nav-apps")))
	}
	navigate(t, ctx, "tokens", chromedp.Navigate(e.URL+"/console/tokens"), chromedp.WaitVisible(chromedp.ID("create-token")))
	steps(t, ctx, "create a token", chromedp.SendKeys(chromedp.ID("token-name"), "ci-forms"),
		chromedp.Click(chromedp.ID("create-token-submit")), chromedp.WaitVisible(chromedp.ID("new-token-secret")))
	tokID := db(`SELECT id::int FROM api_tokens WHERE name = 'ci-forms'`)
	revoke := fmt.Sprintf("revoke-%d", tokID)
	run(t, ctx, "refuse the question", chromedp.Evaluate[bool](`window.asked = 0; window.confirm = () => { window.asked++; return false; }; true`))
	steps(t, ctx, "revoke, then say no", chromedp.Click(chromedp.ID(revoke)))
	if text(`String(window.asked)`) != "1" || db(`SELECT count(*) FROM api_tokens WHERE name = 'ci-forms' AND revoked_at IS NULL`) != 1 {
		t.Error("revoking did not ask, or revoked when told no")
	}
	run(t, ctx, "accept the question", chromedp.Evaluate[bool](`window.confirm = () => true; true`))
	steps(t, ctx, "revoke", chromedp.Click(chromedp.ID(revoke)), waitNotice("Token revoked"))
	if n := db(`SELECT count(*) FROM api_tokens WHERE name = 'ci-forms' AND revoked_at IS NOT NULL`); n != 1 {
		t.Errorf("the token is not revoked (%d)", n)
	}
	navigate(t, ctx, "tokens at phone size", phone, chromedp.Navigate(e.URL+"/console/tokens"), chromedp.WaitVisible(chromedp.ID("create-token")))
	if w := run(t, ctx, "page width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
		t.Errorf("the tokens page is %v px wider than a phone's screen", w)
	}

	// Delete the first build from its page, then open its old tester link, as a tester with the
	// link would: the page says it was removed and leads to the channel's newest build.
	newest := db(`SELECT max(id)::int FROM releases WHERE channel_id = $1`, chID)
	before := db(`SELECT count(*) FROM releases WHERE channel_id = $1`, chID)
	navigate(t, ctx, "the first build's page", desktop, chromedp.Navigate(fmt.Sprintf("%s/console/releases/%d", e.URL, relID)), chromedp.WaitVisible(chromedp.ID("tester-link")))
	testerURL := text(`document.getElementById("tester-link").href`)
	run(t, ctx, "accept the question", chromedp.Evaluate[bool](`window.confirm = () => true; true`))
	// (With script the ticked box gives way to the browser's question, answered yes above.)
	steps(t, ctx, "delete the build", chromedp.Click(chromedp.ID(fmt.Sprintf("delete-%d", relID))), waitNotice("deleted"))
	if n := db(`SELECT count(*) FROM releases WHERE id = $1`, relID); n != 0 {
		t.Fatalf("the build is still there after Delete (%d)", n)
	}
	navigate(t, ctx, "the old tester link", chromedp.Navigate(testerURL), chromedp.WaitVisible(chromedp.ID("gone")))
	if what := text(`document.getElementById("gone-what").innerText`); !strings.Contains(what, "1.0 (1)") || !strings.Contains(what, "by a team member") {
		t.Errorf("the removal page says %q", what)
	}
	if href := text(`document.getElementById("newest-build").href`); !strings.HasSuffix(href, fmt.Sprintf("/releases/%d", newest)) {
		t.Errorf("the removal page leads to %q, not the newest build %d", href, newest)
	}
	if n := db(`SELECT count(*) FROM releases WHERE channel_id = $1`, chID); n != before-1 {
		t.Errorf("%d releases left after deleting one of %d", n, before)
	}
}

// readmeShot saves the viewport as name.png in test/artifacts/ and, with
// SLIPWAY_UPDATE_SCREENSHOT=1, in docs/images/ (the README's pictures of the console).
func readmeShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	steps(t, ctx, "images loaded", waitTrue(`Array.from(document.images).every(i => i.complete)`))
	img := run(t, ctx, "screenshot", chromedp.CaptureScreenshot())
	dirs := []string{artifactsDir}
	if os.Getenv("SLIPWAY_UPDATE_SCREENSHOT") == "1" {
		dirs = append(dirs, "../../docs/images")
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name+".png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// waitTrue waits until expression is true in the page, retrying while the page navigates.
func waitTrue(expression string) chromedp.Action[chromedp.Void] {
	check := chromedp.Evaluate[bool](expression)
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		for {
			if ok, err := check(ctx, t); err == nil && ok {
				return chromedp.Void{}, nil
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
