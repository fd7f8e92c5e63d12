package web_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserFeedbackInbox opens an app's feedback inbox in chromium, signed in as an admin, on
// S3 (the thumbnails are redirects to presigned URLs of another origin): every thumbnail loads,
// axe-core finds no violation on a phone or the desktop, the phone's layout checks pass, and the
// Resolve button resolves the report it belongs to.
func TestBrowserFeedbackInbox(t *testing.T) {
	axeSource := axeCore(t)
	fx := newFeedbackFixture(t, apptest.Options{Storage: apptest.S3})
	e := fx.e
	bctx := browser(t)
	ctx := tab(t, bctx)
	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "sign in", desktop, chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
		chromedp.WaitVisible(chromedp.ID("console-user")))

	// On a phone: layout and axe-core.
	p := &phoneCheck{t: t, axe: axeSource}
	steps(t, ctx, "phone viewport", phone)
	p.check(ctx, "the feedback inbox", fx.inbox, 200)

	// On the desktop: the thumbnails load, axe-core again, a screenshot to look at.
	navigate(t, ctx, "the inbox", desktop, chromedp.Navigate(fx.inbox), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("feedback-%d", fx.r1))))
	steps(t, ctx, "images loaded", waitTrue(`Array.from(document.images).every(i => i.complete)`))
	shots := run(t, ctx, "thumbnails", chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll('.feedback-shots img')).map(i => i.naturalWidth)`))
	if len(shots) != 2 {
		t.Errorf("%d thumbnails on the inbox, want 2", len(shots))
	}
	for i, w := range shots {
		if w <= 0 {
			t.Errorf("thumbnail %d did not load (naturalWidth %d)", i+1, w)
		}
	}
	run(t, ctx, "load axe-core", chromedp.Evaluate[bool](axeSource+"\n;typeof axe === 'object'"))
	for _, v := range run(t, ctx, "axe-core", chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r =>
		r.violations.flatMap(v => v.nodes.map(n => v.id + ' (' + v.impact + '): ' + v.help + ': ' + n.target.join(' ') + ' ' + n.html.slice(0, 120))))`,
		chromedp.EvalAwaitPromise)) {
		t.Errorf("the inbox on the desktop: axe-core: %s", v)
	}
	(&tester{t: t, ctx: ctx}).screenshot("console-feedback-inbox")

	// Resolve r2: the page comes back at it, says so, and offers Reopen.
	steps(t, ctx, "resolve", chromedp.Click(chromedp.ID(fmt.Sprintf("feedback-resolve-%d", fx.r2))), waitNotice(fmt.Sprintf("Report %d marked resolved.", fx.r2)))
	steps(t, ctx, "reopen offered", chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("feedback-reopen-%d", fx.r2))))
	if s := reportState(t, e, fx.r2); s != "resolved" {
		t.Errorf("r2 is %s after Resolve in the browser", s)
	}
	if u := run(t, ctx, "url", chromedp.Location()); u != fmt.Sprintf("%s#feedback-%d", fx.inbox, fx.r2) {
		t.Errorf("after Resolve: %s", u)
	}
}
