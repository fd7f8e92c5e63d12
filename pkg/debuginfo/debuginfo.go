// Package debuginfo reads uploaded debug-file archives from an io.ReaderAt: zipped iOS/macOS dSYM
// bundles (one record per Mach-O slice, with its LC_UUID) and Android archives holding a ProGuard/R8
// mapping.txt, R.txt and a text AndroidManifest.xml. Every read is bounded; every problem with the
// input is an errs.Invalid error whose message says what was wrong.
//
// Memory stays small whatever the upload's size: entries are streamed through zipread (so its
// zip-bomb limits and storage prefetch apply), Mach-O files are read header-first without being
// held in memory (see readMachO), and the mapping file is hashed as it inflates. Only Info.plist
// (≤ MaxInfoPlist) and AndroidManifest.xml (≤ MaxManifest) are read whole.
package debuginfo

import (
	"io"
	"strconv"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Kind is the kind of debug archive.
type Kind string

const (
	// KindDSYM is an iOS/macOS archive of .dSYM bundles.
	KindDSYM Kind = "dsym"
	// KindProguard is an Android archive of ProGuard/R8 files.
	KindProguard Kind = "proguard"
)

// Limits on what one archive may hold. A declared or actual size over a limit, or a count over
// one, is an errs.Invalid error. They bound the memory and CPU one Parse can use.
const (
	// MaxInfoPlist caps a dSYM's Contents/Info.plist, which is read into memory (real ones: < 1 KiB).
	MaxInfoPlist = 1 << 20
	// MaxManifest caps AndroidManifest.xml, which is read into memory.
	MaxManifest = 4 << 20
	// MaxMachOHeader caps a Mach-O slice's header plus load commands (sizeofcmds). Only this region
	// is examined; the DWARF data after it is streamed past. Real dSYMs need a few KiB.
	MaxMachOHeader = 1 << 20
	// MaxDWARFFile caps one Mach-O file under Contents/Resources/DWARF/ (large apps reach 1-2 GiB).
	MaxDWARFFile = 4 << 30
	// MaxMapping caps the ProGuard/R8 mapping file, which is hashed as it streams.
	MaxMapping = 2 << 30
	// MaxRTxt caps R.txt, which is streamed only to measure it.
	MaxRTxt = 512 << 20
	// MaxInflated caps the bytes inflated over a whole Parse, across entries, so an archive of many
	// entries (or entries sharing one compressed stream) cannot keep a replica busy for long.
	MaxInflated = 8 << 30
	// MaxBundles caps the .dSYM bundles in one archive.
	MaxBundles = 64
	// MaxMachOFiles caps the Mach-O files under one bundle's Contents/Resources/DWARF/ (usually 1).
	MaxMachOFiles = 16
	// MaxSlices caps the architectures of one fat Mach-O file.
	MaxSlices = 16
)

// limits holds the caps in force; tests lower them to exercise the limits cheaply.
type limits struct {
	infoPlist, manifest, machOHeader, dwarfFile, mapping, rTxt, inflated int64
	bundles, machOFiles, slices                                          int
}

var lim = limits{
	infoPlist: MaxInfoPlist, manifest: MaxManifest, machOHeader: MaxMachOHeader,
	dwarfFile: MaxDWARFFile, mapping: MaxMapping, rTxt: MaxRTxt, inflated: MaxInflated,
	bundles: MaxBundles, machOFiles: MaxMachOFiles, slices: MaxSlices,
}

// Archive is what a debug-file upload holds.
type Archive struct {
	// Kind is KindDSYM when at least one .dSYM bundle holds a Mach-O file, otherwise KindProguard.
	// An archive may hold both (a cross-platform project zipping its whole build output): then
	// Kind is KindDSYM and Proguard is filled as well, so a caller that knows the channel's platform
	// uses the part matching it (DSYMs non-empty, or Proguard non-nil) and rejects the upload when
	// that part is missing.
	Kind Kind
	// DSYMs holds every *.dSYM bundle with at least one Mach-O file, in archive order.
	DSYMs []DSYM
	// Proguard describes the Android files, or is nil when there are none.
	Proguard *Proguard
}

// DSYM is one .dSYM bundle.
type DSYM struct {
	// Name is the bundle folder's name, e.g. "iOS.app.dSYM".
	Name string
	// Path is the bundle folder's path in the archive, e.g. "dSYMs/iOS.app.dSYM".
	Path string
	// Identifier is CFBundleIdentifier without the "com.apple.xcode.dsym." prefix.
	Identifier     string
	ReleaseVersion string // CFBundleShortVersionString
	BuildVersion   string // CFBundleVersion
	// Main reports the app's own bundle, stored as the "main" flag of the metadata rows: a bundle
	// whose name ends in ".app.dSYM", or, when no bundle's does, the first bundle. Extensions
	// (.appex.dSYM) and frameworks (.framework.dSYM) are not main.
	Main   bool
	Slices []Slice
}

// Slice is one Mach-O architecture slice under Contents/Resources/DWARF/.
type Slice struct {
	UUID   string // LC_UUID, upper-case and dashed
	Arch   string // arm64, armv7, x86_64, ...
	Object string // binary file name
	Size   int64  // slice size in bytes: the file's size when thin, the fat arch's size when fat
}

// Proguard describes an Android mapping archive.
type Proguard struct {
	// UUID is the UUIDv5 of the mapping file's content in Zealot's namespace; empty without mapping.
	UUID string
	// PackageName, ReleaseVersion and BuildVersion come from a text AndroidManifest.xml, when present.
	PackageName    string
	ReleaseVersion string
	BuildVersion   string
	// Files lists the recognised files (mapping, R.txt, AndroidManifest.xml) with their sizes.
	Files []File
}

// File is one file of an Android debug archive.
type File struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// Parse reads a debug archive of size bytes from r: a zip holding .dSYM bundles (at any depth, in
// any letter case: "ios.DSYM", "dSYMs/App.app.dSYM"), or Android files (a *mapping*.txt, R.txt,
// AndroidManifest.xml, in any folder), or both. __MACOSX/ folders and ._ resource forks are ignored.
//
// Every problem with the input is an errs.Invalid error: not a zip, a corrupt or over-limit entry,
// an unreadable Info.plist or manifest, a DWARF file that is not a Mach-O with an LC_UUID, or an
// archive holding neither a dSYM bundle with a Mach-O file nor an Android file.
func Parse(r io.ReaderAt, size int64) (*Archive, error) {
	if !zipread.IsZip(r, size) {
		return nil, errs.Invalidf("the debug file is not a zip archive")
	}
	za, err := zipread.Open(r, size)
	if err != nil {
		return nil, err
	}
	p := &parser{za: za, budget: lim.inflated}
	bundles, android, err := p.scan()
	if err != nil {
		return nil, err
	}
	out := &Archive{}
	if out.DSYMs, err = p.dsyms(bundles); err != nil {
		return nil, err
	}
	if out.Proguard, err = p.proguard(android); err != nil {
		return nil, err
	}
	switch {
	case len(out.DSYMs) > 0:
		out.Kind = KindDSYM
	case out.Proguard != nil:
		out.Kind = KindProguard
	default:
		msg := "no .dSYM bundle or Android mapping/R.txt/AndroidManifest.xml found"
		if len(bundles) > 0 {
			return nil, errs.Invalidf("%s: %s has no Mach-O file under Contents/Resources/DWARF/", msg, quote(bundles[0].path))
		}
		if p.compiledManifest != "" {
			return nil, errs.Invalidf("%s: %s is a compiled manifest, as in an APK, not a debug file", msg, quote(p.compiledManifest))
		}
		return nil, errs.Invalidf("%s in %s", msg, za.Describe(5))
	}
	return out, nil
}

// parser holds one Parse's state: the archive and the inflate budget left.
type parser struct {
	za     *zipread.Archive
	budget int64
	// compiledManifest names a binary AndroidManifest.xml found without mapping or R.txt.
	compiledManifest string
}

// open returns a reader of an entry's content, bounded by max and by the Parse-wide budget.
func (p *parser) open(e entry, max int64) (io.ReadCloser, error) {
	rc, err := p.za.Open(e.f, max)
	if err != nil {
		return nil, err
	}
	return &budgetReader{rc: rc, p: p}, nil
}

// readAll reads a small entry whole.
func (p *parser) readAll(e entry, max int64) ([]byte, error) {
	rc, err := p.open(e, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, ioErr(err, e.name, "is truncated")
	}
	return b, nil
}

// budgetReader charges what it reads to the parser's budget.
type budgetReader struct {
	rc io.ReadCloser
	p  *parser
}

func (b *budgetReader) Read(q []byte) (int, error) {
	n, err := b.rc.Read(q)
	b.p.budget -= int64(n)
	if b.p.budget < 0 {
		return n, errs.Invalidf("the debug archive inflates to more than %d bytes in total", lim.inflated)
	}
	return n, err
}

func (b *budgetReader) Close() error { return b.rc.Close() }

// ioErr turns a read error into an errs.Invalid error: errors from zipread (corrupt entry, over a
// limit) and the budget pass through; an early end of data becomes "<name> <truncated>".
func ioErr(err error, name, truncated string) error {
	if errs.KindOf(err) != errs.Internal {
		return err
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errs.Invalidf("%s %s", quote(name), truncated)
	}
	return errs.Wrap(errs.Invalid, err, "%s is unreadable", quote(name))
}

// quote quotes an entry name for messages, shortening very long ones.
func quote(name string) string {
	if len(name) > 120 {
		name = name[:120] + "…"
	}
	return strconv.Quote(name)
}
