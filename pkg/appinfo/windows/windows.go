package windows

import (
	"archive/zip"
	"io"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Caps on what one parse reads or keeps. Over a cap, the parse fails with errs.Invalid, except
// where a doc comment says the part is skipped.
const (
	// MaxManifestBytes bounds AppxManifest.xml; real ones are a few KiB.
	MaxManifestBytes = 1 << 20
	// MaxBundleManifestBytes bounds AppxBundleManifest.xml, which lists every package of a bundle.
	MaxBundleManifestBytes = 4 << 20
	// MaxEXEInflate bounds how much of a deflated .exe in a zip is inflated to reach its
	// resources (see ParseEXEZip); past it, only the headers are read.
	MaxEXEInflate = 256 << 20
	// MaxResourceSectionKeep bounds the resource section kept in memory for a deflated .exe.
	MaxResourceSectionKeep = 64 << 20
	// maxTextLen bounds every text value kept from a package.
	maxTextLen = 1024
	// maxNestedOpenCost bounds what opening a bundle's main package's directory may cost
	// (zipread.Survey's OpenCost): about 40,000 files.
	maxNestedOpenCost = 16 << 20
	// maxBundleParseBytes is the most a bundle's parse allocates: its manifest, decoded, the
	// main package's directory and manifest, and one logo read whole and decoded.
	maxBundleParseBytes = 2*MaxBundleManifestBytes + maxNestedOpenCost + 2*MaxManifestBytes + appinfo.MaxIconBytes + iconDecodeBytes
	// maxParseBytes is the most any other parse allocates: a deflated .exe's kept resource
	// section with the resources copied out of it, or an MSI's streams (each raw, from the file,
	// as is a bare .exe's resource section), and one icon decoded.
	maxParseBytes = 2*MaxResourceSectionKeep + iconDecodeBytes
)

// Family registration: the parsers of Windows packages that identify themselves (a PE, an MSI
// database, an MSIX package or bundle), and separately, as a fallback, a zip that merely holds
// an .exe (Zealot's rule), which is a Windows build only when no other platform claims the zip.
func init() {
	appinfo.Register(appinfo.Family{Name: "windows", Takes: "a Windows .exe, .msi, .msix, .appx or their bundles", Platform: windowsPlatform,
		MaxParseBytes: maxParseBytes, DecodeBytes: iconDecodeBytes, ReadsRaw: true,
		NestedBytes: func(a *zipread.Archive) int64 {
			if a.File(appxManifest) == nil && a.File(appxBundleManifest) != nil {
				return maxBundleParseBytes
			}
			return 0
		},
		ClaimZip: func(a *zipread.Archive) appinfo.ZipParser {
			switch {
			case a.File(appxManifest) != nil:
				return ParseMSIX
			case a.File(appxBundleManifest) != nil:
				return ParseMSIXBundle
			}
			return nil
		},
		ClaimFile: func(r io.ReaderAt, size int64) appinfo.FileParser {
			switch {
			case IsPE(r, size):
				return ParseEXE
			case IsMSI(r, size):
				return ParseMSI
			}
			return nil
		}})
	appinfo.Register(appinfo.Family{Name: "windows-exe-zip", Fallback: true, Platform: windowsPlatform, MaxParseBytes: maxParseBytes, DecodeBytes: iconDecodeBytes,
		ClaimZip: func(a *zipread.Archive) appinfo.ZipParser {
			if mainEXE(a) != nil {
				return ParseEXEZip
			}
			return nil
		}})
}

// windowsPlatform is the platform of every package the windows families claim.
func windowsPlatform(*zipread.Archive) appinfo.Platform { return appinfo.Windows }

// mainEXE picks the .exe a zip is about: the shallowest one, the largest among those. Entries
// macOS's archiver added (__MACOSX/) are ignored.
func mainEXE(a *zipread.Archive) *zip.File {
	var best *zip.File
	bestDepth := 0
	for _, f := range a.Files() {
		if !strings.HasSuffix(strings.ToLower(f.Name), ".exe") || strings.HasSuffix(f.Name, "/") || zipread.IsMacOSXJunk(f.Name) {
			continue
		}
		d := strings.Count(strings.ReplaceAll(f.Name, `\`, "/"), "/")
		if best == nil || d < bestDepth || (d == bestDepth && f.UncompressedSize64 > best.UncompressedSize64) {
			best, bestDepth = f, d
		}
	}
	return best
}

// clean makes a text value read from a package safe to keep (appinfo.CleanText).
func clean(s string) string { return appinfo.CleanText(s, maxTextLen) }

// first returns the first non-empty value.
func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
