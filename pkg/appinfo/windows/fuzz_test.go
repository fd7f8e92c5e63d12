package windows

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// checkFuzz holds for any input: an errs.Invalid error, or an Info with clean fields.
func checkFuzz(t *testing.T, info *appinfo.Info, err error) {
	if err != nil {
		if !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %q is not errs.Invalid", err)
		}
		return
	}
	if info.Platform != appinfo.Windows || info.Device != appinfo.DeviceWindows {
		t.Fatalf("info %+v", info)
	}
	texts := []string{info.Name, info.BundleID, info.ReleaseVersion, info.BuildVersion, info.MinOS, info.Publisher, info.Description}
	texts = append(append(texts, info.Architectures...), info.Permissions...)
	for _, v := range info.Properties {
		texts = append(texts, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > maxTextLen {
			t.Fatalf("unclean text %q", s)
		}
	}
	if ic := info.Icon; ic != nil && (ic.Width <= 0 || ic.Height <= 0 || ic.Width > appxMaxLogoSide || ic.Height > appxMaxLogoSide || len(ic.Data) > appinfo.MaxIconBytes) {
		t.Fatalf("icon %dx%d, %d bytes", ic.Width, ic.Height, len(ic.Data))
	}
}

// fuzzFixtures adds the fixtures matching pattern that are small enough to fuzz quickly.
func fuzzFixtures(f *testing.F, pattern string) {
	for _, path := range fixtures.Glob(pattern) {
		if b, err := os.ReadFile(path); err == nil && len(b) <= 256<<10 {
			f.Add(b)
		}
	}
}

// FuzzParsePE parses arbitrary bytes as a PE executable.
func FuzzParsePE(f *testing.F) {
	f.Add(windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.2.3.4"),
		Icons: []windowstest.IconImage{{Size: 4, BPP: 4}, {Size: 8}, {Size: 2, PNG: true}}}))
	f.Add(windowstest.BuildPE(windowstest.PEOptions{Machine: windowstest.MachineX86, Icons: []windowstest.IconImage{{Size: 3, BPP: 8}}}))
	f.Add(windowstest.BuildPE(windowstest.PEOptions{Machine: windowstest.MachineARM64, Icons: []windowstest.IconImage{{Size: 5, BPP: 1}, {Size: 6, BPP: 24}}}))
	fuzzFixtures(f, "other/*.exe")
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseEXE(bytes.NewReader(data), int64(len(data)))
		checkFuzz(t, info, err)
	})
}

// FuzzParseMSI parses arbitrary bytes as a Windows Installer database.
func FuzzParseMSI(f *testing.F) {
	// Small seeds (no cabinet, a few KiB): the fuzzer minimizes every new input, which takes
	// minutes on the 23 KB wixl database or the 1 MB fixture.
	f.Add(windowstest.BuildMSI(windowstest.MSIOptions{CabBytes: -1, Icon: windowstest.ICO(windowstest.IconImage{Size: 2})}))
	f.Add(windowstest.BuildMSI(windowstest.MSIOptions{CabBytes: -1, LongRefs: true, Codepage: 932}))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseMSI(bytes.NewReader(data), int64(len(data)))
		checkFuzz(t, info, err)
	})
}

// FuzzParseMSIX parses arbitrary zip archives as MSIX packages, bundles or zipped executables.
func FuzzParseMSIX(f *testing.F) {
	tiny := windowstest.MSIXOptions{LogoFiles: []windowstest.LogoFile{{Name: "Assets/StoreLogo.scale-200.png", Size: 2}}}
	f.Add(windowstest.BuildMSIX(tiny))
	f.Add(windowstest.BuildMSIXBundle(windowstest.BundleOptions{App: tiny, Archs: []string{"x64"}}))
	f.Add(windowstest.BuildZip(windowstest.Entry{Name: "a.exe", Data: windowstest.BuildPE(windowstest.PEOptions{Icons: []windowstest.IconImage{{Size: 2}}})}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := zipread.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		var info *appinfo.Info
		switch {
		case a.File(appxManifest) != nil:
			info, err = ParseMSIX(a)
		case a.File(appxBundleManifest) != nil:
			info, err = ParseMSIXBundle(a)
		case mainEXE(a) != nil:
			info, err = ParseEXEZip(a)
		default:
			return
		}
		checkFuzz(t, info, err)
	})
}
