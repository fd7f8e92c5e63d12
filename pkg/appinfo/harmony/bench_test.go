package harmony_test

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
)

// countingFile counts the ReadAt calls on a file and the bytes they return: each call stands for
// one ranged GET of the object in storage (before any block cache).
type countingFile struct {
	f     *os.File
	reads atomic.Int64
	bytes atomic.Int64
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.reads.Add(1)
	c.bytes.Add(int64(n))
	return n, err
}

// benchParse writes a package with write to a temporary file (streamed, never held in memory),
// then parses it b.N times and reports the bytes and ReadAt calls of one parse.
func benchParse(b *testing.B, write func(io.Writer) error, check func(*appinfo.Info) bool) {
	path := filepath.Join(b.TempDir(), "large")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := write(f); err != nil {
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
	r := &countingFile{f: f}
	b.ReportAllocs()
	for b.Loop() {
		info, err := appinfo.Parse(r, st.Size())
		if err != nil || !check(info) {
			b.Fatalf("Parse = %+v, %v", info, err)
		}
	}
	b.ReportMetric(float64(r.bytes.Load())/float64(b.N), "bytes_read/op")
	b.ReportMetric(float64(r.reads.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(st.Size()), "package_bytes")
}

// BenchmarkParseLargeHAP parses a 256 MiB .hap: 256 MiB of native libraries
// (libs/arm64-v8a/*.so) before module.json, pack.info, resources.index and the media, as a
// release build lays them out.
func BenchmarkParseLargeHAP(b *testing.B) {
	o := harmonytest.HAPOptions{FillerBytes: 256 << 20, IconSize: 192, Labels: map[string]string{"zh": "演示"}}
	benchParse(b, func(w io.Writer) error { return harmonytest.WriteHAP(w, o) },
		func(info *appinfo.Info) bool {
			return info.Format == appinfo.FormatHAP && info.Name == "Demo" && info.Icon != nil
		})
}

// BenchmarkParseLargeApp parses a 256 MiB .app holding the same HAP stored: the HAP is read in
// place, a zip within the zip.
func BenchmarkParseLargeApp(b *testing.B) {
	o := harmonytest.AppOptions{HAP: harmonytest.HAPOptions{FillerBytes: 256 << 20, IconSize: 192, Labels: map[string]string{"zh": "演示"}}}
	benchParse(b, func(w io.Writer) error { return harmonytest.WriteApp(w, o) },
		func(info *appinfo.Info) bool {
			return info.Format == appinfo.FormatHarmonyApp && info.Name == "Demo" && info.Icon != nil
		})
}
