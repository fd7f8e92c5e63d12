package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserConsoleSignIn signs in to the console in chromium through a real OpenID Connect
// provider on loopback (its own login form), sees who is signed in, and signs out.
func TestBrowserConsoleSignIn(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups"}
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
		t.Errorf("role %q (the first user is an admin)", role)
	}
	b.screenshot("console-desktop")
	navigate(t, ctx, "console at phone size", phone, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("logout")))
	b.screenshot("console-phone")

	steps(t, ctx, "sign out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("signin-message")))
	if u := run(t, ctx, "url", chromedp.Location()); u != e.URL+"/console/login?signed_out=1" {
		t.Errorf("after signing out: %s", u)
	}
	if a, r := sessions(t, e); a != 0 || r != 1 {
		t.Errorf("sessions active %d revoked %d after signing out", a, r)
	}
}
