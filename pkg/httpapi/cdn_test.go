package httpapi_test

import (
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// With SLIPWAY_CDN_URL, a public channel's packages and icons redirect to the CDN; a
// password-protected channel's never do (a CDN fronting the bucket serves any key to anyone): they
// redirect to a presigned S3 URL, after the password, as without a CDN. Debug files are never
// sent to the CDN, nor the feeds' links of a protected channel. A channel given a password later
// stops sending its older builds there too.
func TestCDNNeverGetsAProtectedChannel(t *testing.T) {
	const cdn = "https://cdn.example.com/slipway"
	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.CDNURL = cdn }}), key}
	e := f.e

	location := func(path string) string {
		t.Helper()
		r := e.Get(t, path)
		if r.Status != http.StatusFound {
			t.Fatalf("%s: %d %s", strings.SplitN(path, "?", 2)[0], r.Status, r.Body)
		}
		return r.Header.Get("Location")
	}
	presigned := func(what, loc string) {
		t.Helper()
		u, err := url.Parse(loc)
		if strings.HasPrefix(loc, cdn) || err != nil || u.Query().Get("X-Amz-Signature") == "" || u.Query().Get("X-Amz-Expires") == "" {
			t.Errorf("%s of a protected channel: not a presigned S3 URL (a CDN URL would open it to anyone)", what)
		}
	}

	public := e.UploadApp(t, "p.ipa", iconIPA("Open", "com.example.open", "1.0"))
	pubID := int64(public["id"].(float64))
	if loc := location(fmt.Sprintf("/download/releases/%d", pubID)); !strings.HasPrefix(loc, cdn+"/packages/") {
		t.Errorf("a public channel's package is not on the CDN: %.60s", loc)
	}
	if loc := location(fmt.Sprintf("/releases/%d/icon", pubID)); !strings.HasPrefix(loc, cdn+"/icons/") {
		t.Errorf("a public channel's icon is not on the CDN: %.60s", loc)
	}

	secret := e.UploadApp(t, "s.ipa", iconIPA("Closed", "com.example.closed", "1.0"), apptest.Field("password", "sesame"))
	secID := int64(secret["id"].(float64))
	if r := e.Get(t, fmt.Sprintf("/download/releases/%d", secID)); r.Status == http.StatusFound && strings.HasPrefix(r.Header.Get("Location"), cdn) {
		t.Fatal("a protected channel's package went to the CDN without its password")
	}
	presigned("the package", location(fmt.Sprintf("/download/releases/%d?password=sesame", secID)))
	presigned("the icon", location(fmt.Sprintf("/releases/%d/icon?password=sesame", secID)))
	if got := e.Follow(t, location(fmt.Sprintf("/download/releases/%d?password=sesame", secID))); got.Status != 200 {
		t.Errorf("the presigned package: %d", got.Status)
	}

	// A password set later (an upload with one to the public channel) takes its older builds off
	// the CDN as well.
	e.UploadApp(t, "p2.ipa", iconIPA("Open", "com.example.open", "1.1"), apptest.Field("channel_key", public["channel"].(map[string]any)["slug"].(string)),
		apptest.Field("password", "now-closed"))
	presigned("an older build of a newly protected channel", location(fmt.Sprintf("/download/releases/%d?password=now-closed", pubID)))

	// The feeds of a protected channel link to the service, which redirects as above.
	rel, _ := f.macBuild("", "2.0", "200", apptest.Field("password", "sesame"))
	ch := rel["channel"].(map[string]any)
	tok := f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", int64(ch["id"].(float64))), e.AdminToken, ""), 201, "make a feed token")["feed_token"].(string)
	doc := f.appcast("/channels/" + ch["slug"].(string) + "/appcast.xml?token=" + tok)
	if len(doc.Items) != 1 || strings.HasPrefix(doc.Items[0].Enclosure.URL, cdn) || !strings.HasPrefix(doc.Items[0].Enclosure.URL, e.Config.PublicURL+"/download/releases/") {
		t.Fatalf("a protected channel's appcast links to the CDN: %+v", doc.Items)
	}
	presigned("the feed's package", location(strings.TrimPrefix(doc.Items[0].Enclosure.URL, e.Config.PublicURL)))

	// Debug files: symbols are for the app's developers, never on the CDN.
	dsym := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Open.app.dSYM", Identifier: "com.example.open", ReleaseVersion: "1.0", BuildVersion: "1",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "12345678-1234-1234-1234-123456789ABC"}}})
	df := f.want(e.Upload(t, "/api/debug_files/upload", e.UploadToken, apptest.Field("channel_key", public["channel"].(map[string]any)["slug"].(string)),
		apptest.File("d.zip", dsym)), 201, "upload a dSYM")
	presigned("a debug file", location(fmt.Sprintf("/download/debug_files/%d", int64(df["id"].(float64)))))
}
