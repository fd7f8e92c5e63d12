package apple

import (
	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// appleCountingFile counts the bytes read from a file and the ReadAt calls (each stands for one
// ranged GET of the object in storage, before any block cache).
type appleCountingFile struct {
	f     *os.File
	read  atomic.Int64
	calls atomic.Int64
}

func (c *appleCountingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.read.Add(int64(n))
	c.calls.Add(1)
	return n, err
}

// BenchmarkParseLargeIPA parses a 256 MiB .ipa (streamed to a temporary file by WriteIPA, never
// held in memory) and reports how many bytes each parse reads: the central directory and a few
// entries, not the package.
func BenchmarkParseLargeIPA(b *testing.B) {
	path := filepath.Join(b.TempDir(), "large.ipa")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	err = appletest.WriteIPA(f, appletest.IPAOptions{
		FillerBytes: 256 << 20,
		Profile:     &appletest.ProfileOptions{Devices: []string{"a"}},
		Icons: []appletest.IconFile{
			{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true},
			{Name: "AppIcon60x60@3x.png", Size: 180, CgBI: true},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	f, err = os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r := &appleCountingFile{f: f}
	b.ReportAllocs()
	for b.Loop() {
		info, err := appinfo.Parse(r, st.Size())
		if err != nil || info.Icon == nil || info.Icon.Width != 180 {
			b.Fatalf("Parse = %+v, %v", info, err)
		}
	}
	b.ReportMetric(float64(r.read.Load())/float64(b.N), "bytes-read/op")
	b.ReportMetric(float64(r.calls.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(st.Size()), "package-bytes")
}

// BenchmarkParseExportedIPA parses a 256 MiB .ipa laid out like an exported app
// (appletest.WriteBenchIPA): the metadata at the start, then a 64 MiB executable, Assets.car, the
// icons, 6 frameworks and 4,000 small resources before the central directory.
func BenchmarkParseExportedIPA(b *testing.B) {
	path := filepath.Join(b.TempDir(), "exported.ipa")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := appletest.WriteBenchIPA(f, appletest.BenchIPAOptions{Size: 256 << 20}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	if f, err = os.Open(path); err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	r := &appleCountingFile{f: f}
	b.ReportAllocs()
	for b.Loop() {
		info, err := appinfo.Parse(r, st.Size())
		if err != nil || info.Icon == nil || info.Icon.Width != 180 {
			b.Fatalf("Parse = %+v, %v", info, err)
		}
	}
	b.ReportMetric(float64(r.read.Load())/float64(b.N), "bytes-read/op")
	b.ReportMetric(float64(r.calls.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(st.Size()), "package-bytes")
}
