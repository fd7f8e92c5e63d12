package web_test

// UDID collection end to end on Postgres: the profile, real signed CMS answers (made in the test
// with a throwaway key), the device page, what release pages say, refusals, the export file.

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/test/apptest"
)

const testUDID = "00008030-001A2B3C4D5E6F70"

// adhocIPA is an ad hoc build whose profile lists devices (or provisions all of them).
func adhocIPA(name, build string, devices []string, all bool) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: name, BundleID: "com.example." + strings.ToLower(name), Version: "1.0", Build: build,
		Profile: &appletest.ProfileOptions{Name: name + " Ad Hoc", AppID: "TEAM123456.com.example." + strings.ToLower(name),
			Devices: devices, AllDevices: all, CreatedAt: time.Now().AddDate(0, -1, 0), ExpiresAt: time.Now().AddDate(1, 0, 0)}})
}

// profileChallenge downloads the UDID profile and returns its challenge.
func profileChallenge(t *testing.T, e *apptest.Env) string {
	t.Helper()
	r := get(t, e, "/udid/profile")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/x-apple-aspen-config" {
		t.Fatalf("profile: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	var p struct {
		PayloadType    string `plist:"PayloadType"`
		PayloadContent struct {
			URL              string   `plist:"URL"`
			DeviceAttributes []string `plist:"DeviceAttributes"`
			Challenge        string   `plist:"Challenge"`
		} `plist:"PayloadContent"`
	}
	if _, err := plist.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("profile is not a plist: %v", err)
	}
	if p.PayloadType != "Profile Service" || p.PayloadContent.URL != e.URL+"/udid/callback" || p.PayloadContent.Challenge == "" ||
		!strings.Contains(strings.Join(p.PayloadContent.DeviceAttributes, ","), "UDID") {
		t.Fatalf("profile %s", r.Body)
	}
	return p.PayloadContent.Challenge
}

func postAnswer(t *testing.T, e *apptest.Env, body []byte) *apptest.Response {
	t.Helper()
	return do(t, e, http.MethodPost, "/udid/callback", bytes.NewReader(body), http.Header{"Content-Type": {"application/pkcs7-signature"}})
}

func deviceRows(t *testing.T, e *apptest.Env) int {
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM devices`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUDIDRegistration(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	in := upload(t, e, "in.ipa", adhocIPA("Listed", "1", []string{"00008030-001a2b3c4d5e6f70", "0123456789abcdef0123456789abcdef01234567"}, false))
	out := upload(t, e, "out.ipa", adhocIPA("Unlisted", "1", []string{"0123456789abcdef0123456789abcdef01234567"}, false))
	ent := upload(t, e, "ent.ipa", adhocIPA("Everyone", "1", nil, true))

	if r := get(t, e, "/udid"); r.Status != 200 || !strings.Contains(string(r.Body), `id="profile-link" href="`+e.URL+`/udid/profile"`) {
		t.Fatalf("/udid: %d %s", r.Status, r.Body)
	}
	challenge := profileChallenge(t, e)
	r := postAnswer(t, e, profileservicetest.Answer(t, map[string]string{"UDID": strings.ToLower(testUDID), "PRODUCT": "iPhone15,2",
		"VERSION": "21A360", "SERIAL": "F2LXQ0XXXXXX", "DEVICE_NAME": "QA iPhone", "CHALLENGE": challenge}))
	if r.Status != http.StatusMovedPermanently || r.Header.Get("Location") != e.URL+"/udid/"+testUDID {
		t.Fatalf("callback: %d %s %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	var name, product, osv, serial, source string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT name, product, os_version, serial, source FROM devices WHERE udid = $1`, testUDID).
		Scan(&name, &product, &osv, &serial, &source); err != nil {
		t.Fatal(err)
	}
	if name != "QA iPhone" || product != "iPhone15,2" || osv != "21A360" || serial != "F2LXQ0XXXXXX" || source != "profile" {
		t.Errorf("stored device %q %q %q %q %q", name, product, osv, serial, source)
	}

	// The device page lists what it can install and remembers the device.
	page := get(t, e, "/udid/"+strings.ToLower(testUDID))
	body := string(page.Body)
	if page.Status != 200 || !strings.Contains(body, testUDID) || !strings.Contains(body, in.ReleaseURL) || !strings.Contains(body, ent.ReleaseURL) ||
		strings.Contains(body, out.ReleaseURL) {
		t.Fatalf("device page: %d %s", page.Status, body)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: page.Header}).Cookies() {
		if c.Name == "slipway_device" {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != testUDID || !cookie.HttpOnly {
		t.Fatalf("device cookie %v", page.Header.Values("Set-Cookie"))
	}
	// Release pages: can, cannot, and an enterprise build says nothing about devices.
	rel := func(r release, c *http.Cookie) string {
		u := strings.TrimPrefix(r.ReleaseURL, e.URL)
		if c == nil {
			return string(get(t, e, u).Body)
		}
		return string(get(t, e, u, c).Body)
	}
	if b := rel(in, cookie); !strings.Contains(b, `data-can-install="true"`) || !strings.Contains(b, "This device (QA iPhone) can install this build") ||
		!strings.Contains(b, "only on the 2 devices") {
		t.Errorf("listed build: %s", b)
	}
	if b := rel(out, cookie); !strings.Contains(b, `data-can-install="false"`) || !strings.Contains(b, "cannot install this build") ||
		!strings.Contains(b, testUDID) || !strings.Contains(b, "only on the 1 device ") {
		t.Errorf("unlisted build: %s", b)
	}
	if b := rel(ent, cookie); strings.Contains(b, `id="device-check"`) || strings.Contains(b, `id="device-limit"`) {
		t.Errorf("enterprise build talks about devices: %s", b)
	}
	if b := rel(in, nil); strings.Contains(b, `id="device-check"`) || !strings.Contains(b, `id="register-device"`) {
		t.Errorf("without a registered device: %s", b)
	}
	// A second answer from the same device updates it, still one row.
	r = postAnswer(t, e, profileservicetest.Answer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "VERSION": "22A100", "CHALLENGE": profileChallenge(t, e)}))
	if r.Status != http.StatusMovedPermanently || deviceRows(t, e) != 1 {
		t.Errorf("second answer: %d, %d rows", r.Status, deviceRows(t, e))
	}
}

func TestUDIDRefusals(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	challenge := profileChallenge(t, e)
	good := map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "CHALLENGE": challenge}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	plain, _ := plist.Marshal(good, plist.XMLFormat)
	signed := profileservicetest.Answer(t, good)
	tampered := bytes.Replace(signed, []byte("iPhone15,2"), []byte("iPhone15,3"), 1)
	cases := []struct {
		name   string
		body   []byte
		status int
	}{
		{"empty", nil, 422},
		{"garbage", []byte("not a CMS envelope"), 422},
		{"unsigned plist", plain, 422},
		{"tampered", tampered, 422},
		{"no challenge", profileservicetest.Answer(t, with("CHALLENGE", "")), 422},
		{"forged challenge", profileservicetest.Answer(t, with("CHALLENGE", "x."+challenge)), 422},
		{"bad UDID", profileservicetest.Answer(t, with("UDID", "not-a-udid")), 422},
		{"no UDID", profileservicetest.Answer(t, with("UDID", "")), 422},
		{"oversized", bytes.Repeat([]byte{0x30}, 100<<10), 413},
	}
	for _, c := range cases {
		r := postAnswer(t, e, c.body)
		if r.Status != c.status || r.Error(t) == "" {
			t.Errorf("%s: %d %s, want %d with an error", c.name, r.Status, r.Body, c.status)
		}
	}
	if n := deviceRows(t, e); n != 0 {
		t.Errorf("refused answers stored %d devices", n)
	}
	if r := get(t, e, "/udid/"+testUDID); r.Status != http.StatusNotFound {
		t.Errorf("unregistered device page: %d", r.Status)
	}
	if r := get(t, e, "/udid/nonsense"); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("malformed device page: %d", r.Status)
	}
	// Rate limit: 20 answers a minute per address (the cases above count), then 429.
	var last *apptest.Response
	for i := 0; i < 25; i++ {
		last = postAnswer(t, e, []byte("x"))
	}
	if last.Status != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Errorf("after 34 answers in a minute: %d %v", last.Status, last.Header)
	}
}

// The device API: get, rename, delete, and the export in Apple's device-list format.
func TestDeviceExport(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	auth := func(tok string) http.Header {
		return http.Header{"Authorization": {"Token " + tok}, "Content-Type": {"application/json"}}
	}
	for udid, body := range map[string]string{
		testUDID: `{"name":"QA\tiPhone\n15","platform":"IOS"}`,
		"0123456789abcdef0123456789abcdef01234567": `{"name":"Old iPad with a very long name that goes past fifty characters"}`,
		"A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D":     `{"name":"Build Mac","platform":"MAC_OS"}`,
		"00006000-001C2D3E4F5A6B7C":                `{"name":"M1 Mac","platform":"macOS"}`,
	} {
		// (An admin token's sync: an upload token's devices wait for approval before the export.)
		if r := do(t, e, http.MethodPut, "/api/devices/"+udid, strings.NewReader(body), auth(e.AdminToken)); r.Status != http.StatusCreated {
			t.Fatalf("sync %s: %d %s", udid, r.Status, r.Body)
		}
	}
	if r := do(t, e, http.MethodPatch, "/api/devices/"+strings.ToLower(testUDID), strings.NewReader(`{"name":"QA iPhone 15"}`), auth(e.AdminToken)); r.Status != 200 {
		t.Fatalf("rename: %d", r.Status)
	}
	if r := do(t, e, http.MethodGet, "/api/devices/"+testUDID, nil, auth(e.UploadToken)); r.Status != 200 || r.Map(t)["name"] != "QA iPhone 15" {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	r := do(t, e, http.MethodGet, "/api/devices/export", nil, auth(e.UploadToken))
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("export: %d %s", r.Status, r.Header)
	}
	lines := strings.Split(strings.TrimSuffix(string(r.Body), "\n"), "\n")
	if lines[0] != "Device ID\tDevice Name\tDevice Platform" || len(lines) != 5 {
		t.Fatalf("export:\n%s", r.Body)
	}
	want := map[string][2]string{
		testUDID: {"QA iPhone 15", "ios"},
		"0123456789abcdef0123456789abcdef01234567": {"Old iPad with a very long name that goes past fifty characters"[:50], "ios"},
		"A1B2C3D4-E5F6-4A7B-8C9D-0E1F2A3B4C5D":     {"Build Mac", "mac"},
		"00006000-001C2D3E4F5A6B7C":                {"M1 Mac", "mac"},
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Errorf("line %q has %d fields, want 3", l, len(f))
			continue
		}
		w, ok := want[f[0]]
		if !ok || f[1] != w[0] || f[2] != w[1] || len([]rune(f[1])) > 50 {
			t.Errorf("line %q, want %v", l, w)
		}
	}
	if r := do(t, e, http.MethodDelete, "/api/devices/"+testUDID, nil, auth(e.UploadToken)); r.Status != http.StatusForbidden {
		t.Errorf("delete with an upload token: %d", r.Status)
	}
	if r := do(t, e, http.MethodDelete, "/api/devices/"+testUDID, nil, auth(e.AdminToken)); r.Status != 200 {
		t.Errorf("delete: %d", r.Status)
	}
	if r := do(t, e, http.MethodDelete, "/api/devices/"+testUDID, nil, auth(e.AdminToken)); r.Status != 404 {
		t.Errorf("delete again: %d", r.Status)
	}
	if r := do(t, e, http.MethodGet, "/api/devices/bad", nil, auth(e.AdminToken)); r.Status != 422 {
		t.Errorf("get a malformed UDID: %d", r.Status)
	}
}

// With the operator's certificate, the profile is CMS SignedData holding the same plist, and it
// verifies with that certificate (iOS then shows it as verified).
func TestUDIDSignedProfile(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	cert, key := profileservicetest.Identity(t)
	e.Service.Devices.UDID.Cert, e.Service.Devices.UDID.Key = cert, key
	r := get(t, e, "/udid/profile")
	p7, err := pkcs7.Parse(r.Body)
	if err != nil {
		t.Fatalf("the signed profile is not CMS: %v", err)
	}
	if err := p7.Verify(); err != nil || !p7.GetOnlySigner().Equal(cert) {
		t.Fatalf("the signature does not verify with the operator's certificate: %v", err)
	}
	if c := profileservicetest.Challenge(t, p7.Content); c == "" || !strings.Contains(string(p7.Content), "Profile Service") {
		t.Errorf("signed content %s", p7.Content)
	}
}

// A build whose provisioning profile lists the device but has expired installs nowhere: its page
// must not tell the device it can install it (above a disabled "Profile expired" button), and the
// device page must not list it among the builds the device can install.
func TestUDIDExpiredProfile(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	expired := upload(t, e, "old.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Stale", BundleID: "com.example.stale", Version: "1.0", Build: "1",
		Profile: &appletest.ProfileOptions{Name: "Stale Ad Hoc", AppID: "TEAM123456.com.example.stale", Devices: []string{testUDID},
			CreatedAt: time.Now().AddDate(-1, 0, 0), ExpiresAt: time.Now().AddDate(0, 0, -2)}}))
	fresh := upload(t, e, "new.ipa", adhocIPA("Fresh", "1", []string{testUDID}, false))
	r := postAnswer(t, e, profileservicetest.Answer(t, map[string]string{"UDID": testUDID, "PRODUCT": "iPhone15,2", "DEVICE_NAME": "QA iPhone",
		"CHALLENGE": profileChallenge(t, e)}))
	if r.Status != http.StatusMovedPermanently {
		t.Fatalf("callback: %d %s", r.Status, r.Body)
	}
	page := get(t, e, "/udid/"+testUDID)
	body := string(page.Body)
	installable, expiredPart, _ := strings.Cut(body, `id="expired-builds"`)
	if page.Status != 200 || !strings.Contains(installable, fresh.ReleaseURL) || strings.Contains(installable, expired.ReleaseURL) ||
		!strings.Contains(expiredPart, expired.ReleaseURL) {
		t.Fatalf("device page lists the expired build among those the device can install, or not apart: %s", body)
	}
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: page.Header}).Cookies() {
		if c.Name == "slipway_device" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatal("no device cookie")
	}
	b := string(get(t, e, strings.TrimPrefix(expired.ReleaseURL, e.URL), cookie).Body)
	if strings.Contains(b, "can install this build") || !strings.Contains(b, `data-can-install="false"`) || !strings.Contains(b, "profile expired") ||
		!strings.Contains(b, "Profile expired") {
		t.Errorf("expired build's page: %s", b)
	}
	if b := string(get(t, e, strings.TrimPrefix(fresh.ReleaseURL, e.URL), cookie).Body); !strings.Contains(b, "This device (QA iPhone) can install this build") {
		t.Errorf("fresh build's page: %s", b)
	}
}
