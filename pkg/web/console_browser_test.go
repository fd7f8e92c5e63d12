package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserConsoleSignIn signs in to the console in chromium through a real OpenID Connect
// provider on loopback (its own login form), sees who is signed in, and signs out.
func TestBrowserConsoleSignIn(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	// On S3 (MinIO), so the web upload PUTs its parts to presigned URLs on another origin, as it
	// does in production (the console's CSP and MinIO's CORS both have to let it).
	e := apptest.New(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) {
		// The provider's ID tokens say "amr": ["pwd"]: read as the groups claim, its user is in
		// the admin groups (coming first makes nobody an admin).
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "amr", AdminGroups: []string{"pwd"}, AllowAny: true}
		c.WebhookAllowPrivate = true
	}})
	startProvider(t, port, e.URL+"/console/callback")
	ctx := tab(t, browser(t))
	b := &tester{t: t, e: e, ctx: ctx}

	// The console sends the browser to the provider's login form.
	navigate(t, ctx, "console", desktop, chromedp.Navigate(e.URL+"/console"), chromedp.WaitVisible(chromedp.ID("username")))
	if u := run(t, ctx, "url", chromedp.Location()); !strings.HasPrefix(u, issuer) {
		t.Fatalf("not at the provider: %s", u)
	}
	steps(t, ctx, "sign in at the provider",
		chromedp.SendKeys(chromedp.ID("username"), "test-user@localhost"),
		chromedp.SendKeys(chromedp.ID("password"), "verysecure"),
		chromedp.Click(`button[type="submit"]`),
		chromedp.WaitVisible(chromedp.ID("console-user")))
	if u := run(t, ctx, "url", chromedp.Location()); u != e.URL+"/console" {
		t.Errorf("after signing in: %s", u)
	}
	if who := run(t, ctx, "user", chromedp.Text(chromedp.ID("console-user"))); who != "Test User" {
		t.Errorf("signed in as %q", who)
	}
	if role := run(t, ctx, "role", chromedp.Text(chromedp.ID("console-role"))); role != "admin" {
		t.Errorf("role %q (the admin groups' member is an admin)", role)
	}
	b.screenshot("console-desktop")

	// The app page: a new channel with a password, a changelog edit, retention, a webhook.
	rel := e.UploadApp(t, "h.ipa", ipa("Harbor", "1.0", "1"))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	relID := int64(rel["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	// Each form is filled on a freshly loaded page: right after a form's answer replaces the page,
	// chromedp's node queries may still resolve against the old document.
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	open := func() {
		navigate(t, ctx, "channel page", chromedp.Navigate(chURL), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("keep-builds-%d", chID))))
	}
	navigate(t, ctx, "app page", desktop, chromedp.Navigate(appURL), chromedp.WaitVisible(chromedp.ID("create-channel")))
	steps(t, ctx, "create a channel",
		chromedp.SendKeys(chromedp.ID("channel-name"), "QA"),
		chromedp.SendKeys(chromedp.ID("channel-password"), "tester-pw"),
		chromedp.Click(chromedp.ID("create-channel-submit")), waitNotice("Channel QA made"))
	navigate(t, ctx, "build page", chromedp.Navigate(fmt.Sprintf("%s/console/releases/%d", e.URL, relID)), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("changelog-%d", relID))))
	steps(t, ctx, "edit the changelog",
		chromedp.SetValue(chromedp.ID(fmt.Sprintf("changelog-%d", relID)), "Fixed the login screen"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("save-changelog-%d", relID))), waitNotice("saved"))
	open()
	steps(t, ctx, "set retention",
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("keep-builds-%d", chID)), "5"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("save-retention-%d", chID))), waitNotice("Retention saved"))
	open()
	steps(t, ctx, "add a webhook",
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("webhook-url-%d", chID)), "http://127.0.0.1:9/hook"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("add-webhook-%d", chID))), waitNotice("Webhook added"))
	if body := run(t, ctx, "page", chromedp.Evaluate[string](`document.querySelector("main").innerText`)); !strings.Contains(body, "whsec_") {
		t.Fatalf("after adding a webhook: %s", body)
	}

	// The web upload: a 16 MiB build in four parts (5 MiB in tests), sent with progress.
	path := filepath.Join(t.TempDir(), "Harbor-1.1.ipa")
	if err := os.WriteFile(path, appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor",
		Version: "1.1", Build: "2", FillerBytes: 16 << 20}), 0o600); err != nil {
		t.Fatal(err)
	}
	// The network fails part 2 (the page's XMLHttpRequest fails it, as a reset connection does):
	// the script tries it four times, asking the session for fresh URLs, then gives up. The page
	// is loaded again, as after closing it, and the same file dropped again: the upload resumes,
	// sending only the parts not stored yet, and the build arrives whole.
	flaky := func(failPartTwo bool) chromedp.Action[bool] {
		return chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		const open = XMLHttpRequest.prototype.open, send = XMLHttpRequest.prototype.send;
		window.sends = {};
		XMLHttpRequest.prototype.open = function (method, url) { this.slipwayURL = String(url); return open.apply(this, arguments); };
		XMLHttpRequest.prototype.send = function () {
			const m = /[?&]partNumber=(\d+)/.exec(this.slipwayURL);
			if (m) {
				window.sends[m[1]] = (window.sends[m[1]] || 0) + 1;
				if (m[1] === "2" && %t) {
					setTimeout(() => this.onerror && this.onerror(new ProgressEvent("error")), 10);
					return;
				}
			}
			return send.apply(this, arguments);
		};
		return true;
	})()`, failPartTwo))
	}
	sends := func() map[string]int { return run(t, ctx, "sends", chromedp.Evaluate[map[string]int](`window.sends`)) }
	choose := func() chromedp.Action[chromedp.Void] {
		return chromedp.SetUploadFiles(chromedp.ID(fmt.Sprintf("upload-file-%d", chID)), []string{path})
	}
	open()
	run(t, ctx, "fail part 2", flaky(true))
	steps(t, ctx, "upload a build through the web form, failing",
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))), choose(),
		chromedp.SetValue(chromedp.ID(fmt.Sprintf("upload-changelog-%d", chID)), "Uploaded from the browser"),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))))
	run(t, ctx, "the upload fails", chromedp.Poll[bool](fmt.Sprintf(`document.getElementById("upload-status-%d").textContent.includes("Upload failed")`, chID)))
	if got := sends(); got["1"] != 1 || got["2"] != 4 || got["3"] != 0 {
		t.Errorf("parts sent while part 2 failed: %v (want part 1 once, part 2 four times, no more)", got)
	}
	open()
	run(t, ctx, "a working network", flaky(false))
	steps(t, ctx, "upload the same file again",
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))), choose(),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))),
		chromedp.WaitVisible(chromedp.ID("upload-done")))
	if got := sends(); got["1"] != 0 || got["2"] != 1 || got["3"] != 1 || got["4"] != 1 {
		t.Errorf("parts sent when resuming: %v (want parts 2 to 4 once, part 1 not again)", got)
	}
	if kept := run(t, ctx, "saved sessions", chromedp.Evaluate[int](`window.localStorage.length`)); kept != 0 {
		t.Errorf("%d upload sessions still kept for resuming after the upload completed", kept)
	}
	status := run(t, ctx, "upload status", chromedp.Text(chromedp.ID(fmt.Sprintf("upload-status-%d", chID))))
	progress := run(t, ctx, "progress", chromedp.Evaluate[float64](fmt.Sprintf(`document.getElementById("upload-progress-%d").value`, chID)))
	if !strings.Contains(status, "Uploaded 1.1 (2)") || progress != 1 {
		t.Errorf("after the upload: status %q, progress %v", status, progress)
	}
	// The box is emptied (a second click cannot send the build again) and the success is green.
	if left := run(t, ctx, "box after upload", chromedp.Evaluate[string](fmt.Sprintf(`(() => {
		const f = document.getElementById("upload-%d");
		return f.querySelector("input[type=file]").files.length + "|" + f.querySelector("textarea").value + "|" + document.getElementById("upload-status-%d").className;
	})()`, chID, chID))); left != "0||upload-status ok" {
		t.Errorf("the upload box after success: %q (files|changelog|status class)", left)
	}
	var upChangelog, source, uploader string
	var size int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT r.changelog::text, r.source, r.size, t.name FROM releases r
		JOIN api_tokens t ON t.id = r.uploaded_by WHERE r.channel_id = $1 AND r.release_version = '1.1'`, chID).Scan(&upChangelog, &source, &size, &uploader); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); !strings.Contains(upChangelog, "Uploaded from the browser") || source != "console" || size != fi.Size() || !strings.HasPrefix(uploader, "console uploads of user") {
		t.Errorf("the uploaded release: changelog %s, source %q, size %d (file %d), uploaded by %q", upChangelog, source, size, fi.Size(), uploader)
	}
	b.screenshot("console-channel-desktop")
	// (Navigate, not Reload: reloading the answer to the webhook form would post it again.)
	navigate(t, ctx, "app page at phone size", phone, chromedp.Navigate(appURL), chromedp.WaitVisible(chromedp.ID("create-channel")))
	if w := run(t, ctx, "page width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
		t.Errorf("the app page is %v px wider than a phone's screen", w)
	}
	b.screenshot("console-app-phone")
	navigate(t, ctx, "console at phone size", chromedp.Navigate(e.URL+"/console"), chromedp.WaitVisible(chromedp.ID("logout")))
	if w := run(t, ctx, "page width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
		t.Errorf("the console's home is %v px wider than a phone's screen", w)
	}
	b.screenshot("console-phone")
	navigate(t, ctx, "app page at desktop size", desktop, chromedp.Navigate(appURL), chromedp.WaitVisible(chromedp.ID("create-channel")))
	var changelog string
	var keep int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT r.changelog::text, coalesce(p.keep_builds, 0) FROM releases r
		LEFT JOIN retention_policies p ON p.channel_id = r.channel_id WHERE r.id = $1`, relID).Scan(&changelog, &keep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(changelog, "Fixed the login screen") || keep != 5 {
		t.Errorf("after the forms: changelog %s, keep_builds %d", changelog, keep)
	}

	// Tokens: make one (its secret shown once) and revoke it.
	navigate(t, ctx, "tokens", chromedp.Navigate(e.URL+"/console/tokens"), chromedp.WaitVisible(chromedp.ID("create-token")))
	steps(t, ctx, "create a token",
		chromedp.SendKeys(chromedp.ID("token-name"), "ci-browser"),
		chromedp.Click(chromedp.ID("create-token-submit")),
		chromedp.WaitVisible(chromedp.ID("new-token-secret")))
	var tokenID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM api_tokens WHERE name = 'ci-browser'`).Scan(&tokenID); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "tokens", chromedp.Navigate(e.URL+"/console/tokens"), chromedp.WaitVisible(chromedp.ID("create-token")))
	// (Revoking asks in a dialog; the test answers yes.)
	run(t, ctx, "answer yes", chromedp.Evaluate[bool](`window.confirm = () => true; true`))
	steps(t, ctx, "revoke it", chromedp.Click(chromedp.ID(fmt.Sprintf("revoke-%d", tokenID))),
		chromedp.WaitNotPresent(chromedp.ID(fmt.Sprintf("revoke-%d", tokenID))), chromedp.WaitVisible(chromedp.ID("create-token")))
	var revoked bool
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT revoked_at IS NOT NULL FROM api_tokens WHERE id = $1`, tokenID).Scan(&revoked); err != nil || !revoked {
		t.Errorf("the token was not revoked (%v)", err)
	}
	navigate(t, ctx, "console", chromedp.Navigate(e.URL+"/console"), chromedp.WaitVisible(chromedp.ID("logout")))

	steps(t, ctx, "sign out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("signin-message")))
	if u := run(t, ctx, "url", chromedp.Location()); u != e.URL+"/console/login?signed_out=1" {
		t.Errorf("after signing out: %s", u)
	}
	if a, r := sessions(t, e); a != 0 || r != 1 {
		t.Errorf("sessions active %d revoked %d after signing out", a, r)
	}
}

// waitNotice waits for the page that answers a console form: its notice says text. The page
// navigates meanwhile, so evaluation errors are retried until the new page answers.
func waitNotice(text string) chromedp.Action[chromedp.Void] {
	check := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const n = document.getElementById("notice"); return !!n && n.textContent.includes(%q); })()`, text))
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
