package zipread

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread/ziptest"
)

// hiddenEntriesAttacks are central directories that hold more than the end record admits. Each
// was accepted by Open before the directory was walked, and archive/zip allocated a File for every
// header it found.
func hiddenEntriesAttacks() []struct {
	name, want string
	file       *synthFile
} {
	one := centralHeader("a", 0) // 47 bytes
	const pad = 122_000_000
	long := centralHeader(strings.Repeat("n", 0xffff), 0)
	return []struct {
		name, want string
		file       *synthFile
	}{
		{
			// Issue 20, finding 5: 123 MB, 2.6 M headers, the 16-bit count saying N mod 65536.
			// Uploading it took the server's RSS from 44 to 698 MB before the 422.
			name: "16-bit count wraps", want: "entries",
			file: newSynth(synthSegment{one, 2_600_000}, synthSegment{data: endRecord(2_600_000, 47*2_600_000, 0)}),
		},
		{
			// The same with the directory size understated too: archive/zip reads headers until one
			// is not a header, whatever the size says.
			name: "directory size understated", want: "entries",
			file: newSynth(synthSegment{one, 300_000}, synthSegment{data: endRecord(300_000, 47*(300_000%65536), 0)}),
		},
		{
			// A zip64 end record whose 64-bit count is N mod 65536.
			name: "zip64 count mod 65536", want: "entries",
			file: newSynth(synthSegment{one, 300_000},
				synthSegment{data: zip64End(300_000%65536, 47*300_000, 0, 47*300_000)},
				synthSegment{data: endRecord(0xffff, 0xffffffff, 0xffffffff)}),
		},
		{
			// One entry, but a zip64 record (reached through the offset marker, with a 16-bit count
			// that looks small) declaring 4 M entries: archive/zip preallocated 32 MB for them.
			name: "zip64 declared count behind the offset marker", want: "declares 4063233 entries",
			file: newSynth(synthSegment{data: []byte{0}, times: pad}, synthSegment{data: one},
				synthSegment{data: zip64End(62*65536+1, 47, pad, pad+47)},
				synthSegment{data: endRecord(1, 47, 0xffffffff)}),
		},
		{
			// Few entries, each with a 64 KiB name: a 34 MB directory archive/zip keeps twice.
			name: "long names bloat the directory", want: "central directory",
			file: newSynth(synthSegment{long, 520}, synthSegment{data: endRecord(520, uint32(520*len(long)), 0)}),
		},
	}
}

// TestOpenRefusesHiddenEntries replays issue 20's finding 5 and its variants: the entry cap holds
// for what the central directory really holds, and refusing costs memory independent of the count.
func TestOpenRefusesHiddenEntries(t *testing.T) {
	for _, tc := range hiddenEntriesAttacks() {
		t.Run(tc.name, func(t *testing.T) {
			var a *Archive
			var err error
			alloc, kept := memCost(func() { a, err = Open(tc.file, tc.file.size) })
			t.Logf("%.1f MB file: allocated %s, kept %s, read %s, peak RSS %s", float64(tc.file.size)/1e6, mib(alloc), mib(kept), mib(uint64(tc.file.read.Load())), peakRSS())
			if err == nil {
				t.Fatalf("Open accepted it: %d entries", len(a.Files()))
			}
			if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (kind %v), want errs.Invalid mentioning %q", err, errs.KindOf(err), tc.want)
			}
			if alloc > 1<<20 {
				t.Errorf("refusing it allocated %s; want under 1 MiB", mib(alloc))
			}
			if n := tc.file.read.Load(); n > MaxDirectoryBytes+1<<20 {
				t.Errorf("refusing it read %s; want at most the directory cap", mib(uint64(n)))
			}
		})
	}
}

// TestOpenAtTheCap opens an archive of exactly MaxEntries headers (accepted) and one more
// (refused), and records what the largest acceptable directory costs.
func TestOpenAtTheCap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates the largest directory Open accepts")
	}
	one := centralHeader("a", 0)
	for _, n := range []int64{MaxEntries, MaxEntries + 1} {
		f := newSynth(synthSegment{one, n}, synthSegment{data: endRecord(uint64(n), uint32(47*n), 0)})
		var a *Archive
		var err error
		alloc, kept := memCost(func() { a, err = Open(f, f.size) })
		t.Logf("%d headers: allocated %s, kept %s, read %s", n, mib(alloc), mib(kept), mib(uint64(f.read.Load())))
		switch {
		case n == MaxEntries && (err != nil || len(a.Files()) != MaxEntries):
			t.Errorf("%d entries: %v", n, err)
		case n > MaxEntries && errs.KindOf(err) != errs.Invalid:
			t.Errorf("%d entries: %v, want errs.Invalid", n, err)
		}
		a = nil
	}
}

// TestWriteHiddenEntries: ziptest's streamed archive is the attack, byte for byte the synthetic
// one above, and Open refuses it.
func TestWriteHiddenEntries(t *testing.T) {
	var buf bytes.Buffer
	n, err := ziptest.WriteHiddenEntries(&buf, MaxEntries+1)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("wrote %d (%d), %v", n, buf.Len(), err)
	}
	_, err = Open(bytes.NewReader(buf.Bytes()), n)
	if errs.KindOf(err) != errs.Invalid || !strings.Contains(err.Error(), "entries") {
		t.Fatalf("Open: %v", err)
	}
	synth := newSynth(synthSegment{centralHeader("a", 0), MaxEntries + 1}, synthSegment{data: endRecord(MaxEntries+1, 47*(MaxEntries+1), 0)})
	want := make([]byte, synth.size)
	if _, err := synth.ReadAt(want, 0); err != nil || !bytes.Equal(want, buf.Bytes()) {
		t.Fatalf("ziptest's archive differs from the synthetic one (%v)", err)
	}
}

// BenchmarkOpenHiddenEntries refuses issue 20's 2.6 M-header archive: time, allocations and bytes
// read per refusal.
func BenchmarkOpenHiddenEntries(b *testing.B) {
	f := newSynth(synthSegment{centralHeader("a", 0), 2_600_000}, synthSegment{data: endRecord(2_600_000, 47*2_600_000, 0)})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(f, f.size); err == nil {
			b.Fatal("accepted")
		}
	}
	b.ReportMetric(float64(f.read.Load())/float64(b.N), "bytes-read/op")
}
