package android_test

import (
	"archive/zip"
	"bytes"
	"image/png"
	"io"
	"os"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// androidWant is what the fixtures README lists for an Android package.
type androidWant struct {
	name, bundleID, release, build, minOS, target, device string
	iconType                                              string // "" for no icon
	iconSide                                              int
	iconEntry                                             string // the archive entry the icon must be
}

func TestAndroidFixtures(t *testing.T) {
	tests := []struct {
		file   string
		format appinfo.Format
		want   androidWant
	}{
		{"android/appinfodemo-2.1.0-10.apk", appinfo.FormatAPK, androidWant{
			"AppInfoDemo", "com.icyleaf.appinfodemo", "2.1.0", "10", "14", "31", appinfo.DevicePhone,
			"image/webp", 192, "res/xC.webp", // xxxhdpi; the anydpi-v26 res/uF.xml is skipped
		}},
		{"android/appinfodemo-2.1.0-10.aab", appinfo.FormatAAB, androidWant{
			"AppInfoDemo", "com.icyleaf.appinfodemo", "2.1.0", "10", "14", "31", appinfo.DevicePhone, // not the zh-CN "AppInfo演示"
			"image/webp", 192, "base/res/mipmap-xxxhdpi-v4/ic_launcher.webp",
		}},
		{"android/appinfoweardemo-wear-1.0-1.apk", appinfo.FormatAPK, androidWant{
			"AppInfoWearDemo", "com.icyleaf.appinfoweardemo", "1.0", "1", "21", "23", appinfo.DeviceWatch,
			"image/png", 144, "res/mipmap-xxhdpi-v4/ic_launcher.png",
		}},
		{"android/politedroid-1.3-4.apk", appinfo.FormatAPK, androidWant{
			"Polite Droid", "com.politedroid", "1.3", "4", "3", "", appinfo.DevicePhone, // no targetSdkVersion
			"image/png", 96, "res/drawable-xhdpi/icon.png",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := fixtures.Read(t, tt.file)
			info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if info.Platform != appinfo.Android || info.Format != tt.format {
				t.Errorf("platform/format = %s/%s, want android/%s", info.Platform, info.Format, tt.format)
			}
			checkAndroid(t, info, tt.want)
			if info.Icon == nil {
				return
			}
			if want := zipEntry(t, data, tt.want.iconEntry); !bytes.Equal(info.Icon.Data, want) {
				t.Errorf("icon is not %s", tt.want.iconEntry)
			}
			if info.Icon.ContentType == "image/png" {
				cfg, err := png.DecodeConfig(bytes.NewReader(info.Icon.Data))
				if err != nil || cfg.Width != info.Icon.Width || cfg.Height != info.Icon.Height {
					t.Errorf("image/png reads the icon as %dx%d (%v), the parser as %dx%d", cfg.Width, cfg.Height, err, info.Icon.Width, info.Icon.Height)
				}
			}
		})
	}
}

// checkAndroid compares every field of info with want.
func checkAndroid(t *testing.T, info *appinfo.Info, want androidWant) {
	t.Helper()
	for _, f := range []struct{ field, got, want string }{
		{"Name", info.Name, want.name},
		{"BundleID", info.BundleID, want.bundleID},
		{"ReleaseVersion", info.ReleaseVersion, want.release},
		{"BuildVersion", info.BuildVersion, want.build},
		{"MinOS", info.MinOS, want.minOS},
		{"TargetSDK", info.TargetSDK, want.target},
		{"Device", info.Device, want.device},
		{"ReleaseType", info.ReleaseType, ""},
	} {
		if f.got != f.want {
			t.Errorf("%s = %q, want %q", f.field, f.got, f.want)
		}
	}
	if info.AppStore || info.Profile != nil {
		t.Errorf("Android package with Apple fields: AppStore %v, Profile %v", info.AppStore, info.Profile)
	}
	switch {
	case want.iconType == "" && info.Icon != nil:
		t.Errorf("icon %s %dx%d, want none", info.Icon.ContentType, info.Icon.Width, info.Icon.Height)
	case want.iconType == "":
	case info.Icon == nil:
		t.Errorf("no icon, want %s %dx%d", want.iconType, want.iconSide, want.iconSide)
	case info.Icon.ContentType != want.iconType || info.Icon.Width != want.iconSide || info.Icon.Height != want.iconSide:
		t.Errorf("icon %s %dx%d, want %s %dx%d", info.Icon.ContentType, info.Icon.Width, info.Icon.Height, want.iconType, want.iconSide, want.iconSide)
	}
}

// TestAndroidHostileAXMLFixtures feeds the bare obfuscated manifests of android/axml, wrapped in
// synthetic APKs with no resources.arsc and with an unrelated one.
func TestAndroidHostileAXMLFixtures(t *testing.T) {
	tests := []struct {
		file string
		want androidWant
	}{
		// versionName (and label, minSdkVersion...) have empty names: found by resource id.
		// minSdk/targetSdk and the literal label are from the .expected.xml beside it.
		{"android/axml/98d2e837b8f3.AndroidManifest.bin", androidWant{
			"Секс Видео", "name.tbx.erndy", "1.3", "4", "4", "19", appinfo.DevicePhone, "", 0, "",
		}},
		// package carries resource id 0x01010024 and the document type is zeroed; the label is
		// a reference with no table to resolve it, so the name falls back to the package.
		{"android/axml/a3ee88cf1492.AndroidManifest.bin", androidWant{
			"com.zgeGdx510.sucrurg", "com.zgeGdx510.sucrurg", "3.7.705", "98", "8", "19", appinfo.DevicePhone, "", 0, "",
		}},
	}
	for _, tt := range tests {
		manifest := fixtures.Read(t, tt.file)
		for _, opt := range []androidtest.APKOptions{
			{Manifest: manifest, NoResources: true},
			{Manifest: manifest, AndroidManifest: androidtest.AndroidManifest{LabelStrings: map[string]string{"": "Unrelated"}}},
		} {
			t.Run(tt.file, func(t *testing.T) {
				apk := androidtest.BuildAPK(opt)
				info, err := appinfo.Parse(bytes.NewReader(apk), int64(len(apk)))
				if err != nil {
					t.Fatal(err)
				}
				checkAndroid(t, info, tt.want)
			})
		}
	}
}

// zipEntry returns the content of entry name of the zip archive data.
func zipEntry(t testing.TB, data []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readZipEntry is zipEntry for fuzz seeds: nil when anything fails.
func readZipEntry(path, name string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil
	}
	rc, err := zr.Open(name)
	if err != nil {
		return nil
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b
}
