package android_test

import (
	"bytes"
	"testing"

	ab "github.com/shogo82148/androidbinary"
	"github.com/shogo82148/androidbinary/apk"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
)

// androidBuild builds the manifest as an APK or an AAB with default builder options.
func androidBuild(format appinfo.Format, m androidtest.AndroidManifest) []byte {
	if format == appinfo.FormatAAB {
		return androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: m})
	}
	return androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m})
}

func parseBytes(t *testing.T, b []byte) (*appinfo.Info, error) {
	t.Helper()
	return appinfo.Parse(bytes.NewReader(b), int64(len(b)))
}

func mustParse(t *testing.T, b []byte) *appinfo.Info {
	t.Helper()
	info, err := parseBytes(t, b)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

var (
	png48   = androidtest.AndroidPNG(48, 48)
	png192  = androidtest.AndroidPNG(192, 192)
	webp144 = androidtest.AndroidWebPHead(144, 144)
)

// fullManifest declares everything the parsers read; icons in four densities, one adaptive XML.
var fullManifest = androidtest.AndroidManifest{
	Package: "com.example.app", VersionCode: 42, VersionName: "1.2.3", MinSDK: 21, TargetSDK: 34,
	LabelStrings: map[string]string{"": "Example", "zh-CN": "例子", "en": "Example (en)"},
	Icons: []androidtest.AndroidIcon{
		{Density: 160, Path: "res/mipmap-mdpi-v4/ic_launcher.png", Data: png48},
		{Density: 0xfffe, Path: "res/mipmap-anydpi-v26/ic_launcher.xml", Data: []byte("\x03\x00\x08\x00")},
		{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.png", Data: png192},
		{Density: 480, Path: "res/mipmap-xxhdpi-v4/ic_launcher.webp", Data: webp144},
	},
}

func TestAndroidSynthetic(t *testing.T) {
	want := androidWant{"Example", "com.example.app", "1.2.3", "42", "21", "34", appinfo.DevicePhone, "image/png", 192, ""}
	for _, format := range []appinfo.Format{appinfo.FormatAPK, appinfo.FormatAAB} {
		t.Run(string(format), func(t *testing.T) {
			info := mustParse(t, androidBuild(format, fullManifest))
			if info.Platform != appinfo.Android || info.Format != format {
				t.Errorf("platform/format = %s/%s", info.Platform, info.Format)
			}
			checkAndroid(t, info, want)
			if !bytes.Equal(info.Icon.Data, png192) {
				t.Error("icon is not the xxxhdpi PNG")
			}
		})
	}
	// The APK encodings a build tool may choose: UTF-8 pools, sparse type chunks.
	for _, o := range []androidtest.APKOptions{{UTF8: true}, {SparseResources: true}, {UTF8: true, SparseResources: true}} {
		o.AndroidManifest = fullManifest
		checkAndroid(t, mustParse(t, androidtest.BuildAPK(o)), want)
	}
}

func TestAndroidFieldVariants(t *testing.T) {
	base := androidtest.AndroidManifest{Package: "org.example", VersionCode: 7, VersionName: "0.7", MinSDK: 9}
	tests := []struct {
		name   string
		change func(m *androidtest.AndroidManifest)
		check  func(t *testing.T, info *appinfo.Info)
	}{
		{"no target SDK, no label", nil, func(t *testing.T, info *appinfo.Info) {
			if info.TargetSDK != "" || info.Name != "org.example" || info.Icon != nil {
				t.Errorf("TargetSDK %q, Name %q, Icon %v", info.TargetSDK, info.Name, info.Icon)
			}
		}},
		{"literal label", func(m *androidtest.AndroidManifest) { m.Label = "  Literal\tLabel\x00 " }, func(t *testing.T, info *appinfo.Info) {
			if info.Name != "Literal Label" {
				t.Errorf("Name %q", info.Name)
			}
		}},
		{"only a localized label", func(m *androidtest.AndroidManifest) {
			m.LabelStrings = map[string]string{"fr": "Exemple", "en": "Example"}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Name != "Example" {
				t.Errorf("Name %q, want the English value when no default exists", info.Name)
			}
		}},
		{"no version", func(m *androidtest.AndroidManifest) { m.VersionCode, m.VersionName, m.MinSDK = 0, "", 0 }, func(t *testing.T, info *appinfo.Info) {
			if info.BuildVersion != "" || info.ReleaseVersion != "" || info.MinOS != "" {
				t.Errorf("versions %q %q %q", info.BuildVersion, info.ReleaseVersion, info.MinOS)
			}
		}},
		{"adaptive icon only", func(m *androidtest.AndroidManifest) {
			m.Icons = []androidtest.AndroidIcon{{Density: 0xfffe, Path: "res/ic.xml", Data: []byte("<x/>")}}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Icon != nil {
				t.Errorf("icon %+v from an XML-only icon", info.Icon.ContentType)
			}
		}},
		{"icon files missing or not images", func(m *androidtest.AndroidManifest) {
			m.Icons = []androidtest.AndroidIcon{
				{Density: 640, Path: "res/missing.png"},
				{Density: 480, Path: "res/text.png", Data: []byte("not a png at all, just text")},
				{Density: 320, Path: "res/ok.webp", Data: webp144},
			}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Icon == nil || info.Icon.ContentType != "image/webp" || info.Icon.Width != 144 {
				t.Errorf("icon %+v, want the 144px WebP", info.Icon)
			}
		}},
		{"largest by pixels, not density", func(m *androidtest.AndroidManifest) {
			m.Icons = []androidtest.AndroidIcon{
				{Density: 640, Path: "res/a.png", Data: png48},
				{Density: 160, Path: "res/b.png", Data: png192},
			}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Icon == nil || info.Icon.Width != 192 {
				t.Errorf("icon %+v, want 192px", info.Icon)
			}
		}},
		{"icon over MaxIconBytes is skipped", func(m *androidtest.AndroidManifest) {
			huge := append(androidtest.AndroidPNG(512, 512), make([]byte, appinfo.MaxIconBytes)...)
			m.Icons = []androidtest.AndroidIcon{
				{Density: 640, Path: "res/huge.png", Data: huge},
				{Density: 160, Path: "res/small.png", Data: png48},
			}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Icon == nil || info.Icon.Width != 48 {
				t.Errorf("icon %+v, want the 48px one", info.Icon)
			}
		}},
		{"absurd icon size is skipped", func(m *androidtest.AndroidManifest) {
			m.Icons = []androidtest.AndroidIcon{
				{Density: 640, Path: "res/big.webp", Data: androidtest.AndroidWebPHead(1<<20, 1<<20)},
				{Density: 160, Path: "res/small.png", Data: png48},
			}
		}, func(t *testing.T, info *appinfo.Info) {
			if info.Icon == nil || info.Icon.Width != 48 {
				t.Errorf("icon %+v, want the 48px one", info.Icon)
			}
		}},
	}
	for _, tt := range tests {
		for _, format := range []appinfo.Format{appinfo.FormatAPK, appinfo.FormatAAB} {
			t.Run(tt.name+"/"+string(format), func(t *testing.T) {
				m := base
				if tt.change != nil {
					tt.change(&m)
				}
				info := mustParse(t, androidBuild(format, m))
				if info.BundleID != "org.example" {
					t.Errorf("BundleID %q", info.BundleID)
				}
				tt.check(t, info)
			})
		}
	}
}

func TestAndroidDevice(t *testing.T) {
	tests := []struct {
		features []string
		want     string
	}{
		{nil, appinfo.DevicePhone},
		{[]string{"android.hardware.bluetooth", "android.hardware.camera"}, appinfo.DevicePhone},
		{[]string{"android.hardware.type.watch"}, appinfo.DeviceWatch},
		{[]string{"android.software.leanback"}, appinfo.DeviceTV},
		{[]string{"android.hardware.type.television"}, appinfo.DeviceTV},
		{[]string{"android.hardware.type.automotive"}, appinfo.DeviceAutomotive},
		{[]string{"android.hardware.type.automotive", "android.software.leanback", "android.hardware.type.watch"}, appinfo.DeviceWatch},
		{[]string{"android.hardware.type.automotive", "android.software.leanback"}, appinfo.DeviceTV},
	}
	for _, tt := range tests {
		for _, format := range []appinfo.Format{appinfo.FormatAPK, appinfo.FormatAAB} {
			info := mustParse(t, androidBuild(format, androidtest.AndroidManifest{Package: "a.b", Features: tt.features}))
			if info.Device != tt.want {
				t.Errorf("%s %v: device %q, want %q", format, tt.features, info.Device, tt.want)
			}
		}
	}
}

// TestAABTextValues reads attributes that carry only their source text, no compiled item: plain
// values are used, uncompiled references ("@string/app_name") are not taken for the label.
func TestAABTextValues(t *testing.T) {
	b := androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: fullManifest, TextValuesOnly: true})
	info := mustParse(t, b)
	want := androidWant{"com.example.app", "com.example.app", "1.2.3", "42", "21", "34", appinfo.DevicePhone, "", 0, ""}
	checkAndroid(t, info, want)
}

// TestAPKBuilderMatchesAndroidbinary checks the synthetic APK encoder against an independent
// decoder: androidbinary reads the same manifest and label.
func TestAPKBuilderMatchesAndroidbinary(t *testing.T) {
	for _, utf8 := range []bool{false, true} {
		o := androidtest.APKOptions{AndroidManifest: fullManifest, UTF8: utf8}
		x, err := ab.NewXMLFile(bytes.NewReader(androidtest.BuildAXML(o)))
		if err != nil {
			t.Fatal(err)
		}
		table, err := ab.NewTableFile(bytes.NewReader(androidtest.BuildARSC(o)))
		if err != nil {
			t.Fatal(err)
		}
		var m apk.Manifest
		if err := x.Decode(&m, table, &ab.ResTableConfig{}); err != nil {
			t.Fatal(err)
		}
		pkg, _ := m.Package.String()
		name, _ := m.VersionName.String()
		code, _ := m.VersionCode.Int32()
		minSDK, _ := m.SDK.Min.Int32()
		label, err := m.App.Label.String()
		if pkg != "com.example.app" || name != "1.2.3" || code != 42 || minSDK != 21 || label != "Example" || err != nil {
			t.Errorf("androidbinary reads %q %q %d %d %q (%v)", pkg, name, code, minSDK, label, err)
		}
	}
}

func TestAndroidRasterSize(t *testing.T) {
	vp8 := []byte("RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00\x10\x02\x00\x9d\x01\x2a\x40\x00\x30\x00")
	vp8l := []byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f\x3f\xc0\x0b\x00\x00\x00\x00\x00\x00")
	tests := []struct {
		b     []byte
		ctype string
		w, h  int
	}{
		{png48, "image/png", 48, 48},
		{androidtest.AndroidWebPHead(300, 200), "image/webp", 300, 200},
		{vp8, "image/webp", 64, 48},
		{vp8l, "image/webp", 64, 48},
		{[]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x04CgBI\x50\x00\x20\x02"), "", 0, 0}, // Apple CgBI first
		{[]byte("RIFF\x00\x00\x00\x00WEBPVP8 \x00\x00\x00\x00\x10\x02\x00\x00\x00\x00\x40\x00\x30\x00"), "", 0, 0},
		{[]byte("GIF89a"), "", 0, 0},
	}
	for i, tt := range tests {
		ctype, w, h, ok := android.AndroidRasterSize(tt.b)
		if ctype != tt.ctype || w != tt.w || h != tt.h || ok != (tt.ctype != "") {
			t.Errorf("%d: %q %dx%d %v, want %q %dx%d", i, ctype, w, h, ok, tt.ctype, tt.w, tt.h)
		}
	}
}
