package harmony_test

import (
	"archive/zip"
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"reflect"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// parse runs appinfo.Parse, the registered path, over b.
func parse(t testing.TB, b []byte) (*appinfo.Info, error) {
	t.Helper()
	return appinfo.Parse(bytes.NewReader(b), int64(len(b)))
}

func mustParse(t testing.TB, b []byte) *appinfo.Info {
	t.Helper()
	info, err := parse(t, b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return info
}

// zipEntry returns the content of one entry of the zip b.
func zipEntry(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFixtures checks every value the fixtures README lists (verified with app-info), and the
// label the fixture's resources.index holds (app_name = "MyApplication" in base).
func TestFixtures(t *testing.T) {
	hapBytes := fixtures.Read(t, "other/harmony-myapplication-1.0.0.hap")
	appBytes := fixtures.Read(t, "other/harmony-myapplication-1.0.0.app")
	if len(hapBytes) != 142283 || len(appBytes) != 122621 {
		t.Fatalf("fixture sizes %d, %d; want 142283, 122621", len(hapBytes), len(appBytes))
	}
	tests := []struct {
		name      string
		data      []byte
		format    appinfo.Format
		icon      []byte
		debug     bool
		entryHAP  string
		buildFrom string
	}{
		{"hap", hapBytes, appinfo.FormatHAP, zipEntry(t, hapBytes, "resources/base/media/app_icon.png"), true, "", ""},
		{"app", appBytes, appinfo.FormatHarmonyApp, zipEntry(t, zipEntry(t, appBytes, "entry-default.hap"), "resources/base/media/app_icon.png"), false, "entry-default.hap", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := mustParse(t, tt.data)
			check := func(field, got, want string) {
				t.Helper()
				if got != want {
					t.Errorf("%s = %q, want %q", field, got, want)
				}
			}
			check("Platform", string(info.Platform), "harmonyos")
			check("Format", string(info.Format), string(tt.format))
			check("BundleID", info.BundleID, "com.example.myapplication")
			check("Name", info.Name, "MyApplication")
			check("ReleaseVersion", info.ReleaseVersion, "1.0.0")
			check("BuildVersion", info.BuildVersion, "1000000")
			check("MinOS", info.MinOS, "5.0.0(12)") // minAPIVersion 50000012
			check("TargetSDK", info.TargetSDK, "5.0.0(12)")
			check("Device", info.Device, "phone,tablet,2in1")
			check("Publisher", info.Publisher, "example")
			check("Description", info.Description, "")
			check("APIReleaseType", info.Properties["APIReleaseType"], "Beta1")
			check("CompileSdkVersion", info.Properties["CompileSdkVersion"], "5.0.0.25")
			check("Module", info.Properties["Module"], "entry")
			check("EntryHAP", info.Properties["EntryHAP"], tt.entryHAP)
			if info.Debuggable != tt.debug {
				t.Errorf("Debuggable = %v, want %v", info.Debuggable, tt.debug)
			}
			if len(info.Permissions) != 0 || len(info.Architectures) != 0 {
				t.Errorf("Permissions %v, Architectures %v; want none", info.Permissions, info.Architectures)
			}
			ic := info.Icon
			if ic == nil {
				t.Fatal("no icon")
			}
			if ic.ContentType != "image/png" || ic.Width != 41 || ic.Height != 41 || !bytes.Equal(ic.Data, tt.icon) {
				t.Errorf("icon %s %dx%d (%d bytes), want resources/base/media/app_icon.png, 41x41 PNG", ic.ContentType, ic.Width, ic.Height, len(ic.Data))
			}
		})
	}
}

// TestRegistration: the family registers, and appinfo.Parse hands it both formats.
func TestRegistration(t *testing.T) {
	if !slices.Contains(appinfo.Families(), "harmony") {
		t.Fatalf("families %v lack harmony", appinfo.Families())
	}
	for _, tt := range []struct {
		data   []byte
		format appinfo.Format
	}{
		{harmonytest.BuildHAP(harmonytest.HAPOptions{}), appinfo.FormatHAP},
		{harmonytest.BuildApp(harmonytest.AppOptions{}), appinfo.FormatHarmonyApp},
	} {
		info := mustParse(t, tt.data)
		if info.Platform != appinfo.HarmonyOS || info.Format != tt.format || info.BundleID != "com.example.demo" {
			t.Errorf("Parse = %s %s %q, want harmonyos %s com.example.demo", info.Platform, info.Format, info.BundleID, tt.format)
		}
	}
}

// TestClaim: the directory decides, nothing else is read.
func TestClaim(t *testing.T) {
	e := func(names ...string) []byte {
		var entries []harmonytest.Entry
		for _, n := range names {
			entries = append(entries, harmonytest.Entry{Name: n, Data: []byte("x")})
		}
		return harmonytest.BuildZip(entries...)
	}
	tests := []struct {
		name string
		zip  []byte
		want string
	}{
		{"hap with pack.info", e("module.json", "pack.info"), "hap"},
		{"hap with resources.index", e("module.json", "resources.index"), "hap"},
		{"app", e("pack.info", "entry-default.hap"), "app"},
		{"app, hap in a folder", e("pack.info", "x/feature.HAP"), "app"},
		{"module.json alone", e("module.json"), ""},
		{"pack.info alone", e("pack.info", "entry.hsp"), ""},
		{"hap without pack.info", e("entry-default.hap"), ""},
		{"apk", e("AndroidManifest.xml", "classes.dex"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := zipread.Open(bytes.NewReader(tt.zip), int64(len(tt.zip)))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			switch p := reflect.ValueOf(harmony.Claim(a)); {
			case p.IsNil():
			case p.Pointer() == reflect.ValueOf(harmony.ParseHAP).Pointer():
				got = "hap"
			case p.Pointer() == reflect.ValueOf(harmony.ParseApp).Pointer():
				got = "app"
			}
			if got != tt.want {
				t.Errorf("claim = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSynthetic covers the builders' options: both index layouts, lookups by id and by name,
// localized labels, densities, layered icons, fallbacks without an index.
func TestSynthetic(t *testing.T) {
	tests := []struct {
		name    string
		o       harmonytest.HAPOptions
		check   func(t *testing.T, info *appinfo.Info)
		iconW   int
		iconRGB [3]uint8 // the colour at the icon's (1,1)
	}{
		{name: "defaults, V1 index", o: harmonytest.HAPOptions{}, iconW: 64, iconRGB: [3]uint8{200, 40, 40},
			check: func(t *testing.T, info *appinfo.Info) {
				want := appinfo.Info{Platform: appinfo.HarmonyOS, Format: appinfo.FormatHAP, Name: "Demo", BundleID: "com.example.demo",
					ReleaseVersion: "1.0.0", BuildVersion: "1000000", MinOS: "5.0.0(12)", TargetSDK: "5.0.0(12)", Device: "phone,tablet", Publisher: "example"}
				got := *info
				got.Icon, got.Properties = nil, nil
				if !equalInfo(got, want) {
					t.Errorf("info = %+v\nwant %+v", got, want)
				}
			}},
		{name: "V2 index", o: harmonytest.HAPOptions{IndexV2: true, Label: "Zwei"}, iconW: 64, iconRGB: [3]uint8{200, 40, 40},
			check: wantName("Zwei")},
		{name: "by name, V1", o: harmonytest.HAPOptions{ByName: true, Label: "Named"}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Named")},
		{name: "by name, V2", o: harmonytest.HAPOptions{ByName: true, IndexV2: true, Label: "Named2"}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Named2")},
		{name: "base label wins over languages", o: harmonytest.HAPOptions{Label: "Base", Labels: map[string]string{"zh": "基础", "de": "Basis"}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Base")},
		{name: "English when base is empty", o: harmonytest.HAPOptions{Label: " ", Labels: map[string]string{"zh": "演示", "en": "English"}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("English")},
		{name: "highest density icon", o: harmonytest.HAPOptions{IconSize: 48, IconDensities: map[uint32]int{320: 96, 640: 192, 240: 72}}, iconW: 192, iconRGB: [3]uint8{40, 200, 40}},
		{name: "layered icon composed", o: harmonytest.HAPOptions{Layered: true, IconSize: 32}, iconW: 32, iconRGB: [3]uint8{20, 20, 220},
			check: func(t *testing.T, info *appinfo.Info) {
				img, err := png.Decode(bytes.NewReader(info.Icon.Data))
				if err != nil {
					t.Fatal(err)
				}
				if r, g, b, _ := img.At(16, 16).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 {
					t.Errorf("centre of the layered icon is %d,%d,%d, want the white foreground", r>>8, g>>8, b>>8)
				}
			}},
		{name: "layered icon, V2", o: harmonytest.HAPOptions{Layered: true, IndexV2: true, IconSize: 32}, iconW: 32, iconRGB: [3]uint8{20, 20, 220}},
		{name: "no index: bundle name and app_icon.png", o: harmonytest.HAPOptions{NoIndex: true}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("com.example.demo")},
		{name: "no icon at all", o: harmonytest.HAPOptions{IconSize: -1}},
		{name: "literal label", o: harmonytest.HAPOptions{App: map[string]any{"label": "Plain Text", "labelId": nil}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Plain Text")},
		{name: "label id without a reference", o: harmonytest.HAPOptions{App: map[string]any{"label": nil}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Demo")},
		{name: "label id of a media resource", o: harmonytest.HAPOptions{App: map[string]any{"label": nil, "labelId": harmonytest.IDAppIcon}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Demo Ability")},
		{name: "label reference by number", o: harmonytest.HAPOptions{App: map[string]any{"label": "$string:16777216", "labelId": nil}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Demo")},
		{name: "icon reference by number", o: harmonytest.HAPOptions{App: map[string]any{"icon": "$media:16777217", "iconId": nil}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}},
		{name: "ability label when the app has none", o: harmonytest.HAPOptions{App: map[string]any{"label": nil, "labelId": nil}}, iconW: 64, iconRGB: [3]uint8{200, 40, 40}, check: wantName("Demo Ability")},
		{name: "ability icon when the app has none", o: harmonytest.HAPOptions{App: map[string]any{"icon": nil, "iconId": nil}, IconSize: 20}, iconW: 20, iconRGB: [3]uint8{20, 20, 220}},
		{name: "identity from pack.info", o: harmonytest.HAPOptions{App: map[string]any{"bundleName": nil, "versionName": nil, "versionCode": nil}, BundleName: "com.example.pack", VersionName: "2.0", VersionCode: 7},
			iconW: 64, iconRGB: [3]uint8{200, 40, 40},
			check: func(t *testing.T, info *appinfo.Info) {
				if info.BundleID != "com.example.pack" || info.ReleaseVersion != "2.0" || info.BuildVersion != "7" {
					t.Errorf("identity %q %q %q", info.BundleID, info.ReleaseVersion, info.BuildVersion)
				}
			}},
		{name: "everything else", o: harmonytest.HAPOptions{Debug: true, Vendor: "Acme", DeviceTypes: []string{"wearable", "wearable", "tv"}, Description: "Does things",
			Permissions: []string{"ohos.permission.INTERNET", "ohos.permission.CAMERA"}, Architectures: []string{"x86_64", "arm64-v8a"},
			MinAPIVersion: 50100018, TargetAPIVersion: 12},
			iconW: 64, iconRGB: [3]uint8{200, 40, 40},
			check: func(t *testing.T, info *appinfo.Info) {
				if !info.Debuggable || info.Publisher != "Acme" || info.Device != "wearable,tv" || info.Description != "Does things" ||
					!slices.Equal(info.Permissions, []string{"ohos.permission.INTERNET", "ohos.permission.CAMERA"}) ||
					!slices.Equal(info.Architectures, []string{"arm64-v8a", "x86_64"}) || info.MinOS != "5.1.0(18)" || info.TargetSDK != "12" {
					t.Errorf("info = %+v", info)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, app := range []bool{false, true} {
				data := harmonytest.BuildHAP(tt.o)
				if app {
					data = harmonytest.BuildApp(harmonytest.AppOptions{HAP: tt.o})
				}
				info := mustParse(t, data)
				if tt.check != nil {
					if app {
						info.Format = appinfo.FormatHAP // the checks are written for the HAP
					}
					tt.check(t, info)
				}
				checkIcon(t, info.Icon, tt.iconW, tt.iconRGB)
			}
		})
	}
}

func wantName(name string) func(*testing.T, *appinfo.Info) {
	return func(t *testing.T, info *appinfo.Info) {
		t.Helper()
		if info.Name != name {
			t.Errorf("Name = %q, want %q", info.Name, name)
		}
	}
}

func equalInfo(a, b appinfo.Info) bool {
	return a.Platform == b.Platform && a.Format == b.Format && a.Name == b.Name && a.BundleID == b.BundleID &&
		a.ReleaseVersion == b.ReleaseVersion && a.BuildVersion == b.BuildVersion && a.MinOS == b.MinOS &&
		a.TargetSDK == b.TargetSDK && a.Device == b.Device && a.Publisher == b.Publisher && a.Debuggable == b.Debuggable &&
		a.Description == b.Description && len(a.Permissions) == len(b.Permissions) && len(a.Architectures) == len(b.Architectures)
}

// checkIcon checks an icon's size and the colour of its pixel (1,1); w 0 wants no icon.
func checkIcon(t *testing.T, ic *appinfo.Icon, w int, rgb [3]uint8) {
	t.Helper()
	if w == 0 {
		if ic != nil {
			t.Errorf("icon %dx%d, want none", ic.Width, ic.Height)
		}
		return
	}
	if ic == nil {
		t.Fatalf("no icon, want %dx%d", w, w)
	}
	img, err := png.Decode(bytes.NewReader(ic.Data))
	if err != nil {
		t.Fatal(err)
	}
	r, g, b, _ := img.At(1, 1).RGBA()
	if ic.ContentType != "image/png" || ic.Width != w || ic.Height != w || img.Bounds().Dx() != w ||
		[3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)} != rgb {
		t.Errorf("icon %s %dx%d colour %d,%d,%d; want %dx%d colour %v", ic.ContentType, ic.Width, ic.Height, r>>8, g>>8, b>>8, w, w, rgb)
	}
}

// TestAppDeflatedHAP: a small deflated entry HAP is inflated and parsed; the stored one is read
// in place (the default).
func TestAppDeflatedHAP(t *testing.T) {
	info := mustParse(t, harmonytest.BuildApp(harmonytest.AppOptions{DeflateHAP: true, HAP: harmonytest.HAPOptions{Label: "Squeezed"}}))
	if info.Name != "Squeezed" || info.Format != appinfo.FormatHarmonyApp {
		t.Errorf("info = %+v", info)
	}
}

// TestAppEntrySelection: the entry module pack.info names, else the only HAP.
func TestAppEntrySelection(t *testing.T) {
	feature := harmonytest.BuildHAP(harmonytest.HAPOptions{ModuleName: "feature", ModuleType: "feature", Label: "Feature"})
	pack := `{"summary":{"app":{"bundleName":"com.example.demo","version":{"code":3,"name":"3.0"}}},
		"packages":[{"name":"feature-default","moduleType":"feature","deliveryWithInstall":true},
		{"name":"phone-entry","moduleType":"entry","deliveryWithInstall":false}]}`
	data := harmonytest.BuildApp(harmonytest.AppOptions{EntryName: "phone-entry", RawPackInfo: []byte(pack),
		Extra: []harmonytest.Entry{{Name: "feature-default.hap", Data: feature}}})
	info := mustParse(t, data)
	if info.Name != "Demo" || info.Properties["EntryHAP"] != "phone-entry.hap" || info.ReleaseVersion != "3.0" || info.BuildVersion != "3" {
		t.Errorf("info = %+v", info)
	}
	// pack.info naming no entry: the only HAP is taken.
	data = harmonytest.BuildApp(harmonytest.AppOptions{RawPackInfo: []byte(`{"summary":{"app":{}}}`)})
	if info := mustParse(t, data); info.Name != "Demo" {
		t.Errorf("info = %+v", info)
	}
}

// TestErrorsAreInvalid spot-checks that refusals carry errs.Invalid (the hostile tests cover more).
func TestErrorsAreInvalid(t *testing.T) {
	_, err := parse(t, harmonytest.BuildHAP(harmonytest.HAPOptions{RawModuleJSON: []byte("[]")}))
	if !errs.Is(err, errs.Invalid) {
		t.Fatalf("err = %v", err)
	}
}

// TestIconFormats: a JPEG icon is re-encoded as PNG, a WebP one kept, anything else skipped.
func TestIconFormats(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 24, 16))
	var jpg bytes.Buffer
	if err := jpeg.Encode(&jpg, img, nil); err != nil {
		t.Fatal(err)
	}
	// A VP8X header: canvas 33×17 (stored minus one, 24-bit little-endian).
	webp := append([]byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00"), 32, 0, 0, 16, 0, 0)
	tests := []struct {
		name  string
		data  []byte
		ctype string
		w, h  int
	}{
		{"jpeg", jpg.Bytes(), "image/png", 24, 16},
		{"webp", webp, "image/webp", 33, 17},
		{"svg", []byte("<svg xmlns='http://www.w3.org/2000/svg'/>"), "", 0, 0},
		{"truncated png", harmonytest.PNG(1, 1, color.NRGBA{})[:16], "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := mustParse(t, harmonytest.BuildHAP(harmonytest.HAPOptions{IconSize: -1,
				Extra: []harmonytest.Entry{{Name: "resources/base/media/app_icon.png", Data: tt.data}}}))
			ic := info.Icon
			switch {
			case tt.ctype == "" && ic != nil:
				t.Errorf("icon %s, want none", ic.ContentType)
			case tt.ctype != "" && (ic == nil || ic.ContentType != tt.ctype || ic.Width != tt.w || ic.Height != tt.h):
				t.Errorf("icon %+v, want %s %dx%d", ic, tt.ctype, tt.w, tt.h)
			}
		})
	}
}
