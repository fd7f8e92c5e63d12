// Package debuginfo reads uploaded debug-file archives from an io.ReaderAt: zipped iOS/macOS dSYM
// bundles (one record per Mach-O slice, with its LC_UUID) and Android archives holding a ProGuard/R8
// mapping.txt, R.txt and a text AndroidManifest.xml. Every read is bounded; every problem with the
// input is an errs.Invalid error whose message says what was wrong.
package debuginfo

import (
	"io"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Kind is the kind of debug archive.
type Kind string

const (
	KindDSYM     Kind = "dsym"
	KindProguard Kind = "proguard"
)

// Archive is what a debug-file upload holds.
type Archive struct {
	Kind Kind
	// DSYMs holds every *.dSYM bundle found, in archive order (KindDSYM).
	DSYMs []DSYM
	// Proguard describes an Android archive (KindProguard).
	Proguard *Proguard
}

// DSYM is one .dSYM bundle.
type DSYM struct {
	// Name is the bundle folder's name, e.g. "iOS.app.dSYM".
	Name string
	// Identifier is CFBundleIdentifier without the "com.apple.xcode.dsym." prefix.
	Identifier     string
	ReleaseVersion string // CFBundleShortVersionString
	BuildVersion   string // CFBundleVersion
	Slices         []Slice
}

// Slice is one Mach-O architecture slice under Contents/Resources/DWARF/.
type Slice struct {
	UUID   string // LC_UUID, upper-case and dashed
	Arch   string // arm64, armv7, x86_64, ...
	Object string // binary file name
	Size   int64  // slice size in bytes
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

// Parse reads a debug archive of size bytes from r.
func Parse(r io.ReaderAt, size int64) (*Archive, error) {
	return nil, errs.Invalidf("debug files: not implemented")
}
