package feeds_test

import (
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/pkg/feeds/appinstallertest"
)

// The .appinstaller file, read back independently against the schema: a package names its
// identity and architecture, a bundle its identity only; a critical build blocks the app's start;
// a publisher with quotes and commas (a distinguished name) survives escaping exactly.
func TestAppInstallerFile(t *testing.T) {
	for _, c := range []struct {
		name     string
		r        distribution.Release
		critical bool
		hours    int
	}{
		{"package", distribution.Release{Format: "msix", BundleID: "Acme.FieldTool", BuildVersion: "1.2.3.0",
			Facts: distribution.PlatformFacts{Publisher: "CN=Acme Labs, O=Acme Labs, C=US", Architectures: []string{"x64"}}}, false, 24},
		{"bundle, critical, every start", distribution.Release{Format: "msixbundle", BundleID: "Acme.FieldTool", BuildVersion: "2.0.0.7",
			Facts: distribution.PlatformFacts{Publisher: `CN="Acme, Inc.", O=Acme & Sons`, Architectures: []string{"x64", "arm64"}}}, true, 0},
		{"unknown architecture", distribution.Release{Format: "msix", BundleID: "Acme.FieldTool", BuildVersion: "1.0.0.0",
			Facts: distribution.PlatformFacts{Publisher: "CN=Acme", Architectures: []string{"x86a64"}}}, false, 255},
	} {
		t.Run(c.name, func(t *testing.T) {
			self := "https://apps.example.com/channels/desk/app.appinstaller?token=sft_abc"
			pkgURL := "https://apps.example.com/download/releases/7/FieldTool.msix?feed_token=sft_abc"
			b, err := feeds.AppInstaller(feeds.AppInstallerFile{URL: self, Main: feeds.AppInstallerMain(&c.r, pkgURL),
				HoursBetweenUpdateChecks: c.hours, Critical: c.critical})
			if err != nil {
				t.Fatal(err)
			}
			f, err := appinstallertest.Parse(b)
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			wantArch := ""
			if c.r.Format == "msix" {
				wantArch = c.r.Facts.Architectures[0]
				if wantArch == "x86a64" {
					wantArch = "neutral"
				}
			}
			want := appinstallertest.Package{Bundle: c.r.Format == "msixbundle", Name: c.r.BundleID, Publisher: c.r.Facts.Publisher,
				Version: c.r.BuildVersion, ProcessorArchitecture: wantArch, URI: pkgURL}
			if f.Namespace != feeds.AppInstallerNS || f.Version != c.r.BuildVersion || f.URI != self || f.Main != want {
				t.Fatalf("file says %+v, want main %+v\n%s", f, want, b)
			}
			if f.OnLaunch == nil || f.OnLaunch.Hours != c.hours || !f.OnLaunch.ShowPrompt || f.OnLaunch.UpdateBlocksActivation != c.critical || !f.AutomaticBackgroundTask {
				t.Fatalf("update settings %+v\n%s", f.OnLaunch, b)
			}
		})
	}
	if _, err := feeds.AppInstaller(feeds.AppInstallerFile{URL: "https://x/a", Main: feeds.AppInstallerPackage{Version: "1.2.3"}}); err == nil ||
		!strings.Contains(err.Error(), "four numbers") {
		t.Errorf("a version that is not a quad: %v", err)
	}
}
