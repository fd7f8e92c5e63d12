package appinfo

import (
	"bytes"
	"image"
	"image/png"
	"reflect"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/appinfotest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

func appleParseBytes(t testing.TB, data []byte) (*Info, error) {
	t.Helper()
	return Parse(bytes.NewReader(data), int64(len(data)))
}

func appleMustParse(t testing.TB, data []byte) *Info {
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
	data := appinfotest.BuildIPA(appinfotest.IPAOptions{
		AppName: "Sample", DisplayName: "Sample App", BundleID: "com.example.sample",
		Version: "2.3.4", Build: "42", MinOS: "15.0", DeviceFamily: []int{1},
		Profile: &appinfotest.ProfileOptions{TeamName: "Example Inc", TeamID: "ABCDE12345", Name: "Ad Hoc", Devices: []string{"udid-1", "udid-2"}},
		Icons: []appinfotest.IconFile{
			{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true},
			{Name: "AppIcon60x60@3x.png", Size: 180, CgBI: true},
			{Name: "AppIcon76x76@2x~ipad.png", Size: 152},
		},
		Extra: []appinfotest.Entry{
			// Larger icons outside the main bundle's folder are not the app's.
			{Name: "Payload/Sample.app/PlugIns/Widget.appex/AppIcon60x60@3x.png", Data: appinfotest.StandardPNG(512, 512)},
			{Name: "Payload/Sample.app/PlugIns/Widget.appex/Info.plist", Data: []byte("garbage, never read")},
			{Name: "__MACOSX/Payload/._Sample.app/Info.plist", Data: []byte("junk")},
		},
	})
	info := appleMustParse(t, data)
	want := Info{Platform: IOS, Format: FormatIPA, Name: "Sample App", BundleID: "com.example.sample",
		ReleaseVersion: "2.3.4", BuildVersion: "42", MinOS: "15.0", Device: DeviceIPhone, ReleaseType: ReleaseAdhoc}
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
	appleCompareImage(t, info.Icon.Data, appinfotest.IconImage(180, 180))
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
		crushed := appinfotest.CgBIPNG(w, h)
		if _, err := png.Decode(bytes.NewReader(crushed)); err == nil {
			t.Fatal("image/png decodes a CgBI PNG; the test image is not crushed")
		}
		out, err := convertCgBI(crushed)
		if err != nil {
			t.Fatalf("%d×%d: %v", w, h, err)
		}
		appleCompareImage(t, out, appinfotest.IconImage(w, h))
	}
	if _, err := convertCgBI(appinfotest.StandardPNG(4, 4)); err == nil {
		t.Error("convertCgBI accepted a standard PNG")
	}
}

func TestSyntheticIPADevicesAndNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    appinfotest.IPAOptions
		want func(*Info) bool
	}{
		{"ipad", appinfotest.IPAOptions{DeviceFamily: []int{2}}, func(i *Info) bool { return i.Device == DeviceIPad }},
		{"universal", appinfotest.IPAOptions{DeviceFamily: []int{1, 2}}, func(i *Info) bool { return i.Device == DeviceUniversal }},
		{"no family is iphone", appinfotest.IPAOptions{DeviceFamily: []int{}}, func(i *Info) bool { return i.Device == DeviceIPhone }},
		{"family as strings", appinfotest.IPAOptions{InfoPlist: map[string]any{"UIDeviceFamily": []string{"1", "2"}}}, func(i *Info) bool { return i.Device == DeviceUniversal }},
		{"tv family", appinfotest.IPAOptions{DeviceFamily: []int{3}}, func(i *Info) bool { return i.Device == DeviceAppleTV }},
		{"tvOS platform", appinfotest.IPAOptions{DeviceFamily: []int{1}, PlatformName: "appletvos"}, func(i *Info) bool { return i.Device == DeviceAppleTV }},
		{"tvOS supported platform", appinfotest.IPAOptions{InfoPlist: map[string]any{"CFBundleSupportedPlatforms": []string{"AppleTVOS"}}}, func(i *Info) bool { return i.Device == DeviceAppleTV }},
		{"bundle name", appinfotest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": "Bundle Name"}}, func(i *Info) bool { return i.Name == "Bundle Name" }},
		{"executable name", appinfotest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": nil, "CFBundleExecutable": "Exe"}}, func(i *Info) bool { return i.Name == "Exe" }},
		{"folder name", appinfotest.IPAOptions{AppName: "Folder", InfoPlist: map[string]any{"CFBundleName": nil, "CFBundleExecutable": nil}}, func(i *Info) bool { return i.Name == "Folder" }},
		{"integer build", appinfotest.IPAOptions{InfoPlist: map[string]any{"CFBundleVersion": 77}}, func(i *Info) bool { return i.BuildVersion == "77" }},
		{"only CFBundleVersion", appinfotest.IPAOptions{Build: "9", InfoPlist: map[string]any{"CFBundleShortVersionString": nil}}, func(i *Info) bool { return i.ReleaseVersion == "9" && i.BuildVersion == "9" }},
		{"binary plist", appinfotest.IPAOptions{BinaryPlist: true, BundleID: "com.example.binary"}, func(i *Info) bool { return i.BundleID == "com.example.binary" }},
		{"no profile is debug", appinfotest.IPAOptions{}, func(i *Info) bool { return i.Profile == nil && i.ReleaseType == ReleaseDebug }},
		{"iTunesMetadata is appstore", appinfotest.IPAOptions{AppStore: true, Profile: &appinfotest.ProfileOptions{GetTaskAllow: true}}, func(i *Info) bool { return i.AppStore && i.ReleaseType == ReleaseAppStore }},
		{"enterprise", appinfotest.IPAOptions{Profile: &appinfotest.ProfileOptions{AllDevices: true}}, func(i *Info) bool { return i.ReleaseType == ReleaseEnterprise }},
		{"appstore profile", appinfotest.IPAOptions{Profile: &appinfotest.ProfileOptions{BetaReportsActive: true}}, func(i *Info) bool { return i.ReleaseType == ReleaseAppStore }},
		{"development", appinfotest.IPAOptions{Profile: &appinfotest.ProfileOptions{GetTaskAllow: true, Devices: []string{"a"}}}, func(i *Info) bool { return i.ReleaseType == ReleaseDebug }},
		{"legacy Icon.png", appinfotest.IPAOptions{Icons: nil, Extra: []appinfotest.Entry{{Name: "Payload/Demo.app/Icon@2x.png", Data: appinfotest.StandardPNG(114, 114)}}}, func(i *Info) bool { return i.Icon != nil && i.Icon.Width == 114 }},
		{"CFBundleIconFiles with extension", appinfotest.IPAOptions{
			InfoPlist: map[string]any{"CFBundleIconFiles": []string{"Icon.png", "Icon-72.png"}},
			Extra: []appinfotest.Entry{
				{Name: "Payload/Demo.app/Icon.png", Data: appinfotest.StandardPNG(57, 57)},
				{Name: "Payload/Demo.app/Icon-72.png", Data: appinfotest.StandardPNG(72, 72)},
				{Name: "Payload/Demo.app/Icon-Unrelated.png", Data: appinfotest.StandardPNG(300, 300)},
			}}, func(i *Info) bool { return i.Icon != nil && i.Icon.Width == 72 }},
		{"declared icon absent", appinfotest.IPAOptions{InfoPlist: map[string]any{"CFBundleIcons": map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": []string{"AppIcon60x60"}}}}}, func(i *Info) bool { return i.Icon == nil }},
		{"broken largest icon falls back", appinfotest.IPAOptions{
			Icons: []appinfotest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}},
			Extra: []appinfotest.Entry{{Name: "Payload/Demo.app/AppIcon60x60@3x.png", Data: append(appinfotest.StandardPNG(180, 180)[:60], make([]byte, 100)...)}},
		}, func(i *Info) bool { return i.Icon != nil && i.Icon.Width == 120 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := appleMustParse(t, appinfotest.BuildIPA(tc.o))
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
		var entries []appinfotest.Entry
		for _, n := range tc.names {
			entries = append(entries, appinfotest.Entry{Name: n, Data: []byte("x")})
		}
		if got := findIPAInfoPlist(appleOpenZip(t, appinfotest.BuildZip(entries...))); got != tc.want {
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
		var entries []appinfotest.Entry
		for _, n := range tc.names {
			entries = append(entries, appinfotest.Entry{Name: n, Data: []byte("x")})
		}
		if got := findMacAppInfoPlist(appleOpenZip(t, appinfotest.BuildZip(entries...))); got != tc.want {
			t.Errorf("findMacAppInfoPlist(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestSyntheticMacZip(t *testing.T) {
	data := appinfotest.BuildMacZip(appinfotest.MacZipOptions{
		Folder: "dist/", AppName: "Mac", DisplayName: "Mac App", BundleID: "com.example.mac",
		Version: "3.1", Build: "310", MinOS: "12.0", IconSizes: []int{16, 32, 512, 128}, LegacyIcon: true, MacOSXJunk: true,
		Profile: &appinfotest.ProfileOptions{Platform: "OSX", TeamName: "Mac Team", Devices: []string{"mac-udid"}},
	})
	info := appleMustParse(t, data)
	if info.Platform != MacOS || info.Format != FormatMacZip || info.Device != DeviceMac || info.Name != "Mac App" ||
		info.BundleID != "com.example.mac" || info.ReleaseVersion != "3.1" || info.BuildVersion != "310" || info.MinOS != "12.0" {
		t.Errorf("Parse = %+v", info)
	}
	if info.Profile == nil || info.Profile.TeamName != "Mac Team" || info.Profile.AppID != "TEAM123456.com.example.demo" {
		t.Errorf("Profile = %+v", info.Profile)
	}
	if info.ReleaseType != ReleaseRelease {
		t.Errorf("ReleaseType = %s, want release (macOS profile without get-task-allow)", info.ReleaseType)
	}
	appleCheckIcon(t, info.Icon, 512, 512)

	for _, tc := range []struct {
		name string
		o    appinfotest.MacZipOptions
		rt   string
		icon int
	}{
		{"no profile", appinfotest.MacZipOptions{IconSizes: []int{64}}, ReleaseDebug, 64},
		{"debuggable profile", appinfotest.MacZipOptions{Profile: &appinfotest.ProfileOptions{Platform: "OSX", GetTaskAllow: true}}, ReleaseDebug, 0},
		{"only a legacy icon", appinfotest.MacZipOptions{LegacyIcon: true}, ReleaseDebug, 0},
		{"icon file with extension", appinfotest.MacZipOptions{IconSizes: []int{256}, InfoPlist: map[string]any{"CFBundleIconFile": "AppIcon.icns"}}, ReleaseDebug, 256},
		{"icon declared but absent", appinfotest.MacZipOptions{InfoPlist: map[string]any{"CFBundleIconFile": "Missing"}}, ReleaseDebug, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := appleMustParse(t, appinfotest.BuildMacZip(tc.o))
			if info.ReleaseType != tc.rt {
				t.Errorf("ReleaseType = %s, want %s", info.ReleaseType, tc.rt)
			}
			appleCheckIcon(t, info.Icon, tc.icon, tc.icon)
		})
	}
}

func TestICNS(t *testing.T) {
	icon, err := icnsIcon(appinfotest.BuildICNS([]int{32, 256, 16}, true))
	if err != nil || icon == nil || icon.Width != 256 {
		t.Fatalf("icnsIcon = %+v, %v", icon, err)
	}
	if icon, err := icnsIcon(appinfotest.BuildICNS(nil, true)); err != nil || icon != nil {
		t.Errorf("legacy-only icns = %+v, %v; want nil, nil", icon, err)
	}
	if _, err := icnsIcon([]byte("not an icns")); err == nil {
		t.Error("icnsIcon accepted garbage")
	}
	// A bad entry length ends the walk without an error.
	bad := appinfotest.BuildICNS([]int{16}, false)
	bad = append(bad, "ic10\xff\xff\xff\xff"...)
	if icon, err := icnsIcon(bad); err != nil || icon == nil || icon.Width != 16 {
		t.Errorf("icns with a bad trailing entry = %+v, %v", icon, err)
	}
}

func TestSyntheticPKG(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    appinfotest.PKGOptions
		want Info
	}{
		{"product archive", appinfotest.PKGOptions{Distribution: true, Title: "My Tool", AppName: "Tool", BundleID: "com.example.tool", Version: "4.5", Build: "450", MinOS: "10.15"},
			Info{Name: "My Tool", BundleID: "com.example.tool", ReleaseVersion: "4.5", BuildVersion: "450", MinOS: "10.15"}},
		{"localized title", appinfotest.PKGOptions{Distribution: true, Title: "SU_TITLE", AppName: "Tool", BundleID: "com.example.tool"},
			Info{Name: "Tool", BundleID: "com.example.tool", ReleaseVersion: "1.0", BuildVersion: "1"}},
		{"uncompressed heap", appinfotest.PKGOptions{Distribution: true, Uncompressed: true, BundleID: "com.example.raw", Version: "2.0", Build: "20"},
			Info{Name: "Demo", BundleID: "com.example.raw", ReleaseVersion: "2.0", BuildVersion: "20"}},
		{"product archive without bundles", appinfotest.PKGOptions{Distribution: true, OmitBundle: true, BundleID: "com.example.nobundle", Version: "7.0"},
			Info{Name: "com.example.nobundle.pkg", BundleID: "com.example.nobundle.pkg", ReleaseVersion: "7.0", BuildVersion: "7.0"}},
		{"component package", appinfotest.PKGOptions{AppName: "Comp", BundleID: "com.example.comp", Version: "1.2", Build: "12"},
			Info{Name: "Comp", BundleID: "com.example.comp", ReleaseVersion: "1.2", BuildVersion: "12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := appleMustParse(t, appinfotest.BuildPKG(tc.o))
			tc.want.Platform, tc.want.Format, tc.want.Device = MacOS, FormatPKG, DeviceMac
			if !reflect.DeepEqual(*info, tc.want) {
				t.Errorf("Parse = %+v\nwant    %+v", *info, tc.want)
			}
		})
	}
}

func TestReleaseType(t *testing.T) {
	dev := &Profile{GetTaskAllow: true, Devices: []string{"a"}}
	adhoc := &Profile{Devices: []string{"a"}}
	ent := &Profile{AllDevices: true}
	store := &Profile{BetaReportsActive: true}
	for _, tc := range []struct {
		platform Platform
		appStore bool
		p        *Profile
		want     string
	}{
		{IOS, true, dev, ReleaseAppStore},
		{IOS, false, nil, ReleaseDebug},
		{IOS, false, dev, ReleaseDebug},
		{IOS, false, adhoc, ReleaseAdhoc},
		{IOS, false, ent, ReleaseEnterprise},
		{IOS, false, store, ReleaseAppStore},
		{IOS, false, &Profile{}, ReleaseAppStore},
		{MacOS, false, nil, ReleaseDebug},
		{MacOS, false, dev, ReleaseDebug},
		{MacOS, false, adhoc, ReleaseRelease},
		{MacOS, false, store, ReleaseRelease},
	} {
		if got := releaseType(tc.platform, tc.appStore, tc.p); got != tc.want {
			t.Errorf("releaseType(%s, %v, %+v) = %s, want %s", tc.platform, tc.appStore, tc.p, got, tc.want)
		}
	}
}

func TestSyntheticProfile(t *testing.T) {
	p, err := ParseProfile(appinfotest.BuildProfile(appinfotest.ProfileOptions{
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
		"garbage plist":   appinfotest.CMS([]byte("<?xml version=\"1.0\"?><plist><dict><key>a</dict></plist>")),
		"array root":      appinfotest.CMS([]byte("<?xml version=\"1.0\"?><plist><array/></plist>")),
		"empty dict":      appinfotest.CMS([]byte("<?xml version=\"1.0\"?><plist><dict/></plist>")),
		"no plist":        appinfotest.CMS([]byte("<?xml version=\"1.0\"?><html></html>")),
		"random":          bytes.Repeat([]byte{0x30, 0x82}, 100),
		"nested too deep": appinfotest.CMS([]byte("<?xml version=\"1.0\"?><plist>" + appleRepeat("<array>", 1000) + appleRepeat("</array>", 1000) + "</plist>")),
	} {
		if _, err := ParseProfile(data); !errs.Is(err, errs.Invalid) {
			t.Errorf("%s: ParseProfile error %v, want errs.Invalid", name, err)
		}
	}
}

func appleRepeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }
