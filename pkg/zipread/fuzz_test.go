package zipread

import (
	"archive/zip"
	"bytes"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// fuzzMaxTimes bounds the repetitions a fuzz input may ask for: enough to pass MaxEntries with the
// smallest header and to rebuild issue 20's 2.6 M-header archive.
const fuzzMaxTimes = 3_000_000

// fuzzFile is data with data[start:start+n] repeated times times in place (computed on read, not
// stored), so a small corpus entry can stand for a directory of millions of headers.
func fuzzFile(data []byte, start, n uint16, times uint32) *synthFile {
	s, e := min(int(start), len(data)), min(int(start)+int(n), len(data))
	if e == s || times == 0 {
		return newSynth(synthSegment{data: data})
	}
	return newSynth(synthSegment{data: data[:s]}, synthSegment{data[s:e], int64(min(times, fuzzMaxTimes))}, synthSegment{data: data[e:]})
}

// fuzzAttack is a seed: an archive whose central directory is one header repeated times times,
// followed by tail (end records).
func fuzzAttack(f *testing.F, header, tail []byte, times uint32) {
	f.Add(append(append([]byte{}, header...), tail...), uint16(0), uint16(len(header)), times)
}

// FuzzOpen opens fuzzed archives, some of them huge (a repeated segment: see fuzzFile). Open must
// never panic, must fail only with errs.Invalid, and must never return more than MaxEntries
// entries; and the directory walk must never count fewer headers than archive/zip then reads,
// which is what makes the cap hold. An input that reaches a cap costs tens of milliseconds, so
// minimizing one takes long: run with -fuzzminimizetime 2s.
func FuzzOpen(f *testing.F) {
	f.Add(realZip(f, "Payload/A.app/Info.plist", "Payload/A.app/icon.png"), uint16(0), uint16(0), uint32(0))
	f.Add(realZip(f, "a"), uint16(0), uint16(0), uint32(0))
	one := centralHeader("a", 0)
	const n = 2_600_000
	// Issue 20, finding 5, and its variants (hostile_test.go).
	fuzzAttack(f, one, endRecord(n, 47*n, 0), n)
	fuzzAttack(f, one, endRecord(300_000, 47*(300_000%65536), 0), 300_000)
	fuzzAttack(f, one, append(zip64End(300_000%65536, 47*300_000, 0, 47*300_000), endRecord(0xffff, 0xffffffff, 0xffffffff)...), 300_000)
	fuzzAttack(f, one, endRecord(MaxEntries, 47*MaxEntries, 0), MaxEntries)
	f.Fuzz(func(t *testing.T, data []byte, start, n uint16, times uint32) {
		file := fuzzFile(data, start, n, times)
		a, err := Open(file, file.size)
		if err != nil {
			if errs.KindOf(err) != errs.Invalid {
				t.Fatalf("error %v is not errs.Invalid", err)
			}
			return
		}
		if len(a.Files()) > MaxEntries {
			t.Fatalf("Open returned %d entries", len(a.Files()))
		}
		walked, err := checkDirectory(file, file.size)
		if err != nil {
			t.Fatalf("Open accepted what checkDirectory refuses: %v", err)
		}
		zr, _ := zip.NewReader(file, file.size)
		if zr != nil && int64(len(zr.File)) > walked.Entries {
			t.Fatalf("archive/zip read %d headers, the walk counted %d", len(zr.File), walked.Entries)
		}
		for _, f := range a.Files() {
			if CheckName(f.Name) != nil {
				t.Fatalf("Open returned the unsafe name %q", f.Name)
			}
		}
	})
}

// TestFuzzFile checks the seed expansion: the archive is 122.2 MB of 2.6 M headers.
func TestFuzzFile(t *testing.T) {
	one := centralHeader("a", 0)
	data := append(append([]byte{}, one...), endRecord(2_600_000, 47*2_600_000, 0)...)
	f := fuzzFile(data, 0, uint16(len(one)), 2_600_000)
	if f.size != 47*2_600_000+22 {
		t.Fatalf("size %d", f.size)
	}
	got := make([]byte, 100)
	if _, err := f.ReadAt(got, 47*1000-3); err != nil || !bytes.Equal(got[3:50], one) {
		t.Fatalf("ReadAt = %x, %v", got, err)
	}
}
