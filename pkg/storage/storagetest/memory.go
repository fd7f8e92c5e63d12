package storagetest

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

	"github.com/slipwayhq/slipway/pkg/storage"
)

// Memory is object storage in memory for tests that need a backend but not its medium: it is a
// storage.Backend, Lister, Multipart, PartWriter and UploadLister that passes Run like the real
// backends, so a test that uses it relies on the behaviour every backend has. It keeps whole
// objects in memory, so it suits small objects. The zero value is not ready: use NewMemory.
//
// A test that needs a backend to misbehave (fail, stall, record its calls) embeds a *Memory in a
// type of its own and overrides the methods concerned; one that needs a backend with fewer
// capabilities wraps it as struct{ storage.Backend }.
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
	_ storage.Backend      = (*Memory)(nil)
	_ storage.Lister       = (*Memory)(nil)
	_ storage.Multipart    = (*Memory)(nil)
	_ storage.PartWriter   = (*Memory)(nil)
	_ storage.UploadLister = (*Memory)(nil)
)

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory {
	return &Memory{objects: map[string]memObject{}, uploads: map[string]*memUpload{}}
}

// Put implements storage.Backend: the object appears whole when r ends, and a failed or
// cancelled Put leaves what was there before.
func (m *Memory) Put(ctx context.Context, key string, r io.Reader, opts storage.PutOptions) (int64, error) {
	if err := storage.CheckKey(key); err != nil {
		return 0, err
	}
	var data bytes.Buffer
	buf := make([]byte, 32<<10)
	cr := storage.ContextReader(ctx, r)
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

// GetRange implements storage.Backend.
func (m *Memory) GetRange(_ context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("memory storage: get %q: negative offset %d", key, off)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, fmt.Errorf("memory storage: get %q: %w", key, storage.ErrNotFound)
	}
	off = min(off, int64(len(o.data)))
	end := int64(len(o.data))
	if n >= 0 {
		end = min(end, off+n)
	}
	// Objects are never changed in place (Put replaces the slice), so the reader may share it.
	return io.NopCloser(bytes.NewReader(o.data[off:end])), nil
}

// Stat implements storage.Backend.
func (m *Memory) Stat(_ context.Context, key string) (storage.Info, error) {
	if err := storage.CheckKey(key); err != nil {
		return storage.Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return storage.Info{}, fmt.Errorf("memory storage: stat %q: %w", key, storage.ErrNotFound)
	}
	return storage.Info{Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Delete implements storage.Backend. Like the filesystem backend, it also ends the unfinished
// multipart uploads to key (what the collector relies on for an expired upload session).
func (m *Memory) Delete(_ context.Context, key string) error {
	if err := storage.CheckKey(key); err != nil {
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

// Ping implements storage.Backend: memory is always reachable.
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

// List implements storage.Lister.
func (m *Memory) List(ctx context.Context, fn func(page []storage.Object) error) error {
	m.mu.Lock()
	all := make([]storage.Object, 0, len(m.objects))
	for k, o := range m.objects {
		all = append(all, storage.Object{Key: k, Size: int64(len(o.data)), ModTime: o.modTime})
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b storage.Object) int { return cmp.Compare(a.Key, b.Key) })
	return inPages(ctx, all, fn)
}

// inPages hands all to fn a page of at most storage.ListPageSize at a time, as the listers do.
func inPages[T any](ctx context.Context, all []T, fn func(page []T) error) error {
	for page := range slices.Chunk(all, storage.ListPageSize) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
	}
	return nil
}

// CreateMultipart implements storage.Multipart.
func (m *Memory) CreateMultipart(_ context.Context, key, _ string) (string, error) {
	if err := storage.CheckKey(key); err != nil {
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
	if err := storage.CheckKey(key); err != nil {
		return nil, err
	}
	u, ok := m.uploads[id]
	if !ok || u.key != key {
		return nil, fmt.Errorf("memory storage: upload %q of %q: %w", id, key, storage.ErrNotFound)
	}
	return u, nil
}

// PutPart implements storage.PartWriter: r must hold exactly size bytes; a part uploaded again
// replaces the first.
func (m *Memory) PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (storage.Part, error) {
	if number < 1 {
		return storage.Part{}, fmt.Errorf("memory storage: part number %d", number)
	}
	m.mu.Lock()
	_, err := m.upload(key, uploadID)
	m.mu.Unlock()
	if err != nil {
		return storage.Part{}, err
	}
	data, err := io.ReadAll(io.LimitReader(storage.ContextReader(ctx, r), size+1))
	if err == nil && int64(len(data)) != size {
		err = fmt.Errorf("part %d has %d bytes, want %d", number, len(data), size)
	}
	if err != nil {
		return storage.Part{}, fmt.Errorf("memory storage: put part %d of %q: %w", number, key, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.upload(key, uploadID) // aborted meanwhile?
	if err != nil {
		return storage.Part{}, err
	}
	u.parts[number] = data
	return storage.Part{Number: number, Size: size}, nil
}

// ListParts implements storage.Multipart.
func (m *Memory) ListParts(_ context.Context, key, uploadID string) ([]storage.Part, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.upload(key, uploadID)
	if err != nil {
		return nil, err
	}
	parts := make([]storage.Part, 0, len(u.parts))
	for n, data := range u.parts {
		parts = append(parts, storage.Part{Number: n, Size: int64(len(data))})
	}
	slices.SortFunc(parts, func(a, b storage.Part) int { return a.Number - b.Number })
	return parts, nil
}

// CompleteMultipart implements storage.Multipart: the object is the parts named, in order.
func (m *Memory) CompleteMultipart(_ context.Context, key, uploadID string, parts []storage.Part) error {
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

// AbortMultipart implements storage.Multipart. Aborting an upload that is gone is not an error.
func (m *Memory) AbortMultipart(_ context.Context, key, uploadID string) error {
	if err := storage.CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if u, ok := m.uploads[uploadID]; ok && u.key == key {
		delete(m.uploads, uploadID)
	}
	return nil
}

// ListUploads implements storage.UploadLister.
func (m *Memory) ListUploads(ctx context.Context, fn func(page []storage.Upload) error) error {
	m.mu.Lock()
	all := make([]storage.Upload, 0, len(m.uploads))
	for id, u := range m.uploads {
		all = append(all, storage.Upload{Key: u.key, ID: id, Started: u.started})
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b storage.Upload) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.ID, b.ID)) })
	return inPages(ctx, all, fn)
}

// RemoveUpload implements storage.UploadLister.
func (m *Memory) RemoveUpload(ctx context.Context, u storage.Upload) error {
	return m.AbortMultipart(ctx, u.Key, u.ID)
}
