package zipread

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/test/testkit"
)

// synthSegment is a piece of a synthetic file: data, repeated times times (1 when 0).
type synthSegment struct {
	data  []byte
	times int64
}

// synthFile is an io.ReaderAt over a file made of repeated segments, computed on each read: a
// 123 MB zip whose central directory holds 2.6 M headers costs a few bytes of test memory, so
// the allocations measured around Open are the parser's alone. It counts the bytes read.
type synthFile struct {
	segs []synthSegment
	size int64
	read atomic.Int64
}

func newSynth(segs ...synthSegment) *synthFile {
	s := &synthFile{segs: segs}
	for i := range s.segs {
		if s.segs[i].times == 0 {
			s.segs[i].times = 1
		}
		s.size += int64(len(s.segs[i].data)) * s.segs[i].times
	}
	return s
}

func (s *synthFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := 0
	base := int64(0)
	for _, seg := range s.segs {
		l := int64(len(seg.data))
		segLen := l * seg.times
		for n < len(p) && off >= base && off < base+segLen {
			i := (off - base) % l
			c := copy(p[n:], seg.data[i:])
			n += c
			off += int64(c)
		}
		base += segLen
	}
	s.read.Add(int64(n))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// centralHeader is one central-directory record naming name, with a comment of commentLen bytes.
func centralHeader(name string, commentLen int) []byte {
	b := make([]byte, 46, 46+len(name)+commentLen)
	binary.LittleEndian.PutUint32(b[0:], 0x02014b50)
	binary.LittleEndian.PutUint16(b[4:], 20)
	binary.LittleEndian.PutUint16(b[6:], 20)
	binary.LittleEndian.PutUint16(b[28:], uint16(len(name)))
	binary.LittleEndian.PutUint16(b[32:], uint16(commentLen))
	b = append(b, name...)
	return append(b, make([]byte, commentLen)...)
}

// endRecord is an end-of-central-directory record declaring records entries (the 16-bit field
// takes records mod 65536, as a writer that does not use zip64 stores it) in size bytes at off.
func endRecord(records uint64, size, off uint32) []byte {
	b := make([]byte, 22)
	binary.LittleEndian.PutUint32(b[0:], 0x06054b50)
	binary.LittleEndian.PutUint16(b[8:], uint16(records))
	binary.LittleEndian.PutUint16(b[10:], uint16(records))
	binary.LittleEndian.PutUint32(b[12:], size)
	binary.LittleEndian.PutUint32(b[16:], off)
	return b
}

// zip64End is a zip64 end record at recOff followed by its locator.
func zip64End(records, size, off uint64, recOff int64) []byte {
	b := make([]byte, 56+20)
	binary.LittleEndian.PutUint32(b[0:], 0x06064b50)
	binary.LittleEndian.PutUint64(b[4:], 44)
	binary.LittleEndian.PutUint16(b[12:], 45)
	binary.LittleEndian.PutUint16(b[14:], 45)
	binary.LittleEndian.PutUint64(b[24:], records)
	binary.LittleEndian.PutUint64(b[32:], records)
	binary.LittleEndian.PutUint64(b[40:], size)
	binary.LittleEndian.PutUint64(b[48:], off)
	l := b[56:]
	binary.LittleEndian.PutUint32(l[0:], 0x07064b50)
	binary.LittleEndian.PutUint64(l[8:], uint64(recOff))
	binary.LittleEndian.PutUint32(l[16:], 1)
	return b
}

// memCost runs f and returns the bytes it allocated and the live heap it left behind (after a GC;
// what stays while the result of f is kept).
func memCost(f func()) (allocated, retained uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	allocated = after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	if after.HeapAlloc > before.HeapAlloc {
		retained = after.HeapAlloc - before.HeapAlloc
	}
	return allocated, retained
}

// peakRSS is the process's peak resident set (VmHWM), or "" where /proc is absent.
func peakRSS() string {
	m, err := testkit.ReadMemory(0)
	if err != nil {
		return ""
	}
	return mib(uint64(m.HWM))
}

func mib(n uint64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

// realZip is a small archive written by archive/zip, for seeds and sanity checks.
func realZip(t testing.TB, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("content of " + n))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
