package feeds

import (
	"fmt"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// Each feed offers its own framework's artifact: Tauri on Windows the installer (.exe, .msi), not
// Squirrel's .nupkg nor an .msix; on Linux the AppImage, .deb or .rpm; Squirrel only the
// .nupkg, and only once it is rolled out to all.
func TestFeedsOfferTheirOwnArtifacts(t *testing.T) {
	rel := func(format, file string, rollout int) *distribution.Release {
		return &distribution.Release{Format: format, Filename: file, RolloutPercent: rollout, SHA1: "ab", TauriSignature: "c2ln"}
	}
	for _, c := range []struct {
		platform string
		r        *distribution.Release
		want     bool
	}{
		{"windows", rel("exe", "Desk-setup.exe", 100), true},
		{"windows", rel("msi", "Desk.msi", 100), true},
		{"windows", rel("exe-zip", "Desk-1.0.0-full.nupkg", 100), false},
		{"windows", rel("exe", "Desk-1.0.0-full.nupkg", 100), false},
		{"windows", rel("msix", "Desk.msix", 100), false},
		{"linux", rel("appimage", "Tool.AppImage", 100), true},
		{"linux", rel("deb", "tool.deb", 100), true},
		{"linux", rel("other", "tool.tar.gz", 100), false},
		{"macos", rel("macos-zip", "Desk.zip", 100), true},
	} {
		if got := TauriServes(c.platform, c.r, "x86_64"); got != c.want {
			t.Errorf("tauri %s offers %s (%s): %v", c.platform, c.r.Filename, c.r.Format, got)
		}
	}
	// Tauri refuses an update without a signature: a build uploaded without one is never offered.
	unsigned := rel("macos-zip", "Desk.zip", 100)
	unsigned.TauriSignature = ""
	if TauriServes("macos", unsigned, "x86_64") {
		t.Error("tauri offers a build without tauri_signature")
	}
	if !SquirrelOffers(rel("other", "Desk-1.0.0-full.nupkg", 100)) || SquirrelOffers(rel("other", "Desk-1.0.0-full.nupkg", 50)) ||
		SquirrelOffers(rel("exe", "Desk-setup.exe", 100)) {
		t.Error("RELEASES lists what it should not, or leaves out a rolled-out .nupkg")
	}
}

// A staged rollout draws a stable share of installs, independently for each release.
func TestInRollout(t *testing.T) {
	a, b := &distribution.Release{ID: 1, RolloutPercent: 10}, &distribution.Release{ID: 2, RolloutPercent: 10}
	both, inA := 0, 0
	for i := range 10000 {
		install := fmt.Sprint("install-", i)
		x := InRollout(a, install)
		if x != InRollout(a, install) {
			t.Fatal("an install's draw changed between two checks")
		}
		if x {
			inA++
			if InRollout(b, install) {
				both++
			}
		}
	}
	if inA < 800 || inA > 1200 {
		t.Errorf("a 10%% rollout drew %d of 10000 installs", inA)
	}
	if both > 200 {
		t.Errorf("%d of the %d installs in one release's 10%% are in another's: the draws are not independent", both, inA)
	}
	for _, p := range []int{0, 100} {
		r := &distribution.Release{ID: 3, RolloutPercent: p}
		if InRollout(r, "x") != (p == 100) {
			t.Errorf("rollout %d%%", p)
		}
	}
}

// Frameworks says per update framework whether it can use a build (issue 34): the feed must
// offer it and the framework accept it.
func TestFrameworks(t *testing.T) {
	usable := func(r *distribution.Release) map[string]bool {
		out := map[string]bool{}
		for _, u := range Frameworks(r) {
			if u.Usable != (u.Why == "") {
				t.Errorf("%s: usable %v with why %q", u.Framework, u.Usable, u.Why)
			}
			out[u.Framework] = u.Usable
		}
		return out
	}
	verified := func(r distribution.Release) *distribution.Release {
		r.ChecksumState, r.SHA512, r.SHA1 = distribution.ChecksumVerified, "aa", "bb"
		if r.RolloutPercent == 0 {
			r.RolloutPercent = 100
		}
		return &r
	}
	for _, c := range []struct {
		name string
		r    *distribution.Release
		want map[string]bool
	}{
		{"bare mac zip, not semver", verified(distribution.Release{Platform: "macos", Format: "macos-zip", ReleaseVersion: "1.0"}),
			map[string]bool{"Sparkle": false, "electron-updater": false, "Tauri": false}},
		{"signed mac zip", verified(distribution.Release{Platform: "macos", Format: "macos-zip", ReleaseVersion: "1.2.0", EdSignature: "e", TauriSignature: "t"}),
			map[string]bool{"Sparkle": true, "electron-updater": true, "Tauri": true}},
		{"signed mac dmg", verified(distribution.Release{Platform: "macos", Format: "dmg", ReleaseVersion: "1.2.0", EdSignature: "e", TauriSignature: "t"}),
			map[string]bool{"Sparkle": true, "electron-updater": false, "Tauri": true}},
		{"unverified", &distribution.Release{Platform: "macos", Format: "macos-zip", ReleaseVersion: "1.2.0", EdSignature: "e", TauriSignature: "t", RolloutPercent: 100},
			map[string]bool{"Sparkle": false, "electron-updater": false, "Tauri": false}},
		{"windows nupkg", verified(distribution.Release{Platform: "windows", Format: "other", Filename: "Desk-1.0.0-full.nupkg", ReleaseVersion: "1.0.0"}),
			map[string]bool{"electron-updater": false, "Tauri": false, "Squirrel.Windows": true, "App Installer": false}},
		{"windows installer, staged", verified(distribution.Release{Platform: "windows", Format: "exe", Filename: "Desk-setup.exe", ReleaseVersion: "1.0.0", TauriSignature: "t", RolloutPercent: 50}),
			map[string]bool{"electron-updater": true, "Tauri": true, "Squirrel.Windows": false, "App Installer": false}},
		{"windows msix", verified(distribution.Release{Platform: "windows", Format: "msix", BundleID: "Acme.Tool", BuildVersion: "1.2.3.0",
			Facts: distribution.PlatformFacts{Publisher: "CN=Acme"}}),
			map[string]bool{"electron-updater": false, "Tauri": false, "Squirrel.Windows": false, "App Installer": true}},
		{"windows msix, staged", verified(distribution.Release{Platform: "windows", Format: "msix", BundleID: "Acme.Tool", BuildVersion: "1.2.3.0",
			Facts: distribution.PlatformFacts{Publisher: "CN=Acme"}, RolloutPercent: 50}),
			map[string]bool{"electron-updater": false, "Tauri": false, "Squirrel.Windows": false, "App Installer": false}},
		{"windows msix, version not a quad", verified(distribution.Release{Platform: "windows", Format: "msix", BundleID: "Acme.Tool", BuildVersion: "1.2.3",
			Facts: distribution.PlatformFacts{Publisher: "CN=Acme"}}),
			map[string]bool{"electron-updater": false, "Tauri": false, "Squirrel.Windows": false, "App Installer": false}},
		{"linux deb", verified(distribution.Release{Platform: "linux", Format: "deb", ReleaseVersion: "1.0.0", TauriSignature: "t"}),
			map[string]bool{"electron-updater": false, "Tauri": true}},
		{"ios", &distribution.Release{Platform: "ios"}, map[string]bool{}},
	} {
		if got := usable(c.r); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
