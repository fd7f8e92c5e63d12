package appinfo

import (
	"cmp"
	"io"
	"slices"
	"sync"

	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A ZipParser reads the metadata of a zip-based package whose directory is already open.
type ZipParser func(a *zipread.Archive) (*Info, error)

// A FileParser reads the metadata of a package that is not a zip archive.
type FileParser func(r io.ReaderAt, size int64) (*Info, error)

// A Family is one platform family's parsers. Parse asks each registered family in turn to claim
// the file: zip archives by the entries their directory lists (ClaimZip), other files by their
// first bytes or trailer (ClaimFile). A claim reads little (a magic number, the directory already
// read), and the first family to claim a file parses it.
//
// The order of the claims is fixed by the families themselves, never by the order in which their
// packages happen to be initialized (Go initializes packages that do not import one another in
// the order of their import paths, whatever the order of the import lines): the families that are
// not Fallback ones first, then the Fallback ones; within each group, higher Priority first, then
// by Name.
type Family struct {
	// Name names the family in errors and tests ("apple", "windows").
	Name string
	// Takes says what the family reads in the words of whoever uploads ("an Android .apk or
	// .aab"), for the refusal of a file no family reads; empty: its Name (a fallback whose files
	// another family's words cover says nothing).
	Takes string
	// Priority puts a family's claims before those of lower Priority (0 unless set). Claims of
	// different families are meant to be disjoint; Priority settles the odd archive that two of
	// them would claim (a zip holding both an AndroidManifest.xml and an iOS Payload/).
	Priority int
	// ClaimZip returns the parser for a zip archive of this family, or nil.
	ClaimZip func(a *zipread.Archive) ZipParser
	// ClaimFile returns the parser for a file of this family that is not a zip, or nil.
	ClaimFile func(r io.ReaderAt, size int64) FileParser
	// Platform says the platform of a package the family claimed, from what the claim looked
	// at: a is the zip's directory, nil for a file that is not a zip (ClaimPlatform). Nil, or "":
	// not known before the package is parsed.
	Platform func(a *zipread.Archive) Platform
	// Fallback families are asked after every other one has declined: a zip that merely holds
	// an .exe is a Windows build only when it is no other platform's package.
	Fallback bool

	// MaxParseBytes is the most one parse of this family's packages may allocate beyond the zip
	// directory, whatever the package: what its caps allow together (its entries' caps, the
	// largest icon it decodes). A Budget reserves it, or less when the package's real sizes
	// bound the parse lower (budget.go). 0: bounded only by the real sizes.
	MaxParseBytes int64
	// DecodeBytes is the most its parse allocates that no entry's size bounds: the pixels of the
	// icon it decodes (at its pixel cap) and the icon it encodes.
	DecodeBytes int64
	// ReadsRaw says that its parsers of files that are not zips allocate at most what they read
	// of the file, decompressing nothing (plus DecodeBytes): twice the file's size bounds them.
	ReadsRaw bool
	// FileParseBytes is ZipParseBytes for a file that is not a zip: the bound of its parse by the
	// family's parser for it (known from its first bytes, as the claim is); 0 (or nil) leaves it
	// to MaxParseBytes (or ReadsRaw).
	FileParseBytes func(r io.ReaderAt, size int64) int64
	// ZipParseBytes returns the bound of this archive's parse from the entries the family's
	// parser reads (their real sizes, within its caps), for a family that can name them from
	// the directory; 0 (or nil) leaves the bound to the sizes of all entries. It is a tighter
	// bound for a large package, most of whose bytes (native libraries, assets) a parse never
	// reads. MaxParseBytes still caps it.
	ZipParseBytes func(a *zipread.Archive) int64
	// NestedBytes returns, for an archive whose parse reads a zip inside it (an .app's HAP, a
	// bundle's main package), whose entries the outer directory does not list, the most that
	// parse may allocate (from caps, like MaxParseBytes); 0 for an archive it does not nest in.
	// Nil: the family never nests.
	NestedBytes func(a *zipread.Archive) int64
}

var (
	familiesMu sync.RWMutex
	families   []Family
)

// Register adds a platform family. Families register from their package's init function; where
// a family is asked in turn does not depend on when it registered (see Family).
func Register(f Family) {
	familiesMu.Lock()
	defer familiesMu.Unlock()
	next := append(slices.Clip(families), f)
	slices.SortStableFunc(next, func(a, b Family) int {
		return cmp.Or(compareBool(a.Fallback, b.Fallback), cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Name, b.Name))
	})
	families = next
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Families returns the names of the registered families, in the order they are asked.
func Families() []string {
	var names []string
	for _, f := range ordered() {
		names = append(names, f.Name)
	}
	return names
}

// takes is what the registered families read, in the uploader's words, in the order they are asked.
func takes() []string {
	var out []string
	for _, f := range ordered() {
		switch {
		case f.Takes != "":
			out = append(out, f.Takes)
		case !f.Fallback:
			out = append(out, f.Name)
		}
	}
	return out
}

// ordered returns the registered families in the order they are asked. Register replaces the
// slice rather than changing it, so the one returned stays valid without a copy.
func ordered() []Family {
	familiesMu.RLock()
	defer familiesMu.RUnlock()
	return families
}

func claimZip(a *zipread.Archive) ZipParser {
	_, p := claimZipFamily(a)
	return p
}

// claimZipFamily returns the family that claims the archive and its parser, or nils.
func claimZipFamily(a *zipread.Archive) (*Family, ZipParser) {
	for _, f := range ordered() {
		if f.ClaimZip == nil {
			continue
		}
		if p := f.ClaimZip(a); p != nil {
			return &f, p
		}
	}
	return nil, nil
}

func claimFile(r io.ReaderAt, size int64) FileParser {
	_, p := claimFileFamily(r, size)
	return p
}

// claimFileFamily returns the family that claims the file and its parser, or nils.
func claimFileFamily(r io.ReaderAt, size int64) (*Family, FileParser) {
	for _, f := range ordered() {
		if f.ClaimFile == nil {
			continue
		}
		if p := f.ClaimFile(r, size); p != nil {
			return &f, p
		}
	}
	return nil, nil
}
