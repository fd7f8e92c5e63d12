package android_test

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
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
// then parses it b.N times through appinfo.Parse and reports the bytes and ReadAt calls of one
// parse.
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

// benchManifest is the manifest of the large packages: a label and a launcher icon resolved
// through the resource table, as in a release build.
var benchManifest = androidtest.AndroidManifest{
	Package: "com.example.large", VersionCode: 7, VersionName: "1.7", MinSDK: 24, TargetSDK: 34,
	LabelStrings: map[string]string{"": "Large", "zh-CN": "大"},
	Icons: []androidtest.AndroidIcon{
		{Density: 160, Path: "res/mipmap-mdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(48, 48)},
		{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(192, 192)},
	},
}

// BenchmarkParseLargeAPK parses a 256 MiB APK: 256 MiB of native libraries (lib/arm64-v8a/)
// before the manifest, resources.arsc and the icons.
func BenchmarkParseLargeAPK(b *testing.B) {
	benchParse(b, func(w io.Writer) error {
		return androidtest.WriteAPK(w, androidtest.APKOptions{AndroidManifest: benchManifest, FillerBytes: 256 << 20})
	}, func(i *appinfo.Info) bool { return i.Name == "Large" && i.Icon != nil && i.Icon.Width == 192 })
}

// BenchmarkParseLargeAAB parses a 256 MiB app bundle laid out the same way under base/.
func BenchmarkParseLargeAAB(b *testing.B) {
	benchParse(b, func(w io.Writer) error {
		return androidtest.WriteAAB(w, androidtest.AABOptions{AndroidManifest: benchManifest, FillerBytes: 256 << 20})
	}, func(i *appinfo.Info) bool { return i.Name == "Large" && i.Icon != nil && i.Icon.Width == 192 })
}
