package apple

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
)

// BenchmarkParseExportedIPACached parses the exported-layout .ipa of BenchmarkParseExportedIPA
// as an upload does: through the block-cached blob.ReaderAt over the filesystem backend,
// seeded with the stream's last 2 MiB. It reports the GETs and bytes fetched from the backend.
func BenchmarkParseExportedIPACached(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "exported.ipa")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	size, err := appletest.WriteBenchIPA(f, appletest.BenchIPAOptions{Size: 256 << 20})
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	store, err := fs.New(filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	in, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	if _, err := store.Put(ctx, "k", in, blob.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	tail := make([]byte, 2<<20)
	if _, err := in.ReadAt(tail, size-int64(len(tail))); err != nil && err != io.EOF {
		b.Fatal(err)
	}
	var gets, bytes int64
	b.ReportAllocs()
	for b.Loop() {
		r := blob.NewReaderAt(ctx, store, "k", size)
		r.Seed(size-int64(len(tail)), tail)
		info, err := appinfo.Parse(r, size)
		if err != nil || info.Icon == nil {
			b.Fatalf("Parse = %+v, %v", info, err)
		}
		st := r.Stats()
		gets += st.GETs
		bytes += st.Bytes
	}
	b.ReportMetric(float64(gets)/float64(b.N), "GETs/op")
	b.ReportMetric(float64(bytes)/float64(b.N), "bytes-fetched/op")
}
