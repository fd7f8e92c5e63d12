package web_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestBrowserTesterMailLink walks a tester on a phone (390×844) in chromium: the sign-in page,
// the mail as the relay (Mailpit) received it and the link in it, the button that spends it, their home, the build's Install button,
// and the install itself (the manifest the itms-services link names, fetched as the device
// would), which the team then sees as "installed".
func TestBrowserTesterMailLink(t *testing.T) {
	bctx := browser(t)
	relay := mailpit.Start(t, mailpit.Options{TLS: mailpit.OptionalSTARTTLS})
	s := newTesterSite(t, relay)
	e := s.e
	ctx := tab(t, bctx)
	b := &tester{t: t, e: e, ctx: ctx}
	noOverflow := func(what string) {
		t.Helper()
		if w := run(t, ctx, what+" width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 390 {
			t.Errorf("%s is %d px wide on a 390 px phone", what, w)
		}
	}

	// Anonymous, the build's page sends the phone to sign in, keeping where it was going.
	navigate(t, ctx, "release page", phone, chromedp.Navigate(e.URL+s.releasePath), chromedp.WaitVisible(chromedp.ID("signin-email")))
	if u := run(t, ctx, "url", chromedp.Location()); !strings.HasPrefix(u, e.URL+"/t/signin?next=") {
		t.Fatalf("not at sign-in: %s", u)
	}
	noOverflow("the sign-in page")
	b.screenshot("tester-signin-phone")
	steps(t, ctx, "ask for a link", chromedp.SendKeys(chromedp.ID("signin-email"), "ada@example.com"),
		chromedp.Click(chromedp.ID("signin-submit")), chromedp.WaitVisible(chromedp.ID("signin-sent")))

	// The mail, as the tester's mail client shows it (the relay's copy of its HTML part), and
	// the link in it: a page with one button (opening it spent nothing).
	msgs := relay.WaitFor(t, "ada@example.com", 1)
	mailTab := tab(t, bctx)
	navigate(t, mailTab, "the mail", phone, chromedp.Navigate("http://"+relay.HTTPAddr+"/view/"+msgs[0].ID+".html"),
		chromedp.WaitVisible(`a[href*="/t/in/"]`))
	link := run(t, mailTab, "the mail's link", chromedp.Evaluate[string](`document.querySelector('a[href*="/t/in/"]').href`))
	if !strings.HasPrefix(link, e.URL+"/t/in/") {
		t.Fatalf("the mail's link: %q", link)
	}
	// Once sent, the outbox keeps no usable link.
	testkit.Eventually(t, time.Minute, "the sent sign-in mail's link to leave the outbox", func() bool {
		return count(t, e, `SELECT count(*) FROM mail_outbox WHERE recipient = 'ada@example.com' AND kind = 'sign_in' AND text_body LIKE '%/t/in/%'`) == 0
	})
	navigate(t, ctx, "the mailed link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("link-submit")))
	noOverflow("the link page")
	b.screenshot("tester-link-phone")
	steps(t, ctx, "sign in", chromedp.Click(chromedp.ID("link-submit")), chromedp.WaitVisible(chromedp.ID("tester-state")))
	// Back where the tester was going: the build's page, which says their state.
	if u := run(t, ctx, "url", chromedp.Location()); u != e.URL+s.releasePath {
		t.Errorf("after signing in: %s", u)
	}

	// Their home lists the build with its Install button.
	navigate(t, ctx, "home", chromedp.Navigate(e.URL+"/t"), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("install-%d", s.relID))))
	noOverflow("the tester's home")
	b.screenshot("tester-home-phone")
	if who := run(t, ctx, "who", chromedp.Text(chromedp.ID("tester-email"))); who != "ada@example.com" {
		t.Errorf("home of %q", who)
	}
	steps(t, ctx, "open the build", chromedp.Click(chromedp.ID(fmt.Sprintf("install-%d", s.relID))), chromedp.WaitVisible(chromedp.ID("install")))
	noOverflow("the release page")
	b.screenshot("tester-release-phone")
	href := run(t, ctx, "install link", chromedp.Evaluate[string](`document.getElementById("install").getAttribute("href")`))
	const prefix = "itms-services://?action=download-manifest&url="
	if !strings.HasPrefix(href, prefix) {
		t.Fatalf("the Install button: %q", href)
	}
	manifest, err := url.QueryUnescape(strings.TrimPrefix(href, prefix))
	if err != nil || !strings.Contains(manifest, "access=t") {
		t.Fatalf("the manifest URL %q carries no tester token (%v)", manifest, err)
	}
	// iOS fetches the manifest itself, without the browser's cookies: so does a fresh browser
	// context here.
	device := tab(t, bctx)
	resp := navigate(t, device, "fetch the manifest", chromedp.Navigate(manifest))
	if resp == nil || resp.Status != 200 || !strings.HasPrefix(resp.MimeType, "text/xml") {
		t.Fatalf("the manifest: %+v", resp)
	}
	if st := testerState(t, e, s.relID, "ada@example.com"); st != "installed" {
		t.Errorf("after the install, ada is %q", st)
	}
	navigate(t, ctx, "release page again", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("tester-state")))
	if st := run(t, ctx, "state", chromedp.Evaluate[string](`document.getElementById("tester-state").dataset.state`)); st != "installed" {
		t.Errorf("the page says %q", st)
	}
}
