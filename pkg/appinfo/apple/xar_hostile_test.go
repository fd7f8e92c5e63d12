package apple

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// appleAllocated runs f and returns the bytes it allocated.
func appleAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// appleZlib compresses data at the best ratio.
func appleZlib(data []byte) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zw.Write(data)
	zw.Close()
	return z.Bytes()
}

// appleUnderstate rewrites a xar header to declare a 100-byte table of contents, so that the
// declared-size check passes and only the streamed parse stands between the TOC and the server.
func appleUnderstate(pkg []byte) []byte {
	binary.BigEndian.PutUint64(pkg[16:], 100)
	return pkg
}

// applePKGBombs are small .pkg files whose XML costs far more to parse than they weigh. Before
// the TOC was streamed with limits, each cost hundreds of MB or seconds of CPU.
func applePKGBombs() []struct {
	name, want string
	budget     uint64 // bytes the refusal may allocate: in proportion to the caps (about 250 bytes per element), doubled for the race detector's heavier allocation
	data       []byte
} {
	pkgInfo := []byte(`<pkg-info identifier="com.example.x" version="1.0"/>`)
	honest := appleXarFile("PackageInfo", "application/octet-stream", len(pkgInfo), 0, len(pkgInfo))
	bigPkgInfo := appleZlib([]byte(`<pkg-info identifier="com.example.x" version="1.0">` + strings.Repeat("<bundle/>", (MaxPlistBytes-100)/9) + `</pkg-info>`))
	bigDist := appleZlib([]byte(`<installer-gui-script><product id="com.example.x" version="1.0"/>` + strings.Repeat("<pkg-ref/>", (MaxPlistBytes-100)/10) + `</installer-gui-script>`))
	// A valid PackageInfo of 3.9 MiB: few elements, no token over the limit; eight of them are
	// within every per-document limit, and over the parse's budget of bytes.
	paddedPkgInfo := []byte(`<pkg-info identifier="com.example.x" version="1.0">` + strings.Repeat(strings.Repeat(" ", 60_000)+"<bundle/>", 65) + `</pkg-info>`)
	paddedZ := appleZlib(paddedPkgInfo)
	eight := strings.Repeat(appleXarFile("PackageInfo", "application/x-gzip", len(paddedPkgInfo), 0, len(paddedZ)), 8)
	return []struct {
		name, want string
		budget     uint64
		data       []byte
	}{
		// Issue 20, finding 6: 24 KB, a TOC of 16 MiB of <file/>; it cost 5.6 CPU-s and +340 MB
		// on the server. Its header declares the TOC's size, over the cap.
		{"TOC of 16 MiB of empty files", "over the", 1 << 20, appletest.BuildTOCBomb("", "<file/>", 16<<20, nil)},
		// The same with a header that understates the TOC.
		{"TOC of 16 MiB of empty files, size understated", "elements", 32 << 20, appleUnderstate(appletest.BuildTOCBomb("", "<file/>", 16<<20, nil))},
		// The same behind an honest PackageInfo: it parsed, after the same cost.
		{"honest package behind 16 MiB of empty files", "elements", 32 << 20, appleUnderstate(appletest.BuildTOCBomb(honest, "<file/>", 16<<20, pkgInfo))},
		{"TOC nested 1 M elements deep", "deeper than", 4 << 20, appletest.BuildTOCBomb("", "<a>", MaxXarTOCBytes, nil)},
		{"TOC with a 4 MiB name", "over", 4 << 20, appletest.BuildTOCBomb("<file><name>", "A", MaxXarTOCBytes, nil)},
		{"TOC with a 4 MiB comment", "over", 4 << 20, appletest.BuildTOCBomb("<!--", "<", MaxXarTOCBytes, nil)},
		{"PackageInfo of 4 MiB of empty bundles", "elements", 64 << 20, appletest.BuildXar([]byte("<xar><toc>"+
			appleXarFile("PackageInfo", "application/x-gzip", MaxPlistBytes-100, 0, len(bigPkgInfo))+"</toc></xar>"), bigPkgInfo)},
		{"Distribution of 4 MiB of empty pkg-refs", "elements", 64 << 20, appletest.BuildXar([]byte("<xar><toc>"+
			appleXarFile("Distribution", "application/x-gzip", MaxPlistBytes-100, 0, len(bigDist))+"</toc></xar>"), bigDist)},
		{"eight PackageInfo files of 3.9 MiB", "in all", 96 << 20, appletest.BuildXar([]byte("<xar><toc>"+eight+"</toc></xar>"), paddedZ)},
	}
}

// TestPKGSmallFileLargeCost replays issue 20's finding 6 and its variants: each is refused with
// errs.Invalid, and refusing it allocates a few MiB at most, whatever the XML holds.
func TestPKGSmallFileLargeCost(t *testing.T) {
	for _, tc := range applePKGBombs() {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			start := time.Now()
			alloc := appleAllocated(func() { _, err = parsePKG(bytes.NewReader(tc.data), int64(len(tc.data))) })
			t.Logf("%d-byte .pkg: %v, allocated %.1f MiB", len(tc.data), time.Since(start).Round(time.Millisecond), float64(alloc)/(1<<20))
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("parsePKG error %v; want errs.Invalid mentioning %q", err, tc.want)
			}
			if alloc > tc.budget {
				t.Errorf("refusing it allocated %.1f MiB; want at most %.0f MiB", float64(alloc)/(1<<20), float64(tc.budget)/(1<<20))
			}
		})
	}
}

// BenchmarkPKGTOCBomb parses issue 20's 24 KB .pkg (finding 6), with its header understating the
// TOC so that the parse is what refuses it: time and allocations per refusal.
func BenchmarkPKGTOCBomb(b *testing.B) {
	data := appleUnderstate(appletest.BuildTOCBomb("", "<file/>", 16<<20, nil))
	b.ReportAllocs()
	b.ReportMetric(float64(len(data)), "package-bytes")
	for b.Loop() {
		if _, err := parsePKG(bytes.NewReader(data), int64(len(data))); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkParsePKG parses a small honest product archive, to compare with the bombs.
func BenchmarkParsePKG(b *testing.B) {
	data := appletest.BuildPKG(appletest.PKGOptions{Distribution: true, Title: "Demo", MinOS: "11.0"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parsePKG(bytes.NewReader(data), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
