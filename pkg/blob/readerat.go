package blob

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// Block cache geometry of a ReaderAt.
const (
	// BlockSize is the unit of caching. archive/zip reads the central directory and entry bodies in
	// pieces of a few KiB; 64 KiB blocks turn dozens of such reads into one request.
	BlockSize = 64 << 10
	// CacheSize bounds the bytes one ReaderAt keeps (LRU). A parse needs the directory (a few MiB
	// for the largest IPAs) plus the entry being read.
	CacheSize = 16 << 20
	// maxReadAhead bounds how far a run of sequential misses reads beyond what was asked.
	maxReadAhead = 4 << 20
	// maxSpan bounds a Prefetch, a Seed and a cached read, so one of them never flushes the cache;
	// longer reads go straight to the backend.
	maxSpan = CacheSize / 2
)

// ReadStats counts what a ReaderAt fetched from its backend, for metrics and tests.
type ReadStats struct {
	GETs  int64 // GetRange calls
	Bytes int64 // bytes received
}

// ReaderAt is an io.ReaderAt over one stored object, for parsers that seek around a package (zip
// end records, central directory, a few entries). It keeps a bounded LRU cache of BlockSize blocks
// (at most CacheSize bytes) and is safe for concurrent use.
//
// A read that misses fetches the whole run of missing blocks it needs in one GetRange; reads that
// continue where the previous one ended grow a read-ahead (up to 4 MiB), so streaming through an
// entry costs a few requests. Seed fills the cache from bytes the upload already saw, and Prefetch
// (zipread.Prefetcher) fetches an entry's span in one request.
//
// The context given to NewReaderAt bounds every fetch: ReadAt has no context of its own.
type ReaderAt struct {
	ctx  context.Context
	b    Backend
	key  string
	size int64

	gets, bytes atomic.Int64

	mu       sync.Mutex
	blocks   map[int64]*list.Element // block index → element of lru holding a *block
	lru      *list.List              // most recently used first
	inflight map[int64]chan struct{} // blocks being fetched; closed when done
	next     int64                   // block after the last read, to detect sequential reads
	ahead    int64                   // current read-ahead, in blocks
}

type block struct {
	idx  int64
	data []byte
}

// NewReaderAt returns a ReaderAt over the object key of the given size. Nothing is fetched until
// the first read.
func NewReaderAt(ctx context.Context, b Backend, key string, size int64) *ReaderAt {
	return &ReaderAt{
		ctx: ctx, b: b, key: key, size: size,
		// No read has happened yet: a first read of block 0 is not a sequential one (it would
		// otherwise grow read-ahead and fetch more than asked).
		next:     -2,
		blocks:   make(map[int64]*list.Element),
		lru:      list.New(),
		inflight: make(map[int64]chan struct{}),
	}
}

// Size returns the object's size, as given to NewReaderAt.
func (r *ReaderAt) Size() int64 { return r.size }

// Stats returns the number of requests made and bytes fetched so far.
func (r *ReaderAt) Stats() ReadStats {
	return ReadStats{GETs: r.gets.Load(), Bytes: r.bytes.Load()}
}

// ReadAt implements io.ReaderAt.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %q at negative offset %d", r.key, off)
	}
	if off >= r.size {
		return 0, io.EOF
	}
	want := len(p)
	if int64(len(p)) > r.size-off {
		p = p[:r.size-off]
	}
	var err error
	if len(p) > maxSpan {
		err = r.readDirect(p, off)
	} else {
		err = r.readCached(p, off)
	}
	if err != nil {
		return 0, err
	}
	if len(p) < want {
		return len(p), io.EOF
	}
	return len(p), nil
}

// readDirect reads a span too long to cache straight into p.
func (r *ReaderAt) readDirect(p []byte, off int64) error {
	rc, err := r.b.GetRange(r.ctx, r.key, off, int64(len(p)))
	r.gets.Add(1)
	if err != nil {
		return err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p)
	r.bytes.Add(int64(n))
	if err != nil {
		return fmt.Errorf("storage: read %q [%d, +%d): %w", r.key, off, len(p), err)
	}
	return nil
}

// readCached fills p (within the object) from cached blocks, fetching the missing ones.
func (r *ReaderAt) readCached(p []byte, off int64) error {
	end := off + int64(len(p))
	first, last := off/BlockSize, (end-1)/BlockSize
	got := make([][]byte, last-first+1)

	r.mu.Lock()
	sequential := first == r.next || first == r.next-1
	r.next = last + 1
	r.mu.Unlock()

	for {
		r.mu.Lock()
		var wait []chan struct{}
		from, to := int64(-1), int64(-1)
		for i := first; i <= last; i++ {
			if got[i-first] != nil {
				continue
			}
			if data, ok := r.lookup(i); ok {
				got[i-first] = data
			} else if ch, ok := r.inflight[i]; ok && from < 0 {
				wait = append(wait, ch)
			} else {
				if from < 0 {
					from = i
				}
				to = i
			}
		}
		if from >= 0 && to == last {
			if sequential {
				r.ahead = min(max(2*r.ahead, 4), maxReadAhead/BlockSize)
			} else {
				r.ahead = 0
			}
			for i := 0; i < int(r.ahead) && r.missing(to+1); i++ {
				to++
			}
		}
		r.mu.Unlock()

		if from < 0 && len(wait) == 0 {
			break
		}
		if from >= 0 {
			if err := r.fetch(from, to, func(i int64, data []byte) {
				if i >= first && i <= last {
					got[i-first] = data
				}
			}); err != nil {
				return err
			}
		}
		for _, ch := range wait {
			select {
			case <-ch:
			case <-r.ctx.Done():
				return fmt.Errorf("storage: read %q: %w", r.key, context.Cause(r.ctx))
			}
		}
	}

	for i, data := range got {
		bstart := (first + int64(i)) * BlockSize
		lo, hi := max(off, bstart), min(end, bstart+int64(len(data)))
		copy(p[lo-off:hi-off], data[lo-bstart:hi-bstart])
	}
	return nil
}

// Prefetch hints that [off, off+n) is about to be read: the missing part of the span (at most
// 8 MiB of it) is fetched now, in one request. It implements zipread.Prefetcher; errors are left
// for the reads that follow to report.
func (r *ReaderAt) Prefetch(off, n int64) {
	if off < 0 || n <= 0 || off >= r.size {
		return
	}
	n = min(n, r.size-off, maxSpan)
	first, last := off/BlockSize, (off+n-1)/BlockSize
	r.mu.Lock()
	from, to := int64(-1), int64(-1)
	for i := first; i <= last; i++ {
		if r.missing(i) {
			if from < 0 {
				from = i
			}
			to = i
		}
	}
	r.mu.Unlock()
	if from >= 0 {
		_ = r.fetch(from, to, nil)
	}
}

// Seed caches data, the object's bytes starting at off, without a request: typically the tail of
// the upload stream, which holds a zip's central directory. Only whole blocks are kept (the
// object's last block counts as whole when data reaches the end), at most 8 MiB, preferring the
// end of data. The cache keeps slices of data, so the caller must not change it afterwards (the
// upload path hands over the tail's copy, so seeding costs no second copy).
func (r *ReaderAt) Seed(off int64, data []byte) {
	end := min(off+int64(len(data)), r.size)
	if off < 0 || off >= end {
		return
	}
	lo := max(off, end-maxSpan)
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := (lo + BlockSize - 1) / BlockSize; i*BlockSize < end; i++ {
		bstart := i * BlockSize
		bend := min(bstart+BlockSize, r.size)
		if bend > end {
			break
		}
		r.insert(i, data[bstart-off:bend-off:bend-off])
	}
}

// fetch reads blocks [from, to] in one GetRange, caches them and passes each to use. Blocks of the
// span that no one else is fetching are marked in flight, so concurrent readers wait for them
// instead of fetching them again.
func (r *ReaderAt) fetch(from, to int64, use func(i int64, data []byte)) error {
	r.mu.Lock()
	var mine []int64
	for i := from; i <= to; i++ {
		if _, ok := r.inflight[i]; !ok {
			r.inflight[i] = make(chan struct{})
			mine = append(mine, i)
		}
	}
	r.mu.Unlock()

	var fetched []*block
	defer func() {
		r.mu.Lock()
		for _, b := range fetched {
			r.insert(b.idx, b.data)
		}
		for _, i := range mine {
			close(r.inflight[i])
			delete(r.inflight, i)
		}
		r.mu.Unlock()
	}()

	start, stop := from*BlockSize, min((to+1)*BlockSize, r.size)
	rc, err := r.b.GetRange(r.ctx, r.key, start, stop-start)
	r.gets.Add(1)
	if err != nil {
		return err
	}
	defer rc.Close()
	for i := from; i <= to; i++ {
		data := make([]byte, min(BlockSize, r.size-i*BlockSize))
		n, err := io.ReadFull(rc, data)
		r.bytes.Add(int64(n))
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the object is shorter than the size we were given
			}
			return fmt.Errorf("storage: read %q [%d, %d): %w", r.key, start, stop, err)
		}
		fetched = append(fetched, &block{idx: i, data: data})
		if use != nil {
			use(i, data)
		}
	}
	return nil
}

// lookup returns a cached block and marks it recently used. r.mu is held.
func (r *ReaderAt) lookup(i int64) ([]byte, bool) {
	e, ok := r.blocks[i]
	if !ok {
		return nil, false
	}
	r.lru.MoveToFront(e)
	return e.Value.(*block).data, true
}

// missing reports whether block i exists in the object and is neither cached nor being fetched.
// r.mu is held.
func (r *ReaderAt) missing(i int64) bool {
	if i*BlockSize >= r.size {
		return false
	}
	_, cached := r.blocks[i]
	_, inflight := r.inflight[i]
	return !cached && !inflight
}

// insert caches block i, evicting the least recently used blocks beyond CacheSize. r.mu is held.
func (r *ReaderAt) insert(i int64, data []byte) {
	if e, ok := r.blocks[i]; ok {
		e.Value.(*block).data = data
		r.lru.MoveToFront(e)
		return
	}
	r.blocks[i] = r.lru.PushFront(&block{idx: i, data: data})
	for r.lru.Len() > CacheSize/BlockSize {
		e := r.lru.Back()
		r.lru.Remove(e)
		delete(r.blocks, e.Value.(*block).idx)
	}
}
