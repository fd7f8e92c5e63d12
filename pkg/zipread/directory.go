package zipread

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Why the directory is walked before archive/zip sees it
//
// archive/zip.NewReader reads central-directory headers from the directory's start until one is
// not a header, allocating a File (and a copy of its name, extra field and comment) for each, and
// only then compares the count with the end record's, in 16 bits. So neither the end record's
// count nor its directory size bounds what it allocates: a 123 MB upload holding 2.6 M headers
// behind a count of N mod 65536 cost the server 700 MB. checkDirectory finds the
// directory exactly where archive/zip will, and walks it with a fixed 64 KiB buffer, counting
// headers and their bytes, stopping where archive/zip stops (a short read or a record that is not
// a header) or as soon as MaxEntries or MaxDirectoryBytes is passed. What archive/zip then
// allocates is bounded by the caps (about 300 bytes per entry plus twice the directory's bytes),
// never by what the archive declares or holds.

// MaxDirectoryBytes is the most bytes the central directory may really occupy. archive/zip keeps
// every name, extra field and comment (about twice the directory in memory); 32 MiB is eight times
// the directory of a 50,000-file game .ipa.
const MaxDirectoryBytes = 32 << 20

// Signatures and fixed lengths of the zip records read here (APPNOTE.TXT 4.3).
const (
	sigCentralHeader = 0x02014b50
	sigEnd           = 0x06054b50
	sigZip64End      = 0x06064b50
	sigZip64Locator  = 0x07064b50
	centralHeaderLen = 46
	endLen           = 22
	zip64EndLen      = 56
	zip64LocatorLen  = 20
	walkBufferSize   = 64 << 10
)

// directoryEnd is what the end records say, resolved the way archive/zip resolves them.
type directoryEnd struct {
	records uint64 // entries the (zip64) end record declares
	size    uint64 // bytes of directory it declares
	offset  uint64 // where it says the directory starts, before the base offset
	// starts are the offsets archive/zip may read the directory from: the declared offset plus the
	// base offset it computes, and the declared offset alone (it falls back to that when a header
	// is found there; both are walked rather than guessing which it picks).
	starts []int64
}

// checkDirectory refuses, with an errs.Invalid error, an archive whose end records declare more
// than MaxEntries entries or whose central directory really holds more than MaxEntries headers or
// MaxDirectoryBytes bytes. It reads the end records and the directory once, with memory independent
// of either count.
// It returns, of the walks, the most headers, directory bytes and inflated bytes found: archive/zip
// keeps no more than these.
func checkDirectory(r io.ReaderAt, size int64) (Survey, error) {
	end, err := readDirectoryEnd(r, size)
	if err != nil {
		return Survey{}, err
	}
	if end.records > MaxEntries {
		return Survey{}, errs.Invalidf("zip archive declares %d entries, over the limit of %d", end.records, MaxEntries)
	}
	var most Survey
	for _, start := range end.starts {
		s, err := walkDirectory(r, size, start)
		if err != nil {
			return Survey{}, err
		}
		most.Entries = max(most.Entries, s.Entries)
		most.DirectoryBytes = max(most.DirectoryBytes, s.DirectoryBytes)
		most.InflatedBytes = max(most.InflatedBytes, s.InflatedBytes)
	}
	return most, nil
}

// Survey is what a walk of a zip's central directory found, before anything is allocated for it.
type Survey struct {
	// Entries and DirectoryBytes are the headers and their bytes.
	Entries, DirectoryBytes int64
	// InflatedBytes is the sum over the entries of what each can really inflate to (EntryBound):
	// what reading every entry once, whole, could take.
	InflatedBytes int64
}

// OpenCost is about what archive/zip allocates to open an archive with this directory: its File
// values (about 300 bytes each, with their index entry) and a copy of every name, extra field and
// comment, with slack.
func (s Survey) OpenCost() int64 { return 400*s.Entries + 2*s.DirectoryBytes + 64<<10 }

// SurveyDirectory walks the central directory of the zip in r (size bytes) as Open does first,
// with memory independent of what it holds, and says what it found. Its errors are Open's.
func SurveyDirectory(r io.ReaderAt, size int64) (Survey, error) { return checkDirectory(r, size) }

// MaxDeflateRatio is the most a deflate stream can expand: a length-258 match coded in about two
// bits, 1032 to 1, rounded up. An entry cannot inflate to more than this times its compressed size
// (plus a little for the stream's end), whatever its header declares.
const MaxDeflateRatio = 1040

// EntryBound is the most bytes an entry of this method and these declared sizes can yield:
// archive/zip refuses an entry that inflates past its declared uncompressed size, a stored entry
// holds its compressed bytes, and deflate expands at most MaxDeflateRatio times. Methods other
// than store and deflate yield nothing (Archive.Open refuses them).
func EntryBound(method uint16, compressed, uncompressed uint64) int64 {
	const most = 1 << 40
	var b uint64
	switch method {
	case zip.Store:
		b = min(compressed, uncompressed)
	case zip.Deflate:
		if compressed > most/MaxDeflateRatio {
			b = uncompressed
		} else {
			b = min(uncompressed, compressed*MaxDeflateRatio+1<<10)
		}
	default:
		return 0
	}
	return int64(min(b, most))
}

// walkDirectory counts the central-directory headers from start as archive/zip reads them: until a
// short read or a record without the header signature. It stops with an error as soon as the
// count passes MaxEntries or the bytes pass MaxDirectoryBytes. It may count a header more than
// archive/zip keeps (one whose zip64 extra field archive/zip rejects), never fewer.
func walkDirectory(r io.ReaderAt, size, start int64) (s Survey, err error) {
	if start < 0 || start >= size {
		return s, nil
	}
	if p, ok := r.(Prefetcher); ok {
		p.Prefetch(start, min(size-start, walkBufferSize))
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, start, size-start), walkBufferSize)
	var hdr [centralHeaderLen]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return s, readErr(err)
		}
		if binary.LittleEndian.Uint32(hdr[:]) != sigCentralHeader {
			return s, nil
		}
		s.Entries++
		if s.Entries > MaxEntries {
			return s, errs.Invalidf("zip archive holds more than %d entries in its central directory (its end record declares fewer)", MaxEntries)
		}
		nameLen, extraLen := int(binary.LittleEndian.Uint16(hdr[28:])), int(binary.LittleEndian.Uint16(hdr[30:]))
		vars := int64(nameLen) + int64(extraLen) + int64(binary.LittleEndian.Uint16(hdr[32:]))
		s.DirectoryBytes += centralHeaderLen + vars
		if s.DirectoryBytes > MaxDirectoryBytes {
			return s, errs.Invalidf("zip archive's central directory is over the limit of %d bytes", MaxDirectoryBytes)
		}
		method := binary.LittleEndian.Uint16(hdr[10:])
		comp, uncomp := uint64(binary.LittleEndian.Uint32(hdr[20:])), uint64(binary.LittleEndian.Uint32(hdr[24:]))
		if comp == math.MaxUint32 || uncomp == math.MaxUint32 {
			// The zip64 sizes are in the extra field; read them rather than trust the sentinels.
			if _, err := br.Discard(nameLen); err != nil {
				return s, readErr(err)
			}
			extra := make([]byte, extraLen)
			if _, err := io.ReadFull(br, extra); err != nil {
				return s, readErr(err)
			}
			comp, uncomp = zip64Sizes(extra, comp, uncomp)
			vars -= int64(nameLen + extraLen)
		}
		s.InflatedBytes = min(s.InflatedBytes+EntryBound(method, comp, uncomp), 1<<50)
		if _, err := br.Discard(int(vars)); err != nil {
			return s, readErr(err)
		}
	}
}

// zip64Sizes reads the zip64 extended-information extra field (APPNOTE.TXT 4.5.3): the 64-bit
// sizes, in this order, of those whose 32-bit field is the sentinel.
func zip64Sizes(extra []byte, comp, uncomp uint64) (uint64, uint64) {
	for len(extra) >= 4 {
		tag, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		extra = extra[4:]
		if n > len(extra) {
			break
		}
		field := extra[:n]
		extra = extra[n:]
		if tag != 0x0001 {
			continue
		}
		if uncomp == math.MaxUint32 && len(field) >= 8 {
			uncomp, field = binary.LittleEndian.Uint64(field), field[8:]
		}
		if comp == math.MaxUint32 && len(field) >= 8 {
			comp = binary.LittleEndian.Uint64(field)
		}
	}
	return comp, uncomp
}

// readErr ends a walk: the end of the file ends the directory (archive/zip stops there too); any
// other read error fails the open, since archive/zip, reading again, might get further.
func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	if _, ok := errs.AsError(err); ok {
		return err
	}
	return errs.Wrap(errs.Invalid, err, "not a valid zip archive (unreadable central directory)")
}

// readDirectoryEnd finds the end record and, when its fields say so, the zip64 end record, with
// the same search and the same conditions as archive/zip's readDirectoryEnd (Go 1.26), so that the
// directory walked is the one archive/zip will read.
func readDirectoryEnd(r io.ReaderAt, size int64) (directoryEnd, error) {
	var end directoryEnd
	if size < endLen {
		return end, errs.Invalidf("not a zip archive (%d bytes is too short)", size)
	}
	// The end record is in the last 1 KiB, else in the last 65 KiB (a comment of up to 64 KiB).
	var buf []byte
	var endOff int64 = -1
	for _, n := range []int64{1024, 65 * 1024} {
		n = min(n, size)
		buf = make([]byte, n)
		if _, err := r.ReadAt(buf, size-n); err != nil && err != io.EOF {
			return end, errs.Wrap(errs.Invalid, err, "not a zip archive (unreadable end of file)")
		}
		if p := findEndRecord(buf); p >= 0 {
			buf, endOff = buf[p:], size-n+int64(p)
			break
		}
		if n == size {
			break
		}
	}
	if endOff < 0 {
		return end, errs.Invalidf("not a zip archive (no end-of-central-directory record)")
	}
	records := uint64(binary.LittleEndian.Uint16(buf[10:]))
	dirSize := uint64(binary.LittleEndian.Uint32(buf[12:]))
	dirOff := uint64(binary.LittleEndian.Uint32(buf[16:]))
	// archive/zip looks for zip64 records on these values (0xffff for the size, as it does).
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		if p, ok, err := findZip64End(r, endOff); err != nil {
			return end, err
		} else if ok {
			var rec [zip64EndLen]byte
			if _, err := r.ReadAt(rec[:], p); err != nil {
				return end, errs.Wrap(errs.Invalid, err, "not a valid zip archive (unreadable zip64 end record)")
			}
			if binary.LittleEndian.Uint32(rec[:]) != sigZip64End {
				return end, errs.Invalidf("not a valid zip archive (bad zip64 end record)")
			}
			endOff = p
			records = binary.LittleEndian.Uint64(rec[32:])
			dirSize = binary.LittleEndian.Uint64(rec[40:])
			dirOff = binary.LittleEndian.Uint64(rec[48:])
		}
	}
	if dirSize > math.MaxInt64 || dirOff > math.MaxInt64 {
		return end, errs.Invalidf("not a valid zip archive (central directory out of range)")
	}
	end.records, end.size, end.offset = records, dirSize, dirOff
	base := endOff - int64(dirSize) - int64(dirOff) // wraps as archive/zip's does
	if o := base + int64(dirOff); o < 0 || o >= size {
		return end, errs.Invalidf("not a valid zip archive (central directory out of range)")
	}
	end.starts = append(end.starts, base+int64(dirOff))
	if base > 0 {
		end.starts = append(end.starts, int64(dirOff))
	}
	return end, nil
}

// findEndRecord is archive/zip's findSignatureInBlock: the last end-record signature with room for
// the record, or -1, also when that record's comment runs past the block.
func findEndRecord(b []byte) int {
	for i := len(b) - endLen; i >= 0; i-- {
		if b[i] == 'P' && b[i+1] == 'K' && b[i+2] == 0x05 && b[i+3] == 0x06 {
			n := int(b[i+endLen-2]) | int(b[i+endLen-1])<<8
			if n+endLen+i > len(b) {
				return -1
			}
			return i
		}
	}
	return -1
}

// findZip64End reads the zip64 locator just before the end record at endOff and returns the
// offset of the zip64 end record it points at; ok is false when there is no valid locator (or,
// as archive/zip has it, when the offset is negative as an int64).
func findZip64End(r io.ReaderAt, endOff int64) (off int64, ok bool, err error) {
	locOff := endOff - zip64LocatorLen
	if locOff < 0 {
		return 0, false, nil
	}
	var loc [zip64LocatorLen]byte
	if _, err := r.ReadAt(loc[:], locOff); err != nil {
		return 0, false, errs.Wrap(errs.Invalid, err, "not a valid zip archive (unreadable zip64 locator)")
	}
	if !bytes.Equal(loc[:4], []byte("PK\x06\x07")) || binary.LittleEndian.Uint32(loc[4:]) != 0 || binary.LittleEndian.Uint32(loc[16:]) != 1 {
		return 0, false, nil
	}
	off = int64(binary.LittleEndian.Uint64(loc[8:]))
	return off, off >= 0, nil
}
