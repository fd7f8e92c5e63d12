// Package fs is a blob.Backend over a local folder, for development, tests and single-node
// installs. Objects are plain files under the root, named by their keys.
//
// All access goes through an os.Root, so no key and no symbolic link planted in the folder can
// reach a file outside it; keys are also checked with blob.CheckKey first, so the filesystem
// accepts exactly the keys S3 does. Writes are atomic: Put writes a temp file beside the target,
// fsyncs it, renames it over the target and fsyncs the folder. The temp file is named after the
// key, so that deleting the key also removes one left by a process that died in the middle of a
// write (the collector deletes the keys of such uploads).
package fs

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// tempPrefix starts the names of files being written. They are never visible under a key.
const tempPrefix = ".slipway-tmp-"

// Store is a blob.Backend and blob.FileOpener over one folder. It is safe for concurrent use.
type Store struct {
	root    *os.Root
	dir     string
	buffers *blob.BufferPool
}

var (
	_ blob.Backend    = (*Store)(nil)
	_ blob.FileOpener = (*Store)(nil)
)

// New opens (creating it if needed) the folder dir as a Store.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("fs storage: create %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("fs storage: open %s: %w", dir, err)
	}
	return &Store{root: root, dir: dir, buffers: blob.NewBufferPool(writeBuffer, writeBudget)}, nil
}

// Dir returns the folder the store was opened on.
func (s *Store) Dir() string { return s.dir }

// Close releases the folder's handle.
func (s *Store) Close() error { return s.root.Close() }

// writeBuffer is the size of Put's file writes, and so of the reads of the stream into its buffer.
const writeBuffer = 1 << 20

// writeBudget bounds the write buffers of all Puts together: beyond 64 at once, a Put waits for
// a buffer (the upload slots admit fewer). Buffers come from a blob.BufferPool, so a steady stream
// of uploads allocates none, and a replica idle for blob.IdleRelease holds none and gives the heap
// they and the uploads' garbage held back to the operating system.
const writeBudget = 64 * writeBuffer

// Put writes r to a temp file in the key's folder, fsyncs it and renames it to the key, so readers
// see either the old object or the whole new one. On error or cancellation the temp file is
// removed and an existing object under key is left as it was.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (n int64, err error) {
	if err := blob.CheckKey(key); err != nil {
		return 0, err
	}
	dir := path.Dir(key)
	f, tmp, err := s.createTemp(dir, tempNamePrefix(key))
	if err != nil {
		if isEscape(err) {
			return 0, s.wrap("put", key, err)
		}
		return 0, fmt.Errorf("fs storage: put %q: %w", key, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			s.root.Remove(tmp)
		}
	}()
	// The stream is read into a pooled buffer of writeBuffer bytes (formdata reads the body
	// straight into it), shown to Observe, and written in one call.
	buf, err := s.buffers.Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("fs storage: put %q: waiting for a write buffer: %w", key, err)
	}
	defer s.buffers.Put(buf)
	r = blob.ContextReader(ctx, r)
	for eof := false; !eof; {
		var m int
		var rerr error
		m, eof, rerr = blob.Fill(r, buf)
		if m > 0 {
			if opts.Observe != nil {
				opts.Observe(buf[:m])
			}
			if _, err = f.Write(buf[:m]); err != nil {
				return n, fmt.Errorf("fs storage: put %q: %w", key, err)
			}
			n += int64(m)
		}
		if err = rerr; err != nil {
			return n, fmt.Errorf("fs storage: put %q: %w", key, err)
		}
	}
	if err = f.Sync(); err != nil {
		return n, fmt.Errorf("fs storage: put %q: sync: %w", key, err)
	}
	if err = f.Close(); err != nil {
		return n, fmt.Errorf("fs storage: put %q: close: %w", key, err)
	}
	if err = ctx.Err(); err != nil {
		return n, fmt.Errorf("fs storage: put %q: %w", key, context.Cause(ctx))
	}
	if err = s.root.Rename(tmp, key); err != nil {
		if isEscape(err) {
			return n, s.wrap("put", key, err)
		}
		return n, fmt.Errorf("fs storage: put %q: %w", key, err)
	}
	if err = s.syncDir(dir); err != nil {
		return n, fmt.Errorf("fs storage: put %q: sync folder: %w", key, err)
	}
	return n, nil
}

// createTemp creates the key's folder and a new temp file in it. A concurrent Delete may remove the
// folder, or one of its parents while MkdirAll is creating it, between the steps (it prunes empty
// folders), so the pair is retried. os.Root's MkdirAll reports a folder pruned between its mkdirat
// (EEXIST) and its check that the name is a folder as "file exists", so that is retried too; a
// file really in the folder's place fails every try and is reported.
func (s *Store) createTemp(dir, namePrefix string) (*os.File, string, error) {
	var err error
	for range 5 {
		if err = s.root.MkdirAll(dir, 0o750); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
				continue
			}
			return nil, "", err
		}
		tmp := path.Join(dir, namePrefix+randomHex())
		var f *os.File
		f, err = s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
		if err == nil {
			return f, tmp, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, "", err
		}
	}
	return nil, "", err
}

// GetRange implements blob.Backend.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, fmt.Errorf("fs storage: get %q: negative offset %d", key, off)
	}
	f, err := s.OpenFile(ctx, key)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("fs storage: get %q: %w", key, err)
	}
	if n < 0 || off+n > st.Size() {
		n = max(st.Size()-off, 0)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

// OpenFile opens the object for reading, for http.ServeContent. The caller closes the file.
func (s *Store) OpenFile(_ context.Context, key string) (*os.File, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	f, err := s.root.Open(key)
	if err != nil {
		return nil, s.wrap("open", key, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fs.ErrNotExist
		}
		return nil, s.wrap("open", key, err)
	}
	return f, nil
}

// Stat implements blob.Backend. Folders are not objects: their Stat is ErrNotFound.
func (s *Store) Stat(_ context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	st, err := s.root.Stat(key)
	if err == nil && !st.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err != nil {
		return blob.Info{}, s.wrap("stat", key, err)
	}
	return blob.Info{Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete removes the object and then its folders that became empty, so deleted releases leave no
// trace. Deleting an absent object is not an error; it removes the temp files of unfinished writes
// to the key instead, if any (a Put still running for the key then fails).
func (s *Store) Delete(_ context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	if st, err := s.root.Lstat(key); err == nil && st.IsDir() {
		return nil // a folder, not an object
	}
	if err := s.root.Remove(key); err != nil {
		if err = s.wrap("delete", key, err); !errors.Is(err, blob.ErrNotFound) {
			return err
		}
		if !s.removeTemps(key) {
			return nil
		}
	}
	for dir := path.Dir(key); dir != "."; dir = path.Dir(dir) {
		if s.root.Remove(dir) != nil { // not empty (or already gone): stop
			break
		}
	}
	return nil
}

// tempNamePrefix starts the names of key's temp files: tempPrefix and a short hash of the key's
// last segment (fixed-length, so a long key segment still leaves room in a file name).
func tempNamePrefix(key string) string {
	h := sha256.Sum256([]byte(path.Base(key)))
	return tempPrefix + hex.EncodeToString(h[:8]) + "-"
}

// removeTemps removes the temp files of writes to key, and the part folders of its multipart
// uploads (multipart.go), and reports whether there were any.
func (s *Store) removeTemps(key string) bool {
	dir := path.Dir(key)
	d, err := s.root.Open(dir)
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	prefix, removed := tempNamePrefix(key), false
	for _, name := range names {
		if strings.HasPrefix(name, prefix) && s.root.RemoveAll(path.Join(dir, name)) == nil {
			removed = true
		}
	}
	return removed
}

// Ping checks that the folder is still there and writable.
func (s *Store) Ping(_ context.Context) error {
	name := tempPrefix + "ping-" + randomHex()
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return fmt.Errorf("fs storage: %s is not writable: %w", s.dir, err)
	}
	f.Close()
	if err := s.root.Remove(name); err != nil {
		return fmt.Errorf("fs storage: %s: %w", s.dir, err)
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) { // some filesystems refuse
		return err
	}
	return nil
}

// wrap turns "does not exist" (and "a path component is a file", ENOTDIR) into blob.ErrNotFound.
// os.Root's "path escapes from parent" (a symbolic link out of the folder) becomes
// blob.ErrInvalidKey.
func (s *Store) wrap(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("fs storage: %s %q: %w", op, key, blob.ErrNotFound)
	case isEscape(err):
		return fmt.Errorf("fs storage: %s %q: %w (it leads out of the storage folder)", op, key, blob.ErrInvalidKey)
	}
	return fmt.Errorf("fs storage: %s %q: %w", op, key, err)
}

// isEscape reports os.Root's refusal of a path that leads out of the root (through a symbolic
// link); the os package does not export that error, so its text is matched.
func isEscape(err error) bool {
	return strings.Contains(err.Error(), "path escapes from parent")
}

// writerOnly exposes only Write, so io.Copy copies through its buffer instead of delegating to
// *os.File's ReadFrom.
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

func randomHex() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
