package insights_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/platforms"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// now is when the synthetic diffs are made: the synthetic profiles expire on 2025-01-01, more
// than DefaultExpiryWarning later.
var now = time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)

// snapshot parses a package and returns its snapshot.
func snapshot(t testing.TB, data []byte) *insights.Snapshot {
	t.Helper()
	info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return insights.FromInfo(info)
}

// compare diffs two packages at now.
func compare(t testing.TB, old, new []byte) *insights.Diff {
	t.Helper()
	return insights.Options{Now: now}.Diff(snapshot(t, old), snapshot(t, new))
}

// compareFixtures diffs two packages made from the fixtures, whose profiles all expired years
// ago, at a time before any of them expired.
func compareFixtures(t testing.TB, old, new []byte) *insights.Diff {
	t.Helper()
	return insights.Options{Now: time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC)}.Diff(snapshot(t, old), snapshot(t, new))
}

// findings names the fields of a diff that report something besides the size.
func findings(d *insights.Diff) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"bundle_id", d.BundleID != nil}, {"version_backwards", d.VersionBackwards != nil},
		{"build_backwards", d.BuildBackwards != nil}, {"files", len(d.Files) > 0},
		{"permissions", d.Permissions != nil}, {"entitlements", d.Entitlements != nil},
		{"min_os", d.MinOS != nil}, {"target_sdk", d.TargetSDK != nil},
		{"architectures", d.Architectures != nil}, {"signing", d.Signing != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// components lists a diff's component changes as "status name".
func components(d *insights.Diff) []string {
	var out []string
	if d.Size != nil {
		for _, c := range d.Size.Components {
			out = append(out, c.Status+" "+c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// files lists a diff's file changes as "status path".
func files(d *insights.Diff) []string {
	var out []string
	for _, f := range d.Files {
		out = append(out, f.Status+" "+f.Path)
	}
	slices.Sort(out)
	return out
}

// expect checks that d reports exactly the findings, component changes and file changes given,
// and that the size change is the sum of the component changes.
func expect(t *testing.T, d *insights.Diff, wantFindings, wantComponents, wantFiles []string) {
	t.Helper()
	if got := findings(d); !slices.Equal(got, wantFindings) {
		t.Errorf("findings %q, want %q", got, wantFindings)
	}
	if got := components(d); !slices.Equal(got, wantComponents) {
		t.Errorf("components %q, want %q", got, wantComponents)
	}
	if got := files(d); !slices.Equal(got, wantFiles) {
		t.Errorf("files %q, want %q", got, wantFiles)
	}
	if d.Size == nil {
		t.Fatal("no size diff")
	}
	var dl, in int64
	for _, c := range d.Size.Components {
		dl += c.Download.Change
		in += c.Install.Change
	}
	if dl != d.Size.Download.Change || d.Size.Install != nil && in != d.Size.Install.Change {
		t.Errorf("components change %d/%d, the package %d/%v", dl, in, d.Size.Download.Change, d.Size.Install)
	}
}

// noise returns n deterministic incompressible bytes.
func noise(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestDiffIPAFrameworkAdded: an .ipa that gains a framework.
func TestDiffIPAFrameworkAdded(t *testing.T) {
	base := appletest.IPAOptions{Profile: &appletest.ProfileOptions{Devices: []string{"a"}}}
	old := appletest.BuildIPA(base)
	base.Extra = []appletest.Entry{
		{Name: "Payload/Demo.app/Frameworks/Lottie.framework/Lottie", Data: noise(300<<10, 1)},
		{Name: "Payload/Demo.app/Frameworks/Lottie.framework/Info.plist", Data: []byte("<plist/>")},
	}
	d := compare(t, old, appletest.BuildIPA(base))
	expect(t, d, []string{"files"},
		[]string{"added Frameworks/Lottie.framework", "changed Archive overhead"},
		[]string{"added Payload/Demo.app/Frameworks/Lottie.framework/Info.plist", "added Payload/Demo.app/Frameworks/Lottie.framework/Lottie"})
	if d.Size.Download.Change < 300<<10 || d.Size.Install.Change != 300<<10+8 {
		t.Errorf("size %+v %+v", d.Size.Download, d.Size.Install)
	}
	sum := insights.Summary(d)
	if len(sum) < 2 || !strings.HasPrefix(sum[0], "+307.") || sum[1] != "new framework: Frameworks/Lottie.framework (+307.3 kB)" {
		t.Errorf("Summary = %q", sum)
	}
}

// TestDiffAPKPermissionAndABI: an APK that asks for the camera and drops its x86 libraries.
func TestDiffAPKPermissionAndABI(t *testing.T) {
	lib := noise(64<<10, 2)
	m := androidtest.AndroidManifest{Package: "com.example.cam", VersionCode: 5, VersionName: "1.5", MinSDK: 24, TargetSDK: 34,
		Permissions: []string{"android.permission.INTERNET"}}
	old := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m, Entries: []androidtest.AndroidEntry{
		{Name: "lib/arm64-v8a/libapp.so", Data: lib}, {Name: "lib/x86/libapp.so", Data: lib}}})
	m.Permissions = append(m.Permissions, "android.permission.CAMERA")
	m.VersionCode, m.VersionName = 6, "1.6"
	d := compare(t, old, androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m, Entries: []androidtest.AndroidEntry{
		{Name: "lib/arm64-v8a/libapp.so", Data: lib}}}))
	expect(t, d, []string{"files", "permissions", "architectures"},
		[]string{"changed Archive overhead", "changed Other", "removed lib/x86/"},
		[]string{"removed lib/x86/libapp.so"})
	if fmt.Sprint(d.Permissions) != fmt.Sprint(&insights.SetChange{Added: []string{"android.permission.CAMERA"}}) ||
		fmt.Sprint(d.Architectures) != fmt.Sprint(&insights.SetChange{Removed: []string{"x86"}}) {
		t.Errorf("permissions %+v architectures %+v", d.Permissions, d.Architectures)
	}
	sum := strings.Join(insights.Summary(d), "\n")
	for _, want := range []string{"removed native libraries: lib/x86/ (-65.", "new permission: android.permission.CAMERA", "dropped architecture: x86", "files: 1 removed"} {
		if !strings.Contains(sum, want) {
			t.Errorf("Summary lacks %q:\n%s", want, sum)
		}
	}
}

// TestDiffProfileTeam: the same app signed by another team reports the team, once: entitlements
// that name the team are compared with the team's identifiers replaced.
func TestDiffProfileTeam(t *testing.T) {
	o := appletest.IPAOptions{Profile: &appletest.ProfileOptions{TeamID: "AAAAA11111", TeamName: "Team A", Devices: []string{"a"}}}
	old := appletest.BuildIPA(o)
	o.Profile = &appletest.ProfileOptions{TeamID: "BBBBB22222", TeamName: "Team B", Devices: []string{"a"}}
	d := compare(t, old, appletest.BuildIPA(o))
	if got := findings(d); !slices.Equal(got, []string{"signing"}) {
		t.Fatalf("findings %q", got)
	}
	want := &insights.SigningDiff{Team: &insights.Change{Old: "AAAAA11111", New: "BBBBB22222"}, TeamNames: &insights.Change{Old: "Team A", New: "Team B"}}
	if fmt.Sprintf("%+v %+v", d.Signing.Team, d.Signing.TeamNames) != fmt.Sprintf("%+v %+v", want.Team, want.TeamNames) || d.Signing.Type != nil || d.Signing.Devices != nil || d.Signing.Expires != nil {
		t.Errorf("signing %+v", d.Signing)
	}
	if d.Size.Install.Change != 0 {
		t.Errorf("install size changed by %d", d.Size.Install.Change)
	}
	if sum := insights.Summary(d); !slices.Contains(sum, "signing team changed: Team A (AAAAA11111) → Team B (BBBBB22222)") {
		t.Errorf("Summary = %q", sum)
	}
}

// TestDiffBackwards: a build number, then a version, that went backwards.
func TestDiffBackwards(t *testing.T) {
	build := func(version, b string) []byte {
		return appletest.BuildIPA(appletest.IPAOptions{Version: version, Build: b})
	}
	d := compare(t, build("1.4", "87"), build("1.4", "86"))
	expect(t, d, []string{"build_backwards"}, nil, nil)
	if *d.BuildBackwards != (insights.Change{Old: "87", New: "86", Direction: "down"}) || d.Size.Install.Change != 0 {
		t.Errorf("build %+v, size %+v", d.BuildBackwards, d.Size)
	}
	if sum := insights.Summary(d); !slices.Equal(sum, []string{"build went backwards: 87 → 86"}) {
		t.Errorf("Summary = %q", sum)
	}
	d = compare(t, build("1.10", "7"), build("1.9", "8"))
	expect(t, d, []string{"version_backwards"}, []string{"changed Resources"}, nil) // Info.plist is a byte shorter
	// Forward, and builds that do not compare as numbers: nothing.
	for _, pair := range [][4]string{{"1.9", "7", "1.10", "8"}, {"1.0", "b7", "1.0", "a6"}, {"1.0-beta", "1", "1.0", "1"}} {
		if d := compare(t, build(pair[0], pair[1]), build(pair[2], pair[3])); d.VersionBackwards != nil || d.BuildBackwards != nil {
			t.Errorf("%v: %+v %+v", pair, d.VersionBackwards, d.BuildBackwards)
		}
	}
}

// TestDiffMinOSAndProfileType: the minimum OS raised, the profile changed from ad hoc to App
// Store and expiring in a week.
func TestDiffMinOSAndProfileType(t *testing.T) {
	old := appletest.BuildIPA(appletest.IPAOptions{MinOS: "15.0", Profile: &appletest.ProfileOptions{Devices: []string{"a", "b"}}})
	new := appletest.BuildIPA(appletest.IPAOptions{MinOS: "16.0", Profile: &appletest.ProfileOptions{BetaReportsActive: true}})
	d := insights.Options{Now: time.Date(2024, 12, 25, 0, 0, 0, 0, time.UTC)}.Diff(snapshot(t, old), snapshot(t, new))
	// beta-reports-active is an entitlement the App Store profile adds.
	if got := findings(d); !slices.Equal(got, []string{"entitlements", "min_os", "signing"}) {
		t.Fatalf("findings %q", got)
	}
	if *d.MinOS != (insights.Change{Old: "15.0", New: "16.0", Direction: "up"}) {
		t.Errorf("min OS %+v", d.MinOS)
	}
	s := d.Signing
	if s.Team != nil || *s.Type != (insights.Change{Old: "adhoc", New: "appstore"}) || s.Devices.Old != 2 || s.Devices.New != 0 ||
		s.Expires == nil || s.Expires.Days != 7 || s.Expires.Expired {
		t.Errorf("signing %+v %+v %+v", s, s.Devices, s.Expires)
	}
	want := []string{
		"new entitlement: beta-reports-active (TestFlight)",
		"minimum iOS 15.0 → 16.0",
		"profile type: adhoc → appstore",
		"provisioned devices: 2 → 0",
		"profile expires in 7 days (2025-01-01)",
	}
	if got := insights.Summary(d); !slices.Equal(got[len(got)-len(want):], want) {
		t.Errorf("Summary = %q", got)
	}
}

// TestDiffHarmonyAndMSIX: a HAP asking for another permission and shipping another ABI; an
// MSIX asking for another capability.
func TestDiffHarmonyAndMSIX(t *testing.T) {
	o := harmonytest.HAPOptions{Permissions: []string{"ohos.permission.INTERNET"}, Architectures: []string{"arm64-v8a"}}
	old := harmonytest.BuildHAP(o)
	o.Permissions = append(o.Permissions, "ohos.permission.CAMERA")
	o.Architectures = append(o.Architectures, "x86_64")
	d := compare(t, old, harmonytest.BuildHAP(o))
	expect(t, d, []string{"files", "permissions", "architectures"},
		[]string{"added libs/x86_64/", "changed Archive overhead", "changed Other"},
		[]string{"added libs/x86_64/libentry.so"})

	m := windowstest.MSIXOptions{Capabilities: []string{"internetClient"}}
	old = windowstest.BuildMSIX(m)
	m.Capabilities = append(m.Capabilities, "webcam")
	d = compare(t, old, windowstest.BuildMSIX(m))
	expect(t, d, []string{"permissions"}, []string{"changed Package metadata"}, nil)
	if d.Permissions.Added[0] != "webcam" {
		t.Errorf("permissions %+v", d.Permissions)
	}
}

// TestDiffSame: a build compared with itself reports nothing; with no old build, only its
// profile's expiry.
func TestDiffSame(t *testing.T) {
	data := appletest.BuildIPA(appletest.IPAOptions{Profile: &appletest.ProfileOptions{}})
	d := compare(t, data, data)
	if !d.Empty() || insights.Summary(d) != nil {
		t.Errorf("diff %+v, Summary %q", d, insights.Summary(d))
	}
	if md := insights.Markdown(d); !strings.Contains(md, "No changes.") {
		t.Errorf("Markdown:\n%s", md)
	}
	late := insights.Options{Now: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)}
	first := late.Diff(nil, snapshot(t, data))
	if findings(first)[0] != "signing" || !first.Signing.Expires.Expired || first.Signing.Expires.Days != -31 || first.Size != nil {
		t.Errorf("first build: %+v", first)
	}
	if sum := insights.Summary(first); !slices.Equal(sum, []string{"profile expired on 2025-01-01"}) {
		t.Errorf("Summary = %q", sum)
	}
	if d := late.Diff(snapshot(t, data), nil); !d.Empty() {
		t.Errorf("diff against nothing: %+v", d)
	}
}

// TestDiffFixturePairs diffs pairs made from the real packages: an .ipa with a framework added,
// an APK with a new permission and a dropped ABI, a profile from another team.
func TestDiffFixturePairs(t *testing.T) {
	t.Run("ipa framework added", func(t *testing.T) {
		old := fixtures.Read(t, "ios/demo-universal-enterprise-1.0-1.ipa")
		new := fixtures.Rezip(t, old, nil, nil,
			[2]any{"Payload/Demo.app/Frameworks/Lottie.framework/Lottie", noise(250<<10, 3)},
			[2]any{"Payload/Demo.app/Frameworks/Lottie.framework/Info.plist", []byte("<plist/>")})
		// Copying entries keeps them byte for byte; the copies lose nothing but what archive/zip
		// rewrites of the records (data descriptors), which is overhead.
		old = fixtures.Rezip(t, old, nil, nil)
		d := compareFixtures(t, old, new)
		expect(t, d, []string{"files"},
			[]string{"added Frameworks/Lottie.framework", "changed Archive overhead"},
			[]string{"added Payload/Demo.app/Frameworks/Lottie.framework/Info.plist", "added Payload/Demo.app/Frameworks/Lottie.framework/Lottie"})
	})
	t.Run("apk permission added, abi dropped", func(t *testing.T) {
		apk := fixtures.Read(t, "android/politedroid-1.3-4.apk")
		lib := noise(80<<10, 4)
		manifest := func(perms ...string) []byte {
			return androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
				Package: "com.politedroid", VersionCode: 4, VersionName: "1.3", MinSDK: 3, Label: "Polite Droid", Permissions: perms}})
		}
		perms := []string{"android.permission.READ_CALENDAR", "android.permission.RECEIVE_BOOT_COMPLETED"}
		old := fixtures.Rezip(t, apk, nil, map[string][]byte{"AndroidManifest.xml": manifest(perms...)},
			[2]any{"lib/armeabi-v7a/libpolite.so", lib}, [2]any{"lib/x86/libpolite.so", lib})
		new := fixtures.Rezip(t, apk, nil, map[string][]byte{"AndroidManifest.xml": manifest(append(perms, "android.permission.CAMERA")...)},
			[2]any{"lib/armeabi-v7a/libpolite.so", lib})
		d := compareFixtures(t, old, new)
		expect(t, d, []string{"files", "permissions", "architectures"},
			[]string{"changed Archive overhead", "changed Other", "removed lib/x86/"},
			[]string{"removed lib/x86/libpolite.so"})
		if d.Permissions.Added[0] != "android.permission.CAMERA" || len(d.Permissions.Removed) != 0 || d.Architectures.Removed[0] != "x86" {
			t.Errorf("permissions %+v architectures %+v", d.Permissions, d.Architectures)
		}
	})
	t.Run("profile from another team", func(t *testing.T) {
		ipa := fixtures.Read(t, "ios/very-capable-app-1.0-1.ipa")
		const profile = "Payload/very-capable-app.app/embedded.mobileprovision"
		real := fixtures.ZipEntry(t, ipa, profile)
		other := bytes.ReplaceAll(real, []byte("TestFixture"), []byte("OtherTeam99"))
		old := fixtures.Rezip(t, ipa, nil, map[string][]byte{profile: real})
		new := fixtures.Rezip(t, ipa, nil, map[string][]byte{profile: other})
		d := compareFixtures(t, old, new)
		if got := findings(d); !slices.Equal(got, []string{"signing"}) {
			t.Fatalf("findings %q (entitlements %+v)", got, d.Entitlements)
		}
		if *d.Signing.Team != (insights.Change{Old: "TestFixture", New: "OtherTeam99"}) || d.Signing.Type != nil || d.Signing.Devices != nil {
			t.Errorf("signing %+v", d.Signing)
		}
		if d.Size.Install.Change != 0 {
			t.Errorf("install size changed by %d", d.Size.Install.Change)
		}
		t.Log(insights.Summary(d))
	})
}

// mustRead reads a file.
func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDiffUnlistedFormat: a zip build against one whose format lists no files (a .dmg after a
// zipped .app): the download size changes, nothing is "removed".
func TestDiffUnlistedFormat(t *testing.T) {
	zipped := snapshot(t, appletest.BuildMacZip(appletest.MacZipOptions{}))
	dmg := &insights.Snapshot{Schema: 1, Platform: "macos", Format: "dmg", BundleID: zipped.BundleID, ReleaseVersion: zipped.ReleaseVersion,
		BuildVersion: zipped.BuildVersion, MinOS: zipped.MinOS, Architectures: zipped.Architectures, Sizes: &insights.Sizes{Download: 1 << 20}}
	d := insights.Options{Now: now}.Diff(zipped, dmg)
	if got := findings(d); len(got) != 0 || d.Size == nil || d.Size.Install != nil || len(d.Size.Components) != 0 || d.Size.Download.New != 1<<20 {
		t.Errorf("findings %q, size %+v", got, d.Size)
	}
}
