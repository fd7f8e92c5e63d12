package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// Multipart uploads on the filesystem: each upload is a folder beside the key's object, named with
// the key's temp prefix (so Delete of the key, which the collector runs for an expired session,
// removes it), holding one file per part. Complete concatenates the parts into the object with
// Put's temp-file-and-rename, so readers never see half an object.

var (
	_ blob.Multipart  = (*Store)(nil)
	_ blob.PartWriter = (*Store)(nil)
)

var uploadIDRe = regexp.MustCompile(`^[0-9a-f]{16,64}$`)

// partsDir is the folder of an upload's parts.
func partsDir(key, uploadID string) string {
	return path.Join(path.Dir(key), tempNamePrefix(key)+"parts-"+uploadID)
}

func (s *Store) checkUpload(key, uploadID string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	if !uploadIDRe.MatchString(uploadID) {
		return fmt.Errorf("fs storage: upload %q of %q: %w", uploadID, key, blob.ErrNotFound)
	}
	return nil
}

// CreateMultipart implements blob.Multipart.
func (s *Store) CreateMultipart(_ context.Context, key, _ string) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	id := randomHex() + randomHex() // 192 bits: unguessable, as it names a folder
	if err := s.root.MkdirAll(partsDir(key, id), 0o750); err != nil {
		return "", s.wrap("create upload", key, err)
	}
	return id, nil
}

// PutPart implements blob.PartWriter: the part is written to a temp file, fsynced and renamed
// into place, so a part is either whole or absent; r must hold exactly size bytes.
func (s *Store) PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (blob.Part, error) {
	if err := s.checkUpload(key, uploadID); err != nil {
		return blob.Part{}, err
	}
	dir := partsDir(key, uploadID)
	if _, err := s.root.Stat(dir); err != nil {
		return blob.Part{}, s.wrap("put part", key, err)
	}
	tmp := path.Join(dir, tempPrefix+strconv.Itoa(number)+"-"+randomHex())
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return blob.Part{}, s.wrap("put part", key, err)
	}
	n, err := io.Copy(writerOnly{f}, io.LimitReader(blob.ContextReader(ctx, r), size+1))
	if err == nil && n != size {
		err = fmt.Errorf("part %d has %d bytes, want %d", number, n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, path.Join(dir, strconv.Itoa(number)))
	}
	if err != nil {
		_ = s.root.Remove(tmp)
		return blob.Part{}, fmt.Errorf("fs storage: put part %d of %q: %w", number, key, err)
	}
	return blob.Part{Number: number, Size: size}, nil
}

// ListParts implements blob.Multipart.
func (s *Store) ListParts(_ context.Context, key, uploadID string) ([]blob.Part, error) {
	if err := s.checkUpload(key, uploadID); err != nil {
		return nil, err
	}
	entries, err := fs.ReadDir(s.root.FS(), partsDir(key, uploadID))
	if err != nil {
		return nil, s.wrap("list parts", key, err)
	}
	var parts []blob.Part
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n < 1 {
			continue // a temp file of a part being written
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		parts = append(parts, blob.Part{Number: n, Size: info.Size()})
	}
	slices.SortFunc(parts, func(a, b blob.Part) int { return a.Number - b.Number })
	return parts, nil
}

// CompleteMultipart implements blob.Multipart.
func (s *Store) CompleteMultipart(ctx context.Context, key, uploadID string, parts []blob.Part) error {
	if err := s.checkUpload(key, uploadID); err != nil {
		return err
	}
	dir := partsDir(key, uploadID)
	files := make([]*os.File, 0, len(parts))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	readers := make([]io.Reader, 0, len(parts))
	for _, p := range parts {
		f, err := s.root.Open(path.Join(dir, strconv.Itoa(p.Number)))
		if err != nil {
			return s.wrap("complete upload", key, err)
		}
		files = append(files, f)
		readers = append(readers, f)
	}
	if _, err := s.Put(ctx, key, io.MultiReader(readers...), blob.PutOptions{}); err != nil {
		return err
	}
	return s.AbortMultipart(ctx, key, uploadID)
}

// AbortMultipart implements blob.Multipart. Aborting an upload that is gone is not an error.
func (s *Store) AbortMultipart(_ context.Context, key, uploadID string) error {
	if err := s.checkUpload(key, uploadID); err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			return nil
		}
		return err
	}
	if err := s.root.RemoveAll(partsDir(key, uploadID)); err != nil {
		return s.wrap("abort upload", key, err)
	}
	return nil
}
