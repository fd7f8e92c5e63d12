package appinfo

import (
	"io"
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
type Family struct {
	// Name names the family in errors and tests ("apple", "windows").
	Name string
	// ClaimZip returns the parser for a zip archive of this family, or nil.
	ClaimZip func(a *zipread.Archive) ZipParser
	// ClaimFile returns the parser for a file of this family that is not a zip, or nil.
	ClaimFile func(r io.ReaderAt, size int64) FileParser
	// Fallback families are asked after every other one has declined: a zip that merely holds
	// an .exe is a Windows build only when it is no other platform's package.
	Fallback bool
}

var (
	familiesMu sync.RWMutex
	families   []Family
)

// Register adds a platform family. Families register from their package's init function; the
// order of registration is the order of the claims (the Fallback ones last).
func Register(f Family) {
	familiesMu.Lock()
	defer familiesMu.Unlock()
	families = append(families, f)
}

// Families returns the names of the registered families, in the order they are asked.
func Families() []string {
	var names []string
	for _, f := range ordered() {
		names = append(names, f.Name)
	}
	return names
}

func ordered() []Family {
	familiesMu.RLock()
	defer familiesMu.RUnlock()
	out := make([]Family, 0, len(families))
	for _, fallback := range []bool{false, true} {
		for _, f := range families {
			if f.Fallback == fallback {
				out = append(out, f)
			}
		}
	}
	return out
}

func claimZip(a *zipread.Archive) ZipParser {
	for _, f := range ordered() {
		if f.ClaimZip == nil {
			continue
		}
		if p := f.ClaimZip(a); p != nil {
			return p
		}
	}
	return nil
}

func claimFile(r io.ReaderAt, size int64) FileParser {
	for _, f := range ordered() {
		if f.ClaimFile == nil {
			continue
		}
		if p := f.ClaimFile(r, size); p != nil {
			return p
		}
	}
	return nil
}
