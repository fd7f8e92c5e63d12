package web_test

import (
	"context"
	"fmt"
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
	navigate(t, ctx, "app page", chromedp.Navigate(loc), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))))
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
	if v := run(t, ctx, "kept", chromedp.Value(chromedp.ID(keep))); v != "lots" {
		t.Errorf("keep builds shows %q after the refusal", v)
	}
	if v := run(t, ctx, "kept", chromedp.Value(chromedp.ID(maxSize))); v != "200 MB" {
		t.Errorf("max size shows %q after the refusal", v)
	}
	steps(t, ctx, "correct it",
		chromedp.SetValue(chromedp.ID(keep), "5"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("save-retention-%d", chID))), waitNotice("Retention saved"))
	if n := db(`SELECT count(*) FROM retention_policies WHERE channel_id = $1 AND keep_builds = 5 AND max_bytes = $2`, chID, 200<<20); n != 1 {
		t.Errorf("the corrected retention was not saved as 5 builds and 200 MB (%d rows)", n)
	}

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
