package distribution

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// tailSize is how much of an upload's end is kept to seed the parser's reader: enough for the zip
// central directory of an app with tens of thousands of files, so parsing starts without a GET.
const tailSize = 2 << 20

// StoredObject is an uploaded file in storage. It stays pending (collectable after the grace
// period) until the transaction recording its owner claims it.
type StoredObject struct {
	Key    string
	Size   int64
	SHA256 string
	// MD5 is computed for debug files only, which Zealot's clients look up by MD5.
	MD5 string
	// Filename is the client's file name, kept for Content-Disposition; never part of the key.
	Filename string
	tail     []byte
}

// newObjectKey returns prefix/<time-ordered random id>: unguessable, unique, and independent of
// anything the client sent.
func newObjectKey(prefix string) string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%s/%x%s", prefix, time.Now().UTC().Format("2006/01/02"), time.Now().UnixMilli(), hex.EncodeToString(b))
}

// Object key prefixes of uploads.
const (
	PackagePrefix   = "packages"
	DebugFilePrefix = "debug_files"
)

// StoreUpload streams r, an upload's file part, into a new pending object under prefix
// (PackagePrefix, DebugFilePrefix), hashing and counting it on the way and keeping its tail. More than
// MaxUploadBytes is an errs.TooLarge error; on any error nothing is kept.
func (s *Service) StoreUpload(ctx context.Context, prefix string, r io.Reader, filename string) (*StoredObject, error) {
	obj := &StoredObject{Key: newObjectKey(prefix), Filename: cleanFilename(filename)}
	if err := s.Store.MarkPending(ctx, obj.Key); err != nil {
		return nil, err
	}
	// The stream is hashed and its tail kept as the backend hands it on (PutOptions.Observe), in
	// large chunks and, on S3, off the goroutine that reads the client.
	h := sha256.New()
	tail := storage.NewTail(tailSize)
	var md hash.Hash
	if prefix == DebugFilePrefix {
		md = md5.New()
	}
	observe := func(p []byte) {
		h.Write(p)
		tail.Write(p)
		if md != nil {
			md.Write(p)
		}
	}
	lr := &limitReader{r: r, left: s.MaxUploadBytes}
	start := time.Now()
	n, err := s.Storage.Put(ctx, obj.Key, lr, storage.PutOptions{ContentType: "application/octet-stream", Observe: observe})
	if s.Metrics != nil {
		s.Metrics.UploadBytes.WithLabelValues(prefix).Add(float64(tail.Total()))
	}
	if err != nil {
		s.Discard(ctx, obj.Key)
		switch {
		case lr.over:
			return nil, errs.New(errs.TooLarge, "the file is larger than the %d-byte upload limit", s.MaxUploadBytes)
		case lr.readErr != nil:
			// The client went away, stalled or sent a broken body: there may be nobody to answer,
			// but say why.
			var netErr net.Error
			if errors.As(lr.readErr, &netErr) && netErr.Timeout() {
				return nil, errs.Wrap(errs.Invalid, lr.readErr, "the upload stalled: no data arrived for too long")
			}
			return nil, errs.Wrap(errs.Invalid, lr.readErr, "the upload was cut short before the file ended")
		}
		return nil, s.storageErr("put", err)
	}
	if n == 0 {
		s.Discard(ctx, obj.Key)
		return nil, errs.Field("file", "is empty")
	}
	obj.Size, obj.SHA256, obj.tail = n, hex.EncodeToString(h.Sum(nil)), tail.Bytes()
	if md != nil {
		obj.MD5 = hex.EncodeToString(md.Sum(nil))
	}
	s.Log.DebugContext(ctx, "upload stored", slog.Int64("bytes", n), slog.Duration("took", time.Since(start)))
	return obj, nil
}

// ReaderAt returns a block-cached reader over the stored object, seeded with the stream's tail.
func (s *Service) ReaderAt(ctx context.Context, obj *StoredObject) *storage.ReaderAt {
	ra := storage.NewReaderAt(ctx, s.Storage, obj.Key, obj.Size)
	if len(obj.tail) > 0 {
		ra.Seed(obj.Size-int64(len(obj.tail)), obj.tail)
	}
	return ra
}

// storeBytes stores a small derived object (an icon) as pending.
func (s *Service) storeBytes(ctx context.Context, prefix string, data []byte, contentType string) (string, error) {
	key := newObjectKey(prefix)
	if err := s.Store.MarkPending(ctx, key); err != nil {
		return "", err
	}
	if _, err := s.Storage.Put(ctx, key, bytesReader(data), storage.PutOptions{ContentType: contentType}); err != nil {
		s.Discard(ctx, key)
		return "", s.storageErr("put", err)
	}
	return key, nil
}

// Discard deletes the objects of a failed upload and forgets them. Only objects still pending are
// deleted: they are first handed to the collector (marked deleted), so one that cannot be deleted
// now is removed by the next collector run. An object whose pending mark is gone belongs to a
// committed transaction (an upload can fail after its commit, when the database goes away) and is
// kept. When the database cannot be asked, the objects stay pending, and the collector deletes
// them after the grace period unless a transaction claimed them.
func (s *Service) Discard(ctx context.Context, keys ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
	if len(keys) == 0 {
		return
	}
	doomed, err := s.Store.Abandon(ctx, keys...)
	if err != nil {
		s.Log.WarnContext(ctx, "discarded objects left pending for the collector", slog.String("error", err.Error()))
		return
	}
	for _, key := range doomed {
		if err := s.Storage.Delete(ctx, key); err != nil {
			s.storageErr("delete", err)
			continue // marked deleted: the collector retries
		}
		if err := s.Store.Forget(ctx, key); err != nil {
			s.Log.WarnContext(ctx, "forgetting a discarded object failed", slog.String("error", err.Error()))
		}
	}
}

// limitReader fails once more than left bytes come through, and remembers read errors so a client
// that went away is told apart from a storage failure.
type limitReader struct {
	r       io.Reader
	left    int64
	over    bool
	readErr error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		l.over = true
		return 0, errs.New(errs.TooLarge, "upload over the limit")
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.over = true
		return 0, errs.New(errs.TooLarge, "upload over the limit")
	}
	if err != nil && !errors.Is(err, io.EOF) {
		l.readErr = err
	}
	return n, err
}
