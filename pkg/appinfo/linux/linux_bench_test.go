package linux

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
)

const benchPayload = 256 << 20

// benchParse writes a package to a temporary file with write (streamed, never held in memory),
// then parses it through appinfo.Parse (claims included, as an upload does) and reports the
// bytes and ReadAt calls of each parse.
func benchParse(b *testing.B, write func(io.Writer) error, check func(*appinfo.Info) bool) {
	path := filepath.Join(b.TempDir(), "package")
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
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	r := &countingReader{r: f}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		info, err := appinfo.Parse(r, st.Size())
		if err != nil || !check(info) {
			b.Fatalf("Parse = %+v, %v", info, err)
		}
	}
	b.ReportMetric(float64(r.bytes.Load())/float64(b.N), "bytes_read/op")
	b.ReportMetric(float64(r.calls.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(st.Size()), "package_bytes")
}

// BenchmarkParseLargeDeb parses a 256 MiB .deb: control.tar.xz, then a data.tar holding 256 MiB.
func BenchmarkParseLargeDeb(b *testing.B) {
	benchParse(b, func(w io.Writer) error {
		_, err := linuxtest.WriteDeb(w, linuxtest.DebOptions{Compression: "xz", DataBytes: benchPayload,
			Before: []linuxtest.TarFile{{Name: "./md5sums", Data: make([]byte, 2000)}}})
		return err
	}, func(i *appinfo.Info) bool { return i.BundleID == "demo" })
}

// BenchmarkParseLargeRPM parses a 256 MiB .rpm (a 256 MiB payload after the headers).
func BenchmarkParseLargeRPM(b *testing.B) {
	benchParse(b, func(w io.Writer) error {
		_, err := linuxtest.WriteRPM(w, linuxtest.RPMOptions{PayloadBytes: benchPayload})
		return err
	}, func(i *appinfo.Info) bool { return i.BundleID == "demo" })
}

// BenchmarkParseLargeAppImage parses a 256 MiB AppImage: the runtime, then a squashfs image
// whose usr/lib/payload.bin holds 256 MiB beside the desktop file and a 256×256 icon.
func BenchmarkParseLargeAppImage(b *testing.B) {
	benchParse(b, func(w io.Writer) error {
		_, err := linuxtest.WriteAppImage(w, linuxtest.AppImageOptions{IconSize: 256, PayloadBytes: benchPayload})
		return err
	}, func(i *appinfo.Info) bool { return i.Icon != nil && i.Icon.Width == 256 })
}
