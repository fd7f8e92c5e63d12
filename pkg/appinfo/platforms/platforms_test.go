package platforms_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/platforms"
	"github.com/slipwayhq/slipway/pkg/errs"
)

func parse(t *testing.T, data []byte) (*appinfo.Info, error) {
	t.Helper()
	return appinfo.Parse(bytes.NewReader(data), int64(len(data)))
}

// TestOrder checks the claim order the package doc lists.
func TestOrder(t *testing.T) {
	want := []string{"android", "apple", "harmony", "linux", "windows", "windows-exe-zip"}
	if got := appinfo.Families(); !slices.Equal(got, want) {
		t.Fatalf("families %q, want %q (update the package doc and this test together)", got, want)
	}
}

// TestEveryAppleAndAndroidFormat parses one package of each format through the registry.
func TestEveryAppleAndAndroidFormat(t *testing.T) {
	dmg := make([]byte, 4096)
	copy(dmg[len(dmg)-512:], "koly")
	for _, tc := range []struct {
		name string
		data []byte
		want appinfo.Format
	}{
		{"ipa", appletest.BuildIPA(appletest.IPAOptions{}), appinfo.FormatIPA},
		{"macOS zip", appletest.BuildMacZip(appletest.MacZipOptions{}), appinfo.FormatMacZip},
		{"pkg", appletest.BuildPKG(appletest.PKGOptions{Distribution: true}), appinfo.FormatPKG},
		{"dmg", dmg, appinfo.FormatDMG},
		{"apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.a", VersionCode: 1}}), appinfo.FormatAPK},
		{"aab", androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.a", VersionCode: 1}}), appinfo.FormatAAB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := parse(t, tc.data)
			if err != nil || info.Format != tc.want {
				t.Fatalf("Parse = %+v, %v; want format %s", info, err, tc.want)
			}
		})
	}
}

// TestOverlappingClaims: where two families would both claim a zip, the order decides.
func TestOverlappingClaims(t *testing.T) {
	// An APK that also holds an iOS bundle's Info.plist is an APK (Android claims first).
	apk := androidtest.BuildAPK(androidtest.APKOptions{
		AndroidManifest: androidtest.AndroidManifest{Package: "com.example.both", VersionCode: 1},
		Entries:         []androidtest.AndroidEntry{{Name: "Payload/Demo.app/Info.plist", Data: []byte("<plist/>")}},
	})
	if info, err := parse(t, apk); err != nil || info.Format != appinfo.FormatAPK || info.BundleID != "com.example.both" {
		t.Errorf("APK with a Payload/: Parse = %+v, %v", info, err)
	}
	// An .ipa that holds an .exe is an .ipa: the .exe-in-zip family is a fallback.
	ipa := appletest.BuildIPA(appletest.IPAOptions{Extra: []appletest.Entry{{Name: "setup.exe", Data: []byte("MZ")}}})
	if info, err := parse(t, ipa); err != nil || info.Format != appinfo.FormatIPA {
		t.Errorf("IPA with an .exe: Parse = %+v, %v", info, err)
	}
}

// TestNotAPackage: the error for an unrecognised file says what every family reads, in the
// uploader's words.
func TestNotAPackage(t *testing.T) {
	_, err := parse(t, []byte("these are release notes, not a package\n"))
	want := "(an Android .apk or .aab; an iOS .ipa, or a macOS .app in a .zip, a .dmg or a .pkg; a HarmonyOS .hap or .app; " +
		"a Linux .deb, .rpm or .AppImage; a Windows .exe, .msi, .msix, .appx or their bundles): found a text file"
	if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse error %v, want errs.Invalid mentioning %q", err, want)
	}
}
