package windows

import (
	"bytes"
	"image/png"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

func parse(t *testing.T, b []byte) (*appinfo.Info, error) {
	t.Helper()
	return appinfo.Parse(bytes.NewReader(b), int64(len(b)))
}

func mustParse(t *testing.T, b []byte) *appinfo.Info {
	t.Helper()
	info, err := parse(t, b)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestPEArchitectures(t *testing.T) {
	for machine, want := range map[uint16]string{windowstest.MachineX86: "x86", windowstest.MachineX64: "x64",
		windowstest.MachineARM64: "arm64", windowstest.MachineARMNT: "arm"} {
		info := mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Machine: machine, Version: windowstest.DefaultVersion("Demo", "1.2.3.4")}))
		if !slices.Equal(info.Architectures, []string{want}) {
			t.Errorf("machine 0x%x: Architectures = %q, want %s", machine, info.Architectures, want)
		}
	}
}

func TestPEDotNetAnyCPU(t *testing.T) {
	for flags, want := range map[uint32]string{0x1: "neutral", 0x3: "x86", 0x20001: "x86", 0x9: "neutral"} {
		exe := windowstest.BuildPE(windowstest.PEOptions{Machine: windowstest.MachineX86, CLRFlags: flags, Version: windowstest.DefaultVersion("Demo", "1.0")})
		for _, b := range [][]byte{exe, windowstest.BuildZip(windowstest.Entry{Name: "demo.exe", Data: exe})} {
			if info := mustParse(t, b); !slices.Equal(info.Architectures, []string{want}) || info.Name != "Demo" {
				t.Errorf("flags 0x%x (%s): Architectures %q, name %q, want %s", flags, info.Format, info.Architectures, info.Name, want)
			}
		}
	}
	// An x64 .NET assembly is x64, whatever its flags.
	info := mustParse(t, windowstest.BuildPE(windowstest.PEOptions{CLRFlags: 0x1}))
	if !slices.Equal(info.Architectures, []string{"x64"}) {
		t.Errorf("x64 .NET: %q", info.Architectures)
	}
}

func TestPEVersionResource(t *testing.T) {
	info := mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.2.3.4")}))
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatEXE, Device: appinfo.DeviceWindows,
		Name: "Demo", BundleID: "Demo", ReleaseVersion: "1.2.3.4", BuildVersion: "1.2.3.4", Publisher: "Acme Labs",
		Description: "Demo desktop client", Architectures: []string{"x64"},
		Properties: map[string]string{"FileVersion": "1.2.3.4", "InternalName": "demo", "OriginalFilename": "demo.exe",
			"LegalCopyright": "Copyright (C) Acme Labs"}})

	// Without ProductName, the bundle id falls back to InternalName, then OriginalFilename; the
	// versions to VS_FIXEDFILEINFO; the name to FileDescription.
	v := windowstest.DefaultVersion("Demo", "2.0.1.7")
	delete(v.Strings, "ProductName")
	delete(v.Strings, "ProductVersion")
	delete(v.Strings, "FileVersion")
	info = mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Version: v}))
	if info.BundleID != "demo" || info.Name != "Demo desktop client" || info.ReleaseVersion != "2.0.1.7" || info.BuildVersion != "2.0.1.7" {
		t.Errorf("fallbacks: %+v", info)
	}
	delete(v.Strings, "InternalName")
	if info = mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Version: v})); info.BundleID != "demo.exe" {
		t.Errorf("BundleID = %q, want OriginalFilename", info.BundleID)
	}

	// A second string table fills what the first lacks; the first wins where both have a value.
	v = windowstest.DefaultVersion("Demo", "1.0.0.0")
	v.ExtraTables = map[string]map[string]string{"040704b0": {"ProductName": "Vorführung", "Comments": "x", "CompanyName": "Acme GmbH"}}
	delete(v.Strings, "CompanyName")
	info = mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Version: v}))
	if info.Name != "Demo" || info.Publisher != "Acme GmbH" {
		t.Errorf("two tables: Name %q, Publisher %q", info.Name, info.Publisher)
	}

	// No version resource at all (a Go binary): the architecture only; the upload form names it.
	info = mustParse(t, windowstest.BuildPE(windowstest.PEOptions{}))
	if info.Name != "" || info.BundleID != "" || info.ReleaseVersion != "" || info.Format != appinfo.FormatEXE {
		t.Errorf("no version resource: %+v", info)
	}
}

func TestPEIcons(t *testing.T) {
	tests := []struct {
		name  string
		icons []windowstest.IconImage
		side  int
	}{
		{"PNG largest", []windowstest.IconImage{{Size: 16}, {Size: 256, PNG: true}, {Size: 48}}, 256},
		{"32-bit DIB", []windowstest.IconImage{{Size: 16}, {Size: 48}}, 48},
		{"24-bit DIB", []windowstest.IconImage{{Size: 32, BPP: 24}}, 32},
		{"8-bit DIB", []windowstest.IconImage{{Size: 32, BPP: 8}}, 32},
		{"4-bit DIB", []windowstest.IconImage{{Size: 24, BPP: 4}}, 24},
		{"1-bit DIB", []windowstest.IconImage{{Size: 20, BPP: 1}}, 20},
		{"corrupt largest falls back", []windowstest.IconImage{{Size: 64, Raw: []byte("junk")}, {Size: 32}}, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Icons: tt.icons}))
			checkIcon(t, info.Icon, tt.side)
			img, err := png.Decode(bytes.NewReader(info.Icon.Data))
			if err != nil {
				t.Fatal(err)
			}
			// The top-left quarter is transparent (the AND mask, or the PNG's alpha).
			if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
				t.Errorf("pixel (0,0) alpha %d, want transparent", a)
			}
			if _, _, _, a := img.At(tt.side-1, tt.side-1).RGBA(); a != 0xffff {
				t.Errorf("bottom-right alpha %d, want opaque", a)
			}
		})
	}
	// The 32-bit DIB's colours survive the conversion.
	info := mustParse(t, windowstest.BuildPE(windowstest.PEOptions{Icons: []windowstest.IconImage{{Size: 48}}}))
	img, _ := png.Decode(bytes.NewReader(info.Icon.Data))
	want := windowstest.IconPixel(40, 30, 48)
	if r, g, b, _ := img.At(40, 30).RGBA(); uint8(r>>8) != want.R || uint8(g>>8) != want.G || uint8(b>>8) != want.B {
		t.Errorf("pixel (40,30) = %d,%d,%d, want %v", r>>8, g>>8, b>>8, want)
	}
}

func TestEXEZip(t *testing.T) {
	exe := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.2.3.4"),
		Icons: []windowstest.IconImage{{Size: 32}}, TextBytes: 300 << 10})
	other := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Helper", "9.9.9.9"), TextBytes: 600 << 10})
	for _, store := range []bool{true, false} {
		z := windowstest.BuildZip(
			windowstest.Entry{Name: "Demo/tools/helper.exe", Data: other, Store: store}, // deeper, though larger
			windowstest.Entry{Name: "Demo/demo.exe", Data: exe, Store: store},
			windowstest.Entry{Name: "Demo/readme.txt", Data: []byte("hi")},
			windowstest.Entry{Name: "__MACOSX/Demo/._demo.exe", Data: []byte("junk")},
		)
		info := mustParse(t, z)
		if info.Format != appinfo.FormatEXEZip || info.Name != "Demo" || info.ReleaseVersion != "1.2.3.4" || info.Properties["Executable"] != "Demo/demo.exe" {
			t.Errorf("store=%v: %+v", store, info)
		}
		checkIcon(t, info.Icon, 32)
	}
}

// A zip that holds an .exe but is another platform's package goes to that platform: the
// .exe-in-zip family is a fallback.
func TestEXEZipIsFallback(t *testing.T) {
	exe := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0")})
	msix := windowstest.BuildMSIX(windowstest.MSIXOptions{Extra: []windowstest.Entry{{Name: "setup.exe", Data: exe}}})
	if info := mustParse(t, msix); info.Format != appinfo.FormatMSIX {
		t.Errorf("an MSIX holding an .exe parsed as %s", info.Format)
	}
	fams := appinfo.Families()
	if i, j := slices.Index(fams, "windows"), slices.Index(fams, "windows-exe-zip"); i < 0 || j != len(fams)-1 {
		t.Errorf("families %q: windows-exe-zip must be registered as a fallback", fams)
	}
}

func TestMSISynthetic(t *testing.T) {
	long := strings.Repeat("long value ", 7000) // 77 KB: the pool's two-entry form
	tests := []struct {
		name string
		o    windowstest.MSIOptions
		arch string
	}{
		{"default", windowstest.MSIOptions{}, "x64"},
		{"3-byte string refs", windowstest.MSIOptions{LongRefs: true, Template: "Arm64;1033"}, "arm64"},
		{"long string", windowstest.MSIOptions{LongString: long, Template: "Intel;1033"}, "x86"},
		{"UTF-8 code page", windowstest.MSIOptions{Codepage: 65001, ProductName: "Outil de terrain é", Template: ";1033"}, ""},
		{"large cab", windowstest.MSIOptions{CabBytes: 3 << 20}, "x64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.ProductCode, tt.o.UpgradeCode = "{11111111-2222-3333-4444-555555555555}", "{66666666-7777-8888-9999-AAAAAAAAAAAA}"
			info := mustParse(t, windowstest.BuildMSI(tt.o))
			name := tt.o.ProductName
			if name == "" {
				name = "Field Tool"
			}
			want := &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSI, Device: appinfo.DeviceWindows,
				Name: name, BundleID: name, ReleaseVersion: "0.9.1", BuildVersion: "0.9.1", Publisher: "Acme Labs", Description: "Hello",
				Properties: map[string]string{"ProductCode": tt.o.ProductCode, "UpgradeCode": tt.o.UpgradeCode, "ProductLanguage": "1033",
					"PackageCode": "{D67542DF-3CB2-4694-8038-02FE1A6084CA}"}}
			if tt.arch != "" {
				want.Architectures = []string{tt.arch}
			}
			checkInfo(t, info, want)
		})
	}
}

func TestMSIWindows1252(t *testing.T) {
	// Strings in the pool are in its code page: 0xe9 is é in Windows-1252.
	info := mustParse(t, windowstest.BuildMSI(windowstest.MSIOptions{ProductName: "Caf\xe9 Tool"}))
	if info.Name != "Café Tool" {
		t.Errorf("Name = %q, want Café Tool", info.Name)
	}
}

func TestMSIIcon(t *testing.T) {
	ico := windowstest.ICO(windowstest.IconImage{Size: 16}, windowstest.IconImage{Size: 48}, windowstest.IconImage{Size: 32, PNG: true})
	info := mustParse(t, windowstest.BuildMSI(windowstest.MSIOptions{Icon: ico}))
	checkIcon(t, info.Icon, 48)
	// An icon that does not decode is skipped, not an error.
	info = mustParse(t, windowstest.BuildMSI(windowstest.MSIOptions{Icon: []byte("not an icon")}))
	checkIcon(t, info.Icon, 0)
}

func TestMSIX(t *testing.T) {
	info := mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{Description: "Collects field data"}))
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSIX, Device: appinfo.DeviceWindows,
		Name: "Field Tool", BundleID: "Acme.FieldTool", ReleaseVersion: "1.2.3.0", BuildVersion: "1.2.3.0",
		MinOS: "10.0.17763.0", Publisher: "CN=Acme Labs, O=Acme Labs, C=US", Description: "Collects field data",
		Architectures: []string{"x64"}, Permissions: []string{"internetClient", "runFullTrust"},
		Properties: map[string]string{"PublisherDisplayName": "Acme Labs", "TargetDeviceFamily": "Windows.Desktop"}})
	checkIcon(t, info.Icon, 100) // StoreLogo.scale-200.png, not the larger Square44x44Logo
}

func TestMSIXVariants(t *testing.T) {
	// ms-resource: names fall back to the visual elements' name, then to the identity.
	info := mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{DisplayName: "ms-resource:AppName", VisualName: "Field Tool Visual"}))
	if info.Name != "Field Tool Visual" {
		t.Errorf("Name = %q", info.Name)
	}
	info = mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{DisplayName: "ms-resource:AppName", VisualName: "ms-resource:Other",
		PublisherDisplayName: "ms-resource:Pub"}))
	if info.Name != "Acme.FieldTool" || info.Properties["PublisherDisplayName"] != "" {
		t.Errorf("Name = %q, properties %q", info.Name, info.Properties)
	}
	// No architecture means neutral; several device families; device capabilities.
	info = mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{Arch: "-",
		Families:     [][2]string{{"Windows.Universal", "10.0.10240.0"}, {"Windows.Desktop", "10.0.17763.0"}},
		Capabilities: []string{"internetClient", "uap:picturesLibrary", "webcam", "internetClient"}}))
	if !slices.Equal(info.Architectures, []string{"neutral"}) || info.MinOS != "10.0.10240.0" ||
		info.Properties["TargetDeviceFamily"] != "Windows.Universal, Windows.Desktop" ||
		!slices.Equal(info.Permissions, []string{"internetClient", "picturesLibrary", "webcam"}) {
		t.Errorf("variants: %+v", info)
	}
	// Logo variants in qualifier folders, a high-contrast one (used last), percent-encoded names.
	info = mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{Logo: `Images\Store Logo.png`, LogoFiles: []windowstest.LogoFile{
		{Name: "Images/contrast-black/Store Logo.scale-400.png", Size: 200},
		{Name: "Images/scale-150/Store Logo.png", Size: 75},
		{Name: "Images/Store Logo.targetsize-64.png", Size: 64},
		{Name: "Images/Store LogoX.png", Size: 300},
	}}))
	checkIcon(t, info.Icon, 75)
	// The exact file alone; none at all.
	info = mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{LogoFiles: []windowstest.LogoFile{{Name: "Assets/StoreLogo.png", Size: 50}}}))
	checkIcon(t, info.Icon, 50)
	info = mustParse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{LogoFiles: []windowstest.LogoFile{}}))
	checkIcon(t, info.Icon, 0)
}

func TestMSIXBundle(t *testing.T) {
	b := windowstest.BuildMSIXBundle(windowstest.BundleOptions{App: windowstest.MSIXOptions{DisplayName: "Field Tool Pro"}})
	info := mustParse(t, b)
	checkInfo(t, info, &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSIXBundle, Device: appinfo.DeviceWindows,
		Name: "Field Tool Pro", BundleID: "Acme.FieldTool", ReleaseVersion: "1.2.3.0", BuildVersion: "1.2.3.0",
		MinOS: "10.0.17763.0", Publisher: "CN=Acme Labs, O=Acme Labs, C=US", Description: "Field Tool",
		Architectures: []string{"x64", "arm64"}, Permissions: []string{"internetClient", "runFullTrust"},
		Properties: map[string]string{"PublisherDisplayName": "Acme Labs", "TargetDeviceFamily": "Windows.Desktop",
			"MainPackage": "FieldTool_1.2.3.0_x64.msix"}})
	checkIcon(t, info.Icon, 100)

	// Packages compressed inside the bundle are not inflated: the bundle manifest only.
	info = mustParse(t, windowstest.BuildMSIXBundle(windowstest.BundleOptions{Deflate: true}))
	if info.Name != "Acme.FieldTool" || info.Icon != nil || info.MinOS != "10.0.17763.0" || len(info.Permissions) != 0 {
		t.Errorf("deflated packages: %+v", info)
	}
}

// The parsers are reachable through their exported names too (for callers that know the kind).
func TestExportedParsers(t *testing.T) {
	b := windowstest.BuildMSIX(windowstest.MSIXOptions{})
	a, err := zipread.Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := ParseMSIX(a); err != nil || info.BundleID != "Acme.FieldTool" {
		t.Errorf("ParseMSIX = %+v, %v", info, err)
	}
	if _, err := ParseMSIXBundle(a); errs.KindOf(err) != errs.Invalid {
		t.Errorf("ParseMSIXBundle on a package: %v", err)
	}
	b = windowstest.BuildZip(windowstest.Entry{Name: "readme.txt", Data: []byte("hi")})
	if a, err = zipread.Open(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseEXEZip(a); errs.KindOf(err) != errs.Invalid {
		t.Errorf("ParseEXEZip on a zip without .exe: %v", err)
	}
}
