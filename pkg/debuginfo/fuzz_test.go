package debuginfo

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

var (
	upperUUID = regexp.MustCompile(`^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$`)
	lowerUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func syntheticMachOs() [][]byte {
	a := debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555", Pad: 16}
	b := debuginfotest.Arch{Name: "armv7", UUID: "66666666-7777-8888-9999-AAAAAAAAAAAA", Pad: 16}
	fat := debuginfotest.MachO(b, a)
	// Hostile variants: a fat header claiming 1000 architectures, a truncated fat file.
	fat1000 := bytes.Clone(fat)
	fat1000[6], fat1000[7] = 0x03, 0xe8
	return [][]byte{debuginfotest.Thin(a), debuginfotest.Thin(b), fat, fat1000, fat[:len(fat)-8]}
}

func syntheticZips() [][]byte {
	a := debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555", Pad: 16}
	b := debuginfotest.Arch{Name: "armv7", UUID: "66666666-7777-8888-9999-AAAAAAAAAAAA", Pad: 16}
	return [][]byte{
		debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "App.app.dSYM", Identifier: "a.b", ReleaseVersion: "1.0", BuildVersion: "1", Archs: []debuginfotest.Arch{b, a}}),
		debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "x/A.dSYM", Archs: []debuginfotest.Arch{a}}, debuginfotest.DSYM{Path: "B.appex.dSYM", Identifier: "c", Archs: []debuginfotest.Arch{b}}),
		debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: []byte("a -> b:\n"), RTxt: []byte("int id x 0x1\n"), Manifest: debuginfotest.Manifest("a.b", "1", "2")}),
		debuginfotest.BuildZip(
			debuginfotest.Entry{Name: "App.app.dSYM/Contents/Info.plist", Data: []byte(`{CFBundleIdentifier = x;}`), Store: true},
			debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/App", Data: debuginfotest.Thin(a), Store: true},
			debuginfotest.Entry{Name: "mapping.txt", Data: []byte("m"), Store: true}),
	}
}

// fixtureFiles returns the contents of the fixtures matching the patterns, or nothing without them.
func fixtureFiles(tb testing.TB, patterns ...string) [][]byte {
	var out [][]byte
	for _, p := range patterns {
		for _, f := range fixtures.Glob(p) {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

// fuzzLimits keeps each fuzz input cheap; the real limits are exercised by TestLimits.
func fuzzLimits(tb testing.TB) {
	saved := lim
	lim.inflated = 64 << 20
	tb.Cleanup(func() { lim = saved })
}

func FuzzParse(f *testing.F) {
	fuzzLimits(f)
	for _, b := range append(syntheticZips(), fixtureFiles(f, "debug/*.zip", "debug/invalid/*.zip")...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("error of kind %v: %v", errs.KindOf(err), err)
			}
			return
		}
		switch a.Kind {
		case KindDSYM:
			if len(a.DSYMs) == 0 || len(a.DSYMs) > lim.bundles {
				t.Fatalf("%d dSYMs", len(a.DSYMs))
			}
		case KindProguard:
			if a.Proguard == nil || len(a.DSYMs) != 0 {
				t.Fatalf("proguard kind without proguard: %+v", a)
			}
		default:
			t.Fatalf("kind %q", a.Kind)
		}
		for _, d := range a.DSYMs {
			if len(d.Slices) == 0 || len(d.Slices) > lim.machOFiles*lim.slices {
				t.Fatalf("%d slices", len(d.Slices))
			}
			for _, s := range d.Slices {
				if !upperUUID.MatchString(s.UUID) || s.Arch == "" || s.Object == "" || s.Size <= 0 {
					t.Fatalf("bad slice %+v", s)
				}
			}
		}
		if p := a.Proguard; p != nil {
			if p.UUID != "" && !lowerUUID.MatchString(p.UUID) {
				t.Fatalf("bad UUID %q", p.UUID)
			}
			if len(p.Files) == 0 || len(p.Files) > 3 {
				t.Fatalf("files %+v", p.Files)
			}
		}
	})
}

func FuzzMachO(f *testing.F) {
	for _, b := range syntheticMachOs() {
		f.Add(b)
	}
	// The first 16 KiB of the real DWARF files: their headers and load commands.
	for _, z := range fixtureFiles(f, "debug/ios-*.zip") {
		zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range zr.File {
			if strings.Contains(e.Name, "/DWARF/") && !strings.Contains(e.Name, "__MACOSX") && e.UncompressedSize64 > 0 {
				rc, _ := e.Open()
				b, _ := io.ReadAll(io.LimitReader(rc, 16<<10))
				rc.Close()
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := readMachO(bytes.NewReader(data), "x")
		if err != nil {
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), `"x"`) {
				t.Fatalf("error %v (kind %v)", err, errs.KindOf(err))
			}
			return
		}
		if len(s) == 0 || len(s) > lim.slices {
			t.Fatalf("%d slices", len(s))
		}
		var end int64
		for _, sl := range s {
			if !upperUUID.MatchString(sl.UUID) || sl.Arch == "" || sl.Size < machHeaderSize {
				t.Fatalf("bad slice %+v", sl)
			}
			end = max(end, sl.Size)
		}
		if end > int64(len(data)) {
			t.Fatalf("slice of %d bytes in a %d-byte file", end, len(data))
		}
	})
}

// FuzzManifest checks the manifest reader on arbitrary input.
func FuzzManifest(f *testing.F) {
	f.Add(debuginfotest.Manifest("a.b", "1.0", "1"))
	f.Add([]byte(`<manifest package="x" android:versionName="1"/>`))
	f.Add([]byte("\x03\x00\x08\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p Proguard
		_ = parseManifest(data, &p)
	})
}

// FuzzInfoPlist checks that the plist decoder, behind decodePlist, never panics.
func FuzzInfoPlist(f *testing.F) {
	f.Add(debuginfotest.InfoPlist(debuginfotest.DSYM{Identifier: "a.b", ReleaseVersion: "1", BuildVersion: "2"}))
	f.Add([]byte(`{CFBundleIdentifier = x; CFBundleVersion = 1;}`))
	f.Add([]byte("bplist00\xd1\x01\x02Qa\x10\x01\x08\x0b\x0d\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x0f"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if err := decodePlist(data, &m); err == nil {
			_ = plistString(m["CFBundleIdentifier"])
		}
	})
}
