package web_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserPhonePages opens every tester page and every main console page in chromium at a
// phone's 390 × 844 (issue 34) and checks, in the page:
//   - nothing scrolls sideways (document.scrollingElement.scrollWidth <= innerWidth);
//   - every visible interactive element (a link, button, input, select, summary, and the label
//     of a checkbox or radio, which is its tap target) is at least 44 × 44 CSS px (WCAG 2.2's
//     2.5.5 target size). There is no exception: a link inside running text is given the
//     height too (docs/decisions.md, "Phone-sized pages"; README);
//   - no table is cut off in a box that scrolls sideways (a guide's tables and code blocks
//     excepted: they scroll, keyboard-reachable);
//   - axe-core (SLIPWAY_TEST_AXE, fetched from npm by test/axe.sh) reports no violation.
//
// A failure names the page and the element (tag, id, classes and text).
func TestBrowserPhonePages(t *testing.T) {
	axeSource := axeCore(t)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	bctx := browser(t)

	// A public channel whose build carries an ad hoc profile (entitlements, devices), a
	// password-protected one, and a channel for a tester group.
	pub := upload(t, e, "listed.ipa", adhocIPA("Listed", "1", []string{testUDID}, false),
		apptest.Field("changelog", "Fixed the login screen\nFaster start"))
	locked := upload(t, e, "secret.ipa", ipa("Secret", "1.0", "1"), apptest.Field("name", "Secret"), apptest.Field("password", "open sesame"))
	tm := e.UploadApp(t, "harbor.ipa", ipa("Harbor", "1.0", "1"))
	tch := tm["channel"].(map[string]any)
	tslug, tchID := tch["slug"].(string), int64(tch["id"].(float64))
	if st := api(t, e, http.MethodPost, "/api/groups", map[string]any{"alias": "qa", "name": "QA"}, nil); st != http.StatusCreated {
		t.Fatalf("making the group: %d", st)
	}
	if st := api(t, e, http.MethodPost, "/api/groups/qa/testers", map[string]any{"emails": []string{"ada@example.com"}}, nil); st != 200 {
		t.Fatalf("adding testers: %d", st)
	}
	if st := api(t, e, http.MethodPatch, fmt.Sprintf("/api/channels/%d", tchID), map[string]any{"tester_groups": []string{"qa"}}, nil); st != 200 {
		t.Fatalf("setting the channel's groups: %d", st)
	}
	tr := upload(t, e, "harbor.ipa", ipa("Harbor", "1.1", "2"), apptest.Field("channel_key", tslug))
	var hook struct {
		ID int64 `json:"id"`
	}
	if st := api(t, e, http.MethodPost, fmt.Sprintf("/api/channels/%d/webhooks", tchID), map[string]any{"url": "http://127.0.0.1:9/hook"}, &hook); st != http.StatusCreated {
		t.Fatalf("adding a webhook: %d", st)
	}
	// A registered device, as iOS registers it through the UDID profile.
	answer := profileservicetest.Answer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "VERSION": "21A360",
		"DEVICE_NAME": "Tester's iPhone", "CHALLENGE": profileChallenge(t, e)})
	if r := do(t, e, http.MethodPost, "/udid/callback", bytes.NewReader(answer), http.Header{"Content-Type": {"application/pkcs7-signature"}}); r.Status != http.StatusMovedPermanently {
		t.Fatalf("registering the device: %d %s", r.Status, r.Body)
	}
	// Its second build adds entitlements with long names: the build page lists what changed.
	pm := e.UploadApp(t, "listed.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Listed", BundleID: "com.example.listed", Version: "1.0", Build: "2",
		Profile: &appletest.ProfileOptions{Name: "Listed Ad Hoc", AppID: "TEAM123456.com.example.listed", Devices: []string{testUDID},
			CreatedAt: time.Now().AddDate(0, -1, 0), ExpiresAt: time.Now().AddDate(1, 0, 0), Entitlements: map[string]any{
				"com.apple.developer.networking.networkextension":      []string{"packet-tunnel-provider-systemextension", "app-proxy-provider-systemextension"},
				"com.apple.developer.ubiquity-kvstore-identifier":      "TEAM123456.com.example.listed.shared-key-value-store",
				"com.apple.developer.usernotifications.time-sensitive": true,
			}}}), apptest.Field("channel_key", pub.Channel.Slug))
	appID := int64(pm["app"].(map[string]any)["id"].(float64))
	pubChID := int64(pm["channel"].(map[string]any)["id"].(float64))
	buildID := int64(pm["id"].(float64))

	p := &phoneCheck{t: t, axe: axeSource}
	// The tester pages, anonymous.
	anon := tab(t, bctx)
	steps(t, anon, "phone viewport", phone)
	p.check(anon, "the channel page", e.URL+"/channels/"+pub.Channel.Slug, 200)
	p.check(anon, "the release page", pub.ReleaseURL, 200)
	p.keyboard(anon, "the release page")
	p.check(anon, "the password page", locked.ReleaseURL, 200)
	p.check(anon, "the error page", e.URL+"/channels/no-such-channel", 404)
	p.check(anon, "the UDID page", e.URL+"/udid", 200)
	p.check(anon, "the device page", e.URL+"/udid/"+testUDID, 200)

	// A tester signing in: the sign-in page, the mailed link's page, their home, their build.
	tester := tab(t, bctx)
	steps(t, tester, "phone viewport", phone)
	p.check(tester, "the tester sign-in page", e.URL+"/t/signin", 200)
	steps(t, tester, "ask for a link", chromedp.SendKeys(chromedp.ID("signin-email"), "ada@example.com"),
		chromedp.Click(chromedp.ID("signin-submit")), chromedp.WaitVisible(chromedp.ID("signin-sent")))
	p.check(tester, "the tester sign-in page, link sent", "", 0)
	p.check(tester, "the mailed link's page", mailedLink(t, e, "ada@example.com"), 200)
	steps(t, tester, "sign in", chromedp.Click(chromedp.ID("link-submit")), chromedp.WaitVisible(chromedp.ID("tester-email")))
	p.check(tester, "the tester's home", e.URL+"/t", 200)
	p.check(tester, "a tester's release page", tr.ReleaseURL, 200)

	// The console, signed in as the administrator.
	console := tab(t, bctx)
	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	navigate(t, console, "sign in", phone, chromedp.Navigate(e.URL+"/console/login-link?token="+url.QueryEscape(secret)),
		chromedp.WaitVisible(chromedp.ID("console-user")))
	for _, pg := range []struct{ name, path string }{
		{"the console's home", "/console"},
		{"an app's page", fmt.Sprintf("/console/apps/%d", appID)},
		{"a channel's page", fmt.Sprintf("/console/channels/%d", pubChID)},
		{"a build's page", fmt.Sprintf("/console/releases/%d", buildID)},
		{"the tokens page", "/console/tokens"},
		{"the audit log", "/console/audit"},
		{"the devices page", "/console/devices"},
		{"the people page", "/console/users"},
		{"the testers page", "/console/testers"},
		{"a webhook's page", fmt.Sprintf("/console/webhooks/%d", hook.ID)},
		{"the guides", "/docs"},
		{"the feeds guide", "/docs/feeds"},
	} {
		p.check(console, pg.name, e.URL+pg.path, 200)
	}
	p.check(console, "the console's home", e.URL+"/console", 200)
	p.keyboard(console, "the console's home")
}

// keyboard checks the open page as a keyboard user meets it: the first Tab reaches a "Skip to
// content" link, shown on screen, that leads to the main content; the first button reached after
// it shows a clearly visible focus ring: a solid outline at least 2 px wide, outside the button,
// contrasting at least 3:1 with what is around it (WCAG 2.2, 1.4.11).
func (p *phoneCheck) keyboard(ctx context.Context, page string) {
	t := p.t
	t.Helper()
	steps(t, ctx, page+": Tab", chromedp.KeyEvent(kb.Tab))
	skip := run(t, ctx, page+": the skip link", chromedp.Evaluate[map[string]any](`(() => {
		const a = document.activeElement, r = a.getBoundingClientRect(), to = a.hash && document.getElementById(a.hash.slice(1));
		return {text: a.textContent.trim(), onScreen: r.top >= 0 && r.bottom <= innerHeight && r.width > 0, target: !!to && to.tagName === 'MAIN'};
	})()`))
	if skip["text"] != "Skip to content" || skip["onScreen"] != true || skip["target"] != true {
		t.Errorf("%s: the first Tab reaches %v, want a visible \"Skip to content\" link to the main content", page, skip)
	}
	for i := 0; i < 80; i++ {
		steps(t, ctx, page+": Tab", chromedp.KeyEvent(kb.Tab))
		if run(t, ctx, page+": focus", chromedp.Evaluate[bool](`document.activeElement.matches('button, .button')`)) {
			break
		}
	}
	ring := run(t, ctx, page+": the focus ring", chromedp.Evaluate[map[string]any](`(() => {
		const el = document.activeElement, cs = getComputedStyle(el);
		const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
		const lum = c => { const [r, g, b] = rgb(c).map(v => v / 255).map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
		let around = el.parentElement;
		while (around && (getComputedStyle(around).backgroundColor === 'rgba(0, 0, 0, 0)' || getComputedStyle(around).backgroundColor === 'transparent')) around = around.parentElement;
		const bg = around ? getComputedStyle(around).backgroundColor : 'rgb(255, 255, 255)';
		const [a, b] = [lum(cs.outlineColor), lum(bg)].sort((x, y) => y - x);
		return {element: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' "' + el.textContent.trim().slice(0, 30) + '"',
			button: el.matches('button, .button'), visible: el.matches(':focus-visible'), style: cs.outlineStyle,
			width: parseFloat(cs.outlineWidth), offset: parseFloat(cs.outlineOffset), contrast: (a + 0.05) / (b + 0.05)};
	})()`))
	if ring["button"] != true || ring["visible"] != true {
		t.Fatalf("%s: no button reached with the keyboard: %v", page, ring)
	}
	if ring["style"] != "solid" || ring["width"].(float64) < 2 || ring["offset"].(float64) < 1 || ring["contrast"].(float64) < 3 {
		t.Errorf("%s: the focus ring on %v is faint: %v", page, ring["element"], ring)
	}
}

// axeCore reads axe-core's script (SLIPWAY_TEST_AXE, set by test/with-services.sh through
// test/axe.sh): missing, the test skips, or fails when the services are required.
func axeCore(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SLIPWAY_TEST_AXE")
	if path == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_AXE is not set; test/with-services.sh sets it with test/axe.sh")
		}
		t.Skip("SLIPWAY_TEST_AXE is not set; run the tests through test/with-services.sh")
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("axe")) {
		t.Fatalf("reading axe-core at %s: %v", path, err)
	}
	return string(b)
}

type phoneCheck struct {
	t   *testing.T
	axe string
}

// phoneLayoutJS returns the page's problems at the current viewport: its sideways overflow
// (naming the elements that stick out) and each interactive element under 44 × 44 CSS px.
const phoneLayoutJS = `(() => {
	const min = 44, out = [];
	const name = el => {
		let s = el.tagName.toLowerCase();
		if (el.id) s += '#' + el.id;
		if (el.classList.length) s += '.' + [...el.classList].join('.');
		const text = (el.innerText || el.value || el.getAttribute('aria-label') || '').trim().replace(/\s+/g, ' ');
		return text ? s + ' "' + text.slice(0, 40) + '"' : s;
	};
	const visible = el => {
		const r = el.getBoundingClientRect(), cs = getComputedStyle(el);
		return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none';
	};
	// Chromium widens a phone's layout viewport to what sticks out: the screen's width is the limit.
	const se = document.scrollingElement, width = Math.min(innerWidth, screen.width);
	if (se.scrollWidth > width) {
		const wide = [...document.body.querySelectorAll('*')].filter(el => visible(el) && el.getBoundingClientRect().right > width + 0.5);
		// The innermost ones: those with no sticking-out child.
		let inner = wide.filter(el => !wide.some(o => o !== el && el.contains(o)));
		if (!inner.length) { // text wider than its box: the boxes whose content overflows
			const over = [...document.body.querySelectorAll('*')].filter(el => visible(el) && el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible');
			inner = over.filter(el => !over.some(o => o !== el && el.contains(o)));
		}
		out.push('scrolls sideways: ' + se.scrollWidth + ' px wide on a ' + width + ' px screen; sticking out: ' + inner.slice(0, 5).map(name).join(', '));
	}
	// A table in a scrolling box shows only its first columns on a phone (the recent uploads'
	// last column was cut off so): it must fit. A guide's reference tables (/docs) may scroll
	// inside the page, reachable by keyboard, as its code blocks do.
	for (const el of document.querySelectorAll('.table-wrap, table:not(.guide table)')) {
		if (visible(el) && el.scrollWidth > el.clientWidth + 1) {
			out.push(name(el.querySelector('thead') || el) + ' shows ' + el.clientWidth + ' of its ' + el.scrollWidth + ' px');
		}
	}
	const small = el => { const r = el.getBoundingClientRect(); return r.width < min - 0.5 || r.height < min - 0.5; };
	const size = el => { const r = el.getBoundingClientRect(); return Math.round(r.width) + ' × ' + Math.round(r.height) + ' px'; };
	for (const el of document.querySelectorAll('a[href], button, input:not([type=hidden]), select, summary, label')) {
		if (!visible(el)) continue;
		if (el.tagName === 'LABEL') {
			// A label is a tap target when it holds or names a checkbox or radio.
			const box = el.control;
			if (!box || !['checkbox', 'radio'].includes(box.type)) continue;
		}
		if (el.tagName === 'INPUT' && ['checkbox', 'radio'].includes(el.type) && el.labels && el.labels.length) {
			continue; // its label is the target, measured above
		}
		if (small(el)) out.push(name(el) + ' is ' + size(el));
	}
	return out;
})()`

// check opens u in ctx (an empty u checks the open page), expects the status, and reports the
// page's layout problems and axe-core's violations.
func (p *phoneCheck) check(ctx context.Context, page, u string, status int) {
	t := p.t
	t.Helper()
	if u != "" {
		resp := navigate(t, ctx, page, chromedp.Navigate(u))
		if resp == nil || int(resp.Status) != status {
			t.Errorf("%s (%s): status %v, want %d", page, u, resp, status)
			return
		}
	}
	run(t, ctx, page+": fonts", chromedp.Evaluate[bool](`document.fonts.ready.then(() => true)`, chromedp.EvalAwaitPromise))
	if w := run(t, ctx, page+": screen", chromedp.Evaluate[int](`screen.width`)); w != 390 {
		t.Fatalf("%s: the screen is %d px wide, not a phone's 390", page, w)
	}
	for _, problem := range run(t, ctx, page+": layout", chromedp.Evaluate[[]string](phoneLayoutJS)) {
		t.Errorf("%s on a phone: %s", page, problem)
	}
	run(t, ctx, page+": load axe-core", chromedp.Evaluate[bool](p.axe+"\n;typeof axe === 'object'"))
	violations := run(t, ctx, page+": axe-core", chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then(r =>
		r.violations.flatMap(v => v.nodes.map(n => v.id + ' (' + v.impact + '): ' + v.help + ': ' + n.target.join(' ') + ' ' + n.html.slice(0, 120))))`,
		chromedp.EvalAwaitPromise))
	for _, v := range violations {
		t.Errorf("%s: axe-core: %s", page, v)
	}
	shot := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.TrimPrefix(strings.TrimPrefix(page, "the "), "a "))
	(&tester{t: t, ctx: ctx}).screenshot("phone-" + strings.ToLower(shot))
}
