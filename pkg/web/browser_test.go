package web_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// The browser test walks a tester's path in Debian's chromium, headless: open the release page at
// phone and desktop size, see the app's name, version, changelog and Install link, read the QR
// code off the screen, and get through a protected channel's password form. Screenshots go to
// test/artifacts/ (kept by CI as artifacts, ignored by git); with SLIPWAY_UPDATE_SCREENSHOT=1 the
// iOS page's phone and desktop views are also composed into docs/images/release-page.png, the
// README's picture.

const artifactsDir = "../../test/artifacts"

// browser starts a headless chromium for the test (SLIPWAY_TEST_CHROMIUM, set by
// test/with-services.sh through test/chromium.sh) and returns a context for chromedp.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := os.Getenv("SLIPWAY_TEST_CHROMIUM")
	if bin == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_CHROMIUM is not set; test/with-services.sh sets it with test/chromium.sh")
		}
		t.Skip("SLIPWAY_TEST_CHROMIUM is not set; run the tests through test/with-services.sh")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true), chromedp.Flag("force-color-profile", "srgb"),
		chromedp.UserDataDir(t.TempDir()))
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium %s: %v", bin, err)
	}
	return ctx
}

// tab opens a tab in a fresh browser context (its own cookies), bounded in time.
func tab(t *testing.T, browserCtx context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancelTimeout)
	return ctx
}

// viewports the pages are checked at: an iPhone's 390×844 (mobile, touch, 2× pixels) and a
// laptop's 1280×860.
var (
	phone   = chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	desktop = chromedp.EmulateViewport(1280, 860, chromedp.EmulateScale(1), chromedp.EmulateOrientation(emulation.ScreenOrientationTypeLandscapePrimary, 90))
)

// pkg returns a fixture, or the synthetic package when the shared fixtures are absent (a clone
// without ../shared still walks the path).
func pkg(t *testing.T, rel string, synthetic func() []byte) []byte {
	if _, ok := fixtures.Dir(); ok {
		return fixtures.Read(t, rel)
	}
	return synthetic()
}

type tester struct {
	t   *testing.T
	e   *apptest.Env
	ctx context.Context
}

// expect is what a release page must show.
type expect struct {
	name, appName, version, build, changelog, install string
	customIcon, expired                               bool
}

// run runs a chromedp action in ctx, failing the test on error.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// do runs chromedp steps in ctx, failing the test on error.
func steps(t *testing.T, ctx context.Context, what string, a ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, a...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// navigate runs steps that load a page and returns the page's HTTP response.
func navigate(t *testing.T, ctx context.Context, what string, a ...chromedp.Action[chromedp.Void]) *network.Response {
	t.Helper()
	resp, err := chromedp.RunResponse(ctx, a...)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return resp
}

// checkRelease checks the open release page at the current viewport and saves a screenshot.
func (b *tester) checkRelease(view string, want expect) {
	t, ctx := b.t, b.ctx
	t.Helper()
	steps(t, ctx, "wait for the page", chromedp.WaitVisible(chromedp.ID("install")), chromedp.WaitVisible(chromedp.ID("app-name")))
	if got := run(t, ctx, "name", chromedp.Text(chromedp.ID("app-name"))); got != want.appName {
		t.Errorf("%s %s: name %q, want %q", want.name, view, got, want.appName)
	}
	if got := run(t, ctx, "version", chromedp.Text(chromedp.ID("version"))); got != want.version+" ("+want.build+")" {
		t.Errorf("%s %s: version %q, want %q", want.name, view, got, want.version+" ("+want.build+")")
	}
	if got := run(t, ctx, "changelog", chromedp.Text(chromedp.ID("changelog"))); !strings.Contains(got, want.changelog) {
		t.Errorf("%s %s: changelog %q lacks %q", want.name, view, got, want.changelog)
	}
	href := run(t, ctx, "install href", chromedp.AttributeValue(chromedp.ID("install"), "href"))
	if want.expired {
		// An expired profile: said so, and the button is disabled.
		disabled := run(t, ctx, "install disabled", chromedp.AttributeValue(chromedp.ID("install"), "aria-disabled"))
		if href.Exists || disabled.Value != "true" {
			t.Errorf("%s %s: Install is enabled (%q) for an expired profile", want.name, view, href.Value)
		}
		steps(t, ctx, "expired warning", chromedp.WaitVisible(chromedp.ID("expired-warning")))
	} else if !strings.HasPrefix(href.Value, want.install) {
		t.Errorf("%s %s: Install links %q, want %q", want.name, view, href.Value, want.install)
	}
	// The Install button is on screen without scrolling, and nothing is wider than the screen.
	inView := run(t, ctx, "layout", chromedp.Evaluate[bool](`(() => {
		const r = document.getElementById('install').getBoundingClientRect();
		return r.bottom <= window.innerHeight && r.width > 0 && document.documentElement.scrollWidth <= window.innerWidth;
	})()`))
	if !inView {
		t.Errorf("%s %s: the Install button is below the fold or the page scrolls sideways", want.name, view)
	}
	// The icon (through the password cookie on a protected channel) and the icon font loaded.
	loaded := run(t, ctx, "assets", chromedp.Evaluate[map[string]bool](`document.fonts.ready.then(() => {
		const icon = document.getElementById('app-icon');
		const custom = document.querySelector('dt.custom i');
		return {
			icon: icon.complete && icon.naturalWidth > 0,
			font: [...document.fonts].some(f => f.family.includes('Font Awesome') && f.status === 'loaded'),
			custom: !!custom && !['none', 'normal', ''].includes(getComputedStyle(custom, '::before').content),
			css: getComputedStyle(document.getElementById('install')).borderRadius !== '0px',
		};
	})`, chromedp.EvalAwaitPromise))
	for _, k := range []string{"icon", "font", "custom", "css"} {
		if !loaded[k] && (k != "custom" || want.customIcon) {
			t.Errorf("%s %s: %s did not load or render: %v", want.name, view, k, loaded)
		}
	}
	if want.customIcon && !strings.Contains(run(t, ctx, "details", chromedp.OuterHTML(chromedp.CSS("dt.custom"))), "fa-") {
		t.Errorf("%s %s: no custom field icon", want.name, view)
	}
	b.screenshot(want.name + "-" + view)
}

func (b *tester) screenshot(name string) []byte {
	img := run(b.t, b.ctx, "screenshot", chromedp.FullScreenshot(100))
	if err := os.MkdirAll(artifactsDir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifactsDir, name+".png"), img, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return img
}

// checkDark reloads the page at phone size with the system in dark mode: the page turns dark.
func (b *tester) checkDark() {
	t := b.t
	if _, err := chromedp.Call(b.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	navigate(t, b.ctx, "dark", phone, chromedp.Reload())
	bg := run(t, b.ctx, "background", chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	var r, g, bl int
	if _, err := fmt.Sscanf(bg, "rgb(%d, %d, %d)", &r, &g, &bl); err != nil || r+g+bl > 3*64 {
		t.Errorf("dark mode: body background %q is not dark", bg)
	}
	b.screenshot("ios-installable-phone-dark")
}

// checkQR reads the QR code off the rendered page and decodes it. On a loaded machine the image
// may still be decoding, or the layout moving, when the screenshot is taken, so the test waits
// for the image to be complete and tries a few screenshots; if none decodes (gozxing misses some
// screenshots), it decodes the very image the page shows (its src, as loaded), so that a failure
// means a wrong code, not a busy machine.
func (b *tester) checkQR(name, releaseURL string) {
	run(b.t, b.ctx, "QR loaded", chromedp.Poll[bool](`(() => { const i = document.getElementById("qrcode"); return i && i.complete && i.naturalWidth > 0; })()`))
	check := func(got string) {
		if got != releaseURL {
			b.t.Errorf("%s: the QR code on screen reads %q, want %q", name, got, releaseURL)
		}
	}
	for attempt := 0; attempt < 3; attempt++ {
		shot := run(b.t, b.ctx, "QR screenshot", chromedp.Screenshot(chromedp.ID("qrcode"), chromedp.NodeVisible))
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			b.t.Fatal(err)
		}
		if got, err := decodeQRGrid(img); err == nil {
			check(got)
			return
		}
		for _, scale := range []int{1, 2} {
			if got, err := decodeQRAt(img, scale); err == nil {
				check(got)
				return
			}
		}
		_ = os.WriteFile(filepath.Join(artifactsDir, "qr-unreadable-"+name+".png"), shot, 0o644)
		time.Sleep(300 * time.Millisecond)
	}
	src := run(b.t, b.ctx, "QR src", chromedp.Evaluate[string](`document.getElementById("qrcode").currentSrc`))
	resp, err := http.Get(src)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	img, err := png.Decode(resp.Body)
	if err != nil {
		b.t.Fatalf("%s: the QR image is not a PNG: %v", name, err)
	}
	b.t.Logf("%s: no screenshot of the QR code decoded (kept in %s); decoding the image the page loaded", name, artifactsDir)
	check(decodeQR(b.t, img))
}

func TestBrowserTesterPath(t *testing.T) {
	bctx := browser(t)
	e := apptest.New(t, apptest.Options{})
	icon := []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}

	changelog := `[{"message":"Sign in with a passkey","author":"Ada","date":"2026-11-20 10:00:00"},{"message":"Fixed the crash on launch"}]`
	custom := `[{"name":"Tests","value":"312 passed","icon":"fa fa-check"},{"name":"Backend","value":"staging","icon":"fa-solid fa-server"}]`
	ciFields := []apptest.Part{apptest.Field("changelog", changelog), apptest.Field("custom_fields", custom),
		apptest.Field("branch", "origin/main"), apptest.Field("git_commit", "4a1f0c9e2b7d4c1e8f3a6b5d9c0e7f2a1b3c4d5e"),
		apptest.Field("ci_url", "https://ci.example.com/builds/1042")}

	// The real iOS fixtures' profiles have all expired: their pages say so and disable Install.
	// A synthetic build with a valid profile shows the installable page (and is the README's).
	ios := upload(t, e, "bundle.ipa", pkg(t, "ios/bundle-ipad-1.0-1.ipa", func() []byte {
		return appletest.BuildIPA(appletest.IPAOptions{AppName: "bundle", Icons: icon, Profile: &appletest.ProfileOptions{Devices: []string{"x"}}}) // expired 2025
	}), ciFields...)
	setGitURL(t, e, ios.Channel.Slug, "git@github.com:example/bundle.git")
	validIPA := func() []byte {
		return appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", DisplayName: "Harbor", BundleID: "com.example.harbor",
			Version: "2.4.0", Build: "118", DeviceFamily: []int{1}, Profile: &appletest.ProfileOptions{
				Name: "Harbor Ad Hoc", TeamID: "ABCDE12345", TeamName: "Example Team", AppID: "ABCDE12345.com.example.harbor",
				Devices: []string{"00008030-001A2C3E0E38802E"}, ExpiresAt: time.Now().AddDate(1, 0, 0)},
			InfoPlist: map[string]any{"CFBundleIcons": map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": []string{"HarborIcon60x60"}}}},
			Extra:     []appletest.Entry{{Name: "Payload/Harbor.app/HarborIcon60x60@3x.png", Data: harborIcon(180)}}})
	}
	demo := upload(t, e, "harbor.ipa", validIPA(), append(ciFields, apptest.Field("release_type", "adhoc"))...)
	setGitURL(t, e, demo.Channel.Slug, "git@github.com:example/harbor.git")
	android := upload(t, e, "app.apk", pkg(t, "android/appinfodemo-2.1.0-10.apk", func() []byte { return apk("AppInfoDemo", "2.1.0", 10) }), ciFields...)
	hostile := `[{"message":"<script>document.title='pwned'</script>"},{"message":"<img src=x onerror=\"document.title='pwned'\">"}]`
	mac := upload(t, e, "mac.zip", pkg(t, "macos/guiapp-unsigned-1.0-1.zip", func() []byte {
		return appletest.BuildMacZip(appletest.MacZipOptions{AppName: "GuiApp", IconSizes: []int{128}})
	}), apptest.Field("changelog", hostile),
		apptest.Field("custom_fields", `[{"name":"\"><script>document.title='pwned'</script>","value":"<b onmouseover=alert(1)>x</b>","icon":"fa\" onclick=\"alert(1)"}]`))
	secret := upload(t, e, "harbor.ipa", validIPA(), apptest.Field("name", "Harbor Private"),
		apptest.Field("password", "tester-pw"), apptest.Field("changelog", "Private build"))

	// versions reads the app name and versions the page must show from the API.
	versions := func(slug string) (app, releaseVersion, buildVersion string) {
		r := e.Get(t, "/api/apps/latest?release_version=0&build_version=0&channel_key="+slug).Map(t)
		rs := r["releases"].(map[string]any)
		return r["app"].(map[string]any)["name"].(string), rs["release_version"].(string), rs["build_version"].(string)
	}
	cases := []struct {
		r               release
		name, notes     string
		custom, expired bool
	}{
		{ios, "ios", "Sign in with a passkey", true, true},
		{demo, "ios-installable", "Sign in with a passkey", true, false},
		{android, "android", "Fixed the crash on launch", true, false},
		{mac, "macos", "<script>document.title='pwned'</script>", false, false},
	}
	var readme [2][]byte
	for _, c := range cases {
		app, rv, bv := versions(c.r.Channel.Slug)
		b := &tester{t: t, e: e, ctx: tab(t, bctx)}
		want := expect{name: c.name, appName: app, version: rv, build: bv, changelog: c.notes, install: c.r.InstallURL,
			customIcon: c.custom, expired: c.expired}
		for i, view := range []struct {
			name string
			vp   chromedp.Action[chromedp.Void]
		}{{"phone", phone}, {"desktop", desktop}} {
			resp := navigate(t, b.ctx, "open "+c.name, view.vp, chromedp.Navigate(c.r.ReleaseURL))
			if resp.Status != http.StatusOK {
				t.Fatalf("%s: status %d", c.name, resp.Status)
			}
			b.checkRelease(view.name, want)
			if c.r == demo {
				readme[i] = run(t, b.ctx, "viewport screenshot", chromedp.CaptureScreenshot())
			}
		}
		b.checkQR(c.name, c.r.ReleaseURL)
		if c.r == demo {
			b.checkDark()
		}
		if title := run(t, b.ctx, "title", chromedp.Title()); strings.Contains(title, "pwned") {
			t.Errorf("%s: a script from user content ran (title %q)", c.name, title)
		}
		// The Install link is the real thing: it downloads the package (Android, macOS).
		if !strings.HasPrefix(c.name, "ios") {
			if r := e.Follow(t, c.r.InstallURL); r.Status != 200 || len(r.Body) == 0 {
				t.Errorf("%s: Install link %s: %d", c.name, c.r.InstallURL, r.Status)
			}
		}
	}
	writeReadmeImage(t, readme)

	t.Run("password", func(t *testing.T) {
		b := &tester{t: t, e: e, ctx: tab(t, bctx)}
		app, rv, bv := versions(secret.Channel.Slug)
		resp := navigate(t, b.ctx, "open", phone, chromedp.Navigate(secret.ReleaseURL))
		if resp.Status != http.StatusOK {
			t.Fatalf("password form: status %d", resp.Status)
		}
		steps(t, b.ctx, "form", chromedp.WaitVisible(chromedp.ID("password-input")))
		b.screenshot("password-form-phone")
		resp = navigate(t, b.ctx, "wrong password",
			chromedp.SendKeys(chromedp.ID("password-input"), "not-it"), chromedp.Click(chromedp.ID("password-submit")))
		if resp.Status != http.StatusForbidden {
			t.Errorf("wrong password: status %d", resp.Status)
		}
		msg := run(t, b.ctx, "error", chromedp.Text(chromedp.ID("password-error"), chromedp.NodeVisible))
		if !strings.Contains(msg, "Wrong password") {
			t.Errorf("wrong password says %q", msg)
		}
		b.screenshot("password-wrong-phone")
		resp = navigate(t, b.ctx, "right password",
			chromedp.SendKeys(chromedp.ID("password-input"), "tester-pw"), chromedp.Click(chromedp.ID("password-submit")))
		if resp.Status != http.StatusOK || resp.URL != secret.ReleaseURL {
			t.Fatalf("right password: status %d at %s", resp.Status, resp.URL)
		}
		manifest := strings.TrimPrefix(secret.InstallURL, "itms-services://?action=download-manifest&url=")
		b.checkRelease("phone", expect{name: "ios-protected", appName: app, version: rv, build: bv, changelog: "Private build",
			install: "itms-services://?action=download-manifest&url=" + manifest + "?access="})
		if jsCookies := run(t, b.ctx, "cookies", chromedp.Evaluate[string](`document.cookie`)); strings.Contains(jsCookies, "slipway_ch_") {
			t.Error("the password cookie is readable by scripts")
		}
		steps(t, b.ctx, "desktop", desktop)
		b.checkQR("protected", secret.ReleaseURL)
		// iOS follows the Install link without the browser's cookies: the token in it is enough.
		href := run(t, b.ctx, "href", chromedp.AttributeValue(chromedp.ID("install"), "href")).Value
		m := e.Follow(t, strings.TrimPrefix(href, "itms-services://?action=download-manifest&url="))
		if m.Status != 200 || !bytes.Contains(m.Body, []byte("software-package")) {
			t.Fatalf("manifest from the Install link: %d %s", m.Status, m.Body)
		}
		// Without the cookie or a token, the download stays closed.
		if r := e.Get(t, fmt.Sprintf("/download/releases/%d", secret.ID)); r.Status != http.StatusUnauthorized {
			t.Errorf("download without password: %d", r.Status)
		}
	})
}

// writeReadmeImage puts the iOS page's desktop and phone views side by side, into test/artifacts
// and, with SLIPWAY_UPDATE_SCREENSHOT=1, into docs/images/release-page.png.
func writeReadmeImage(t *testing.T, shots [2][]byte) {
	phoneImg, err := png.Decode(bytes.NewReader(shots[0]))
	if err != nil {
		t.Fatal(err)
	}
	deskImg, err := png.Decode(bytes.NewReader(shots[1]))
	if err != nil {
		t.Fatal(err)
	}
	// The phone shot has 2× pixels: take every other one so both views share a scale.
	pb := phoneImg.Bounds()
	half := image.NewRGBA(image.Rect(0, 0, pb.Dx()/2, pb.Dy()/2))
	for y := range half.Rect.Dy() {
		for x := range half.Rect.Dx() {
			half.Set(x, y, phoneImg.At(pb.Min.X+2*x, pb.Min.Y+2*y))
		}
	}
	const gap = 24
	db, hb := deskImg.Bounds(), half.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, db.Dx()+hb.Dx()+3*gap, max(db.Dy(), hb.Dy())+2*gap))
	draw.Draw(out, out.Rect, image.NewUniform(color.RGBA{0xd8, 0xdc, 0xe2, 0xff}), image.Point{}, draw.Src)
	draw.Draw(out, db.Add(image.Pt(gap, gap)), deskImg, db.Min, draw.Src)
	draw.Draw(out, hb.Add(image.Pt(db.Dx()+2*gap, gap)), half, hb.Min, draw.Src)
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, out); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(artifactsDir, "release-page.png")}
	if os.Getenv("SLIPWAY_UPDATE_SCREENSHOT") == "1" {
		paths = append(paths, "../../docs/images/release-page.png")
	}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// harborIcon draws the demo app's icon: a sail on a blue sea, nicer in the README than the
// builders' test pattern.
func harborIcon(n int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, n, n))
	for y := range n {
		for x := range n {
			t := float64(x+y) / float64(2*n)
			c := color.RGBA{uint8(10 + 40*t), uint8(102 + 90*t), uint8(216 + 30*t), 0xff}
			fx, fy := float64(x)/float64(n), float64(y)/float64(n)
			switch {
			case fy > 0.72 && fy < 0.78+0.03*math.Sin(fx*12): // the sea
				c = color.RGBA{0xff, 0xff, 0xff, 0xc0}
			case fx > 0.52 && fx < 0.55 && fy > 0.18 && fy < 0.7: // the mast
				c = color.RGBA{0xff, 0xff, 0xff, 0xff}
			case fy > 0.2 && fy < 0.66 && fx > 0.24 && fx < 0.5 && (0.5-fx)/0.26 < (fy-0.2)/0.46: // the sail
				c = color.RGBA{0xff, 0xff, 0xff, 0xff}
			case fy > 0.3 && fy < 0.66 && fx > 0.57 && fx < 0.76 && (fx-0.57)/0.19 < (fy-0.3)/0.36:
				c = color.RGBA{0xff, 0xd5, 0x6a, 0xff}
			}
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}
