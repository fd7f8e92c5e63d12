package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/webhook"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// iPhoneSafari is the user agent of Safari on an iPhone with iOS 17.5, which the page's script
// reads the device and system from.
const iPhoneSafari = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"

// hookReceiver records the webhook deliveries it gets: each one's event and body.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []string // "event body"
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, req.Header.Get(webhook.EventHeader)+" "+string(b))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// deliveries returns what the receiver got of event.
func (r *hookReceiver) deliveries(event string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, g := range r.got {
		if body, ok := strings.CutPrefix(g, event+" "); ok {
			out = append(out, body)
		}
	}
	return out
}

// TestBrowserFeedbackFromPhone walks a tester on a phone (390×844, Safari's iPhone user agent)
// in chromium, on both storages: signed in with the mailed link, they open a tester-only
// build's page, whose script has filled the device and system; they describe what they saw,
// choose two screenshots (a PNG and a camera's JPEG with its GPS position), send it and are
// thanked. The report is theirs in the API, with the device the page filled and two screenshots,
// the JPEG stored without its metadata; the app's feedback.created webhook hears of it; their
// home shows it with its thumbnail loaded through their session. The page with the form passes
// the phone checks (tap targets, sideways overflow, axe-core).
func TestBrowserFeedbackFromPhone(t *testing.T) {
	axeSource := axeCore(t)
	bctx := browser(t)
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) { testBrowserFeedbackFromPhone(t, bctx, axeSource, storage) })
	}
}

func testBrowserFeedbackFromPhone(t *testing.T, bctx context.Context, axeSource, storage string) {
	e := apptest.New(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) {
		c.WebhookAllowPrivate = true
		c.WebhookPoll = 50 * time.Millisecond
	}})
	// An app whose channel is open to group qa (ada) only, with a build, and a webhook of its
	// feedback.
	m := e.UploadApp(t, "harbor.ipa", ipa("Harbor", "1.0", "1"))
	ch := m["channel"].(map[string]any)
	slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
	appID := int64(m["app"].(map[string]any)["id"].(float64))
	for _, step := range []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodPost, "/api/groups", map[string]any{"alias": "qa", "name": "QA"}, http.StatusCreated},
		{http.MethodPost, "/api/groups/qa/testers", map[string]any{"emails": []string{"ada@example.com"}}, http.StatusOK},
		{http.MethodPatch, fmt.Sprintf("/api/channels/%d", chID), map[string]any{"tester_groups": []string{"qa"}}, http.StatusOK},
	} {
		if st := api(t, e, step.method, step.path, step.body, nil); st != step.want {
			t.Fatalf("%s %s: %d", step.method, step.path, st)
		}
	}
	rcv := newHookReceiver(t)
	if st := api(t, e, http.MethodPost, fmt.Sprintf("/api/apps/%d/webhooks", appID), map[string]any{"url": rcv.URL, "events": []string{"feedback.created"}}, nil); st != http.StatusCreated {
		t.Fatalf("the feedback webhook: %d", st)
	}
	r := upload(t, e, "harbor.ipa", ipa("Harbor", "1.1", "2"), apptest.Field("channel_key", slug))

	// The screenshots, as files on the phone.
	dir := t.TempDir()
	pngPath, jpgPath := filepath.Join(dir, "screen.png"), filepath.Join(dir, "camera.jpg")
	if err := os.WriteFile(pngPath, imagetest.PNG(t, 390, 844), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jpgPath, imagetest.GPSJPEG(t, 640, 480), 0o600); err != nil {
		t.Fatal(err)
	}

	// Ada signs in on her phone with the mailed link, and comes back to the build.
	ctx := tab(t, bctx)
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: iPhoneSafari}); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "the build's page", phone, chromedp.Navigate(r.ReleaseURL), chromedp.WaitVisible(chromedp.ID("signin-email")))
	steps(t, ctx, "ask for a link", chromedp.SendKeys(chromedp.ID("signin-email"), "ada@example.com"),
		chromedp.Click(chromedp.ID("signin-submit")), chromedp.WaitVisible(chromedp.ID("signin-sent")))
	navigate(t, ctx, "the mailed link", chromedp.Navigate(mailedLink(t, e, "ada@example.com")), chromedp.WaitVisible(chromedp.ID("link-submit")))
	steps(t, ctx, "sign in", chromedp.Click(chromedp.ID("link-submit")), chromedp.WaitVisible(chromedp.ID("feedback-form")))
	if u := run(t, ctx, "url", chromedp.Location()); u != r.ReleaseURL {
		t.Fatalf("after signing in: %s", u)
	}

	// The page's script filled the device and system; a signed-in tester is asked no email.
	filled := run(t, ctx, "the filled fields", chromedp.Evaluate[map[string]any](`({
		device: document.getElementById('feedback-device').value,
		os: document.getElementById('feedback-os').value,
		email: !!document.getElementById('feedback-email'),
	})`))
	if filled["device"] != "iPhone" || filled["os"] != "iOS 17.5" || filled["email"] != false {
		t.Errorf("the form as the page filled it: %v", filled)
	}
	steps(t, ctx, "fill the form", chromedp.ScrollIntoView(chromedp.ID("feedback")),
		chromedp.SendKeys(chromedp.ID("feedback-text"), "The map screen is blank after I rotate the phone."),
		chromedp.SetUploadFiles(chromedp.ID("feedback-screenshots"), []string{pngPath, jpgPath}))
	if n := run(t, ctx, "files chosen", chromedp.Evaluate[int](`document.getElementById('feedback-screenshots').files.length`)); n != 2 {
		t.Fatalf("%d files chosen", n)
	}
	p := &phoneCheck{t: t, axe: axeSource}
	p.check(ctx, "the release page's feedback form "+storage, "", 0)
	b := &tester{t: t, e: e, ctx: ctx}
	b.screenshot("feedback-form-phone-" + storage)

	// Sent: back on the page (303), thanked.
	steps(t, ctx, "send", chromedp.Click(chromedp.ID("feedback-submit")), chromedp.WaitVisible(chromedp.ID("feedback-sent")))
	if u := run(t, ctx, "url", chromedp.Location()); u != r.ReleaseURL+"?feedback=sent#feedback" {
		t.Errorf("after sending: %s", u)
	}
	if got := run(t, ctx, "thanks", chromedp.Text(chromedp.ID("feedback-sent"))); got != "Thanks: your feedback was sent." {
		t.Errorf("the thanks: %q", got)
	}
	p.check(ctx, "the release page, feedback sent "+storage, "", 0)
	b.screenshot("feedback-sent-phone-" + storage)

	// The report, as the team reads it with the admin token.
	ada, err := e.DB.TesterByEmail(context.Background(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	list := releaseFeedbackJSON(t, e, r.ID)
	if len(list) != 1 {
		t.Fatalf("the build's feedback: %+v", list)
	}
	f := list[0]
	if f.Author.Kind != "tester" || f.Author.TesterID != ada.ID || f.Device != filled["device"] || f.OS != filled["os"] || f.Source != "page" ||
		f.Text != "The map screen is blank after I rotate the phone." || len(f.Screenshots) != 2 {
		t.Fatalf("the report: %+v", f)
	}
	if f.Screenshots[0].ContentType != "image/png" || f.Screenshots[1].ContentType != "image/jpeg" {
		t.Errorf("the screenshots' types: %+v", f.Screenshots)
	}
	jpg := screenshotBytes(t, e, f.Screenshots[1].URL)
	if bytes.Contains(jpg, []byte("Exif")) || bytes.Contains(jpg, []byte("GPSMarker")) || len(jpg) < 100 {
		t.Errorf("the stored JPEG (%d bytes) keeps its metadata", len(jpg))
	}

	// The webhook hears of it.
	testkit.Eventually(t, time.Minute, "the feedback.created delivery", func() bool { return len(rcv.deliveries("feedback.created")) == 1 })
	if body := rcv.deliveries("feedback.created")[0]; !strings.Contains(body, fmt.Sprintf(`"id":%d`, f.ID)) || !strings.Contains(body, "The map screen is blank") {
		t.Errorf("the delivery: %.500s", body)
	}

	// Her home lists it, its thumbnails loaded through her session.
	navigate(t, ctx, "her home", chromedp.Navigate(e.URL+"/t"), chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("feedback-%d", f.ID))))
	loaded := run(t, ctx, "thumbnails", chromedp.Evaluate[[]int](fmt.Sprintf(`Promise.all([...document.querySelectorAll('#feedback-%d img')].map(img =>
		img.decode().then(() => img.naturalWidth, () => 0)))`, f.ID), chromedp.EvalAwaitPromise))
	if len(loaded) != 2 || loaded[0] == 0 || loaded[1] == 0 {
		t.Errorf("the thumbnails on her home: %v", loaded)
	}
	p.check(ctx, "the tester's home with feedback "+storage, "", 0)
	b.screenshot("feedback-home-phone-" + storage)

	// Chrome on Android says little in its user agent string ("Android 10; K"): the page asks
	// its client hints for the model and the system's version.
	if storage != apptest.FS {
		return
	}
	if _, err := chromedp.Call(ctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: androidChrome,
		UserAgentMetadata: &emulation.UserAgentMetadata{Platform: "Android", PlatformVersion: "14.0.0", Model: "Pixel 8", Mobile: true,
			Brands: []*emulation.UserAgentBrandVersion{{Brand: "Chromium", Version: "130"}}}}); err != nil {
		t.Fatal(err)
	}
	navigate(t, ctx, "the build's page on Android", chromedp.Navigate(r.ReleaseURL), chromedp.WaitVisible(chromedp.ID("feedback-form")))
	android := run(t, ctx, "the fields on Android", chromedp.Evaluate[map[string]string](`new Promise(done => {
		const device = document.getElementById('feedback-device'), os = document.getElementById('feedback-os');
		let tries = 0;
		(function look() {
			if (device.value === 'Pixel 8' || ++tries > 100) done({device: device.value, os: os.value});
			else setTimeout(look, 50);
		})();
	})`, chromedp.EvalAwaitPromise))
	if android["device"] != "Pixel 8" || android["os"] != "Android 14.0.0" {
		t.Errorf("the form as the page filled it on Android: %v", android)
	}
}

// androidChrome is Chrome's reduced user agent string on an Android phone.
const androidChrome = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36"
