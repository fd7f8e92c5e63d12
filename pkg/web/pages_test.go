package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/makiuchi-d/gozxing"
	gozxingqr "github.com/makiuchi-d/gozxing/qrcode"
	qrdecoder "github.com/makiuchi-d/gozxing/qrcode/decoder"
	"github.com/skip2/go-qrcode"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// release is the part of the upload response the tests use.
type release struct {
	ID         int64  `json:"id"`
	ReleaseURL string `json:"release_url"`
	QRCodeURL  string `json:"qrcode_url"`
	InstallURL string `json:"install_url"`
	IconURL    string `json:"icon_url"`
	Channel    struct {
		Slug        string `json:"slug"`
		HasPassword bool   `json:"has_password"`
	} `json:"channel"`
}

func upload(t testing.TB, e *apptest.Env, filename string, data []byte, fields ...apptest.Part) release {
	t.Helper()
	m := e.UploadApp(t, filename, data, fields...)
	b, _ := json.Marshal(m)
	var r release
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func ipa(name, version, build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: name, BundleID: "com.example." + strings.ToLower(name),
		Version: version, Build: build, Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}})
}

func apk(label, version string, code int) []byte {
	return androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.example.droid", VersionCode: code, VersionName: version, MinSDK: 21, Label: label}})
}

// setGitURL sets a channel's git_url, which no API sets (Zealot's admin UI does).
func setGitURL(t testing.TB, e *apptest.Env, slug, gitURL string) {
	t.Helper()
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE channels SET git_url = $1 WHERE slug = $2`, gitURL, slug); err != nil {
		t.Fatal(err)
	}
}

// do sends a request to the server (path relative to its URL) through e.Client, which follows no
// redirects and checks the exchange against docs/openapi.yaml, and reads the whole response.
func do(t testing.TB, e *apptest.Env, method, path string, body io.Reader, header http.Header) *apptest.Response {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.Client.Do(req) // checked against docs/openapi.yaml too
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// get fetches path with optional cookies.
func get(t testing.TB, e *apptest.Env, path string, cookies ...*http.Cookie) *apptest.Response {
	t.Helper()
	h := http.Header{}
	for _, c := range cookies {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	return do(t, e, http.MethodGet, path, nil, h)
}

func postPassword(t testing.TB, e *apptest.Env, path, password string) *apptest.Response {
	t.Helper()
	body := strings.NewReader(url.Values{"password": {password}}.Encode())
	return do(t, e, http.MethodPost, path, body, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
}

func mustContain(t testing.TB, body []byte, want ...string) {
	t.Helper()
	for _, w := range want {
		if !bytes.Contains(body, []byte(w)) {
			t.Errorf("page lacks %q", w)
		}
	}
}

func mustNotContain(t testing.TB, body []byte, bad ...string) {
	t.Helper()
	for _, b := range bad {
		if bytes.Contains(body, []byte(b)) {
			t.Errorf("page contains %q", b)
		}
	}
}

func TestReleasePageIOS(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	r := upload(t, e, "demo.ipa", ipa("Demo", "1.2.3", "45"),
		apptest.Field("changelog", "- Fixed the login crash\n- Faster sync"),
		apptest.Field("branch", "origin/feature/qr"), apptest.Field("git_commit", "0123456789abcdef0123456789abcdef01234567"),
		apptest.Field("ci_url", "https://ci.example.com/build/77"),
		apptest.Field("custom_fields", `[{"name":"Tests","value":"312 passed","icon":"fa fa-check"}]`))
	setGitURL(t, e, r.Channel.Slug, "git@github.com:example/demo.git")
	older := upload(t, e, "demo.ipa", ipa("Demo", "1.2.2", "44"))

	resp := get(t, e, strings.TrimPrefix(r.ReleaseURL, e.URL))
	if resp.Status != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d %s: %.300s", resp.Status, resp.Header.Get("Content-Type"), resp.Body)
	}
	manifest := e.URL + "/channels/" + r.Channel.Slug + fmt.Sprintf("/releases/%d/install", r.ID)
	mustContain(t, resp.Body,
		`<h1 id="app-name">Demo</h1>`, "1.2.3", "(45)", "Fixed the login crash", "Faster sync",
		`href="`+html.EscapeString("itms-services://?action=download-manifest&url="+manifest)+`"`,
		"com.example.demo", "iPhone and iPad", "#1", // device of UIDeviceFamily [1,2]; sequence version
		`href="https://github.com/example/demo/tree/feature/qr"`,
		`href="https://github.com/example/demo/commit/0123456789abcdef0123456789abcdef01234567"`, ">01234567<",
		`href="https://ci.example.com/build/77"`,
		`<i class="fa fa-check" aria-hidden="true"></i> Tests`, "312 passed",
		r.QRCodeURL[:strings.Index(r.QRCodeURL, "?")]+"?size=medium", r.IconURL,
		older.ReleaseURL,        // the other release of the channel
		`id="insecure-warning"`, // the test server is plain http
		e.URL+"/static/fontawesome/css/all.min.css",
	)
	// A tester is told whom to tell, not an operator's setting; no Android hint on iOS.
	mustNotContain(t, resp.Body, "SLIPWAY_PUBLIC_URL", `id="android-hint"`)
	// Open Graph: name, version and icon.
	mustContain(t, resp.Body,
		`<meta property="og:title" content="Demo 1.2.3 (45)">`,
		`<meta property="og:image" content="`+r.IconURL+`">`,
		`<meta property="og:url" content="`+r.ReleaseURL+`">`)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") || resp.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("security headers: %v", resp.Header)
	}
	// The install manifest still answers for the itms-services link.
	if m := get(t, e, strings.TrimPrefix(manifest, e.URL)); m.Status != 200 || !bytes.Contains(m.Body, []byte("com.example.demo")) {
		t.Errorf("manifest: %d %s", m.Status, m.Body)
	}
	// Assets are embedded and served.
	for _, p := range []string{"/static/slipway.css", "/static/fontawesome/css/all.min.css", "/static/fontawesome/webfonts/fa-solid-900.woff2"} {
		if a := get(t, e, p); a.Status != 200 || len(a.Body) == 0 {
			t.Errorf("%s: %d", p, a.Status)
		}
	}
	// A release of another channel, or an unknown one, is a 404 page.
	for _, p := range []string{fmt.Sprintf("/channels/nope/releases/%d", r.ID), "/channels/" + r.Channel.Slug + "/releases/999999", "/channels/" + r.Channel.Slug + "/releases/x"} {
		if nf := get(t, e, p); nf.Status != 404 || !strings.HasPrefix(nf.Header.Get("Content-Type"), "text/html") {
			t.Errorf("%s: %d %s", p, nf.Status, nf.Header.Get("Content-Type"))
		}
	}
}

func TestReleasePageHTTPSAndPlatforms(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.PublicURL = strings.Replace(c.PublicURL, "http://", "https://", 1)
		c.Location = time.FixedZone("JST", 9*3600)
	}})
	local := func(u string) string { return strings.TrimPrefix(u, e.Config.PublicURL) }
	r := upload(t, e, "demo.ipa", ipa("Demo", "1.0", "1"))
	resp := get(t, e, local(r.ReleaseURL))
	mustNotContain(t, resp.Body, `id="insecure-warning"`)
	mustContain(t, resp.Body, "JST") // times in the configured zone

	a := upload(t, e, "droid.apk", apk("Droid", "2.0", 7), apptest.Field("changelog", "Android notes"))
	resp = get(t, e, local(a.ReleaseURL))
	mustContain(t, resp.Body, "Droid", "2.0", "(7)", "Android notes", "Android",
		`id="install" href="`+e.Config.PublicURL+fmt.Sprintf("/download/releases/%d", a.ID)+`"`)
	mustNotContain(t, resp.Body, "itms-services", `id="insecure-warning"`)
	// Android's minimum is an API level, said with its release; the first install asks to allow
	// the browser, which the page says.
	mustContain(t, resp.Body, `<dd id="min-os">API 21 (Android 5.0)</dd>`, `id="android-hint"`)

	m := upload(t, e, "mac.zip", appletest.BuildMacZip(appletest.MacZipOptions{AppName: "MacDemo", Version: "3.1", Build: "9"}))
	resp = get(t, e, local(m.ReleaseURL))
	mustContain(t, resp.Body, "MacDemo", "3.1", "macOS", " Download</a>",
		`id="install" href="`+e.Config.PublicURL+fmt.Sprintf("/download/releases/%d", m.ID)+`"`)
}

func TestExpiredProfileDisablesInstall(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	build := func(expires time.Time) []byte {
		return appletest.BuildIPA(appletest.IPAOptions{AppName: "Signed", Profile: &appletest.ProfileOptions{
			TeamID: "ABCDE12345", TeamName: "Example Team", Devices: []string{"00008030-000000000000001E"}, ExpiresAt: expires}})
	}
	old := upload(t, e, "old.ipa", build(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)))
	resp := get(t, e, strings.TrimPrefix(old.ReleaseURL, e.URL))
	mustContain(t, resp.Body, `id="expired-warning"`, "(expired)", "Example Team", "ABCDE12345", `aria-disabled="true"`)
	mustNotContain(t, resp.Body, "itms-services")

	fresh := upload(t, e, "new.ipa", build(time.Now().AddDate(1, 0, 0)))
	resp = get(t, e, strings.TrimPrefix(fresh.ReleaseURL, e.URL))
	mustContain(t, resp.Body, "Example Team", "itms-services://")
	mustNotContain(t, resp.Body, `id="expired-warning"`, "(expired)")
}

// TestEscaping puts hostile text wherever a user's text reaches the page.
func TestEscaping(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	hostile := `<script>alert(1)</script>"onmouseover="alert(2)" '><img src=x onerror=alert(3)>`
	fields, _ := json.Marshal([]map[string]string{{"name": hostile, "value": hostile, "icon": `fa" onclick="alert(4)`}})
	changelog, _ := json.Marshal([]map[string]string{{"message": hostile, "author": hostile, "date": "2026-01-01 00:00:00"}})
	r := upload(t, e, "x.ipa", ipa("Demo", "1.0", "1"),
		apptest.Field("name", "App "+hostile), apptest.Field("changelog", string(changelog)),
		apptest.Field("custom_fields", string(fields)), apptest.Field("branch", `main"><script>alert(5)</script>`),
		apptest.Field("git_commit", `"><script>alert(6)</script>`))
	// javascript: in ci_url does not pass upload validation.
	bad := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.Field("ci_url", "javascript:alert(7)"), apptest.File("x.ipa", ipa("Demo", "1.0", "1")))
	if bad.Status != http.StatusUnprocessableEntity {
		t.Errorf("javascript: ci_url: status %d", bad.Status)
	}
	for _, gitURL := range []string{"javascript:alert(8)//github.com/a/b", "javascript://github.com/%0aalert(9)", "data:text/html,x"} {
		setGitURL(t, e, r.Channel.Slug, gitURL)
		for _, page := range []string{r.ReleaseURL, e.URL + "/channels/" + r.Channel.Slug} {
			resp := get(t, e, strings.TrimPrefix(page, e.URL))
			if resp.Status != 200 {
				t.Fatalf("%s: %d", page, resp.Status)
			}
			mustNotContain(t, resp.Body, "<script>alert", "<img src=x", `"onmouseover="alert`, `onclick="alert`, "javascript:", "data:text")
			if page == r.ReleaseURL {
				mustContain(t, resp.Body, "&lt;script&gt;alert(1)&lt;/script&gt;", "&#34;onmouseover=&#34;alert(2)&#34;",
					`class="fa&#34; onclick=&#34;alert(4)"`, "main&#34;&gt;&lt;script&gt;alert(5)&lt;/script&gt;",
					`<meta property="og:title" content="App &lt;script&gt;alert(1)&lt;/script&gt;&#34;onmouseover=&#34;alert(2)&#34;`)
			}
		}
	}
}

func TestQRCode(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	r := upload(t, e, "demo.ipa", ipa("Demo", "1.0", "1"))
	base := strings.TrimPrefix(r.ReleaseURL, e.URL) + "/qrcode"
	if r.QRCodeURL != r.ReleaseURL+"/qrcode?size=thumb" {
		t.Errorf("qrcode_url %s", r.QRCodeURL)
	}
	for size, px := range map[string]int{"": 128, "thumb": 128, "medium": 256, "large": 512, "64": 64, "300": 300, "2048": 2048} {
		path := base + "?size=" + size
		if size == "" {
			path = base // the default
		}
		resp := get(t, e, path)
		if resp.Status != 200 || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("size %q: %d %s", size, resp.Status, resp.Body)
		}
		img, err := png.Decode(bytes.NewReader(resp.Body))
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() < px || b.Dx() > px+px/4 || b.Dx() != b.Dy() {
			t.Errorf("size %q: image %v, want about %dpx", size, b, px)
		}
		if px <= 512 {
			if got := decodeQR(t, img); got != r.ReleaseURL {
				t.Errorf("size %q decodes to %q, want %q", size, got, r.ReleaseURL)
			}
		}
		if resp.Header.Get("Cache-Control") != "public, max-age=86400" || resp.Header.Get("ETag") == "" {
			t.Errorf("caching headers: %v", resp.Header)
		}
	}
	for _, size := range []string{"0", "63", "2049", "-5", "huge", "1e3", "128px"} {
		resp := get(t, e, base+"?size="+url.QueryEscape(size))
		if resp.Status != http.StatusUnprocessableEntity || !strings.Contains(resp.Error(t), "size") {
			t.Errorf("size %q: %d %s", size, resp.Status, resp.Body)
		}
	}
	if resp := get(t, e, "/channels/"+r.Channel.Slug+"/releases/999999/qrcode"); resp.Status != 404 || resp.Error(t) == "" {
		t.Errorf("unknown release: %d %s", resp.Status, resp.Body)
	}
	// Revalidation: the same ETag gives a 304; another size has another ETag.
	first := get(t, e, base+"?size=medium")
	etag := first.Header.Get("ETag")
	again := do(t, e, http.MethodGet, base+"?size=medium", nil, http.Header{"If-None-Match": {etag}})
	if again.Status != http.StatusNotModified || len(again.Body) != 0 {
		t.Errorf("If-None-Match: %d", again.Status)
	}
	if other := get(t, e, base+"?size=large"); other.Header.Get("ETag") == etag {
		t.Error("two sizes share an ETag")
	}
	// A protected channel's QR code is cached privately only.
	p := upload(t, e, "demo.ipa", ipa("Secret", "1.0", "1"), apptest.Field("name", "Secret"), apptest.Field("password", "pw"))
	if resp := get(t, e, strings.TrimPrefix(p.QRCodeURL, e.URL)); resp.Status != 200 || resp.Header.Get("Cache-Control") != "private, max-age=86400" {
		t.Errorf("protected QR: %d %v", resp.Status, resp.Header)
	}
}

func decodeQR(t testing.TB, img image.Image) string {
	t.Helper()
	// An upright image (the PNG the server sends, a screenshot of it) is read module by module,
	// which always works: gozxing's locator misses a share of valid codes (seen in a soak: a
	// served PNG it read at no scale, "dimension = 27"), so it is only the fallback.
	text, err := decodeQRGrid(img)
	if err == nil {
		return text
	}
	// A screenshot may crop the quiet zone and scale modules unevenly (256 px shown at 200 px):
	// give the locator a white margin and let it try harder, at a few sizes.
	lastErr := err
	for _, scale := range []int{1, 2, 3} {
		text, err := decodeQRAt(img, scale)
		if err == nil {
			return text
		}
		lastErr = err
	}
	t.Fatalf("decoding the QR code: %v", lastErr)
	return ""
}

// decodeQRGrid reads an upright QR code without locating it: the dark modules' bounding box is
// the symbol, the top-left finder pattern (7 modules) gives the module size, and each module is
// sampled at its centre; gozxing's decoder then reads the module matrix.
func decodeQRGrid(img image.Image) (string, error) {
	b := img.Bounds()
	dark := func(x, y int) bool {
		r, g, bl, _ := img.At(x, y).RGBA()
		return r+g+bl < 3*0x8000
	}
	minX, minY, maxX, maxY := b.Max.X, b.Max.Y, b.Min.X-1, b.Min.Y-1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if dark(x, y) {
				minX, minY, maxX, maxY = min(minX, x), min(minY, y), max(maxX, x), max(maxY, y)
			}
		}
	}
	if maxX < minX {
		return "", fmt.Errorf("no dark pixel: not a QR code")
	}
	// The finder pattern's top edge is a run of 7 dark modules from the symbol's corner.
	run := 0
	for x := minX; x <= maxX && dark(x, minY); x++ {
		run++
	}
	width, height := float64(maxX-minX+1), float64(maxY-minY+1)
	n := int(width*7/float64(run) + 0.5)
	n = (n-17+2)/4*4 + 17 // the nearest size a QR code has: 21, 25, 29, ...
	if n < 21 {
		return "", fmt.Errorf("a symbol of %d modules is not a QR code", n)
	}
	bits, err := gozxing.NewBitMatrix(n, n)
	if err != nil {
		return "", err
	}
	for r := range n {
		for c := range n {
			if dark(minX+int((float64(c)+0.5)*width/float64(n)), minY+int((float64(r)+0.5)*height/float64(n))) {
				bits.Set(c, r)
			}
		}
	}
	res, err := qrdecoder.NewDecoder().Decode(bits, nil)
	if err != nil {
		return "", err
	}
	return res.GetText(), nil
}

// decodeQRAt decodes img scaled up by scale (nearest neighbour) inside a white margin.
func decodeQRAt(img image.Image, scale int) (string, error) {
	b := img.Bounds()
	pad := b.Dx()/8 + 8
	padded := image.NewRGBA(image.Rect(0, 0, b.Dx()*scale+2*pad, b.Dy()*scale+2*pad))
	draw.Draw(padded, padded.Bounds(), image.White, image.Point{}, draw.Src)
	for y := 0; y < b.Dy()*scale; y++ {
		for x := 0; x < b.Dx()*scale; x++ {
			padded.Set(pad+x, pad+y, img.At(b.Min.X+x/scale, b.Min.Y+y/scale))
		}
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(padded)
	if err != nil {
		return "", err
	}
	res, err := gozxingqr.NewQRCodeReader().Decode(bmp, map[gozxing.DecodeHintType]interface{}{gozxing.DecodeHintType_TRY_HARDER: true})
	if err != nil {
		return "", err
	}
	return res.GetText(), nil
}

func cookieOf(t testing.TB, resp *apptest.Response) *http.Cookie {
	t.Helper()
	cs := (&http.Response{Header: resp.Header}).Cookies()
	if len(cs) != 1 {
		t.Fatalf("want one cookie, got %v", resp.Header.Values("Set-Cookie"))
	}
	return cs[0]
}

func TestPasswordFlow(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	r := upload(t, e, "demo.ipa", ipa("Secret", "1.0", "1"), apptest.Field("name", "Secret"),
		apptest.Field("password", "open sesame"), apptest.Field("changelog", "hidden notes"))
	other := upload(t, e, "demo.ipa", ipa("Other", "1.0", "1"), apptest.Field("name", "Other"), apptest.Field("password", "other pw"))
	if !r.Channel.HasPassword {
		t.Fatal("has_password is false")
	}
	page := strings.TrimPrefix(r.ReleaseURL, e.URL)
	download := fmt.Sprintf("/download/releases/%d", r.ID)

	// The JSON tells that there is a password, nothing more.
	v := get(t, e, "/api/apps/versions?channel_key="+r.Channel.Slug)
	mustNotContain(t, v.Body, "open sesame", "password_hash", "$2a$")

	form := get(t, e, page)
	if form.Status != 200 || form.Header.Get("Cache-Control") != "private, no-store" {
		t.Fatalf("form: %d %v", form.Status, form.Header)
	}
	mustContain(t, form.Body, `<form method="post" action="`+r.ReleaseURL+`"`, `name="password"`)
	mustNotContain(t, form.Body, "hidden notes", "itms-services", "/releases/"+fmt.Sprint(r.ID)+"/icon")

	wrong := postPassword(t, e, page, "guess")
	if wrong.Status != http.StatusForbidden || len(wrong.Header.Values("Set-Cookie")) != 0 {
		t.Fatalf("wrong password: %d %v", wrong.Status, wrong.Header)
	}
	mustContain(t, wrong.Body, `id="password-error"`, "Wrong password")

	right := postPassword(t, e, page, "open sesame")
	if right.Status != http.StatusSeeOther || right.Header.Get("Location") != r.ReleaseURL {
		t.Fatalf("right password: %d %v", right.Status, right.Header)
	}
	ck := cookieOf(t, right)
	if ck.Name != "slipway_ch_"+r.Channel.Slug || !ck.HttpOnly || ck.Path != "/" || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.MaxAge <= 0 {
		t.Errorf("cookie %+v", ck)
	}
	open := get(t, e, page, ck)
	if open.Status != 200 {
		t.Fatalf("page with cookie: %d", open.Status)
	}
	mustContain(t, open.Body, "hidden notes", "itms-services://", "install?access=")
	// The channel page opens with the same cookie.
	if ch := get(t, e, "/channels/"+r.Channel.Slug, ck); ch.Status != 200 || !bytes.Contains(ch.Body, []byte(`id="releases"`)) {
		t.Errorf("channel page with cookie: %d", ch.Status)
	}
	// The install link works without cookies, as iOS follows it.
	m := regexp.MustCompile(`url=([^"]+)"`).FindSubmatch(open.Body)
	if m == nil {
		t.Fatal("no manifest URL on the page")
	}
	manifest := html.UnescapeString(string(m[1]))
	if resp := get(t, e, strings.TrimPrefix(manifest, e.URL)); resp.Status != 200 || !bytes.Contains(resp.Body, []byte("access=")) {
		t.Errorf("manifest by token: %d %s", resp.Status, resp.Body)
	}
	// The cookie opens downloads and the icon; nothing else does, another channel's cookie neither.
	for _, p := range []string{download, fmt.Sprintf("/releases/%d/icon", r.ID), strings.TrimPrefix(manifest[:strings.Index(manifest, "?")], e.URL)} {
		if resp := get(t, e, p, ck); resp.Status != http.StatusFound && resp.Status != 200 {
			t.Errorf("%s with cookie: %d %s", p, resp.Status, resp.Body)
		}
		if resp := get(t, e, p); resp.Status != http.StatusUnauthorized {
			t.Errorf("%s without cookie: %d", p, resp.Status)
		}
	}
	otherCk := cookieOf(t, postPassword(t, e, strings.TrimPrefix(other.ReleaseURL, e.URL), "other pw"))
	stolen := &http.Cookie{Name: ck.Name, Value: otherCk.Value}
	if resp := get(t, e, download, stolen); resp.Status == http.StatusFound {
		t.Error("another channel's cookie opens the download")
	}
	if resp := get(t, e, page, stolen); bytes.Contains(resp.Body, []byte("hidden notes")) {
		t.Error("another channel's cookie opens the page")
	}
	// API clients give the password as a parameter.
	if resp := get(t, e, download+"?password="+url.QueryEscape("open sesame")); resp.Status != http.StatusFound {
		t.Errorf("download with password parameter: %d", resp.Status)
	}
}

func TestPasswordSlowdown(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	r := upload(t, e, "demo.ipa", ipa("Secret", "1.0", "1"), apptest.Field("password", "right"))
	page := strings.TrimPrefix(r.ReleaseURL, e.URL)
	var last *apptest.Response
	for i := 0; i < 8; i++ {
		last = postPassword(t, e, page, fmt.Sprintf("wrong-%d", i))
		if last.Status == http.StatusTooManyRequests {
			break
		}
		if last.Status != http.StatusForbidden {
			t.Fatalf("attempt %d: %d", i, last.Status)
		}
	}
	if last.Status != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Fatalf("no slowdown: %d %v", last.Status, last.Header)
	}
	mustContain(t, last.Body, `id="password-error"`, "Too many wrong passwords", "<form")
	// Even the right password waits now.
	if resp := postPassword(t, e, page, "right"); resp.Status != http.StatusTooManyRequests {
		t.Errorf("right password while slowed down: %d", resp.Status)
	}
}

func TestChannelPagePagination(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	var rs []release
	for i := 1; i <= 23; i++ {
		rs = append(rs, upload(t, e, "droid.apk", apk("Droid", fmt.Sprintf("1.%d", i), i), apptest.Field("changelog", fmt.Sprintf("change %d", i))))
	}
	slug := rs[0].Channel.Slug
	p1 := get(t, e, "/channels/"+slug)
	if p1.Status != 200 {
		t.Fatalf("channel page: %d", p1.Status)
	}
	mustContain(t, p1.Body, `id="latest">1.23 (23)</a>`, "change 23", "(23)", "Page 1 of 2",
		`href="`+e.URL+"/channels/"+slug+`?page=2"`, fmt.Sprintf("/download/releases/%d", rs[22].ID))
	if n := strings.Count(string(p1.Body), `<li><a href="`); n != 20 {
		t.Errorf("page 1 lists %d releases", n)
	}
	if i23, i4 := bytes.Index(p1.Body, []byte("change 23")), bytes.Index(p1.Body, []byte("change 4<")); i23 < 0 || i4 < 0 || i23 > i4 {
		t.Error("releases are not newest first")
	}
	p2 := get(t, e, "/channels/"+slug+"?page=2")
	mustContain(t, p2.Body, "Page 2 of 2", rs[0].ReleaseURL, `rel="prev"`)
	if n := strings.Count(string(p2.Body), `<li><a href="`); n != 3 {
		t.Errorf("page 2 lists %d releases", n)
	}
	past := get(t, e, "/channels/"+slug+"?page=9")
	mustContain(t, past.Body, "No releases on this page")
	for _, bad := range []string{"0", "-1", "x"} {
		if resp := get(t, e, "/channels/"+slug+"?page="+bad); resp.Status != http.StatusUnprocessableEntity {
			t.Errorf("page=%s: %d", bad, resp.Status)
		}
	}
	if resp := get(t, e, "/channels/unknown"); resp.Status != 404 {
		t.Errorf("unknown channel: %d", resp.Status)
	}
}

// The tests' QR reader reads every code the server can make: release URLs of every length the
// pages use, at the sizes the pages ask for (it once failed on a valid code; see decodeQR).
func TestDecodeQRGridReadsServedCodes(t *testing.T) {
	for i := range 300 {
		url := fmt.Sprintf("https://apps.example.com/channels/%x/releases/%d", uint64(i)*0x9E3779B97F4A7C15, i*7919)
		for _, size := range []int{200, 256, 300} {
			png, err := qrcode.Encode(url, qrcode.Medium, size)
			if err != nil {
				t.Fatal(err)
			}
			img, err := pngDecode(png)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := decodeQRGrid(img); err != nil || got != url {
				t.Fatalf("%d px code of %q reads %q, %v", size, url, got, err)
			}
		}
	}
}

func pngDecode(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }

// TestReleasePageSaysWhatChanged (issue 24): the tester page says in one line what changed since
// the channel's previous build, the size change and the permissions added, escaped like every
// value from a package; the channel's first build, and a build whose previous one has no
// insights recorded, show no line.
func TestReleasePageSaysWhatChanged(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, apptest.Options{})
	build := func(code int, perms ...string) []byte {
		return androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.changes", VersionCode: code, VersionName: fmt.Sprintf("1.%d", code), Label: "Changes", Permissions: perms}})
	}
	first := upload(t, e, "a.apk", build(1, "android.permission.INTERNET"))
	second := upload(t, e, "b.apk", build(2, "android.permission.INTERNET", "android.permission.CAMERA", `<script>alert(1)</script>`),
		apptest.Field("channel_key", first.Channel.Slug))
	if body := string(get(t, e, strings.TrimPrefix(first.ReleaseURL, e.URL)).Body); strings.Contains(body, `id="changes"`) {
		t.Errorf("the first build's page says what changed")
	}
	body := string(get(t, e, strings.TrimPrefix(second.ReleaseURL, e.URL)).Body)
	line := regexp.MustCompile(`<p class="note" id="changes">Since 1.1 \(1\): &#43;[0-9.]+ [kM]?B \(&#43;[0-9.]+%\), new permission: &lt;script&gt;alert\(1\)&lt;/script&gt;, new permission: android.permission.CAMERA</p>`)
	if !line.MatchString(body) {
		i := strings.Index(body, `id="changes"`)
		t.Errorf("no line saying what changed: %q", body[max(i-30, 0):min(max(i, 0)+300, len(body))])
	}
	if _, err := e.DB.Pool.Exec(context.Background(), `DELETE FROM release_insights WHERE release_id = $1`, first.ID); err != nil {
		t.Fatal(err)
	}
	if body := string(get(t, e, strings.TrimPrefix(second.ReleaseURL, e.URL)).Body); strings.Contains(body, `id="changes"`) {
		t.Errorf("a line without the previous build's insights")
	}
}
