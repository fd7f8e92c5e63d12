package windows

import (
	"bytes"
	"image/png"
	"os"
	"reflect"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// parseFixture parses a fixture through appinfo.Parse, as an upload is.
func parseFixture(t *testing.T, rel string) *appinfo.Info {
	t.Helper()
	data := fixtures.Read(t, rel)
	info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// checkInfo compares the listed fields of info with want.
func checkInfo(t *testing.T, info, want *appinfo.Info) {
	t.Helper()
	for _, f := range []struct{ field, got, want string }{
		{"Platform", string(info.Platform), string(want.Platform)},
		{"Format", string(info.Format), string(want.Format)},
		{"Name", info.Name, want.Name},
		{"BundleID", info.BundleID, want.BundleID},
		{"ReleaseVersion", info.ReleaseVersion, want.ReleaseVersion},
		{"BuildVersion", info.BuildVersion, want.BuildVersion},
		{"MinOS", info.MinOS, want.MinOS},
		{"Device", info.Device, want.Device},
		{"Publisher", info.Publisher, want.Publisher},
		{"Description", info.Description, want.Description},
	} {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.field, f.got, f.want)
		}
	}
	if !reflect.DeepEqual(info.Architectures, want.Architectures) {
		t.Errorf("Architectures = %q, want %q", info.Architectures, want.Architectures)
	}
	if len(info.Permissions)+len(want.Permissions) > 0 && !reflect.DeepEqual(info.Permissions, want.Permissions) {
		t.Errorf("Permissions = %q, want %q", info.Permissions, want.Permissions)
	}
	if !reflect.DeepEqual(info.Properties, want.Properties) {
		t.Errorf("Properties = %q, want %q", info.Properties, want.Properties)
	}
}

// checkIcon checks that the icon is a PNG of the given side that image/png reads alike.
func checkIcon(t *testing.T, icon *appinfo.Icon, side int) {
	t.Helper()
	if side == 0 {
		if icon != nil {
			t.Errorf("icon %dx%d, want none", icon.Width, icon.Height)
		}
		return
	}
	if icon == nil {
		t.Fatalf("no icon, want %dx%d", side, side)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(icon.Data))
	if err != nil || icon.ContentType != "image/png" || cfg.Width != side || cfg.Height != side || icon.Width != side || icon.Height != side {
		t.Errorf("icon %s %dx%d (image/png: %dx%d, %v), want a %dx%d PNG", icon.ContentType, icon.Width, icon.Height, cfg.Width, cfg.Height, err, side, side)
	}
}

func TestFixtureUPX(t *testing.T) {
	info := parseFixture(t, "other/windows-upx-3.08.exe")
	// UPX packs the code but keeps the version resource readable in its .rsrc section.
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatEXE, Device: appinfo.DeviceWindows,
		Name: "UPX", BundleID: "UPX", ReleaseVersion: "3.08 (2011-12-12)", BuildVersion: "3.08 (2011-12-12)",
		Publisher: "The UPX Team http://upx.sf.net", Description: "UPX executable packer", Architectures: []string{"x86"},
		Properties: map[string]string{"FileVersion": "3.08 (2011-12-12)", "InternalName": "upx.exe", "OriginalFilename": "upx.exe",
			"LegalCopyright": "© 1996-2011 Markus F.X.J. Oberhumer"}})
	checkIcon(t, info.Icon, 0) // UPX has no icon group
}

func TestFixtureTopBarZip(t *testing.T) {
	info := parseFixture(t, "other/windows-topbar-1.0.0.zip")
	// The .exe is deflated: inflated up to its resource section.
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatEXEZip, Device: appinfo.DeviceWindows,
		Name: "TopBar", BundleID: "TopBar", ReleaseVersion: "1.0.0", BuildVersion: "1.0.0.0",
		Publisher: "Dejan Stojanovic", Description: "TopBar", Architectures: []string{"x64"},
		Properties: map[string]string{"FileVersion": "1.0.0.0", "InternalName": "TopBar.dll", "OriginalFilename": "TopBar.dll",
			"Executable": "TopBar.exe"}})
	checkIcon(t, info.Icon, 256) // the group's 256-pixel image is a PNG
}

func TestFixtureFieldToolMSI(t *testing.T) {
	info := parseFixture(t, "windows/fieldtool-0.9.1.msi")
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSI, Device: appinfo.DeviceWindows,
		Name: "Field Tool", BundleID: "Field Tool", ReleaseVersion: "0.9.1", BuildVersion: "0.9.1",
		Publisher: "Acme Labs", Description: "Hello", Architectures: []string{"x86"}, // Template "Intel;1033"
		Properties: map[string]string{"ProductCode": "{1AD1F2D0-1C1E-4C96-A69E-CB2CA2BB3323}",
			"UpgradeCode": "{0F1E2D3C-4B5A-4968-8776-A5B4C3D2E1F0}", "ProductLanguage": "1033",
			"PackageCode": "{D67542DF-3CB2-4694-8038-02FE1A6084CA}"}})
	checkIcon(t, info.Icon, 0)
}

// A real MSI made with wixl (testdata/wixl/README.md), with an icon in its Icon table.
func TestWixlMSI(t *testing.T) {
	data, err := os.ReadFile("testdata/wixl/fieldtool-lite-2.4.0.msi")
	if err != nil {
		t.Fatal(err)
	}
	info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSI, Device: appinfo.DeviceWindows,
		Name: "Field Tool Lite", BundleID: "Field Tool Lite", ReleaseVersion: "2.4.0", BuildVersion: "2.4.0",
		Publisher: "Acme Labs", Description: "Field data collection", Architectures: []string{"x64"},
		Properties: map[string]string{"ProductCode": "{3F2A1B0C-5D6E-4F70-8192-A3B4C5D6E7F8}",
			"UpgradeCode": "{9A8B7C6D-5E4F-4A3B-9C2D-1E0F9A8B7C6D}", "ProductLanguage": "1033",
			"PackageCode": "{D5E8DB38-20BC-45B7-8D82-6127BDFB00F8}"}})
	checkIcon(t, info.Icon, 48)
}
