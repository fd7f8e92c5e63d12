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
	f.Add(zip64Archive(f), uint16(0), uint16(0), uint32(0))
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
		// The survey's inflated bytes bound what archive/zip's entries can yield: the parse
		// budget's bounds rest on it.
		if zr != nil {
			var sum int64
			for _, f := range zr.File {
				sum = min(sum+EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64), 1<<50)
			}
			if sum > walked.InflatedBytes {
				t.Fatalf("archive/zip's entries can yield %d bytes, the survey says %d", sum, walked.InflatedBytes)
			}
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

// zip64Archive is an archive whose entries declare sizes past 4 GiB, so that their central
// directory records carry zip64 extra fields (the survey reads the sizes from them).
func zip64Archive(t testing.TB) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i, h := range []*zip.FileHeader{
		{Name: "big.bin", Method: zip.Deflate, CompressedSize64: 10, UncompressedSize64: 1 << 33},
		{Name: "stored.bin", Method: zip.Store, CompressedSize64: 1<<32 + 5, UncompressedSize64: 1<<32 + 5},
	} {
		w, err := zw.CreateRaw(h)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			_, _ = w.Write(make([]byte, 10))
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The survey reads zip64 sizes from the extra field: a deflated entry's bound is within what its
// compressed bytes can inflate to, a stored one's its size.
func TestSurveyZip64(t *testing.T) {
	data := zip64Archive(t)
	s, err := SurveyDirectory(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(10*MaxDeflateRatio+1<<10) + 1<<32 + 5; s.Entries != 2 || s.InflatedBytes != want {
		t.Errorf("survey %+v, want 2 entries and %d inflated bytes", s, want)
	}
}
