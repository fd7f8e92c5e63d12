package httpapi_test

// Issue 22 end to end: HarmonyOS, Windows and Linux builds upload through POST /api/apps/upload
// on Postgres with the filesystem store and with MinIO; every field the fixtures README lists is
// checked in the release JSON; channels of these device types are created and enforced; a
// windows or linux channel keeps a file Slipway cannot read as a plain download; latest,
// versions and version_exist answer for them; a HarmonyOS .hap gets its install manifest and
// link; a hostile package of each family is a 422 with nothing kept.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// packageFacts is the release's "package" object.
type packageFacts struct {
	Platform           string            `json:"platform"`
	Format             string            `json:"format"`
	Device             string            `json:"device"`
	MinOS              string            `json:"min_os"`
	TargetSDK          string            `json:"target_sdk"`
	Architectures      []string          `json:"architectures"`
	Publisher          string            `json:"publisher"`
	Description        string            `json:"description"`
	Permissions        []string          `json:"permissions"`
	Debuggable         bool              `json:"debuggable"`
	Properties         map[string]string `json:"properties"`
	SHA256             string            `json:"sha256"`
	HarmonyManifestURL string            `json:"harmony_manifest_url"`
}

// platformRelease is a full release with its package facts.
type platformRelease struct {
	release
	Package packageFacts `json:"package"`
}

// guid is an MSI ProductCode or UpgradeCode.
var guid = regexp.MustCompile(`^\{[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\}$`)

// platformFixtures are the fixtures of other/, windows/ and linux/ with what their README
// lists (and, where it is silent, what the file holds: "example" is the HAP's vendor).
var platformFixtures = []struct {
	file  string
	want  expect
	facts func(t *testing.T, p packageFacts)
}{
	{"other/harmony-myapplication-1.0.0.hap", expect{"MyApplication", "com.example.myapplication", "1.0.0", "1000000", "harmonyos", "Adhoc", -1},
		func(t *testing.T, p packageFacts) {
			// minAPIVersion 50000012 is 5.0.0(12) (decisions.md); deviceTypes phone, tablet, 2in1.
			want(t, "format, min_os, device", []string{p.Format, p.MinOS, p.Device}, []string{"hap", "5.0.0(12)", "phone,tablet,2in1"})
			want(t, "publisher", []string{p.Publisher}, []string{"example"})
			if !p.Debuggable {
				t.Errorf("the .hap's app.json says debug: true; debuggable is false")
			}
		}},
	{"other/harmony-myapplication-1.0.0.app", expect{"MyApplication", "com.example.myapplication", "1.0.0", "1000000", "harmonyos", "Adhoc", -1},
		func(t *testing.T, p packageFacts) {
			want(t, "format, min_os, device", []string{p.Format, p.MinOS, p.Device}, []string{"harmony-app", "5.0.0(12)", "phone,tablet,2in1"})
			want(t, "entry HAP", []string{p.Properties["EntryHAP"]}, []string{"entry-default.hap"})
		}},
	{"other/windows-upx-3.08.exe", expect{"UPX", "UPX", "3.08 (2011-12-12)", "3.08 (2011-12-12)", "windows", "Adhoc", 0},
		func(t *testing.T, p packageFacts) {
			want(t, "format, publisher, FileVersion", []string{p.Format, p.Publisher, p.Properties["FileVersion"]},
				[]string{"exe", "The UPX Team http://upx.sf.net", "3.08 (2011-12-12)"})
			want(t, "architectures", p.Architectures, []string{"x86"})
		}},
	{"other/windows-topbar-1.0.0.zip", expect{"TopBar", "TopBar", "1.0.0", "1.0.0.0", "windows", "Adhoc", -1},
		func(t *testing.T, p packageFacts) {
			want(t, "format, publisher, FileVersion, executable", []string{p.Format, p.Publisher, p.Properties["FileVersion"], p.Properties["Executable"]},
				[]string{"exe-zip", "Dejan Stojanovic", "1.0.0.0", "TopBar.exe"})
			want(t, "architectures", p.Architectures, []string{"x64"})
		}},
	{"windows/fieldtool-0.9.1.msi", expect{"Field Tool", "Field Tool", "0.9.1", "0.9.1", "windows", "Adhoc", 0},
		func(t *testing.T, p packageFacts) {
			want(t, "format, publisher", []string{p.Format, p.Publisher}, []string{"msi", "Acme Labs"})
			for _, k := range []string{"ProductCode", "UpgradeCode"} {
				if !guid.MatchString(p.Properties[k]) {
					t.Errorf("%s %q is not a GUID", k, p.Properties[k])
				}
			}
		}},
	{"linux/field-tool_0.9.1-1_arm64.deb", expect{"field-tool", "field-tool", "0.9.1", "0.9.1-1", "linux", "Adhoc", 0},
		func(t *testing.T, p packageFacts) {
			want(t, "format, maintainer", []string{p.Format, p.Publisher}, []string{"deb", "Acme <dev@acme.example>"})
			want(t, "architectures", p.Architectures, []string{"arm64"})
		}},
	{"linux/field-tool-0.9.1-7.noarch.rpm", expect{"field-tool", "field-tool", "0.9.1", "0.9.1-7", "linux", "Adhoc", 0},
		func(t *testing.T, p packageFacts) {
			want(t, "format, release, license", []string{p.Format, p.Properties["Release"], p.Properties["License"]}, []string{"rpm", "7", "MIT"})
			want(t, "architectures", p.Architectures, []string{"noarch"})
			if p.Description == "" {
				t.Errorf("the rpm's Summary is missing")
			}
		}},
	{"linux/Field_Tool-0.9.1-aarch64.AppImage", expect{"Field Tool", "field-tool", "0.9.1", "0.9.1", "linux", "Adhoc", 256},
		func(t *testing.T, p packageFacts) {
			want(t, "format", []string{p.Format}, []string{"appimage"})
		}},
}

func want(t *testing.T, what string, got, exp []string) {
	t.Helper()
	if !slices.Equal(got, exp) {
		t.Errorf("%s: got %q, want %q", what, got, exp)
	}
}

// uploadPlatform uploads a file (fields first) and decodes the release with its facts.
func (e *testEnv) uploadPlatform(t *testing.T, filename string, data []byte, fields ...apptest.Part) platformRelease {
	t.Helper()
	parts := append([]apptest.Part{apptest.Field("token", e.UploadToken)}, fields...)
	r := e.upload(t, append(parts, apptest.File(filename, data))...)
	rel := platformRelease{release: e.fullRelease(t, r)}
	r.JSON(t, &rel)
	if sum := sha256.Sum256(data); rel.Package.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("package.sha256 %q", rel.Package.SHA256)
	}
	if rel.Package.Architectures == nil || rel.Package.Permissions == nil || rel.Package.Properties == nil {
		t.Errorf("package lists must be [] or {}, never null: %+v", rel.Package)
	}
	return rel
}

func TestUploadPlatformFixtures(t *testing.T) {
	if d, ok := fixtures.Dir(); !ok {
		t.Skipf("fixtures not present at %s", d)
	}
	storages(t, func(t *testing.T, storage string) {
		e := newEnv(t, apptest.Options{Storage: storage})
		rels := map[string]platformRelease{}
		data := map[string][]byte{}
		// One at a time: the two HarmonyOS builds share a channel, as do the .deb and the .rpm,
		// and the versions below follow the upload order.
		for _, f := range platformFixtures {
			t.Run(path.Base(f.file), func(t *testing.T) {
				b := fixtures.Read(t, f.file)
				rel := e.uploadPlatform(t, path.Base(f.file), b)
				e.checkUpload(t, rel.release, b, f.want)
				want(t, "package platform", []string{rel.Package.Platform}, []string{f.want.platform})
				f.facts(t, rel.Package)
				rels[f.file], data[f.file] = rel, b
			})
		}
		if t.Failed() {
			return
		}
		hap, app := rels["other/harmony-myapplication-1.0.0.hap"], rels["other/harmony-myapplication-1.0.0.app"]
		deb, rpm := rels["linux/field-tool_0.9.1-1_arm64.deb"], rels["linux/field-tool-0.9.1-7.noarch.rpm"]
		msi, appImage := rels["windows/fieldtool-0.9.1.msi"], rels["linux/Field_Tool-0.9.1-aarch64.AppImage"]
		if hap.Channel.Slug != app.Channel.Slug || deb.Channel.Slug != rpm.Channel.Slug || app.Version != 2 || rpm.Version != 2 {
			t.Errorf("channels: hap %s v%d, app %s v%d, deb %s v%d, rpm %s v%d", hap.Channel.Slug, hap.Version, app.Channel.Slug, app.Version,
				deb.Channel.Slug, deb.Version, rpm.Channel.Slug, rpm.Version)
		}
		// The .msi and the AppImage are one app ("Field Tool") in two channels of one scheme.
		if msi.App.ID != appImage.App.ID || msi.Scheme.ID != appImage.Scheme.ID || msi.Channel.Slug == appImage.Channel.Slug {
			t.Errorf("Field Tool: msi %+v, AppImage %+v", msi.Channel, appImage.Channel)
		}

		t.Run("versions, latest, version_exist", func(t *testing.T) {
			var listing struct {
				Releases []release `json:"releases"`
			}
			e.Get(t, "/api/apps/versions?channel_key="+deb.Channel.Slug).JSON(t, &listing)
			var got []string
			for _, r := range listing.Releases {
				got = append(got, r.BuildVersion)
			}
			want(t, "versions of the field-tool channel", got, []string{"0.9.1-7", "0.9.1-1"})

			var latest struct {
				Releases release `json:"releases"`
			}
			q := url.Values{"channel_key": {deb.Channel.Slug}, "release_version": {"0.9.0"}, "build_version": {"0.9.0-1"}}
			if r := e.Get(t, "/api/apps/latest?"+q.Encode()); r.Status != http.StatusOK {
				t.Errorf("latest: %d %s", r.Status, r.Body)
			} else if r.JSON(t, &latest); latest.Releases.Version != 2 {
				t.Errorf("latest: %+v", latest.Releases)
			}
			for _, c := range []struct {
				channel, bundleID, rel, build string
				status                        int
			}{
				{deb.Channel.Slug, "field-tool", "0.9.1", "0.9.1-7", http.StatusOK},
				{deb.Channel.Slug, "field-tool", "0.9.1", "0.9.1-1", http.StatusOK},
				{deb.Channel.Slug, "field-tool", "0.9.2", "0.9.2-1", http.StatusNotFound},
				{msi.Channel.Slug, "Field Tool", "0.9.1", "0.9.1", http.StatusOK},
				{hap.Channel.Slug, "com.example.myapplication", "1.0.0", "1000000", http.StatusOK},
				{hap.Channel.Slug, "com.example.myapplication", "1.0.1", "1000001", http.StatusNotFound},
			} {
				q := url.Values{"channel_key": {c.channel}, "bundle_id": {c.bundleID}, "release_version": {c.rel}, "build_version": {c.build}}
				if r := e.Get(t, "/api/apps/version_exist?"+q.Encode()); r.Status != c.status {
					t.Errorf("version_exist %v: %d, want %d: %s", q, r.Status, c.status, r.Body)
				}
			}
		})

		t.Run("HarmonyOS install manifest", func(t *testing.T) {
			manifestURL := fmt.Sprintf("%s/channels/%s/releases/%d/install", e.Config.PublicURL, hap.Channel.Slug, hap.ID)
			if hap.Package.HarmonyManifestURL != manifestURL || app.Package.HarmonyManifestURL != "" {
				t.Errorf("harmony_manifest_url: hap %q, app %q", hap.Package.HarmonyManifestURL, app.Package.HarmonyManifestURL)
			}
			r := e.Get(t, manifestURL)
			if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("manifest: %d %s: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			var m struct {
				App struct {
					BundleName, BundleType, VersionName, Label, DeployDomain, MinAPIVersion, TargetAPIVersion string
					VersionCode                                                                               int64
					Icons                                                                                     struct{ Normal, Large string }
					Modules                                                                                   []struct {
						Name, Type, PackageURL, PackageHash string
						DeviceTypes                         []string
					}
				}
			}
			if err := json.Unmarshal(r.Body, &m); err != nil {
				t.Fatalf("manifest: %v\n%s", err, r.Body)
			}
			a := m.App
			base, _ := url.Parse(e.Config.PublicURL)
			want(t, "manifest app", []string{a.BundleName, a.BundleType, a.VersionName, fmt.Sprint(a.VersionCode), a.Label, a.DeployDomain, a.MinAPIVersion},
				[]string{"com.example.myapplication", "app", "1.0.0", "1000000", "MyApplication", base.Hostname(), "5.0.0(12)"})
			if a.Icons.Normal != hap.IconURL || a.Icons.Large != hap.IconURL || len(a.Modules) != 1 {
				t.Fatalf("manifest icons %+v, modules %+v", a.Icons, a.Modules)
			}
			mod := a.Modules[0]
			sum := sha256.Sum256(data["other/harmony-myapplication-1.0.0.hap"])
			want(t, "module", []string{mod.Name, mod.Type, mod.PackageHash, strings.Join(mod.DeviceTypes, ",")},
				[]string{"entry", "entry", hex.EncodeToString(sum[:]), "phone,tablet,2in1"})
			e.secretURL(mod.PackageURL)
			if got, _ := e.follow(t, mod.PackageURL, nil); string(got.Body) != string(data["other/harmony-myapplication-1.0.0.hap"]) {
				t.Errorf("packageUrl serves %d bytes, not the .hap", len(got.Body))
			}
			// A .app installs on no device: no manifest.
			if r := e.Get(t, fmt.Sprintf("/channels/%s/releases/%d/install", app.Channel.Slug, app.ID)); r.Status != http.StatusNotFound {
				t.Errorf("manifest of a .app: %d", r.Status)
			}
		})

		t.Run("release pages", func(t *testing.T) {
			for _, c := range []struct {
				rel  platformRelease
				want []string
			}{
				{hap, []string{`href="store://enterprise/manifest?url=` + e.Config.PublicURL + fmt.Sprintf("/channels/%s/releases/%d/install", hap.Channel.Slug, hap.ID),
					"5.0.0(12)", "Phone, Tablet, 2-in-1", "Download .hap"}},
				{msi, []string{"Acme Labs", `id="fact-productcode" class="mono">{`, "Download .msi", "Windows"}},
				{deb, []string{`id="fact-arch">arm64`, "Acme &lt;dev@acme.example&gt;", "Download .deb"}},
				{appImage, []string{"Download AppImage", "Linux"}},
			} {
				r := e.Get(t, c.rel.ReleaseURL)
				if r.Status != http.StatusOK {
					t.Fatalf("%s: %d", c.rel.ReleaseURL, r.Status)
				}
				for _, w := range c.want {
					if !strings.Contains(string(r.Body), w) {
						t.Errorf("release page of %s %s lacks %q", c.rel.Package.Format, c.rel.ReleaseVersion, w)
					}
				}
				if c.rel.Package.Format != "hap" && strings.Contains(string(r.Body), "store://") {
					t.Errorf("release page of %s offers a HarmonyOS install link", c.rel.Package.Format)
				}
			}
		})

		t.Run("a build of another platform than its channel", func(t *testing.T) {
			releases, objects := e.rows(t, "releases"), len(e.Objects(t))
			for _, c := range []struct {
				file, channel, names string
			}{
				{"windows/fieldtool-0.9.1.msi", deb.Channel.Slug, "Linux (linux)|Windows (windows)"},
				{"linux/field-tool-0.9.1-7.noarch.rpm", hap.Channel.Slug, "HarmonyOS (harmonyos)|Linux (linux)"},
				{"other/harmony-myapplication-1.0.0.hap", msi.Channel.Slug, "Windows (windows)|HarmonyOS (harmonyos)"},
			} {
				r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.Field("channel_key", c.channel),
					apptest.File(path.Base(c.file), data[c.file]))
				msg := wantError(t, r, http.StatusUnprocessableEntity)
				for _, n := range strings.Split(c.names, "|") {
					if !strings.Contains(msg, n) {
						t.Errorf("%s into the wrong channel: %q does not name %s", c.file, msg, n)
					}
				}
			}
			if n, o := e.rows(t, "releases"), len(e.Objects(t)); n != releases || o != objects {
				t.Errorf("refused uploads kept something: %d releases (was %d), %d objects (was %d)", n, releases, o, objects)
			}
		})

		t.Run("anything else in a windows or linux channel", func(t *testing.T) {
			blob := []byte(strings.Repeat("an opaque payload\n", 100))
			// Versions from the file name.
			tgz := e.uploadPlatform(t, "notes-2.3.1.tar.gz", blob, apptest.Field("channel_key", deb.Channel.Slug))
			want(t, "tar.gz in the linux channel", []string{tgz.Package.Format, tgz.Package.Platform, tgz.BundleID, tgz.ReleaseVersion, tgz.BuildVersion, tgz.Channel.Slug},
				[]string{"other", "linux", "notes", "2.3.1", "2.3.1", deb.Channel.Slug})
			if got := e.install(t, tgz.release, nil); string(got) != string(blob) {
				t.Errorf("plain download: %d bytes, not the %d uploaded", len(got), len(blob))
			}
			e.checkIcon(t, tgz.release, 0, nil)
			// Versions and bundle id from the fields, which win over the name.
			bin := e.uploadPlatform(t, "setup-9.9.bin", blob, apptest.Field("channel_key", msi.Channel.Slug),
				apptest.Field("release_version", "1.4"), apptest.Field("build_version", "140"), apptest.Field("bundle_id", "com.acme.setup"))
			want(t, "bin in the windows channel", []string{bin.Package.Format, bin.Package.Platform, bin.BundleID, bin.ReleaseVersion, bin.BuildVersion},
				[]string{"other", "windows", "com.acme.setup", "1.4", "140"})
			q := url.Values{"channel_key": {msi.Channel.Slug}, "bundle_id": {"com.acme.setup"}, "release_version": {"1.4"}, "build_version": {"140"}}
			if r := e.Get(t, "/api/apps/version_exist?"+q.Encode()); r.Status != http.StatusOK {
				t.Errorf("version_exist of the plain file: %d", r.Status)
			}
			page := e.Get(t, bin.ReleaseURL)
			if !strings.Contains(string(page.Body), "without reading it") {
				t.Errorf("the release page of a plain file does not say it was kept unread")
			}

			releases, objects := e.rows(t, "releases"), len(e.Objects(t))
			// No version anywhere: a 422 naming release_version.
			r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.Field("channel_key", msi.Channel.Slug), apptest.File("setup.bin", blob))
			if msg := wantError(t, r, http.StatusUnprocessableEntity); !strings.Contains(msg, "release_version") {
				t.Errorf("no version: %q", msg)
			}
			// Other channels keep their rules: refused in the HarmonyOS channel and without a channel.
			for _, parts := range [][]apptest.Part{
				{apptest.Field("channel_key", hap.Channel.Slug), apptest.Field("release_version", "1.0")},
				{apptest.Field("release_version", "1.0")},
			} {
				r := e.upload(t, append(append([]apptest.Part{apptest.Field("token", e.UploadToken)}, parts...), apptest.File("notes-1.0.tar.gz", blob))...)
				if msg := wantError(t, r, http.StatusUnprocessableEntity); !strings.Contains(msg, "not a build Slipway reads (an Android .apk") || strings.Contains(msg, "windows-exe-zip") {
					t.Errorf("plain file outside windows/linux: %q", msg)
				}
			}
			if n, o := e.rows(t, "releases"), len(e.Objects(t)); n != releases || o != objects {
				t.Errorf("refused uploads kept something: %d releases (was %d), %d objects (was %d)", n, releases, o, objects)
			}
		})
	})
}

// TestUploadHostilePlatformPackages: a broken package of each new family is refused, with nothing
// kept, even in a windows or linux channel that keeps files it cannot read: a file a family
// claims and cannot parse is a broken package, not "anything else".
func TestUploadHostilePlatformPackages(t *testing.T) {
	// A .deb whose control member claims 2^63 bytes (the ar size field holds its first 10 digits).
	_, ctrl := linuxtest.ControlTar(linuxtest.DebOptions{})
	deb := linuxtest.Ar(linuxtest.ArFile{Name: "debian-binary", Data: []byte("2.0\n")},
		linuxtest.ArFile{Name: "control.tar.gz", Data: ctrl, Size: fmt.Sprint(uint64(1) << 63)},
		linuxtest.ArFile{Name: "data.tar.gz", Data: []byte("opaque")})
	// A HAP whose module.json is not JSON.
	hap := harmonytest.BuildZip(harmonytest.Entry{Name: "pack.info", Data: []byte(`{"summary": {}}`)},
		harmonytest.Entry{Name: "module.json", Data: []byte(`{"app": {"bundleName": `)})
	// An .msi whose first FAT sector (the header's first DIFAT entry) lies beyond the end.
	msi := windowstest.BuildMSI(windowstest.MSIOptions{})
	binary.LittleEndian.PutUint32(msi[76:], 0x7fffff)
	e := newEnv(t, apptest.Options{Storage: apptest.S3})
	channels := map[string]string{}
	c := mc{t: t, e: e.Env}
	for _, dt := range []string{"harmonyos", "windows", "linux"} {
		app := c.call("POST", "/api/apps", e.AdminToken, `{"name":"Hostile `+dt+`"}`, 201)
		scheme := c.call("POST", at("/api/apps/%d/schemes", idOf(app)), e.AdminToken, `{"name":"Adhoc"}`, 201)
		ch := c.call("POST", at("/api/schemes/%d/channels", idOf(scheme)), e.AdminToken, `{"name":"`+dt+`","device_type":"`+dt+`"}`, 201)
		channels[dt] = ch["slug"].(string)
	}
	apps, schemes, chans := e.rows(t, "apps"), e.rows(t, "schemes"), e.rows(t, "channels")
	for _, tc := range []struct {
		name, file, channel string
		data                []byte
	}{
		{"deb member of 2^63 bytes", "evil.deb", "linux", deb},
		{"hap with a broken module.json", "evil.hap", "harmonyos", hap},
		{"msi with its FAT beyond the end", "evil.msi", "windows", msi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, key := range []string{channels[tc.channel], ""} {
				parts := []apptest.Part{apptest.Field("token", e.UploadToken), apptest.Field("release_version", "1.0")}
				if key != "" {
					parts = append(parts, apptest.Field("channel_key", key))
				}
				r := e.upload(t, append(parts, apptest.File(tc.file, tc.data))...)
				if msg := wantError(t, r, http.StatusUnprocessableEntity); strings.Contains(msg, "not a build Slipway reads") {
					t.Errorf("channel %q: refused as an unknown file, not as a broken package: %q", key, msg)
				}
			}
		})
	}
	if objs := e.Objects(t); len(objs) != 0 {
		t.Errorf("storage still holds %q", objs)
	}
	for table, n := range map[string]int{"apps": apps, "schemes": schemes, "channels": chans, "releases": 0, "storage_objects": 0} {
		if got := e.rows(t, table); got != n {
			t.Errorf("%d rows in %s, want %d", got, table, n)
		}
	}
}

// A HarmonyOS .hap through an upload session that sends no checksum: the release still records
// the package's SHA-256 (read once from storage), which the install manifest names; a file no
// family reads, through a session into a linux channel, is kept as the multipart upload keeps it.
func TestUploadSessionPlatforms(t *testing.T) {
	s := sessions{newMgmt(t, apptest.Options{Storage: apptest.S3})}
	hap := harmonytest.BuildHAP(harmonytest.HAPOptions{BundleName: "com.example.session", VersionName: "2.0.0", VersionCode: 2000000,
		Label: "Session", DeviceTypes: []string{"phone"}})
	send := func(name string, data []byte, fields map[string]any) map[string]any {
		t.Helper()
		sess := s.start(startBody(name, len(data), "", fields), 201)
		for i, p := range sess.Parts {
			off := int64(i) * sess.PartSize
			if st := s.put(p.URL, data[off:off+p.Size]); st != 200 {
				t.Fatalf("part %d: %d", p.Number, st)
			}
		}
		return s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete "+name)
	}
	rel := send("session.hap", hap, nil)
	// A session's SHA-256 is the client's word: shown once the verifier has read the object (issue 23).
	rel = s.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	pkg := rel["package"].(map[string]any)
	if pkg["sha256"] != sha(hap) || pkg["format"] != "hap" || pkg["platform"] != "harmonyos" {
		t.Fatalf("package facts: %v", pkg)
	}
	r := s.e.Get(t, pkg["harmony_manifest_url"].(string))
	if r.Status != 200 || !strings.Contains(string(r.Body), `"packageHash": "`+sha(hap)+`"`) || !strings.Contains(string(r.Body), `"versionCode": 2000000`) {
		t.Fatalf("manifest: %d %s", r.Status, r.Body)
	}

	c := mc{t: t, e: s.e}
	app := c.call("POST", "/api/apps", s.e.AdminToken, `{"name":"Tools"}`, 201)
	scheme := c.call("POST", at("/api/apps/%d/schemes", idOf(app)), s.e.AdminToken, `{"name":"Adhoc"}`, 201)
	ch := c.call("POST", at("/api/schemes/%d/channels", idOf(scheme)), s.e.AdminToken, `{"name":"Linux","device_type":"linux"}`, 201)
	blob := []byte(strings.Repeat("tools\n", 1000))
	plain := send("tools-4.5.6.tar.zst", blob, map[string]any{"channel_key": ch["slug"]})
	if plain["release_version"] != "4.5.6" || plain["bundle_id"] != "tools" || plain["package"].(map[string]any)["format"] != "other" {
		t.Fatalf("plain file through a session: %v", plain)
	}
}

// An .exe without a version resource (a Go or Rust build) names neither its product nor its
// version: the upload's fields give them, else the file name; with neither, a 422 and nothing kept.
func TestUploadBareEXE(t *testing.T) {
	e := newEnv(t, apptest.Options{Storage: apptest.FS})
	exe := windowstest.BuildPE(windowstest.PEOptions{})
	rel := e.uploadPlatform(t, "fieldtool-1.2.0.exe", exe)
	want(t, "from the file name", []string{rel.App.Name, rel.BundleID, rel.ReleaseVersion, rel.BuildVersion, rel.Channel.DeviceType, rel.Package.Format},
		[]string{"fieldtool", "fieldtool", "1.2.0", "1.2.0", "windows", "exe"})
	want(t, "architectures", rel.Package.Architectures, []string{"x64"})
	rel = e.uploadPlatform(t, "fieldtool.exe", exe, apptest.Field("name", "Field Tool"), apptest.Field("release_version", "1.3"),
		apptest.Field("build_version", "130"), apptest.Field("bundle_id", "com.acme.fieldtool"))
	want(t, "from the fields", []string{rel.App.Name, rel.BundleID, rel.ReleaseVersion, rel.BuildVersion},
		[]string{"Field Tool", "com.acme.fieldtool", "1.3", "130"})
	releases, objects := e.rows(t, "releases"), len(e.Objects(t))
	r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("fieldtool.exe", exe))
	if msg := wantError(t, r, http.StatusUnprocessableEntity); !strings.Contains(msg, "release_version") {
		t.Errorf("no version anywhere: %q", msg)
	}
	if n, o := e.rows(t, "releases"), len(e.Objects(t)); n != releases || o != objects {
		t.Errorf("the refused upload kept something: %d releases (was %d), %d objects (was %d)", n, releases, o, objects)
	}
}
