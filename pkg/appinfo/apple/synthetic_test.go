package apple

import (
	"bytes"
	"image"
	"image/png"
	"reflect"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

func appleParseBytes(t testing.TB, data []byte) (*appinfo.Info, error) {
	t.Helper()
	return appinfo.Parse(bytes.NewReader(data), int64(len(data)))
}

func appleMustParse(t testing.TB, data []byte) *appinfo.Info {
	t.Helper()
	info, err := appleParseBytes(t, data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return info
}

func appleOpenZip(t testing.TB, data []byte) *zipread.Archive {
	t.Helper()
	a, err := zipread.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSyntheticIPA(t *testing.T) {
	data := appletest.BuildIPA(appletest.IPAOptions{
		AppName: "Sample", DisplayName: "Sample App", BundleID: "com.example.sample",
		Version: "2.3.4", Build: "42", MinOS: "15.0", DeviceFamily: []int{1},
		Profile: &appletest.ProfileOptions{TeamName: "Example Inc", TeamID: "ABCDE12345", Name: "Ad Hoc", Devices: []string{"udid-1", "udid-2"}},
		Icons: []appletest.IconFile{
			{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true},
			{Name: "AppIcon60x60@3x.png", Size: 180, CgBI: true},
			{Name: "AppIcon76x76@2x~ipad.png", Size: 152},
		},
		Extra: []appletest.Entry{
			// Larger icons outside the main bundle's folder are not the app's.
			{Name: "Payload/Sample.app/PlugIns/Widget.appex/AppIcon60x60@3x.png", Data: appletest.StandardPNG(512, 512)},
			{Name: "Payload/Sample.app/PlugIns/Widget.appex/Info.plist", Data: []byte("garbage, never read")},
			{Name: "__MACOSX/Payload/._Sample.app/Info.plist", Data: []byte("junk")},
		},
	})
	info := appleMustParse(t, data)
	want := appinfo.Info{Platform: appinfo.IOS, Format: appinfo.FormatIPA, Name: "Sample App", BundleID: "com.example.sample",
		ReleaseVersion: "2.3.4", BuildVersion: "42", MinOS: "15.0", Device: appinfo.DeviceIPhone, ReleaseType: appinfo.ReleaseAdhoc}
	got := *info
	got.Profile, got.Icon = nil, nil
	if got.Platform != want.Platform || got.Format != want.Format || got.Name != want.Name || got.BundleID != want.BundleID ||
		got.ReleaseVersion != want.ReleaseVersion || got.BuildVersion != want.BuildVersion || got.MinOS != want.MinOS ||
		got.Device != want.Device || got.ReleaseType != want.ReleaseType || got.AppStore {
		t.Errorf("Parse = %+v\nwant    %+v", got, want)
	}
	if p := info.Profile; p == nil || p.TeamName != "Example Inc" || p.TeamID != "ABCDE12345" || p.Name != "Ad Hoc" || len(p.Devices) != 2 {
		t.Errorf("Profile = %+v", p)
	}
	appleCheckIcon(t, info.Icon, 180, 180)
	appleCompareImage(t, info.Icon.Data, appletest.IconImage(180, 180))
}

// appleCompareImage checks a PNG against the image it was made from, allowing the rounding that
// premultiplying then un-premultiplying alpha costs (at most about 255/alpha per channel).
func appleCompareImage(t *testing.T, data []byte, want *image.NRGBA) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds() != want.Bounds() {
		t.Fatalf("bounds %v, want %v", img.Bounds(), want.Bounds())
	}
	got := image.NewNRGBA(img.Bounds())
	for y := range want.Rect.Dy() {
		for x := range want.Rect.Dx() {
			got.Set(x, y, img.At(x, y))
			g, w := got.NRGBAAt(x, y), want.NRGBAAt(x, y)
			if g.A != w.A {
				t.Fatalf("pixel (%d,%d) alpha %d, want %d", x, y, g.A, w.A)
			}
			if w.A == 0 {
				continue
			}
			tol := 255/int(w.A) + 1
			for i, pair := range [][2]uint8{{g.R, w.R}, {g.G, w.G}, {g.B, w.B}} {
				if d := int(pair[0]) - int(pair[1]); d > tol || -d > tol {
					t.Fatalf("pixel (%d,%d) channel %d = %d, want %d (got %v want %v)", x, y, i, pair[0], pair[1], g, w)
				}
			}
		}
	}
}

func TestConvertCgBI(t *testing.T) {
	for _, size := range [][2]int{{1, 1}, {2, 3}, {5, 7}, {57, 57}, {167, 167}, {180, 180}} {
		w, h := size[0], size[1]
		crushed := appletest.CgBIPNG(w, h)
		if _, err := png.Decode(bytes.NewReader(crushed)); err == nil {
			t.Fatal("image/png decodes a CgBI PNG; the test image is not crushed")
		}
		out, err := convertCgBI(crushed)
		if err != nil {
			t.Fatalf("%d×%d: %v", w, h, err)
		}
		appleCompareImage(t, out, appletest.IconImage(w, h))
	}
	if _, err := convertCgBI(appletest.StandardPNG(4, 4)); err == nil {
		t.Error("convertCgBI accepted a standard PNG")
	}
}

func TestSyntheticIPADevicesAndNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    appletest.IPAOptions
		want func(*appinfo.Info) bool
	}{
		{"ipad", appletest.IPAOptions{DeviceFamily: []int{2}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceIPad }},
		{"universal", appletest.IPAOptions{DeviceFamily: []int{1, 2}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceUniversal }},
		{"no family is iphone", appletest.IPAOptions{DeviceFamily: []int{}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceIPhone }},
		{"family as strings", appletest.IPAOptions{InfoPlist: map[string]any{"UIDeviceFamily": []string{"1", "2"}}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceUniversal }},
		{"tv family", appletest.IPAOptions{DeviceFamily: []int{3}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceAppleTV }},
		{"tvOS platform", appletest.IPAOptions{DeviceFamily: []int{1}, PlatformName: "appletvos"}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceAppleTV }},
		{"tvOS supported platform", appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleSupportedPlatforms": []string{"AppleTVOS"}}}, func(i *appinfo.Info) bool { return i.Device == appinfo.DeviceAppleTV }},
		{"bundle name", appletest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": "Bundle Name"}}, func(i *appinfo.Info) bool { return i.Name == "Bundle Name" }},
		{"executable name", appletest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": nil, "CFBundleExecutable": "Exe"}}, func(i *appinfo.Info) bool { return i.Name == "Exe" }},
		{"folder name", appletest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": nil, "CFBundleExecutable": nil}}, func(i *appinfo.Info) bool { return i.Name == "Folder" }},
		{"integer build", appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleVersion": 77}}, func(i *appinfo.Info) bool { return i.BuildVersion == "77" }},
		{"only CFBundleVersion", appletest.IPAOptions{Build: "9", InfoPlist: map[string]any{"CFBundleShortVersionString": nil}}, func(i *appinfo.Info) bool { return i.ReleaseVersion == "9" && i.BuildVersion == "9" }},
		{"binary plist", appletest.IPAOptions{BinaryPlist: true, BundleID: "com.example.binary"}, func(i *appinfo.Info) bool { return i.BundleID == "com.example.binary" }},
		{"no profile is debug", appletest.IPAOptions{}, func(i *appinfo.Info) bool { return i.Profile == nil && i.ReleaseType == appinfo.ReleaseDebug }},
		{"iTunesMetadata is appstore", appletest.IPAOptions{AppStore: true, Profile: &appletest.ProfileOptions{GetTaskAllow: true}}, func(i *appinfo.Info) bool { return i.AppStore && i.ReleaseType == appinfo.ReleaseAppStore }},
		{"enterprise", appletest.IPAOptions{Profile: &appletest.ProfileOptions{AllDevices: true}}, func(i *appinfo.Info) bool { return i.ReleaseType == appinfo.ReleaseEnterprise }},
		{"appstore profile", appletest.IPAOptions{Profile: &appletest.ProfileOptions{BetaReportsActive: true}}, func(i *appinfo.Info) bool { return i.ReleaseType == appinfo.ReleaseAppStore }},
		{"development", appletest.IPAOptions{Profile: &appletest.ProfileOptions{GetTaskAllow: true, Devices: []string{"a"}}}, func(i *appinfo.Info) bool { return i.ReleaseType == appinfo.ReleaseDebug }},
		{"legacy Icon.png", appletest.IPAOptions{Icons: nil, Extra: []appletest.Entry{{Name: "Payload/Demo.app/Icon@2x.png", Data: appletest.StandardPNG(114, 114)}}}, func(i *appinfo.Info) bool { return i.Icon != nil && i.Icon.Width == 114 }},
		{"CFBundleIconFiles with extension", appletest.IPAOptions{
			InfoPlist: map[string]any{"CFBundleIconFiles": []string{"Icon.png", "Icon-72.png"}},
			Extra: []appletest.Entry{
				{Name: "Payload/Demo.app/Icon.png", Data: appletest.StandardPNG(57, 57)},
				{Name: "Payload/Demo.app/Icon-72.png", Data: appletest.StandardPNG(72, 72)},
				{Name: "Payload/Demo.app/Icon-Unrelated.png", Data: appletest.StandardPNG(300, 300)},
			}}, func(i *appinfo.Info) bool { return i.Icon != nil && i.Icon.Width == 72 }},
		{"declared icon absent", appletest.IPAOptions{InfoPlist: map[string]any{"CFBundleIcons": map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": []string{"AppIcon60x60"}}}}}, func(i *appinfo.Info) bool { return i.Icon == nil }},
		{"broken largest icon falls back", appletest.IPAOptions{
			Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}},
			Extra: []appletest.Entry{{Name: "Payload/Demo.app/AppIcon60x60@3x.png", Data: append(appletest.StandardPNG(180, 180)[:60], make([]byte, 100)...)}},
		}, func(i *appinfo.Info) bool { return i.Icon != nil && i.Icon.Width == 120 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := appleMustParse(t, appletest.BuildIPA(tc.o))
			if !tc.want(info) {
				p := info.Profile
				info.Profile = nil
				t.Errorf("unexpected %+v (profile %+v)", info, p)
			}
		})
	}
}

func TestFindIPAInfoPlist(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"Payload/", "Payload/A.app/", "Payload/A.app/Info.plist"}, "Payload/A.app/Info.plist"},
		{[]string{"Payload/A.app/PlugIns/W.appex/Info.plist", "Payload/A.app/Info.plist"}, "Payload/A.app/Info.plist"},
		{[]string{"Payload/A.app/PlugIns/W.appex/Info.plist"}, ""},
		{[]string{"__MACOSX/Payload/A.app/Info.plist", "Payload/._A.app/Info.plist"}, ""},
		{[]string{"Payload/.app/Info.plist", "Payload/Sub/A.app/Info.plist", "X/Payload/A.app/Info.plist"}, ""},
		{[]string{"Payload/A.app/info.plist", "Payload/A/Info.plist"}, ""},
	} {
		var entries []appletest.Entry
		for _, n := range tc.names {
			entries = append(entries, appletest.Entry{Name: n, Data: []byte("x")})
		}
		if got := findIPAInfoPlist(appleOpenZip(t, appletest.BuildZip(entries...))); got != tc.want {
			t.Errorf("findIPAInfoPlist(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestFindMacAppInfoPlist(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{[]string{"A.app/Contents/Info.plist"}, "A.app/Contents/Info.plist"},
		{[]string{"build/Release/A.app/Contents/Info.plist"}, "build/Release/A.app/Contents/Info.plist"},
		{[]string{
			"A.app/Contents/Library/LoginItems/Helper.app/Contents/Info.plist",
			"A.app/Contents/Frameworks/Sparkle.framework/Versions/A/Resources/Autoupdate.app/Contents/Info.plist",
			"A.app/Contents/Info.plist",
		}, "A.app/Contents/Info.plist"},
		{[]string{"A.app/Contents/Library/LoginItems/Helper.app/Contents/Info.plist"}, ""},
		{[]string{"__MACOSX/A.app/Contents/Info.plist", "._A.app/Contents/Info.plist", ".app/Contents/Info.plist"}, ""},
		{[]string{"A.app.dSYM/Contents/Info.plist", "A.app/Info.plist"}, ""},
	} {
		var entries []appletest.Entry
		for _, n := range tc.names {
			entries = append(entries, appletest.Entry{Name: n, Data: []byte("x")})
		}
		if got := findMacAppInfoPlist(appleOpenZip(t, appletest.BuildZip(entries...))); got != tc.want {
			t.Errorf("findMacAppInfoPlist(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestSyntheticMacZip(t *testing.T) {
	data := appletest.BuildMacZip(appletest.MacZipOptions{
		Folder: "dist/", AppName: "Mac", DisplayName: "Mac App", BundleID: "com.example.mac",
		Version: "3.1", Build: "310", MinOS: "12.0", IconSizes: []int{16, 32, 512, 128}, LegacyIcon: true, MacOSXJunk: true,
		Profile: &appletest.ProfileOptions{Platform: "OSX", TeamName: "Mac Team", Devices: []string{"mac-udid"}},
	})
	info := appleMustParse(t, data)
	if info.Platform != appinfo.MacOS || info.Format != appinfo.FormatMacZip || info.Device != appinfo.DeviceMac || info.Name != "Mac App" ||
		info.BundleID != "com.example.mac" || info.ReleaseVersion != "3.1" || info.BuildVersion != "310" || info.MinOS != "12.0" {
		t.Errorf("Parse = %+v", info)
	}
	if info.Profile == nil || info.Profile.TeamName != "Mac Team" || info.Profile.AppID != "TEAM123456.com.example.demo" {
		t.Errorf("Profile = %+v", info.Profile)
	}
	if info.ReleaseType != appinfo.ReleaseRelease {
		t.Errorf("ReleaseType = %s, want release (macOS profile without get-task-allow)", info.ReleaseType)
	}
	appleCheckIcon(t, info.Icon, 512, 512)

	for _, tc := range []struct {
		name string
		o    appletest.MacZipOptions
		rt   string
		icon int
	}{
		{"no profile", appletest.MacZipOptions{IconSizes: []int{64}}, appinfo.ReleaseDebug, 64},
		{"debuggable profile", appletest.MacZipOptions{Profile: &appletest.ProfileOptions{Platform: "OSX", GetTaskAllow: true}}, appinfo.ReleaseDebug, 0},
		{"only a legacy icon", appletest.MacZipOptions{LegacyIcon: true}, appinfo.ReleaseDebug, 0},
		{"icon file with extension", appletest.MacZipOptions{IconSizes: []int{256}, InfoPlist: map[string]any{"CFBundleIconFile": "AppIcon.icns"}}, appinfo.ReleaseDebug, 256},
		{"icon declared but absent", appletest.MacZipOptions{InfoPlist: map[string]any{"CFBundleIconFile": "Missing"}}, appinfo.ReleaseDebug, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := appleMustParse(t, appletest.BuildMacZip(tc.o))
			if info.ReleaseType != tc.rt {
				t.Errorf("ReleaseType = %s, want %s", info.ReleaseType, tc.rt)
			}
			appleCheckIcon(t, info.Icon, tc.icon, tc.icon)
		})
	}
}

func TestICNS(t *testing.T) {
	icon, err := icnsIcon(appletest.BuildICNS([]int{32, 256, 16}, true))
	if err != nil || icon == nil || icon.Width != 256 {
		t.Fatalf("icnsIcon = %+v, %v", icon, err)
	}
	if icon, err := icnsIcon(appletest.BuildICNS(nil, true)); err != nil || icon != nil {
		t.Errorf("legacy-only icns = %+v, %v; want nil, nil", icon, err)
	}
	if _, err := icnsIcon([]byte("not an icns")); err == nil {
		t.Error("icnsIcon accepted garbage")
	}
	// A bad entry length ends the walk without an error.
	bad := appletest.BuildICNS([]int{16}, false)
	bad = append(bad, "ic10\xff\xff\xff\xff"...)
	if icon, err := icnsIcon(bad); err != nil || icon == nil || icon.Width != 16 {
		t.Errorf("icns with a bad trailing entry = %+v, %v", icon, err)
	}
}

func TestSyntheticPKG(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    appletest.PKGOptions
		want appinfo.Info
	}{
		{"product archive", appletest.PKGOptions{Distribution: true, Title: "My Tool", AppName: "Tool", BundleID: "com.example.tool", Version: "4.5", Build: "450", MinOS: "10.15"},
			appinfo.Info{Name: "My Tool", BundleID: "com.example.tool", ReleaseVersion: "4.5", BuildVersion: "450", MinOS: "10.15"}},
		{"localized title", appletest.PKGOptions{Distribution: true, Title: "SU_TITLE", AppName: "Tool", BundleID: "com.example.tool"},
			appinfo.Info{Name: "Tool", BundleID: "com.example.tool", ReleaseVersion: "1.0", BuildVersion: "1"}},
		{"uncompressed heap", appletest.PKGOptions{Distribution: true, Uncompressed: true, BundleID: "com.example.raw", Version: "2.0", Build: "20"},
			appinfo.Info{Name: "Demo", BundleID: "com.example.raw", ReleaseVersion: "2.0", BuildVersion: "20"}},
		{"product archive without bundles", appletest.PKGOptions{Distribution: true, OmitBundle: true, BundleID: "com.example.nobundle", Version: "7.0"},
			appinfo.Info{Name: "com.example.nobundle.pkg", BundleID: "com.example.nobundle.pkg", ReleaseVersion: "7.0", BuildVersion: "7.0"}},
		{"component package", appletest.PKGOptions{AppName: "Comp", BundleID: "com.example.comp", Version: "1.2", Build: "12"},
			appinfo.Info{Name: "Comp", BundleID: "com.example.comp", ReleaseVersion: "1.2", BuildVersion: "12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := appletest.BuildPKG(tc.o)
			info := appleMustParse(t, data)
			tc.want.Platform, tc.want.Format, tc.want.Device = appinfo.MacOS, appinfo.FormatPKG, appinfo.DeviceMac
			tc.want.Sizes = &appinfo.Breakdown{Download: int64(len(data))} // a .pkg lists no sizes Slipway reads
			if !reflect.DeepEqual(*info, tc.want) {
				t.Errorf("Parse = %+v\nwant    %+v", *info, tc.want)
			}
		})
	}
}

func TestReleaseType(t *testing.T) {
	dev := &appinfo.Profile{GetTaskAllow: true, Devices: []string{"a"}}
	adhoc := &appinfo.Profile{Devices: []string{"a"}}
	ent := &appinfo.Profile{AllDevices: true}
	store := &appinfo.Profile{BetaReportsActive: true}
	for _, tc := range []struct {
		platform appinfo.Platform
		appStore bool
		p        *appinfo.Profile
		want     string
	}{
		{appinfo.IOS, true, dev, appinfo.ReleaseAppStore},
		{appinfo.IOS, false, nil, appinfo.ReleaseDebug},
		{appinfo.IOS, false, dev, appinfo.ReleaseDebug},
		{appinfo.IOS, false, adhoc, appinfo.ReleaseAdhoc},
		{appinfo.IOS, false, ent, appinfo.ReleaseEnterprise},
		{appinfo.IOS, false, store, appinfo.ReleaseAppStore},
		{appinfo.IOS, false, &appinfo.Profile{}, appinfo.ReleaseAppStore},
		{appinfo.MacOS, false, nil, appinfo.ReleaseDebug},
		{appinfo.MacOS, false, dev, appinfo.ReleaseDebug},
		{appinfo.MacOS, false, adhoc, appinfo.ReleaseRelease},
		{appinfo.MacOS, false, store, appinfo.ReleaseRelease},
	} {
		if got := releaseType(tc.platform, tc.appStore, tc.p); got != tc.want {
			t.Errorf("releaseType(%s, %v, %+v) = %s, want %s", tc.platform, tc.appStore, tc.p, got, tc.want)
		}
	}
}

func TestSyntheticProfile(t *testing.T) {
	p, err := ParseProfile(appletest.BuildProfile(appletest.ProfileOptions{
		Name: "P", TeamID: "T1", TeamName: "Team", Devices: []string{"d1", "d2", "d3"}, GetTaskAllow: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "P" || p.TeamID != "T1" || p.TeamName != "Team" || !slices.Equal(p.Devices, []string{"d1", "d2", "d3"}) ||
		!p.GetTaskAllow || p.AllDevices || !slices.Equal(p.Platforms, []string{"iOS"}) || p.AppID != "T1.com.example.demo" {
		t.Errorf("ParseProfile = %+v", p)
	}
	for name, data := range map[string][]byte{
		"garbage plist":   appletest.CMS([]byte("<?xml version=\"1.0\"?><plist><dict><key>a</dict></plist>")),
		"array root":      appletest.CMS([]byte("<?xml version=\"1.0\"?><plist><array/></plist>")),
		"empty dict":      appletest.CMS([]byte("<?xml version=\"1.0\"?><plist><dict/></plist>")),
		"no plist":        appletest.CMS([]byte("<?xml version=\"1.0\"?><html></html>")),
		"random":          bytes.Repeat([]byte{0x30, 0x82}, 100),
		"nested too deep": appletest.CMS([]byte("<?xml version=\"1.0\"?><plist>" + appleRepeat("<array>", 1000) + appleRepeat("</array>", 1000) + "</plist>")),
	} {
		if _, err := ParseProfile(data); !errs.Is(err, errs.Invalid) {
			t.Errorf("%s: ParseProfile error %v, want errs.Invalid", name, err)
		}
	}
}

func appleRepeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }
