package blobtest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// Memory is object storage in memory for tests that need a backend but not its medium: it is a
// blob.Backend, Lister, Multipart, PartWriter and UploadLister that passes Run like the real
// backends, so a test that uses it relies on the behaviour every backend has. It keeps whole
// objects in memory, so it suits small objects. The zero value is not ready: use NewMemory.
//
// A test that needs a backend to misbehave (fail, stall, record its calls) embeds a *Memory in a
// type of its own and overrides the methods concerned; one that needs a backend with fewer
// capabilities wraps it as struct{ blob.Backend }.
type Memory struct {
	mu      sync.Mutex
	objects map[string]memObject
	uploads map[string]*memUpload // by upload id
}

type memObject struct {
	data    []byte
	modTime time.Time
}

type memUpload struct {
	key     string
	started time.Time
	parts   map[int][]byte
}

var (
	_ blob.Backend      = (*Memory)(nil)
	_ blob.Lister       = (*Memory)(nil)
	_ blob.Multipart    = (*Memory)(nil)
	_ blob.PartWriter   = (*Memory)(nil)
	_ blob.UploadLister = (*Memory)(nil)
)

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory {
	return &Memory{objects: map[string]memObject{}, uploads: map[string]*memUpload{}}
}

// Put implements blob.Backend: the object appears whole when r ends, and a failed or
// cancelled Put leaves what was there before.
func (m *Memory) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (int64, error) {
	if err := blob.CheckKey(key); err != nil {
		return 0, err
	}
	var data bytes.Buffer
	buf := make([]byte, 32<<10)
	cr := blob.ContextReader(ctx, r)
	for {
		n, err := cr.Read(buf)
		if n > 0 {
			data.Write(buf[:n])
			if opts.Observe != nil {
				opts.Observe(buf[:n])
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("memory storage: put %q: %w", key, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, context.Cause(ctx)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects[key] = memObject{data: data.Bytes(), modTime: time.Now()}
	return int64(data.Len()), nil
}

// GetRange implements blob.Backend.
func (m *Memory) GetRange(_ context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("memory storage: get %q: negative offset %d", key, off)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("memory storage: get %q: %w", key, blob.ErrNotFound)
	}
	off = min(off, int64(len(o.data)))
	end := int64(len(o.data))
	if n >= 0 {
		end = min(end, off+n)
	}
	// Objects are never changed in place (Put replaces the slice), so the reader may share it.
	return io.NopCloser(bytes.NewReader(o.data[off:end])), nil
}

// Stat implements blob.Backend.
func (m *Memory) Stat(_ context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return blob.Info{}, fmt.Errorf("memory storage: stat %q: %w", key, blob.ErrNotFound)
	}
	return blob.Info{Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Delete implements blob.Backend. Like the filesystem backend, it also ends the unfinished
// multipart uploads to key (what the collector relies on for an expired upload session).
func (m *Memory) Delete(_ context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	for id, u := range m.uploads {
		if u.key == key {
			delete(m.uploads, id)
		}
	}
	return nil
}

// Ping implements blob.Backend: memory is always reachable.
func (m *Memory) Ping(context.Context) error { return nil }

// Keys returns the keys of the objects stored, in byte order: for a test's checks of what is
// left.
func (m *Memory) Keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.objects))
	for k := range m.objects {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Has reports whether an object is stored under key.
func (m *Memory) Has(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.objects[key]
	return ok
}

// List implements blob.Lister.
func (m *Memory) List(ctx context.Context, fn func(page []blob.Object) error) error {
	m.mu.Lock()
	all := make([]blob.Object, 0, len(m.objects))
	for k, o := range m.objects {
		all = append(all, blob.Object{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b blob.Object) int { return cmp.Compare(a.Key, b.Key) })
	return inPages(ctx, all, fn)
}

// inPages hands all to fn a page of at most blob.ListPageSize at a time, as the listers do.
func inPages[T any](ctx context.Context, all []T, fn func(page []T) error) error {
	for page := range slices.Chunk(all, blob.ListPageSize) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// CreateMultipart implements blob.Multipart.
func (m *Memory) CreateMultipart(_ context.Context, key, _ string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uploads[id] = &memUpload{key: key, started: time.Now(), parts: map[int][]byte{}}
	return id, nil
}

// upload returns the unfinished upload id to key; the caller holds m.mu.
func (m *Memory) upload(key, id string) (*memUpload, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	u, ok := m.uploads[id]
	if !ok || u.key != key {
		return nil, fmt.Errorf("memory storage: upload %q of %q: %w", id, key, blob.ErrNotFound)
	}
	return u, nil
}

// PutPart implements blob.PartWriter: r must hold exactly size bytes; a part uploaded again
// replaces the first.
func (m *Memory) PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (blob.Part, error) {
	if number < 1 {
		return blob.Part{}, fmt.Errorf("memory storage: part number %d", number)
	}
	m.mu.Lock()
	_, err := m.upload(key, uploadID)
	m.mu.Unlock()
	if err != nil {
		return blob.Part{}, err
	}
	data, err := io.ReadAll(io.LimitReader(blob.ContextReader(ctx, r), size+1))
	if err == nil && int64(len(data)) != size {
		err = fmt.Errorf("part %d has %d bytes, want %d", number, len(data), size)
	}
	if err != nil {
		return blob.Part{}, fmt.Errorf("memory storage: put part %d of %q: %w", number, key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.upload(key, uploadID) // aborted meanwhile?
	if err != nil {
		return blob.Part{}, err
	}
	u.parts[number] = data
	return blob.Part{Number: number, Size: size}, nil
}

// ListParts implements blob.Multipart.
func (m *Memory) ListParts(_ context.Context, key, uploadID string) ([]blob.Part, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.upload(key, uploadID)
	if err != nil {
		return nil, err
	}
	parts := make([]blob.Part, 0, len(u.parts))
	for n, data := range u.parts {
		parts = append(parts, blob.Part{Number: n, Size: int64(len(data))})
	}
	slices.SortFunc(parts, func(a, b blob.Part) int { return a.Number - b.Number })
	return parts, nil
}

// CompleteMultipart implements blob.Multipart: the object is the parts named, in order.
func (m *Memory) CompleteMultipart(_ context.Context, key, uploadID string, parts []blob.Part) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.upload(key, uploadID)
	if err != nil {
		return err
	}
	var data []byte
	for _, p := range parts {
		b, ok := u.parts[p.Number]
		if !ok || (p.Size != 0 && int64(len(b)) != p.Size) {
			return fmt.Errorf("memory storage: complete %q: part %d is not as listed", key, p.Number)
		}
		data = append(data, b...)
	}
	m.objects[key] = memObject{data: data, modTime: time.Now()}
	delete(m.uploads, uploadID)
	return nil
}

// AbortMultipart implements blob.Multipart. Aborting an upload that is gone is not an error.
func (m *Memory) AbortMultipart(_ context.Context, key, uploadID string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.uploads[uploadID]; ok && u.key == key {
		delete(m.uploads, uploadID)
	}
	return nil
}

// ListUploads implements blob.UploadLister.
func (m *Memory) ListUploads(ctx context.Context, fn func(page []blob.Upload) error) error {
	m.mu.Lock()
	all := make([]blob.Upload, 0, len(m.uploads))
	for id, u := range m.uploads {
		all = append(all, blob.Upload{Key: u.key, ID: id, Started: u.started})
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b blob.Upload) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.ID, b.ID)) })
	return inPages(ctx, all, fn)
}

// RemoveUpload implements blob.UploadLister.
func (m *Memory) RemoveUpload(ctx context.Context, u blob.Upload) error {
	return m.AbortMultipart(ctx, u.Key, u.ID)
}
