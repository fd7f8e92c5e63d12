package httpapi_test

import (
	"crypto/ed25519"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/test/apptest"
)

// appcastDoc is an independent reading of a Sparkle appcast (encoding/xml, namespaces by URI).
type appcastDoc struct {
	XMLName xml.Name `xml:"rss"`
	Version string   `xml:"version,attr"`
	Items   []struct {
		Title         string    `xml:"title"`
		PubDate       string    `xml:"pubDate"`
		Version       string    `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle version"`
		ShortVersion  string    `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle shortVersionString"`
		MinSystem     string    `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle minimumSystemVersion"`
		Channel       string    `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle channel"`
		Critical      *struct{} `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle criticalUpdate"`
		PhaseInterval string    `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle phasedRolloutInterval"`
		Description   string    `xml:"description"`
		Enclosure     struct {
			URL       string `xml:"url,attr"`
			Length    int64  `xml:"length,attr"`
			Type      string `xml:"type,attr"`
			Signature string `xml:"http://www.andymatuschak.org/xml-namespaces/sparkle edSignature,attr"`
		} `xml:"enclosure"`
	} `xml:"channel>item"`
}

type feedEnv struct {
	*mgmt
	key ed25519.PrivateKey
}

// macBuild uploads a signed macOS .zip to the channel and waits until its checksums are verified.
func (f feedEnv) macBuild(channel, version, build string, fields ...apptest.Part) (map[string]any, []byte) {
	f.t.Helper()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: version, Build: build, MinOS: "12.0"})
	sig := base64.StdEncoding.EncodeToString(ed25519.Sign(f.key, zip))
	fields = append([]apptest.Part{apptest.Field("ed_signature", sig), apptest.Field("changelog", "Faster <sync>\nFixed & tested")}, fields...)
	if channel != "" {
		fields = append(fields, apptest.Field("channel_key", channel))
	}
	rel := f.e.UploadApp(f.t, fmt.Sprintf("Desk-%s.zip", version), zip, fields...)
	return f.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" }), zip
}

func (f feedEnv) get(path string, header ...string) *apptest.Response {
	f.t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return f.e.Do(f.t, http.MethodGet, path, nil, h)
}

func (f feedEnv) appcast(path string) appcastDoc {
	f.t.Helper()
	r := f.get(path)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/rss+xml") {
		f.t.Fatalf("appcast: %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var doc appcastDoc
	if err := xml.Unmarshal(r.Body, &doc); err != nil {
		f.t.Fatalf("appcast does not parse: %v\n%s", err, r.Body)
	}
	return doc
}

// Issue 23: the Sparkle appcast of a macOS channel, read with encoding/xml, carries every field
// of each release; the enclosure downloads the very bytes, which the EdDSA signature verifies
// with the public key; releases out of the feeds (rollout 0, a checksum mismatch) are left out;
// ETag, 304 and HEAD; a non-macOS channel is 404.
func TestSparkleAppcast(t *testing.T) {
	pub, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	first, _ := f.macBuild("", "1.0", "100")
	slug := first["channel"].(map[string]any)["slug"].(string)
	second, zip2 := f.macBuild(slug, "1.1", "110", apptest.Field("release_type", "beta"), apptest.Field("critical", "true"), apptest.Field("rollout", "50"))
	f.macBuild(slug, "1.2", "120", apptest.Field("rollout", "0")) // rolled out to nobody: left out

	doc := f.appcast("/channels/" + slug + "/appcast.xml")
	if doc.Version != "2.0" || len(doc.Items) != 2 {
		t.Fatalf("appcast: version %q, %d items", doc.Version, len(doc.Items))
	}
	it := doc.Items[0]
	if it.Version != "110" || it.ShortVersion != "1.1" || it.MinSystem != "12.0" || it.Channel != "beta" || it.Critical == nil ||
		it.PhaseInterval == "" || it.Enclosure.Length != int64(len(zip2)) || it.Enclosure.Type != "application/octet-stream" ||
		it.Enclosure.Signature != second["ed_signature"] {
		t.Fatalf("newest item: %+v", it)
	}
	if !strings.Contains(it.Description, "<li>Faster &lt;sync&gt;</li>") || !strings.Contains(it.Description, "Fixed &amp; tested") {
		t.Fatalf("release notes: %q", it.Description)
	}
	created, _ := time.Parse(time.RFC3339, second["created_at"].(string))
	if pd, err := time.Parse(time.RFC1123Z, it.PubDate); err != nil || (!created.IsZero() && !pd.Equal(created.Truncate(time.Second))) {
		t.Fatalf("pubDate %q (%v), created %v", it.PubDate, err, second["created_at"])
	}
	if old := doc.Items[1]; old.Version != "100" || old.Channel != "" || old.Critical != nil || old.PhaseInterval != "" {
		t.Fatalf("older item: %+v", old)
	}
	// The enclosure is an absolute URL of the service; its bytes are the package's, and the
	// signature verifies over them.
	if !strings.HasPrefix(it.Enclosure.URL, f.e.URL+"/") {
		t.Fatalf("enclosure url %q is not absolute on %s", it.Enclosure.URL, f.e.URL)
	}
	got := f.e.Follow(t, it.Enclosure.URL)
	sig, err := base64.StdEncoding.DecodeString(it.Enclosure.Signature)
	if got.Status != 200 || err != nil || !ed25519.Verify(pub, got.Body, sig) {
		t.Fatalf("enclosure: status %d, %d bytes, signature verifies: %v (%v)", got.Status, len(got.Body), ed25519.Verify(pub, got.Body, sig), err)
	}

	// ETag, 304 and HEAD.
	r := f.get("/channels/" + slug + "/appcast.xml")
	etag := r.Header.Get("ETag")
	if etag == "" || strings.HasPrefix(etag, "W/") {
		t.Fatalf("etag %q", etag)
	}
	if r := f.get("/channels/"+slug+"/appcast.xml", "If-None-Match", etag); r.Status != 304 || len(r.Body) != 0 {
		t.Fatalf("If-None-Match: %d", r.Status)
	}
	if h := f.e.Do(t, http.MethodHead, "/channels/"+slug+"/appcast.xml", nil, nil); h.Status != 200 || h.Header.Get("ETag") != etag || len(h.Body) != 0 {
		t.Fatalf("HEAD: %d %q", h.Status, h.Header.Get("ETag"))
	}

	// Deleting the newest build rolls the feed back to the previous one at once.
	f.want(f.call("DELETE", fmt.Sprintf("/api/releases/%d", id(second)), f.e.AdminToken, ""), 200, "delete")
	if doc := f.appcast("/channels/" + slug + "/appcast.xml"); len(doc.Items) != 1 || doc.Items[0].Version != "100" {
		t.Fatalf("after the delete: %+v", doc.Items)
	}

	// A channel of another platform has no appcast; an unknown channel is 404 too.
	ipa := f.e.UploadApp(t, "P.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Phone", BundleID: "com.example.phone", Version: "1.0", Build: "1"}))
	r = f.get("/channels/" + ipa["channel"].(map[string]any)["slug"].(string) + "/appcast.xml")
	if r.Status != 404 || !strings.Contains(r.Error(t), "macos") {
		t.Fatalf("appcast of an iOS channel: %d %s", r.Status, r.Body)
	}
	if r := f.get("/channels/nope/appcast.xml"); r.Status != 404 {
		t.Fatalf("unknown channel: %d", r.Status)
	}
}

// Issue 23: electron-updater's latest-mac.yml (read as YAML) names the newest .zip with the
// base64 SHA-512 and size of the downloaded bytes; the Tauri endpoint answers 204 when up to
// date and the update otherwise; bad parameters are 4xx.
func TestElectronAndTauriFeeds(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	tauriSig := base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))
	first, _ := f.macBuild("", "1.0.0", "1", apptest.Field("tauri_signature", tauriSig))
	slug := first["channel"].(map[string]any)["slug"].(string)
	second, zip2 := f.macBuild(slug, "1.1.0", "2", apptest.Field("rollout", "25"), apptest.Field("tauri_signature", tauriSig))

	r := f.get("/channels/" + slug + "/electron/latest-mac.yml")
	if r.Status != 200 {
		t.Fatalf("latest-mac.yml: %d %s", r.Status, r.Body)
	}
	var info struct {
		Version string `json:"version"`
		Files   []struct {
			URL    string `json:"url"`
			SHA512 string `json:"sha512"`
			Size   int64  `json:"size"`
		} `json:"files"`
		Path              string `json:"path"`
		SHA512            string `json:"sha512"`
		ReleaseDate       string `json:"releaseDate"`
		ReleaseNotes      string `json:"releaseNotes"`
		StagingPercentage int    `json:"stagingPercentage"`
	}
	if err := yaml.UnmarshalStrict(r.Body, &info, yaml.DisallowUnknownFields); err != nil {
		// releaseName and critical are extra keys electron-updater ignores; read leniently.
		if err := yaml.Unmarshal(r.Body, &info); err != nil {
			t.Fatalf("latest-mac.yml does not parse: %v\n%s", err, r.Body)
		}
	}
	if info.Version != "1.1.0" || len(info.Files) != 1 || info.Path != info.Files[0].URL || info.SHA512 != info.Files[0].SHA512 ||
		info.Files[0].Size != int64(len(zip2)) || info.StagingPercentage != 25 || info.ReleaseNotes != "Faster <sync>\nFixed & tested" ||
		!strings.HasSuffix(info.Files[0].URL, "/Desk-1.1.0.zip") {
		t.Fatalf("latest-mac.yml: %+v\n%s", info, r.Body)
	}
	if _, err := time.Parse(time.RFC3339, info.ReleaseDate); err != nil {
		t.Fatalf("releaseDate %q: %v", info.ReleaseDate, err)
	}
	got := f.e.Follow(t, info.Files[0].URL)
	sum := sha512.Sum512(got.Body)
	if got.Status != 200 || base64.StdEncoding.EncodeToString(sum[:]) != info.SHA512 {
		t.Fatalf("download: %d; sha512 of the bytes %s, feed %s", got.Status, base64.StdEncoding.EncodeToString(sum[:]), info.SHA512)
	}
	s1 := sha1.Sum(got.Body)
	if second["sha1"] != hex.EncodeToString(s1[:]) {
		t.Fatalf("sha1: release %v, bytes %x", second["sha1"], s1)
	}
	for path, want := range map[string]int{"/electron/latest.yml": 404, "/electron/latest-linux.yml": 404, "/electron/other.yml": 404} {
		if r := f.get("/channels/" + slug + path); r.Status != want || r.Error(t) == "" {
			t.Errorf("%s: %d %s", path, r.Status, r.Body)
		}
	}

	// Tauri: up to date (or ahead) is 204; behind gets the update.
	for _, cur := range []string{"1.1.0", "1.2.0"} {
		if r := f.get("/channels/" + slug + "/tauri/darwin/aarch64/" + cur); r.Status != 204 || len(r.Body) != 0 {
			t.Fatalf("tauri at %s: %d %s", cur, r.Status, r.Body)
		}
	}
	// The synthetic Mac builds are arm64 (their Mach-O header): an Intel Mac is offered nothing.
	if r := f.get("/channels/" + slug + "/tauri/darwin/x86_64/1.0.0"); r.Status != 204 {
		t.Fatalf("tauri for an Intel Mac, with arm64 builds only: %d %s", r.Status, r.Body)
	}
	// 1.1.0 is rolled out to 25%: Tauri does not stage, so the endpoint draws each install's
	// bucket (its X-Slipway-Install-Id, else its address) and offers 1.1.0 only to the quarter of
	// installs the rollout takes; the same install gets the same answer on every check.
	staged := &distribution.Release{ID: id(second), RolloutPercent: 25}
	drawn, left, n := "", "", 0
	for i := range 1000 {
		install := fmt.Sprintf("install-%d", i)
		if feeds.InRollout(staged, install) {
			n++
			drawn = install
		} else {
			left = install
		}
	}
	if n < 200 || n > 300 {
		t.Fatalf("a 25%% rollout draws %d of 1000 installs", n)
	}
	for range 2 {
		if r := f.get("/channels/"+slug+"/tauri/darwin/aarch64/1.0.0", "X-Slipway-Install-Id", left); r.Status != 204 {
			t.Fatalf("tauri for an install the rollout left out: %d %s", r.Status, r.Body)
		}
	}
	r = f.get("/channels/"+slug+"/tauri/darwin/aarch64/1.0.0", "X-Slipway-Install-Id", drawn)
	var upd struct {
		Version, Notes, PubDate, URL, Signature string
	}
	var raw map[string]any
	if r.Status != 200 || json.Unmarshal(r.Body, &raw) != nil {
		t.Fatalf("tauri update: %d %s", r.Status, r.Body)
	}
	upd.Version, _ = raw["version"].(string)
	upd.URL, _ = raw["url"].(string)
	upd.Signature, _ = raw["signature"].(string)
	upd.PubDate, _ = raw["pub_date"].(string)
	if upd.Version != "1.1.0" || upd.Signature != tauriSig || upd.URL != info.Files[0].URL {
		t.Fatalf("tauri update: %s", r.Body)
	}
	if _, err := time.Parse(time.RFC3339, upd.PubDate); err != nil {
		t.Fatalf("pub_date %q", upd.PubDate)
	}
	// The static form is one document for every install: it lists 1.1.0 only once it is rolled
	// out to all, and the build every install is offered until then.
	var static struct {
		Version   string                       `json:"version"`
		Platforms map[string]map[string]string `json:"platforms"`
	}
	r = f.get("/channels/" + slug + "/tauri.json")
	if r.Status != 200 || json.Unmarshal(r.Body, &static) != nil || static.Version != "1.0.0" || len(static.Platforms) != 1 {
		t.Fatalf("tauri static with 1.1.0 at 25%%: %d %s", r.Status, r.Body)
	}
	f.want(f.call("PATCH", fmt.Sprintf("/api/releases/%d", id(second)), f.e.AdminToken, `{"rollout":100}`), 200, "roll out to all")
	r = f.get("/channels/" + slug + "/tauri.json")
	if r.Status != 200 || json.Unmarshal(r.Body, &static) != nil || static.Version != "1.1.0" ||
		static.Platforms["darwin-aarch64"]["url"] != upd.URL || static.Platforms["darwin-aarch64"]["signature"] != tauriSig || len(static.Platforms) != 1 {
		t.Fatalf("tauri static: %d %s", r.Status, r.Body)
	}
	if r := f.get("/channels/"+slug+"/tauri/darwin/aarch64/1.0.0", "X-Slipway-Install-Id", left); r.Status != 200 {
		t.Fatalf("tauri once 1.1.0 is rolled out to all: %d %s", r.Status, r.Body)
	}
	for path, want := range map[string]int{"/tauri/windows/x86_64/1.0.0": 404, "/tauri/darwin/sparc/1.0.0": 422, "/tauri/beos/x86_64/1.0.0": 422} {
		if r := f.get("/channels/" + slug + path); r.Status != want || r.Error(t) == "" {
			t.Errorf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	// A tauri_signature that is not a .sig file's content is refused.
	bad := f.e.Upload(t, "/api/apps/upload", "", apptest.Field("token", f.e.UploadToken), apptest.Field("tauri_signature", "c2lnbmF0dXJl"),
		apptest.File("D.zip", appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk"})))
	if bad.Status != 422 || !strings.Contains(string(bad.Body), "tauri_signature") {
		t.Fatalf("bad tauri_signature: %d %s", bad.Status, bad.Body)
	}
}

// Issue 23: a password-protected channel's feeds answer only to its feed token (query or bearer),
// whose links carry it so the download works without cookies; rotating the token revokes the old.
func TestFeedTokenOfProtectedChannel(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	rel, zip := f.macBuild("", "2.0", "200", apptest.Field("password", "sesame"))
	ch := rel["channel"].(map[string]any)
	slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
	path := "/channels/" + slug + "/appcast.xml"
	if r := f.get(path); r.Status != 401 || !strings.Contains(r.Error(t), "feed_token") {
		t.Fatalf("without a token: %d %s", r.Status, r.Body)
	}
	f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), f.e.UploadToken, ""), 403, "rotate with an upload token")
	tok := f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), f.e.AdminToken, ""), 201, "make a feed token")["feed_token"].(string)
	if r := f.get(path + "?token=wrong"); r.Status != 401 {
		t.Fatalf("wrong token: %d", r.Status)
	}
	doc := f.appcast(path + "?token=" + tok)
	if len(doc.Items) != 1 || !strings.Contains(doc.Items[0].Enclosure.URL, "feed_token=") {
		t.Fatalf("protected appcast: %+v", doc.Items)
	}
	if got := f.e.Follow(t, doc.Items[0].Enclosure.URL); got.Status != 200 || len(got.Body) != len(zip) {
		t.Fatalf("download through the feed's link: %d", got.Status)
	}
	if r := f.get("/channels/"+slug+"/electron/latest-mac.yml", "Authorization", "Bearer "+tok); r.Status != 200 {
		t.Fatalf("bearer token: %d %s", r.Status, r.Body)
	}
	// A token never leaks into the logs.
	if strings.Contains(f.e.LogText(), tok) {
		t.Fatal("the feed token was logged")
	}
	f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), f.e.AdminToken, ""), 201, "rotate")
	if r := f.get(path + "?token=" + tok); r.Status != 401 {
		t.Fatalf("old token after rotation: %d", r.Status)
	}
	if got := f.e.Follow(t, doc.Items[0].Enclosure.URL); got.Status != 401 {
		t.Fatalf("old token's download link after rotation: %d", got.Status)
	}
}

// The feed token opens a protected channel's feeds as its password does, so changing the password
// revokes it with the cookies and install links: the old token gets 401 on the feed and on its
// download links (rollout-0 builds included), until an admin makes a new one.
func TestFeedTokenGoesWithThePassword(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	rel, _ := f.macBuild("", "2.0", "200", apptest.Field("password", "sesame"))
	ch := rel["channel"].(map[string]any)
	slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
	path := "/channels/" + slug + "/appcast.xml"
	tok := f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), f.e.AdminToken, ""), 201, "make a feed token")["feed_token"].(string)
	doc := f.appcast(path + "?token=" + tok)
	if len(doc.Items) != 1 {
		t.Fatalf("protected appcast: %+v", doc.Items)
	}
	link := doc.Items[0].Enclosure.URL
	f.want(f.call("PUT", fmt.Sprintf("/api/channels/%d", chID), f.e.AdminToken, `{"password":"open-sesame"}`), 200, "change the password")
	if r := f.get(path + "?token=" + tok); r.Status != 401 {
		t.Fatalf("the feed token after a password change: %d %s", r.Status, r.Body)
	}
	if got := f.e.Follow(t, link); got.Status != 401 {
		t.Fatalf("the feed token's download link after a password change: %d", got.Status)
	}
	again := f.want(f.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), f.e.AdminToken, ""), 201, "a new feed token")["feed_token"].(string)
	if r := f.get(path + "?token=" + again); r.Status != 200 {
		t.Fatalf("the new feed token: %d", r.Status)
	}
}

// Issue 23: on a Linux channel, latest-linux.yml names the newest x86_64 AppImage and
// latest-linux-arm64.yml the newest aarch64 one, each with the SHA-512 of its downloaded bytes;
// the macOS and Windows files are 404 there.
func TestElectronLinuxFeeds(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	x64 := linuxtest.BuildAppImage(linuxtest.AppImageOptions{Name: "Tool", Version: "2.0.0"})
	arm := linuxtest.BuildAppImage(linuxtest.AppImageOptions{Name: "Tool", Version: "2.0.1", Runtime: linuxtest.RuntimeOptions{Machine: linuxtest.MachineAArch64}})
	first := m.e.UploadApp(t, "Tool-2.0.0-x86_64.AppImage", x64)
	slug := first["channel"].(map[string]any)["slug"].(string)
	second := m.e.UploadApp(t, "Tool-2.0.1-aarch64.AppImage", arm, apptest.Field("channel_key", slug))
	for _, rel := range []map[string]any{first, second} {
		m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	}
	for file, want := range map[string][]byte{"latest-linux.yml": x64, "latest-linux-arm64.yml": arm} {
		r := m.e.Get(t, "/channels/"+slug+"/electron/"+file)
		var info struct {
			Version string `json:"version"`
			Path    string `json:"path"`
			SHA512  string `json:"sha512"`
		}
		if r.Status != 200 || yaml.Unmarshal(r.Body, &info) != nil {
			t.Fatalf("%s: %d %s", file, r.Status, r.Body)
		}
		got := m.e.Follow(t, info.Path)
		sum := sha512.Sum512(got.Body)
		if got.Status != 200 || string(got.Body) != string(want) || base64.StdEncoding.EncodeToString(sum[:]) != info.SHA512 ||
			!strings.HasSuffix(info.Path, ".AppImage") {
			t.Fatalf("%s: %+v, download %d (%d bytes)", file, info, got.Status, len(got.Body))
		}
	}
	for _, file := range []string{"latest-mac.yml", "latest.yml"} {
		if r := m.e.Get(t, "/channels/"+slug+"/electron/"+file); r.Status != 404 || !strings.Contains(r.Error(t), "linux") {
			t.Errorf("%s on a Linux channel: %d %s", file, r.Status, r.Body)
		}
	}
}

// Issue 23: Squirrel.Windows' RELEASES on a Windows channel lists every .nupkg the channel offers,
// oldest first, as "SHA1 URL size", the SHA-1 and size of the bytes the URL downloads; the
// channel's other builds (an .exe) are not in it, and other channels answer 404.
func TestSquirrelReleases(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	// Every build signed for Tauri, whose feeds offer only signed builds (issue 34): the .nupkg
	// are still never its.
	sig := apptest.Field("tauri_signature", base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n")))
	exe := m.e.UploadApp(t, "Desk-1.0.0.exe", windowstest.BuildPE(windowstest.PEOptions{}), sig)
	slug := exe["channel"].(map[string]any)["slug"].(string)
	if r := m.e.Get(t, "/channels/"+slug+"/squirrel/RELEASES"); r.Status != 404 || !strings.Contains(r.Error(t), ".nupkg") {
		t.Errorf("RELEASES without a .nupkg: %d %s", r.Status, r.Body)
	}
	nupkg := func(version string) []byte {
		return windowstest.BuildZip(windowstest.Entry{Name: "Desk.nuspec", Data: []byte(`<?xml version="1.0"?><package><metadata><id>Desk</id><version>` + version + `</version></metadata></package>`)},
			windowstest.Entry{Name: "lib/net45/readme.txt", Data: []byte("Desk " + version)})
	}
	files := []string{"Desk-1.0.0-full.nupkg", "Desk-1.1.0-full.nupkg", "Desk-1.1.0-delta.nupkg"}
	bodies := map[string][]byte{}
	for _, name := range files {
		bodies[name] = nupkg(name)
		rel := m.e.UploadApp(t, name, bodies[name], apptest.Field("channel_key", slug), sig)
		m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	}
	m.waitRelease(id(exe), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	r := m.e.Get(t, "/channels/"+slug+"/squirrel/RELEASES")
	if r.Status != 200 {
		t.Fatalf("RELEASES: %d %s", r.Status, r.Body)
	}
	lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("RELEASES has %d lines, not %d:\n%s", len(lines), len(files), r.Body)
	}
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasSuffix(f[1], "/"+files[i]) {
			t.Fatalf("line %d is not %s as \"SHA1 URL size\": %q", i, files[i], line)
		}
		got := m.e.Follow(t, f[1])
		sum := sha1.Sum(got.Body)
		if got.Status != 200 || string(got.Body) != string(bodies[files[i]]) || f[0] != strings.ToUpper(hex.EncodeToString(sum[:])) ||
			f[2] != fmt.Sprint(len(got.Body)) {
			t.Errorf("line %q: download %d, %d bytes, SHA-1 %X", line, got.Status, len(got.Body), sum)
		}
	}
	// RELEASES cannot stage: a .nupkg in a staged rollout is left out until it is rolled out to
	// all, and the Tauri feed of the channel offers its installer (the .exe), never a .nupkg.
	staged := m.e.UploadApp(t, "Desk-1.2.0-full.nupkg", nupkg("1.2.0"), apptest.Field("channel_key", slug), apptest.Field("rollout", "5"), sig)
	m.waitRelease(id(staged), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	if r := m.e.Get(t, "/channels/"+slug+"/squirrel/RELEASES"); r.Status != 200 || strings.Contains(string(r.Body), "Desk-1.2.0") {
		t.Fatalf("RELEASES lists a .nupkg at 5%%: %d %s", r.Status, r.Body)
	}
	for path, want := range map[string]string{"/tauri/windows/x86_64/0.9.0": "/Desk-1.0.0.exe", "/tauri.json": "/Desk-1.0.0.exe"} {
		if r := m.e.Get(t, "/channels/"+slug+path); r.Status != 200 || !strings.Contains(string(r.Body), want) || strings.Contains(string(r.Body), ".nupkg") {
			t.Errorf("tauri %s of a Windows channel: %d %s", path, r.Status, r.Body)
		}
	}
	mac, _ := feedEnv{m, nil}.macBuildUnsigned()
	if r := m.e.Get(t, "/channels/"+mac+"/squirrel/RELEASES"); r.Status != 404 || !strings.Contains(r.Error(t), "windows") {
		t.Errorf("RELEASES of a macOS channel: %d %s", r.Status, r.Body)
	}
}

// macBuildUnsigned uploads a macOS .zip without a signature and returns its channel's key.
func (f feedEnv) macBuildUnsigned() (string, map[string]any) {
	f.t.Helper()
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: "1", MinOS: "12.0"})
	rel := f.e.UploadApp(f.t, "Desk-1.0.0.zip", zip)
	return rel["channel"].(map[string]any)["slug"].(string), rel
}

// Issue 23: the Tauri feeds tell a package's architectures apart (from the package: here the
// AppImage runtime's ELF machine). The dynamic endpoint offers each {{arch}} the newest build that
// runs on it, and 204 when there is none; the static form lists, under the newest version, every
// architecture a build of that version runs on, each with that build's URL.
func TestTauriArchitectures(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	appImage := func(version string, machine uint16) []byte {
		return linuxtest.BuildAppImage(linuxtest.AppImageOptions{Name: "Tool", Version: version, Runtime: linuxtest.RuntimeOptions{Machine: machine}})
	}
	x64v1, armv1, x64v2, armv2 := appImage("2.0.0", 0), appImage("2.0.0", linuxtest.MachineAArch64), appImage("2.0.1", 0), appImage("2.0.1", linuxtest.MachineAArch64)
	// Tauri's feeds offer signed builds only (issue 34).
	sig := apptest.Field("tauri_signature", base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n")))
	first := m.e.UploadApp(t, "Tool-2.0.0-x86_64.AppImage", x64v1, sig)
	slug := first["channel"].(map[string]any)["slug"].(string)
	upload := func(name string, data []byte) {
		rel := m.e.UploadApp(t, name, data, apptest.Field("channel_key", slug), sig)
		m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	}
	m.waitRelease(id(first), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	upload("Tool-2.0.0-aarch64.AppImage", armv1)
	upload("Tool-2.0.1-x86_64.AppImage", x64v2)

	// dynamic asks the endpoint for arch at current and returns the version offered and its bytes.
	dynamic := func(arch, current string) (int, string, []byte) {
		r := m.e.Get(t, "/channels/"+slug+"/tauri/linux/"+arch+"/"+current)
		if r.Status != 200 {
			return r.Status, "", nil
		}
		var upd struct{ Version, URL string }
		if err := json.Unmarshal(r.Body, &upd); err != nil {
			t.Fatalf("%s: %v %s", arch, err, r.Body)
		}
		return 200, upd.Version, m.e.Follow(t, upd.URL).Body
	}
	for _, c := range []struct {
		arch, current string
		status        int
		version       string
		bytes         []byte
	}{
		{"x86_64", "1.0.0", 200, "2.0.1", x64v2},
		{"aarch64", "1.0.0", 200, "2.0.0", armv1}, // no arm64 build of 2.0.1 yet: its own newest
		{"aarch64", "2.0.0", 204, "", nil},
		{"i686", "1.0.0", 204, "", nil},
	} {
		status, version, body := dynamic(c.arch, c.current)
		if status != c.status || version != c.version || string(body) != string(c.bytes) {
			t.Errorf("%s from %s: %d %q (%d bytes), want %d %q", c.arch, c.current, status, version, len(body), c.status, c.version)
		}
	}
	static := func() (string, map[string][]byte) {
		r := m.e.Get(t, "/channels/"+slug+"/tauri.json")
		var doc struct {
			Version   string
			Platforms map[string]struct{ URL string }
		}
		if r.Status != 200 || json.Unmarshal(r.Body, &doc) != nil {
			t.Fatalf("tauri.json: %d %s", r.Status, r.Body)
		}
		got := map[string][]byte{}
		for k, p := range doc.Platforms {
			got[k] = m.e.Follow(t, p.URL).Body
		}
		return doc.Version, got
	}
	if version, got := static(); version != "2.0.1" || len(got) != 1 || string(got["linux-x86_64"]) != string(x64v2) {
		t.Errorf("static before the arm64 build of 2.0.1: %s %v", version, keys(got))
	}
	upload("Tool-2.0.1-aarch64.AppImage", armv2)
	if version, got := static(); version != "2.0.1" || len(got) != 2 || string(got["linux-x86_64"]) != string(x64v2) || string(got["linux-aarch64"]) != string(armv2) {
		t.Errorf("static with both builds of 2.0.1: %s %v", version, keys(got))
	}
	if status, version, body := dynamic("aarch64", "2.0.0"); status != 200 || version != "2.0.1" || string(body) != string(armv2) {
		t.Errorf("aarch64 from 2.0.0 after its build: %d %q", status, version)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Issue 34: Tauri refuses an update without a signature, so its feeds never offer a build that
// came without tauri_signature: the dynamic endpoint answers 204 (Tauri's "no update") rather
// than `"signature":""`, the static form leaves it out, and a signed build is offered as before.
func TestTauriNeverOffersAnUnsignedBuild(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	first, _ := f.macBuild("", "1.0.0", "1") // a Sparkle signature, no Tauri one
	slug := first["channel"].(map[string]any)["slug"].(string)
	if r := f.get("/channels/" + slug + "/tauri/darwin/aarch64/0.9.0"); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("the Tauri endpoint offers an unsigned build: %d %s", r.Status, r.Body)
	}
	if r := f.get("/channels/" + slug + "/tauri.json"); r.Status != 404 || !strings.Contains(r.Error(t), "tauri_signature") {
		t.Fatalf("the static Tauri form lists an unsigned build: %d %s", r.Status, r.Body)
	}
	tauriSig := base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))
	f.macBuild(slug, "1.1.0", "2", apptest.Field("tauri_signature", tauriSig))
	r := f.get("/channels/" + slug + "/tauri/darwin/aarch64/0.9.0")
	var upd struct{ Version, Signature string }
	if r.Status != 200 || json.Unmarshal(r.Body, &upd) != nil || upd.Version != "1.1.0" || upd.Signature != tauriSig {
		t.Fatalf("the signed build: %d %s", r.Status, r.Body)
	}
	if r := f.get("/channels/" + slug + "/tauri.json"); r.Status != 200 || !strings.Contains(string(r.Body), tauriSig) {
		t.Fatalf("the static form with a signed build: %d %s", r.Status, r.Body)
	}
}
