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
		return &distribution.Release{Format: format, Filename: file, RolloutPercent: rollout, SHA1: "ab"}
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
