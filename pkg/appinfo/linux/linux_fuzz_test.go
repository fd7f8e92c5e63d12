package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// seedFiles returns the shared fixtures and testdata/real files matching the patterns.
func seedFiles(f *testing.F, shared, local string) [][]byte {
	var out [][]byte
	names := fixtures.Glob(shared)
	more, _ := filepath.Glob(filepath.Join("testdata", "real", local))
	for _, name := range append(names, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// fuzzParser checks a parser on arbitrary bytes: no panic, errors only of kind errs.Invalid,
// and a result that is a Linux package of the right format.
func fuzzParser(f *testing.F, parse func([]byte) (*appinfo.Info, error), format appinfo.Format) {
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := parse(data)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid {
				t.Fatalf("error %v is not errs.Invalid", err)
			}
			return
		}
		if info.Platform != appinfo.Linux || info.Format != format || info.BundleID == "" {
			t.Fatalf("parsed as %+v", info)
		}
		// What an APT index repeats must not break a stanza: one line per property, the extended
		// description lines without blank ones, bounded.
		for k, v := range info.Properties {
			if k == "Extended-Description" {
				if len(v) > 4<<10 || strings.Contains(v, "\n\n") || strings.ContainsAny(v, "\r\x00") || strings.HasPrefix(v, "\n") || strings.HasSuffix(v, "\n") {
					t.Fatalf("Extended-Description %q", v)
				}
			} else if strings.ContainsAny(v, "\r\n") {
				t.Fatalf("property %s = %q spans lines", k, v)
			}
		}
		if info.Icon != nil && (info.Icon.Width <= 0 || info.Icon.Height <= 0 || len(info.Icon.Data) == 0) {
			t.Fatalf("icon %dx%d of %d bytes", info.Icon.Width, info.Icon.Height, len(info.Icon.Data))
		}
	})
}

// FuzzParseDeb feeds arbitrary bytes to ParseDeb, seeded with real and synthetic packages of
// every control.tar compression.
func FuzzParseDeb(f *testing.F) {
	for _, s := range seedFiles(f, "linux/*.deb", "*.deb") {
		f.Add(s)
	}
	for _, comp := range []string{"gz", "xz", "zst", "none"} {
		f.Add(linuxtest.BuildDeb(linuxtest.DebOptions{Compression: comp, Extra: []linuxtest.Field{{Name: "Depends", Value: "a,\n b"}}}))
	}
	fuzzParser(f, parseDeb, appinfo.FormatDeb)
}

// FuzzParseRPM feeds arbitrary bytes to ParseRPM, seeded with real and synthetic packages.
func FuzzParseRPM(f *testing.F) {
	for _, s := range seedFiles(f, "linux/*.rpm", "*.rpm") {
		f.Add(s)
	}
	f.Add(linuxtest.BuildRPM(linuxtest.RPMOptions{Epoch: 1, Vendor: "v", URL: "u"}))
	f.Add(linuxtest.BuildRPM(linuxtest.RPMOptions{Source: true, Packager: "p"}))
	fuzzParser(f, parseRPM, appinfo.FormatRPM)
}

// FuzzParseAppImage feeds arbitrary bytes to ParseAppImage, seeded with real and synthetic
// AppImages of every squashfs compression, with and without fragments.
func FuzzParseAppImage(f *testing.F) {
	for _, s := range seedFiles(f, "linux/*.AppImage", "*.squashfs") {
		if string(s[:4]) == "hsqs" {
			s = append(linuxtest.Runtime(linuxtest.RuntimeOptions{}), s...)
		}
		f.Add(s)
	}
	for _, comp := range []string{"gzip", "xz", "zstd", "none"} {
		f.Add(linuxtest.BuildAppImage(linuxtest.AppImageOptions{Squash: linuxtest.SquashOptions{Compression: comp, BlockSize: 4096}, IconSize: 8}))
		f.Add(linuxtest.BuildAppImage(linuxtest.AppImageOptions{Squash: linuxtest.SquashOptions{Compression: comp}, NoFragments: true, IconSize: 8,
			Runtime: linuxtest.RuntimeOptions{CodeBytes: 16}}))
	}
	f.Add(linuxtest.BuildAppImage(linuxtest.AppImageOptions{IconSize: -1, Runtime: linuxtest.RuntimeOptions{ELF32: true, CodeBytes: 16},
		Squash: linuxtest.SquashOptions{Compression: "none", Root: []linuxtest.SquashEntry{
			{Name: ".DirIcon", Symlink: "loop/loop/icon.png"}, {Name: "loop", InodeOf: "."}, {Name: "icon.png", Data: linuxtest.PNG(4, 4)}}}}))
	fuzzParser(f, parseAppImage, appinfo.FormatAppImage)
}
