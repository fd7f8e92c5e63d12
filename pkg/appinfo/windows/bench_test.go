package windows

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
)

// countingFile counts the bytes and the ReadAt calls made on a file.
type countingFile struct {
	f     *os.File
	bytes atomic.Int64
	reads atomic.Int64
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.f.ReadAt(p, off)
	c.bytes.Add(int64(n))
	c.reads.Add(1)
	return n, err
}

// benchLarge writes a package with write to a temporary file (never held in memory), then
// parses it in a loop and reports the bytes and reads each parse costs.
func benchLarge(b *testing.B, write func(w io.Writer) error, check func(*appinfo.Info) bool) {
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

const benchSize = 256 << 20

var benchEXE = windowstest.PEOptions{TextBytes: benchSize, Version: windowstest.DefaultVersion("Demo", "1.2.3.4"),
	Icons: []windowstest.IconImage{{Size: 16}, {Size: 32}, {Size: 48}, {Size: 256, PNG: true}}}

// BenchmarkParseLargeEXE: a 256 MiB .text section before .rsrc.
func BenchmarkParseLargeEXE(b *testing.B) {
	benchLarge(b, func(w io.Writer) error { _, err := windowstest.WritePE(w, benchEXE); return err },
		func(i *appinfo.Info) bool { return i.Name == "Demo" && i.Icon != nil && i.Icon.Width == 256 })
}

// BenchmarkParseLargeEXEZip: the same .exe stored in a zip, read in place.
func BenchmarkParseLargeEXEZip(b *testing.B) {
	benchLarge(b, func(w io.Writer) error {
		return windowstest.WriteZip(w, windowstest.Entry{Name: "Demo/readme.txt", Data: []byte("hello")},
			windowstest.Entry{Name: "Demo/demo.exe", Fill: func(w io.Writer) error { _, err := windowstest.WritePE(w, benchEXE); return err }})
	}, func(i *appinfo.Info) bool {
		return i.Format == appinfo.FormatEXEZip && i.Name == "Demo" && i.Icon != nil
	})
}

// BenchmarkParseLargeMSI: a 256 MiB cabinet stream first, the tables and the FAT after it.
func BenchmarkParseLargeMSI(b *testing.B) {
	benchLarge(b, func(w io.Writer) error {
		_, err := windowstest.WriteMSI(w, windowstest.MSIOptions{CabBytes: benchSize, Icon: windowstest.ICO(windowstest.IconImage{Size: 48})})
		return err
	}, func(i *appinfo.Info) bool { return i.Name == "Field Tool" && i.Icon != nil })
}

// BenchmarkParseLargeMSIX: a 256 MiB stored payload before the manifest and logos.
func BenchmarkParseLargeMSIX(b *testing.B) {
	benchLarge(b, func(w io.Writer) error {
		return windowstest.WriteMSIX(w, windowstest.MSIXOptions{PayloadBytes: benchSize})
	},
		func(i *appinfo.Info) bool {
			return i.BundleID == "Acme.FieldTool" && i.Icon != nil && i.Icon.Width == 100
		})
}
