package apple

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// appleSeedFiles returns the shared Apple fixtures matching the patterns, none when absent.
func appleSeedFiles(f *testing.F, patterns ...string) [][]byte {
	var out [][]byte
	for _, p := range patterns {
		for _, name := range fixtures.Glob(p) {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

func appleZipOpenBytes(b []byte) (*zipread.Archive, error) {
	return zipread.Open(bytes.NewReader(b), int64(len(b)))
}

// appleSyntheticSeeds are small synthetic packages of every Apple kind.
func appleSyntheticSeeds() [][]byte {
	return [][]byte{
		appletest.BuildIPA(appletest.IPAOptions{
			Profile: &appletest.ProfileOptions{Devices: []string{"a"}},
			Icons:   []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 6, CgBI: true}, {Name: "AppIcon60x60@3x.png", Size: 4}},
		}),
		appletest.BuildIPA(appletest.IPAOptions{BinaryPlist: true, AppStore: true, DeviceFamily: []int{3}}),
		appletest.BuildMacZip(appletest.MacZipOptions{IconSizes: []int{4}, LegacyIcon: true, Profile: &appletest.ProfileOptions{Platform: "OSX"}}),
		appletest.BuildPKG(appletest.PKGOptions{Distribution: true, Title: "T", MinOS: "11.0"}),
		appletest.BuildPKG(appletest.PKGOptions{Uncompressed: true}),
	}
}

// FuzzParseApple feeds arbitrary bytes to Parse, seeded with every Apple package kind: it must
// never panic, and every failure must be an errs.Invalid error.
func FuzzParseApple(f *testing.F) {
	for _, s := range append(appleSeedFiles(f, "ios/*.ipa", "ios/invalid/*", "macos/*.zip"), appleSyntheticSeeds()...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := appinfo.Parse(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("error %v is not errs.Invalid", err)
			}
			return
		}
		if info.Icon != nil {
			if _, err := png.Decode(bytes.NewReader(info.Icon.Data)); err != nil && info.Icon.ContentType == "image/png" {
				t.Fatalf("icon is not a standard PNG: %v", err)
			}
		}
	})
}

// FuzzParseProfile feeds arbitrary bytes to ParseProfile.
func FuzzParseProfile(f *testing.F) {
	for _, s := range appleSeedFiles(f, "ios/provisioning/*") {
		f.Add(s)
	}
	f.Add(appletest.BuildProfile(appletest.ProfileOptions{Devices: []string{"a", "b"}, TeamName: "T", GetTaskAllow: true}))
	f.Add(appletest.BuildProfile(appletest.ProfileOptions{Platform: "OSX", AllDevices: true}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := ParseProfile(data); err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %v is not errs.Invalid", err)
		}
	})
}

// FuzzConvertCgBI feeds arbitrary bytes to the CgBI converter: whatever it returns without an
// error must be a standard PNG of the dimensions the input declared.
func FuzzConvertCgBI(f *testing.F) {
	for _, size := range [][2]int{{1, 1}, {3, 2}, {8, 8}} {
		f.Add(appletest.CgBIPNG(size[0], size[1]))
	}
	for _, ipa := range appleSeedFiles(f, "ios/bundle-ipad-1.0-1.ipa") {
		a, err := appleZipOpenBytes(ipa)
		if err != nil {
			f.Fatal(err)
		}
		for _, zf := range a.Files() {
			if strings.HasSuffix(zf.Name, "~ipad.png") && zf.UncompressedSize64 < 12<<10 {
				b, err := a.ReadFile(zf, appinfo.MaxIconBytes)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := convertCgBI(data)
		if err != nil {
			return
		}
		img, err := png.Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("converted image does not decode: %v", err)
		}
		w, h, _, ok := applePNGHeader(data)
		if b := img.Bounds(); !ok || b.Dx() != w || b.Dy() != h {
			t.Fatalf("converted image is %v, input declared %d×%d (ok %v)", b, w, h, ok)
		}
		_, _ = appleIconFromPNG(data)
	})
}

// FuzzDecodePlist feeds arbitrary bytes to the property-list decoder and its shape checks.
func FuzzDecodePlist(f *testing.F) {
	f.Add([]byte(`<?xml version="1.0"?><plist><dict><key>a</key><array><integer>1</integer><date>2020-01-01T00:00:00Z</date></array></dict></plist>`))
	f.Add(appleBplist([][]byte{{0xD1, 0, 1, 0, 2}, {0x51, 'k'}, appleArray(3, 3), {0x10, 7}}, 0))
	for _, ipa := range append(appleSeedFiles(f, "ios/*.ipa"), appleSyntheticSeeds()[:2]...) {
		a, err := appleZipOpenBytes(ipa)
		if err != nil {
			f.Fatal(err)
		}
		if name := findIPAInfoPlist(a); name != "" {
			b, err := a.ReadName(name, MaxPlistBytes)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := decodePlist(data, "fuzz"); err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %v is not errs.Invalid", err)
		}
	})
}

// FuzzParsePKG feeds arbitrary bytes to the xar reader.
func FuzzParsePKG(f *testing.F) {
	for _, s := range appleSyntheticSeeds()[3:] {
		f.Add(s)
	}
	f.Add(appletest.BuildPKG(appletest.PKGOptions{OmitBundle: true, Distribution: true}))
	// Issue 20's finding 6 and its variants (xar_hostile_test.go); the 24 KB package itself is in
	// testdata/fuzz/FuzzParsePKG.
	for _, b := range applePKGBombs() {
		f.Add(b.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := parsePKG(bytes.NewReader(data), int64(len(data))); err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %v is not errs.Invalid", err)
		}
	})
}

// FuzzICNS feeds arbitrary bytes to the .icns reader.
func FuzzICNS(f *testing.F) {
	f.Add(appletest.BuildICNS([]int{2, 4}, true))
	f.Fuzz(func(t *testing.T, data []byte) {
		icon, err := icnsIcon(data)
		if err == nil && icon != nil {
			if _, err := png.Decode(bytes.NewReader(icon.Data)); err != nil {
				t.Fatalf("icon does not decode: %v", err)
			}
		}
	})
}
