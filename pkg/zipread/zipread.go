// Package zipread opens zip archives through an io.ReaderAt (usually a block-cached reader over an
// object in storage) and reads only the entries asked for, every read bounded. It is shared by the
// package parsers (appinfo) and the debug-file parsers (debuginfo).
//
// archive/zip does the decoding; this package adds what a service reading untrusted uploads needs:
// caps on the number of entries and the directory's bytes, checked by walking the central
// directory itself before archive/zip allocates for it (directory.go), rejection of path-traversal
// names, per-entry size caps checked against both the declared and the actual uncompressed size
// (zip bombs), and a prefetch hint so an entry is fetched from storage in one request.
package zipread

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// MaxEntries is the most central-directory records an archive may declare or hold. Real IPAs and
// APKs hold a few thousand; the cap keeps a crafted directory from allocating gigabytes in
// archive/zip (at the cap, opening costs about 60 MiB of allocations, 42 MiB kept).
const MaxEntries = 200_000

// Prefetcher is implemented by readers over remote storage. Prefetch is a hint that [off, off+n)
// is about to be read, so it can be fetched in one request instead of many small ones.
type Prefetcher interface {
	Prefetch(off, n int64)
}

// Archive is an opened zip archive.
type Archive struct {
	r     io.ReaderAt
	size  int64
	zr    *zip.Reader
	index map[string]*zip.File
}

// Open reads the archive's end records and central directory. It returns an errs.Invalid error
// when r does not hold a zip archive, the archive is truncated, it declares or holds more than
// MaxEntries entries or a directory over MaxDirectoryBytes (checked by walking the directory
// before archive/zip allocates for it), or an entry name is absolute or climbs out of the archive
// ("../").
func Open(r io.ReaderAt, size int64) (*Archive, error) {
	if _, err := checkDirectory(r, size); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, errs.Wrap(errs.Invalid, err, "not a valid zip archive (%s)", zipReason(err))
	}
	if len(zr.File) > MaxEntries {
		// Not reached while checkDirectory mirrors archive/zip; kept in case a Go release reads
		// the directory differently.
		return nil, errs.Invalidf("zip archive holds more than %d entries", MaxEntries)
	}
	a := &Archive{r: r, size: size, zr: zr, index: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		if err := CheckName(f.Name); err != nil {
			return nil, err
		}
		if _, dup := a.index[f.Name]; !dup {
			a.index[f.Name] = f
		}
	}
	return a, nil
}

// IsZip reports whether the first bytes of r look like a zip archive (a local file header or an
// empty archive's end record).
func IsZip(r io.ReaderAt, size int64) bool {
	var magic [4]byte
	if size < 22 {
		return false
	}
	if _, err := r.ReadAt(magic[:], 0); err != nil {
		return false
	}
	return bytes.Equal(magic[:], []byte("PK\x03\x04")) || bytes.Equal(magic[:], []byte("PK\x05\x06"))
}

// CheckName rejects entry names that are absolute, contain backslashes used as separators toward a
// parent, or climb above the archive root.
func CheckName(name string) error {
	n := strings.ReplaceAll(name, `\`, "/")
	if strings.HasPrefix(n, "/") || (len(n) > 1 && n[1] == ':') {
		return errs.Invalidf("zip entry %q has an absolute path", truncate(name))
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return errs.Invalidf("zip entry %q climbs out of the archive (path traversal)", truncate(name))
		}
	}
	if strings.ContainsRune(name, 0) {
		return errs.Invalidf("zip entry name contains a NUL byte")
	}
	return nil
}

// Size returns the size in bytes of the archive, as given to Open: what the entries' compressed
// sizes and the zip's own records (local headers, central directory) add up to.
func (a *Archive) Size() int64 { return a.size }

// Files returns the archive's entries in central-directory order.
func (a *Archive) Files() []*zip.File { return a.zr.File }

// File returns the entry with exactly this name, or nil.
func (a *Archive) File(name string) *zip.File { return a.index[name] }

// Open returns a reader of the entry's uncompressed content that fails with an errs.Invalid error
// once more than max bytes come out. A declared size over max is refused before any read.
func (a *Archive) Open(f *zip.File, max int64) (io.ReadCloser, error) {
	if f.UncompressedSize64 > uint64(max) {
		return nil, errs.Invalidf("zip entry %q declares %d bytes, over the %d-byte limit for it", truncate(f.Name), f.UncompressedSize64, max)
	}
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return nil, errs.Invalidf("zip entry %q uses unsupported compression method %d", truncate(f.Name), f.Method)
	}
	if p, ok := a.r.(Prefetcher); ok {
		// DataOffset reads the local header (one small read); then hint the whole body.
		off, err := f.DataOffset()
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "zip entry %q is unreadable (truncated archive?)", truncate(f.Name))
		}
		p.Prefetch(off, int64(f.CompressedSize64))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "zip entry %q is unreadable (%s)", truncate(f.Name), zipReason(err))
	}
	return &boundedReader{rc: rc, left: max, name: f.Name, max: max}, nil
}

// ReadFile returns the whole uncompressed content of the entry, at most max bytes. Its buffer is
// allocated once, at the most the entry can really yield (EntryBound: its declared size, within
// what its compressed bytes can inflate to), never grown by doubling; the read then goes on to the
// stream's end, so that archive/zip checks the entry's size and CRC.
func (a *Archive) ReadFile(f *zip.File, max int64) ([]byte, error) {
	rc, err := a.Open(f, max)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, min(EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64), max))
	n, err := io.ReadFull(rc, buf)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return buf[:n], nil // the stream ended cleanly, sooner than its header said
	case err != nil:
		return nil, err
	}
	var one [1]byte
	if k, err := rc.Read(one[:]); k > 0 {
		return nil, errs.Invalidf("zip entry %q inflates to more than the %d bytes it declares", truncate(f.Name), len(buf))
	} else if err != nil && err != io.EOF {
		return nil, err
	}
	return buf, nil
}

// ReadHead returns the first n bytes of the entry's content (fewer when it is shorter), inflating
// no more than those: what a parser checks (a magic number, a header) before it reads an entry
// whole.
func (a *Archive) ReadHead(f *zip.File, n int) ([]byte, error) {
	rc, err := a.Open(f, max(int64(f.UncompressedSize64), int64(n)))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	head := make([]byte, min(int64(n), EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64)))
	k, err := io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return head[:k], nil
}

// ReadName is ReadFile for the entry with exactly this name; it returns (nil, nil) when absent.
func (a *Archive) ReadName(name string, max int64) ([]byte, error) {
	f := a.File(name)
	if f == nil {
		return nil, nil
	}
	return a.ReadFile(f, max)
}

// boundedReader enforces the actual uncompressed size, which a crafted header can understate.
type boundedReader struct {
	rc   io.ReadCloser
	left int64
	max  int64
	name string
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// Allow a clean EOF exactly at the limit; anything more is a bomb or a lie.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, errs.Invalidf("zip entry %q inflates to more than the %d-byte limit for it", truncate(b.name), b.max)
		}
		return 0, b.wrap(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, b.wrap(err)
}

func (b *boundedReader) wrap(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	return errs.Wrap(errs.Invalid, err, "zip entry %q is corrupt (%s)", truncate(b.name), zipReason(err))
}

func (b *boundedReader) Close() error { return b.rc.Close() }

func zipReason(err error) string {
	switch {
	case errors.Is(err, zip.ErrFormat):
		return "bad zip format"
	case errors.Is(err, zip.ErrChecksum):
		return "checksum mismatch"
	case errors.Is(err, zip.ErrAlgorithm):
		return "unsupported compression"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "truncated"
	default:
		return "unreadable"
	}
}

func truncate(name string) string {
	if len(name) > 120 {
		return name[:120] + "…"
	}
	return name
}

// Base returns the last element of an entry name, ignoring a trailing slash.
func Base(name string) string { return path.Base(strings.TrimSuffix(name, "/")) }

// IsMacOSXJunk reports entries added by macOS's archiver (__MACOSX/ folders, ._ resource forks),
// which parsers ignore.
func IsMacOSXJunk(name string) bool {
	return strings.HasPrefix(name, "__MACOSX/") || strings.Contains(name, "/__MACOSX/") || strings.HasPrefix(Base(name), "._")
}

// Describe names the first entries of the archive, for "unsupported package" messages.
func (a *Archive) Describe(maxNames int) string {
	var names []string
	for _, f := range a.zr.File {
		if IsMacOSXJunk(f.Name) {
			continue
		}
		names = append(names, truncate(f.Name))
		if len(names) == maxNames {
			names = append(names, fmt.Sprintf("… (%d entries)", len(a.zr.File)))
			break
		}
	}
	if len(names) == 0 {
		return "an empty zip archive"
	}
	return "a zip archive holding " + strings.Join(names, ", ")
}

// Prefetch hints r that [off, off+n) is about to be read, when r is a Prefetcher (a reader over
// remote storage); other readers ignore it. Every parser of a non-zip format uses it too.
func Prefetch(r io.ReaderAt, off, n int64) {
	if p, ok := r.(Prefetcher); ok && n > 0 {
		p.Prefetch(off, n)
	}
}

// ReadFullAt reads exactly n bytes at off, with io.ErrUnexpectedEOF for a short read.
func ReadFullAt(r io.ReaderAt, off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	k, err := r.ReadAt(b, off)
	if k == n {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}
