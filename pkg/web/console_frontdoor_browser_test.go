package web_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/test/apptest"
)

// The browser day-one test (issue 34): a newcomer on a fresh server starts at /, signs in (with
// the one-time link `slipway admin login-link` prints), reaches the console's home, drops one
// real build on its upload box and reaches the build's page, with nothing made beforehand; on a
// desktop (1366 × 900) and a phone (390 × 844).
func TestBrowserDayOne(t *testing.T) {
	bctx := browser(t)
	data := pkg(t, "android/politedroid-1.3-4.apk", func() []byte { return apk("Polite Droid", "1.3", 4) })
	path := filepath.Join(t.TempDir(), "politedroid-1.3-4.apk")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, vp := range []struct {
		name string
		size chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1366, 900, chromedp.EmulateScale(1), chromedp.EmulateOrientation(emulation.ScreenOrientationTypeLandscapePrimary, 90))},
		{"phone", phone},
	} {
		t.Run(vp.name, func(t *testing.T) {
			e := apptest.New(t, apptest.Options{})
			ctx := tab(t, bctx)
			b := &tester{t: t, e: e, ctx: ctx}
			text := func(js string) string { return run(t, ctx, js, chromedp.Evaluate[string](js)) }

			resp := navigate(t, ctx, "/", vp.size, chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible("main"))
			if resp == nil || resp.Status != 200 {
				t.Fatalf("/ on a fresh server: %+v", resp)
			}
			secret, err := e.Service.Logins.NewLoginLink(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			navigate(t, ctx, "sign in", chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
				chromedp.WaitVisible(chromedp.ID("first-upload")))
			if u := run(t, ctx, "url", chromedp.Location()); u != e.URL+"/console" {
				t.Errorf("signed in at %s, want the console's home", u)
			}
			if w := run(t, ctx, "home width", chromedp.Evaluate[float64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`)); w > 0 {
				t.Errorf("the console's home is %v px wider than the %s's screen", w, vp.name)
			}
			// The README's picture of the console's home (docs/images with SLIPWAY_UPDATE_SCREENSHOT=1).
			readmeShot(t, ctx, "console-home-"+vp.name)
			steps(t, ctx, "drop a build on the home page's box",
				chromedp.SetUploadFiles(chromedp.ID("upload-file"), []string{path}),
				chromedp.SetValue(chromedp.ID("upload-changelog"), "The first build"),
				chromedp.Click(chromedp.ID("upload-submit")))
			steps(t, ctx, "on the build's page", waitTrue(`location.pathname.startsWith("/console/releases/") && !!document.getElementById("build-version")`))
			var relID int64
			var app, channel string
			if err := e.DB.Pool.QueryRow(t.Context(), `SELECT r.id, a.name, c.device_type FROM releases r JOIN channels c ON c.id = r.channel_id
				JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id`).Scan(&relID, &app, &channel); err != nil {
				t.Fatalf("the build was not recorded: %v", err)
			}
			if u := run(t, ctx, "url", chromedp.Location()); u != fmt.Sprintf("%s/console/releases/%d", e.URL, relID) {
				t.Errorf("after the upload at %s, want build %d's page", u, relID)
			}
			if h := text(`document.getElementById("build-version").innerText`); !strings.Contains(h, "Polite Droid 1.3") || !strings.Contains(h, "(4)") || app != "Polite Droid" || channel != "android" {
				t.Errorf("the build's page says %q; recorded app %q, channel %q", h, app, channel)
			}
			if n := count(t, e, `SELECT count(*) FROM apps`); n != 1 {
				t.Errorf("%d apps after one upload", n)
			}
			b.screenshot("console-first-build-" + vp.name)
		})
	}
}

// A build uploaded on a channel's page shows in its builds list at once: the list said "No builds
// yet" under "Uploaded 1.2.3 (5). Show it" until the page was loaded again.
func TestBrowserChannelUploadShowsInList(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ctx := tab(t, browser(t))
	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "sign in", desktop, chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
		chromedp.WaitVisible(chromedp.ID("console-apps")))
	// An app with an empty channel, made in the console as a team lead would.
	var chID int64
	steps(t, ctx, "create an app", chromedp.SendKeys(chromedp.ID("app-new-name"), "Harbor"),
		chromedp.Click(chromedp.ID("create-app-submit")), waitNotice("App Harbor made"))
	steps(t, ctx, "create a channel", chromedp.WaitVisible(chromedp.ID("channel-name")),
		chromedp.SendKeys(chromedp.ID("channel-name"), "QA"),
		chromedp.Click(chromedp.ID("create-channel-submit")), waitNotice("Channel QA made"))
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT id FROM channels WHERE name = 'QA'`).Scan(&chID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "Harbor-1.2.3.ipa")
	if err := os.WriteFile(path, ipa("Harbor", "1.2.3", "5"), 0o600); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "channel page", chromedp.Navigate(fmt.Sprintf("%s/console/channels/%d", e.URL, chID)),
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("upload-file-%d", chID))))
	run(t, ctx, "mark the page", chromedp.Evaluate[bool](`window.notReloaded = true; true`))
	steps(t, ctx, "upload", chromedp.SetUploadFiles(chromedp.ID(fmt.Sprintf("upload-file-%d", chID)), []string{path}),
		chromedp.Click(chromedp.ID(fmt.Sprintf("upload-submit-%d", chID))), chromedp.WaitVisible(chromedp.ID("upload-done")))
	run(t, ctx, "the list shows the build", chromedp.Poll[bool](`!!document.getElementById("build-list") && document.getElementById("build-list").innerText.includes("1.2.3 (5)")`))
	if still := run(t, ctx, "same page", chromedp.Evaluate[bool](`window.notReloaded === true`)); !still {
		t.Error("the page was loaded again: the upload box's message is gone")
	}
	if got := run(t, ctx, "status", chromedp.Text(chromedp.ID(fmt.Sprintf("upload-status-%d", chID)))); !strings.Contains(got, "Uploaded 1.2.3 (5)") {
		t.Errorf("the upload box says %q", got)
	}
	if body := run(t, ctx, "builds", chromedp.Text(chromedp.ID("builds"))); strings.Contains(body, "No builds yet") {
		t.Errorf("the builds list still says there are none: %q", body)
	}
}

// The upload box of an app's page, with its script: the build goes into that app, whatever the
// package calls itself (its channel made for its platform), and the browser lands on its page.
func TestBrowserAppPageUpload(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ctx := tab(t, browser(t))
	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "sign in", phone, chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
		chromedp.WaitVisible(chromedp.ID("console-apps")))
	steps(t, ctx, "create an app", chromedp.SendKeys(chromedp.ID("app-new-name"), "Harbor"),
		chromedp.Click(chromedp.ID("create-app-submit")), waitNotice("App Harbor made"))
	var appID int64
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT id FROM apps WHERE name = 'Harbor'`).Scan(&appID); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "droid-2.0.apk")
	if err := os.WriteFile(path, apk("Droid", "2.0", 20), 0o600); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "app page", chromedp.Navigate(fmt.Sprintf("%s/console/apps/%d", e.URL, appID)), chromedp.WaitVisible(chromedp.ID("app-upload")))
	steps(t, ctx, "upload on the app's page", chromedp.SetUploadFiles(chromedp.ID("upload-file"), []string{path}),
		chromedp.Click(chromedp.ID("upload-submit")),
		waitTrue(`location.pathname.startsWith("/console/releases/") && !!document.getElementById("build-version")`))
	var app int64
	var channel string
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT s.app_id, c.device_type FROM releases r JOIN channels c ON c.id = r.channel_id
		JOIN schemes s ON s.id = c.scheme_id WHERE r.release_version = '2.0'`).Scan(&app, &channel); err != nil {
		t.Fatalf("the build was not recorded: %v", err)
	}
	if app != appID || channel != "android" || count(t, e, `SELECT count(*) FROM apps`) != 1 {
		t.Errorf("the build went into app %d (%s channel), %d apps; want app %d only", app, channel, count(t, e, `SELECT count(*) FROM apps`), appID)
	}
}
