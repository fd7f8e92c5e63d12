package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
)

// memBackend is the in-memory backend, recording the ranges requested, each after delay, and
// failing them with fail when it is set.
type memBackend struct {
	*blobtest.Memory
	mu     sync.Mutex
	ranges [][2]int64 // off, n of each GetRange
	delay  time.Duration
	fail   error
}

func newMem(key string, data []byte) *memBackend {
	m := &memBackend{Memory: blobtest.NewMemory()}
	if _, err := m.Put(context.Background(), key, bytes.NewReader(data), blob.PutOptions{}); err != nil {
		panic(err)
	}
	return m
}

func (m *memBackend) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	m.mu.Lock()
	delay := m.delay
	m.mu.Unlock()
	time.Sleep(delay)
	m.mu.Lock()
	m.ranges = append(m.ranges, [2]int64{off, n})
	fail := m.fail
	m.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return m.Memory.GetRange(ctx, key, off, n)
}

func (m *memBackend) requests() [][2]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][2]int64(nil), m.ranges...)
}

const bs = blob.BlockSize

// TestReaderAtMatchesBytesReader compares random reads with bytes.Reader's ReadAt, including
// reads past the end and of zero bytes.
func TestReaderAtMatchesBytesReader(t *testing.T) {
	for _, size := range []int{0, 1, bs - 1, bs, bs + 1, 10*bs + 123, 3 << 20} {
		data := blobtest.Random(size, uint64(size))
		ra := blob.NewReaderAt(t.Context(), newMem("k", data), "k", int64(size))
		want := bytes.NewReader(data)
		rng := rand.New(rand.NewPCG(uint64(size), 2))
		for i := range 300 {
			off := rng.Int64N(int64(size) + 100)
			n := rng.IntN(3 * bs)
			if i%10 == 0 {
				n = 0
			}
			got, exp := make([]byte, n), make([]byte, n)
			gn, gerr := ra.ReadAt(got, off)
			en, eerr := want.ReadAt(exp, off)
			if gn != en || (gerr == nil) != (eerr == nil) || !bytes.Equal(got[:gn], exp[:en]) {
				t.Fatalf("size %d: ReadAt(%d bytes, %d) = %d, %v; want %d, %v", size, n, off, gn, gerr, en, eerr)
			}
		}
	}
}

func TestReaderAtOneRequestPerMiss(t *testing.T) {
	data := blobtest.Random(100*bs, 1)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", int64(len(data)))
	buf := make([]byte, 2*bs+10)
	if _, err := ra.ReadAt(buf, 50*bs-5); err != nil { // blocks 49..52
		t.Fatal(err)
	}
	if got, want := m.requests(), [][2]int64{{49 * bs, 4 * bs}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests = %v, want %v", got, want)
	}
	if _, err := ra.ReadAt(buf, 50*bs); err != nil { // cached
		t.Fatal(err)
	}
	if st := ra.Stats(); st.GETs != 1 || st.Bytes != 4*bs {
		t.Errorf("stats = %+v", st)
	}
	// Blocks 47..49 and 52..54 missing around cached ones: one request still.
	if _, err := ra.ReadAt(make([]byte, 8*bs), 47*bs); err != nil {
		t.Fatal(err)
	}
	if st := ra.Stats(); st.GETs != 2 {
		t.Errorf("a read with two gaps made %d requests, want 1", st.GETs-1)
	}
}

func TestReaderAtSequentialReadAhead(t *testing.T) {
	const size = 8 << 20
	data := blobtest.Random(size, 3)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	got, err := io.ReadAll(io.NewSectionReader(ra, 0, size)) // small sequential reads
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("sequential read: %d bytes, %v", len(got), err)
	}
	st := ra.Stats()
	if st.Bytes != size {
		t.Errorf("fetched %d bytes of %d", st.Bytes, size)
	}
	if st.GETs > 8 {
		t.Errorf("sequential read of 8 MiB took %d requests: %v", st.GETs, m.requests())
	}
	t.Logf("8 MiB in %d requests: %v", st.GETs, m.requests())
}

func TestReaderAtSeed(t *testing.T) {
	const size = 20*bs + 1000
	data := blobtest.Random(size, 4)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	tail := blob.NewTail(5*bs + 500) // covers blocks 16..20 whole, and part of 15
	tail.Write(data)
	ra.Seed(tail.Total()-int64(len(tail.Bytes())), tail.Bytes())
	buf := make([]byte, size-16*bs)
	if n, err := ra.ReadAt(buf, size-int64(len(buf))); err != nil || !bytes.Equal(buf[:n], data[size-len(buf):]) {
		t.Fatalf("read from seeded tail: %d, %v", n, err)
	}
	if st := ra.Stats(); st.GETs != 0 {
		t.Errorf("seeded read made %d requests", st.GETs)
	}
	if _, err := ra.ReadAt(buf[:10], 15*bs+10); err != nil { // block 15 was only partly seeded
		t.Fatal(err)
	}
	if st := ra.Stats(); st.GETs != 1 {
		t.Errorf("read of a partly seeded block made %d requests, want 1", st.GETs)
	}
	// Seeding beyond the object, or out of range, is ignored.
	ra.Seed(size+10, []byte("x"))
	ra.Seed(-1, []byte("x"))
}

func TestReaderAtPrefetch(t *testing.T) {
	const size = 40 << 20
	data := blobtest.Random(size, 5)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	ra.Prefetch(1000, 1<<20)
	got := make([]byte, 1<<20)
	if _, err := io.ReadFull(io.NewSectionReader(ra, 1000, 1<<20), got); err != nil || !bytes.Equal(got, data[1000:1000+1<<20]) {
		t.Fatalf("read after prefetch: %v", err)
	}
	if st := ra.Stats(); st.GETs != 1 {
		t.Errorf("prefetch + read took %d requests, want 1: %v", st.GETs, m.requests())
	}
	ra.Prefetch(10<<20, 30<<20) // capped
	if r := m.requests(); len(r) != 2 || r[1][1] > 8<<20 {
		t.Errorf("large prefetch requested %v, want one request of at most 8 MiB", r[1:])
	}
	ra.Prefetch(size, 10) // past the end: nothing
	ra.Prefetch(0, 0)
	if st := ra.Stats(); st.GETs != 2 {
		t.Errorf("empty prefetches made requests: %v", m.requests())
	}
}

func TestReaderAtLargeReadBypassesCache(t *testing.T) {
	const size = 30 << 20
	data := blobtest.Random(size, 6)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	got := make([]byte, size)
	if n, err := ra.ReadAt(got, 0); n != size || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("whole read: %d, %v", n, err)
	}
	if st := ra.Stats(); st.GETs != 1 {
		t.Errorf("whole read took %d requests", st.GETs)
	}
}

func TestReaderAtCacheBound(t *testing.T) {
	const size = 64 << 20
	data := blobtest.Random(size, 7)
	m := newMem("k", data)
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	// Read everything twice in 64 KiB pieces: with a 16 MiB cache, the second pass misses again.
	buf := make([]byte, bs)
	for pass := range 2 {
		for off := int64(0); off < size; off += bs {
			if _, err := ra.ReadAt(buf, off); err != nil {
				t.Fatal(err)
			}
		}
		if st := ra.Stats(); st.Bytes != int64(pass+1)*size {
			t.Errorf("after pass %d fetched %d bytes, want %d (the cache cannot hold 64 MiB)", pass, st.Bytes, int64(pass+1)*size)
		}
	}
	// The last 16 MiB read are cached.
	before := ra.Stats().GETs
	if _, err := ra.ReadAt(make([]byte, 8<<20), size-8<<20); err != nil {
		t.Fatal(err)
	}
	if got := ra.Stats().GETs; got != before {
		t.Errorf("re-reading the most recent 8 MiB made %d requests", got-before)
	}
}

func TestReaderAtConcurrent(t *testing.T) {
	const size = 24 << 20
	data := blobtest.Random(size, 8)
	m := newMem("k", data)
	m.delay = time.Millisecond
	ra := blob.NewReaderAt(t.Context(), m, "k", size)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				off, n := rng.Int64N(size), 1+rng.IntN(200_000)
				got := make([]byte, n)
				k, err := ra.ReadAt(got, off)
				if err != nil && err != io.EOF {
					t.Error(err)
					return
				}
				if !bytes.Equal(got[:k], data[off:off+int64(k)]) {
					t.Errorf("ReadAt(%d, %d): wrong bytes", n, off)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestReaderAtErrors(t *testing.T) {
	boom := errors.New("boom")
	m := newMem("k", []byte("short"))
	ra := blob.NewReaderAt(t.Context(), m, "k", 100) // claims more than stored
	if _, err := ra.ReadAt(make([]byte, 50), 0); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read of a truncated object = %v, want ErrUnexpectedEOF", err)
	}
	m.fail = boom
	if _, err := ra.ReadAt(make([]byte, 50), 0); !errors.Is(err, boom) {
		t.Errorf("read with a failing backend = %v", err)
	}
	if _, err := ra.ReadAt(make([]byte, 1), -1); err == nil || strings.Contains(err.Error(), "boom") {
		t.Errorf("negative offset = %v", err)
	}
}

// BenchmarkReaderAtSequential streams a 64 MiB object through 4 KiB reads (as flate does through
// bufio), from an in-memory backend: the cost of the cache itself.
func BenchmarkReaderAtSequential(b *testing.B) {
	const size = 64 << 20
	m := newMem("k", blobtest.Random(size, 1))
	buf := make([]byte, 4096)
	b.SetBytes(size)
	for b.Loop() {
		ra := blob.NewReaderAt(b.Context(), m, "k", size)
		for off := int64(0); off < size; off += int64(len(buf)) {
			if _, err := ra.ReadAt(buf, off); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(ra.Stats().GETs), "GETs/op")
	}
}

// BenchmarkReaderAtZip opens a 24 MiB zip of 5000 entries and reads two entries, from an in-memory
// backend that takes 1 ms per request (a nearby S3), cold and seeded with a 4 MiB tail.
func BenchmarkReaderAtZip(b *testing.B) {
	zipData, _ := blobtest.Zip(b, 5000, 20<<20)
	m := newMem("k", zipData)
	m.delay = time.Millisecond
	t := blob.NewTail(4 << 20)
	t.Write(zipData)
	tail, tailOff := t.Bytes(), t.Total()-int64(len(t.Bytes()))
	for _, seeded := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "seeded"}[seeded], func(b *testing.B) {
			var st blob.ReadStats
			for b.Loop() {
				ra := blob.NewReaderAt(b.Context(), m, "k", int64(len(zipData)))
				if seeded {
					ra.Seed(tailOff, tail)
				}
				if err := blobtest.ReadZip(ra, int64(len(zipData)), "Payload/App.app/file-0007.txt", "Payload/App.app/file-4000.txt"); err != nil {
					b.Fatal(err)
				}
				st = ra.Stats()
			}
			b.ReportMetric(float64(st.GETs), "GETs/op")
			b.ReportMetric(float64(st.Bytes)/(1<<10), "KiB-fetched/op")
		})
	}
}
