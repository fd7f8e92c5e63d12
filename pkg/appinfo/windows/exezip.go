package windows

import (
	"archive/zip"
	"errors"
	"io"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A zip holding an .exe (Zealot's rule for Windows builds). A stored .exe is read in place with
// ranged reads, like a bare one. A deflated one has no random access: the parser inflates its
// first 64 KiB (the headers), then inflates on, discarding, up to the resource section, which it
// keeps in memory (at most MaxResourceSectionKeep), and reads the resources from there. The cost
// is inflating the .exe up to the end of its resource section, usually the last section, so
// nearly the whole entry; past MaxEXEInflate bytes the parser stops and returns what the headers
// say (the architecture), without version or icon.

const (
	exeZipHead     = 64 << 10 // inflated bytes kept from the start of a deflated .exe
	maxEXEZipBytes = 1 << 40  // declared uncompressed size beyond which the entry is refused
)

// ParseEXEZip reads the main .exe of a zip (the shallowest, the largest of those).
func ParseEXEZip(a *zipread.Archive) (*appinfo.Info, error) {
	f := mainEXE(a)
	if f == nil {
		return nil, errs.Invalidf("the zip holds no .exe")
	}
	if f.UncompressedSize64 > maxEXEZipBytes {
		return nil, errs.Invalidf("the zip's %s declares %d bytes, over the limit", clean(f.Name), f.UncompressedSize64)
	}
	size := int64(f.UncompressedSize64)
	var (
		info *appinfo.Info
		err  error
	)
	if r := storedReaderAt(f); r != nil {
		info, err = ParseEXE(r, size)
	} else {
		info, err = parseDeflatedEXE(a, f, MaxEXEInflate)
	}
	if err != nil {
		return nil, err
	}
	info.Format = appinfo.FormatEXEZip
	info.SetProperty("Executable", clean(f.Name))
	info.Sizes = appinfo.ZipBreakdown(a, exeZipCut(a, f.Name))
	return info, nil
}

// storedReaderAt returns a ranged reader over a stored entry's bytes within the archive, nil when
// the entry is compressed. archive/zip's OpenRaw returns an io.SectionReader of the archive.
func storedReaderAt(f *zip.File) io.ReaderAt {
	if f.Method != zip.Store || f.CompressedSize64 != f.UncompressedSize64 || f.Flags&0x1 != 0 {
		return nil
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil
	}
	r, _ := raw.(io.ReaderAt)
	return r
}

// parseDeflatedEXE reads a compressed .exe by inflating it forward, at most limit bytes (see the
// file comment).
func parseDeflatedEXE(a *zipread.Archive, f *zip.File, limit int64) (*appinfo.Info, error) {
	size := int64(f.UncompressedSize64)
	rc, err := a.Open(f, size)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// The window is never larger than what the entry can really inflate to, whatever the PE's
	// headers say of its sections.
	z := &inflateReaderAt{src: rc, limit: limit, size: zipread.EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64)}
	if err := z.fillHead(min(size, exeZipHead)); err != nil {
		return nil, err
	}
	pe, err := parsePEHeaders(z, size)
	if err != nil {
		return nil, err
	}
	pe.readCLR(z) // the .NET header sits in .text, before the resources
	if pe.rsrcRVA != 0 {
		off, avail, ok := pe.offset(pe.rsrcRVA, 16)
		if !ok {
			return nil, errs.Invalidf("the .exe's resource directory (RVA 0x%x) lies outside the file (truncated?)", pe.rsrcRVA)
		}
		// Keep the resource section from its directory on; resources elsewhere are read forward.
		if off+min(avail, MaxResourceSectionKeep) > limit {
			pe.rsrcRVA = 0 // too far in: headers only
		} else if err := z.keep(off, min(avail, MaxResourceSectionKeep)); err != nil {
			return nil, err
		}
	}
	return peInfo(z, pe, appinfo.FormatEXEZip)
}

// inflateReaderAt serves ReadAt over a forward-only stream: from the kept head, from the kept
// window, or by reading on from the stream's position (discarding what lies between).
type inflateReaderAt struct {
	src    io.Reader
	pos    int64 // bytes consumed from src
	limit  int64 // at most this many bytes are consumed
	size   int64 // the most the stream can yield (zipread.EntryBound)
	head   []byte
	win    []byte
	winOff int64
}

var errBehind = errors.New("read behind the inflated position")

func (z *inflateReaderAt) fillHead(n int64) error {
	z.head = make([]byte, n)
	if err := z.read(z.head); err != nil {
		return err
	}
	return nil
}

// read fills p from the stream at the current position.
func (z *inflateReaderAt) read(p []byte) error {
	if z.pos+int64(len(p)) > z.limit {
		return errs.Invalidf("the .exe would have to be inflated past %d bytes", z.limit)
	}
	n, err := io.ReadFull(z.src, p)
	z.pos += int64(n)
	if err != nil {
		if errs.KindOf(err) == errs.Invalid {
			return err
		}
		return errs.Wrap(errs.Invalid, err, "the zipped .exe is truncated or corrupt")
	}
	return nil
}

// skip discards the stream up to off.
func (z *inflateReaderAt) skip(off int64) error {
	if off > z.limit {
		return errs.Invalidf("the .exe would have to be inflated past %d bytes", z.limit)
	}
	if off <= z.pos {
		return nil
	}
	n, err := io.CopyN(io.Discard, z.src, off-z.pos)
	z.pos += n
	if err != nil {
		if errs.KindOf(err) == errs.Invalid {
			return err
		}
		return errs.Wrap(errs.Invalid, err, "the zipped .exe is truncated or corrupt")
	}
	return nil
}

// keep inflates [off, off+n) into the window.
func (z *inflateReaderAt) keep(off, n int64) error {
	if off+n <= int64(len(z.head)) {
		return nil
	}
	var pre []byte
	if off < z.pos {
		if off > int64(len(z.head)) || z.pos != int64(len(z.head)) {
			return errs.Invalidf("the .exe's resources overlap its headers")
		}
		pre = z.head[off:]
	} else if err := z.skip(off); err != nil {
		return err
	}
	if off+n > z.limit {
		return errs.Invalidf("the .exe would have to be inflated past %d bytes", z.limit)
	}
	if off+n > z.size {
		// The section runs past what the entry can inflate to: the window holds what there is,
		// and a read beyond it fails as the stream ends.
		n = max(int64(len(pre)), z.size-off)
	}
	win := make([]byte, n)
	copy(win, pre)
	if err := z.read(win[len(pre):]); err != nil {
		return err
	}
	z.win, z.winOff = win, off
	return nil
}

func (z *inflateReaderAt) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	switch {
	case off < 0:
		return 0, errBehind
	case end <= int64(len(z.head)):
		return copy(p, z.head[off:]), nil
	case z.win != nil && off >= z.winOff && end <= z.winOff+int64(len(z.win)):
		return copy(p, z.win[off-z.winOff:]), nil
	case off < int64(len(z.head)) && z.pos == int64(len(z.head)):
		n := copy(p, z.head[off:])
		if err := z.read(p[n:]); err != nil {
			return 0, err
		}
		return len(p), nil
	case off >= z.pos:
		if err := z.skip(off); err != nil {
			return 0, err
		}
		if err := z.read(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return 0, errBehind
}
