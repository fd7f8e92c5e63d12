package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/blob"
)

var _ blob.Lister = (*Store)(nil)

// List implements blob.Lister: a walk of the folder that reads one directory at a time and
// visits its entries so that the keys come out in byte order (a folder "a" sorts as "a/", since
// every key under it starts so). Temp files and the part folders of multipart uploads (named
// tempPrefix...) are not objects and are skipped, as are symbolic links and anything else that
// is not a regular file.
func (s *Store) List(ctx context.Context, fn func(page []blob.Object) error) error {
	l := lister{s: s, ctx: ctx, fn: fn, page: make([]blob.Object, 0, blob.ListPageSize)}
	if err := l.walk("."); err != nil {
		return err
	}
	return l.flush()
}

type lister struct {
	s    *Store
	ctx  context.Context
	fn   func([]blob.Object) error
	page []blob.Object
}

func (l *lister) flush() error {
	if len(l.page) == 0 {
		return nil
	}
	err := l.fn(l.page)
	l.page = l.page[:0]
	return err
}

func (l *lister) walk(dir string) error {
	if err := l.ctx.Err(); err != nil {
		return err
	}
	entries, err := fs.ReadDir(l.s.root.FS(), dir)
	if errors.Is(err, fs.ErrNotExist) && dir != "." {
		return nil // pruned by a Delete since its parent was read
	}
	if err != nil {
		return fmt.Errorf("fs storage: list %q: %w", dir, err)
	}
	sortKey := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		p := e.Name()
		if dir != "." {
			p = path.Join(dir, e.Name())
		}
		if e.IsDir() {
			if err := l.walk(p); err != nil {
				return err
			}
			continue
		}
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the folder was read
		}
		l.page = append(l.page, blob.Object{Key: p, Size: info.Size(), ModTime: info.ModTime()})
		if len(l.page) == blob.ListPageSize {
			if err := l.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

var _ blob.UploadLister = (*Store)(nil)

// ListUploads implements blob.UploadLister: the temp files of writes (Put, PutPart) and the
// part folders of multipart uploads, which are named after a hash of their key, so their Key is
// "" and their ID their path. Started is their modification time: a temp file's changes as bytes
// are written, a part folder's whenever a part arrives.
func (s *Store) ListUploads(ctx context.Context, fn func(page []blob.Upload) error) error {
	page := make([]blob.Upload, 0, blob.ListPageSize)
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := fs.ReadDir(s.root.FS(), dir)
		if errors.Is(err, fs.ErrNotExist) && dir != "." {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fs storage: list %q: %w", dir, err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if !strings.HasPrefix(e.Name(), tempPrefix) {
				if e.IsDir() {
					if err := walk(p); err != nil {
						return err
					}
				}
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed since the folder was read
			}
			page = append(page, blob.Upload{ID: p, Started: info.ModTime()})
			if len(page) == blob.ListPageSize {
				if err := fn(page); err != nil {
					return err
				}
				page = page[:0]
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return err
	}
	if len(page) > 0 {
		return fn(page)
	}
	return nil
}

// RemoveUpload implements blob.UploadLister: it removes the temp file or part folder at u.ID
// (nothing else: its name must be a temp name) and the folders that became empty.
func (s *Store) RemoveUpload(_ context.Context, u blob.Upload) error {
	if err := blob.CheckKey(u.ID); err != nil {
		return err
	}
	if !strings.HasPrefix(path.Base(u.ID), tempPrefix) {
		return fmt.Errorf("fs storage: %q is not an unfinished write: %w", u.ID, blob.ErrInvalidKey)
	}
	if err := s.root.RemoveAll(u.ID); err != nil {
		return s.wrap("remove unfinished write", u.ID, err)
	}
	for dir := path.Dir(u.ID); dir != "."; dir = path.Dir(dir) {
		if s.root.Remove(dir) != nil { // not empty (or already gone): stop
			break
		}
	}
	return nil
}
