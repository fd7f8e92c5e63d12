package web_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestBrowserUDIDPath walks UDID collection in chromium at phone size: /udid → the profile
// download → the device's signed answer (made here, as iOS would post it) → the device page →
// release pages that say "this device can install" for a build whose profile lists it and
// "cannot" for one that does not.
func TestBrowserUDIDPath(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	listed := upload(t, e, "listed.ipa", adhocIPA("Listed", "1", []string{testUDID}, false))
	unlisted := upload(t, e, "unlisted.ipa", adhocIPA("Unlisted", "1", []string{"0123456789abcdef0123456789abcdef01234567"}, false))
	ctx := tab(t, browser(t))
	b := &tester{t: t, e: e, ctx: ctx}

	navigate(t, ctx, "udid page", phone, chromedp.Navigate(e.URL+"/udid"), chromedp.WaitVisible(chromedp.ID("profile-link")))
	b.screenshot("udid-phone")
	href := run(t, ctx, "profile link", chromedp.Evaluate[string](`document.getElementById("profile-link").href`))
	if href != e.URL+"/udid/profile" {
		t.Fatalf("profile link %q", href)
	}
	// Safari downloads the profile the link points at (the page's CSP keeps scripts from fetching
	// it here): the type iOS installs, a Profile Service plist.
	prof := get(t, e, strings.TrimPrefix(href, e.URL))
	if prof.Header.Get("Content-Type") != "application/x-apple-aspen-config" || !strings.Contains(string(prof.Body), "<string>Profile Service</string>") {
		t.Fatalf("profile download: %q %.200s", prof.Header.Get("Content-Type"), prof.Body)
	}
	// The device answers (signed CMS, as iOS posts it) and is sent to its page.
	answer := profileservicetest.Answer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "VERSION": "21A360",
		"DEVICE_NAME": "Tester's iPhone", "CHALLENGE": profileservicetest.Challenge(t, prof.Body)})
	r := do(t, e, http.MethodPost, "/udid/callback", bytes.NewReader(answer), http.Header{"Content-Type": {"application/pkcs7-signature"}})
	if r.Status != http.StatusMovedPermanently {
		t.Fatalf("callback: %d %s", r.Status, r.Body)
	}
	navigate(t, ctx, "device page", chromedp.Navigate(r.Header.Get("Location")), chromedp.WaitVisible(chromedp.ID("device-udid")))
	if udid := run(t, ctx, "udid", chromedp.Text(chromedp.ID("device-udid"))); udid != testUDID {
		t.Errorf("device page shows %q", udid)
	}
	// The UDID's copy button: hidden without script, shown and working with it.
	steps(t, ctx, "copy the UDID", chromedp.WaitVisible(chromedp.ID("copy-udid")), chromedp.Click(chromedp.ID("copy-udid")))
	links := run(t, ctx, "installable", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#installable a")].map(a => a.href)`))
	if len(links) != 1 || links[0] != listed.ReleaseURL {
		t.Errorf("installable builds %v, want [%s]", links, listed.ReleaseURL)
	}
	b.screenshot("udid-device-phone")

	for _, c := range []struct {
		r    release
		can  string
		text string
	}{{listed, "true", "can install this build"}, {unlisted, "false", "cannot install this build"}} {
		navigate(t, ctx, "release page", chromedp.Navigate(c.r.ReleaseURL), chromedp.WaitVisible(chromedp.ID("device-check")))
		attr := run(t, ctx, "device check", chromedp.Evaluate[string](`document.getElementById("device-check").dataset.canInstall`))
		text := run(t, ctx, "device check text", chromedp.Text(chromedp.ID("device-check")))
		if attr != c.can || !strings.Contains(text, c.text) || !strings.Contains(text, "Tester's iPhone") {
			t.Errorf("%s: device check %q %q", c.r.ReleaseURL, attr, text)
		}
		b.screenshot("udid-release-" + c.can)
	}
}
