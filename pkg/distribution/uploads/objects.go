// Package uploads turns bytes into records: objects in storage and the ledger that keeps them
// collectable (Objects), a stored package parsed into a release (Builds), resumable upload sessions
// (Sessions), and debug files (DebugFiles). The database is the truth and storage follows it: an
// object is recorded as pending before it is written, and claimed by the transaction that records
// its owner.
package uploads

import (
	"bytes"
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
	"net/url"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// Ledger is the bookkeeping the collector works from (design.md, property 4): objects being
// written are pending, objects whose rows are gone are deleted, until forgotten.
type Ledger interface {
	MarkPending(ctx context.Context, key string) error
	Forget(ctx context.Context, key string) error
	// Abandon hands still-pending objects to the collector (state deleted) and returns them;
	// objects no longer pending (claimed by a committed transaction) are left alone.
	Abandon(ctx context.Context, keys ...string) ([]string, error)
}

// Objects stores uploads and derived objects (icons) under the ledger, deletes objects after the
// transactions that drop their rows, and says where clients download them from.
type Objects struct {
	Ledger  Ledger
	Storage blob.Backend
	// Signer signs the service's own object URLs (filesystem storage).
	Signer *signing.Signer
	// MaxUploadBytes caps an upload's file part.
	MaxUploadBytes int64
	// Downloads says where clients fetch objects from (see ObjectURL).
	Downloads DownloadConfig
	Metrics   *metrics.Metrics
	Log       *slog.Logger
}

// DownloadConfig says where clients fetch objects from.
type DownloadConfig struct {
	// PublicURL is the base of the service's own signed object URLs (filesystem storage).
	PublicURL string
	// CDNURL, when set, is the base the URLs of public objects are made from instead (see
	// ObjectURL).
	CDNURL string
	// TTL bounds presigned and signed URLs.
	TTL time.Duration
}

// storageErr wraps a failed storage operation as Unavailable (503 with Retry-After): whatever the
// cause, the client can only retry, and the message must not carry keys or URLs.
func storageErr(m *metrics.Metrics, op string, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if m != nil {
		m.StorageErrors.WithLabelValues(op).Inc()
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return errs.Wrap(errs.Unavailable, err, "object storage is unavailable; retry later")
}

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
	// Unverified marks an object whose SHA256 is the client's word (a resumable session's): the
	// Verifier computes its checksums from the stored bytes later.
	Unverified bool
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

// Object key prefixes: every object Slipway writes is under one of them (KeyPrefixes).
const (
	PackagePrefix   = "packages"
	DebugFilePrefix = "debug_files"
	IconPrefix      = "icons"
	// FeedbackPrefix holds feedback screenshots and their thumbnails.
	FeedbackPrefix = "feedback"
)

// KeyPrefixes are the top-level folders of every key Slipway writes (packages and upload sessions'
// objects, debug files, release icons, feedback screenshots). Reconciliation deletes nothing
// outside them.
var KeyPrefixes = []string{PackagePrefix, DebugFilePrefix, IconPrefix, FeedbackPrefix}

// StoreUpload streams r, an upload's file part, into a new pending object under prefix
// (PackagePrefix, DebugFilePrefix), hashing and counting it on the way and keeping its tail. More than
// MaxUploadBytes is an errs.TooLarge error; on any error nothing is kept.
func (o *Objects) StoreUpload(ctx context.Context, prefix string, r io.Reader, filename string) (*StoredObject, error) {
	obj := &StoredObject{Key: newObjectKey(prefix), Filename: cleanFilename(filename)}
	if err := o.Ledger.MarkPending(ctx, obj.Key); err != nil {
		return nil, err
	}
	// The stream is hashed and its tail kept as the backend hands it on (PutOptions.Observe), in
	// large chunks and, on S3, off the goroutine that reads the client.
	h := sha256.New()
	tail := blob.NewTail(tailSize)
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
	lr := &limitReader{r: r, left: o.MaxUploadBytes}
	start := time.Now()
	n, err := o.Storage.Put(ctx, obj.Key, lr, blob.PutOptions{ContentType: "application/octet-stream", Observe: observe})
	if o.Metrics != nil {
		o.Metrics.UploadBytes.WithLabelValues(prefix).Add(float64(tail.Total()))
	}
	if err != nil {
		o.Discard(ctx, obj.Key)
		switch {
		case lr.over:
			return nil, errs.New(errs.TooLarge, "the file is larger than the %d-byte upload limit", o.MaxUploadBytes)
		case lr.readErr != nil:
			// The client went away, stalled, trickled or sent a broken body: there may be nobody
			// to answer, but say why. A body that explains itself (too slow) is passed on.
			if e, ok := errs.AsError(lr.readErr); ok {
				return nil, e
			}
			var netErr net.Error
			if errors.As(lr.readErr, &netErr) && netErr.Timeout() {
				return nil, errs.Wrap(errs.Invalid, lr.readErr, "the upload stalled: no data arrived for too long")
			}
			return nil, errs.Wrap(errs.Invalid, lr.readErr, "the upload was cut short before the file ended")
		}
		return nil, storageErr(o.Metrics, "put", err)
	}
	if n == 0 {
		o.Discard(ctx, obj.Key)
		return nil, errs.Field("file", "is empty")
	}
	obj.Size, obj.SHA256, obj.tail = n, hex.EncodeToString(h.Sum(nil)), tail.Bytes()
	if md != nil {
		obj.MD5 = hex.EncodeToString(md.Sum(nil))
	}
	o.Log.DebugContext(ctx, "upload stored", slog.Int64("bytes", n), slog.Duration("took", time.Since(start)))
	return obj, nil
}

// HashStored streams a stored object once to compute its SHA-256 (hex), for an object whose upload
// did not (a resumable session completed without a checksum).
func (o *Objects) HashStored(ctx context.Context, obj *StoredObject) (string, error) {
	rc, err := o.Storage.GetRange(ctx, obj.Key, 0, -1)
	if err != nil {
		return "", storageErr(o.Metrics, "get", err)
	}
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		return "", storageErr(o.Metrics, "get", err)
	}
	if n != obj.Size {
		return "", errs.New(errs.Internal, "the stored package holds %d bytes, not %d", n, obj.Size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReaderAt returns a block-cached reader over the stored object, seeded with the stream's tail.
func (o *Objects) ReaderAt(ctx context.Context, obj *StoredObject) *blob.ReaderAt {
	ra := blob.NewReaderAt(ctx, o.Storage, obj.Key, obj.Size)
	if len(obj.tail) > 0 {
		ra.Seed(obj.Size-int64(len(obj.tail)), obj.tail)
	}
	return ra
}

// StoreBytes stores a small derived object (an icon) as pending.
func (o *Objects) StoreBytes(ctx context.Context, prefix string, data []byte, contentType string) (string, error) {
	key := newObjectKey(prefix)
	if err := o.Ledger.MarkPending(ctx, key); err != nil {
		return "", err
	}
	if _, err := o.Storage.Put(ctx, key, bytesReader(data), blob.PutOptions{ContentType: contentType}); err != nil {
		o.Discard(ctx, key)
		return "", storageErr(o.Metrics, "put", err)
	}
	return key, nil
}

// Discard deletes the objects of a failed upload and forgets them. Only objects still pending are
// deleted: they are first handed to the collector (marked deleted), so one that cannot be deleted
// now is removed by the next collector run. An object whose pending mark is gone belongs to a
// committed transaction (an upload can fail after its commit, when the database goes away) and is
// kept. When the database cannot be asked, the objects stay pending, and the collector deletes
// them after the grace period unless a transaction claimed them.
func (o *Objects) Discard(ctx context.Context, keys ...string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	keys = slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == "" })
	if len(keys) == 0 {
		return
	}
	doomed, err := o.Ledger.Abandon(ctx, keys...)
	if err != nil {
		o.Log.WarnContext(ctx, "discarded objects left pending for the collector", slog.String("error", err.Error()))
		return
	}
	for _, key := range doomed {
		if err := o.Storage.Delete(ctx, key); err != nil {
			storageErr(o.Metrics, "delete", err)
			continue // marked deleted: the collector retries
		}
		if err := o.Ledger.Forget(ctx, key); err != nil {
			o.Log.WarnContext(ctx, "forgetting a discarded object failed", slog.String("error", err.Error()))
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

// DeleteObjects deletes objects already recorded as deleted, a few at a time, and forgets each
// one deleted. Failures are logged and left to the collector. It returns when every deletion has
// ended (its goroutines live no longer than the call).
func (o *Objects) DeleteObjects(ctx context.Context, keys []string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, k := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func(key string) {
			defer func() { <-sem; wg.Done() }()
			if err := o.Storage.Delete(ctx, key); err != nil {
				storageErr(o.Metrics, "delete", err)
				o.Log.WarnContext(ctx, "object deletion failed; the collector will retry", slog.String("error", err.Error()))
				return
			}
			if err := o.Ledger.Forget(ctx, key); err != nil {
				o.Log.WarnContext(ctx, "forgetting a deleted object failed", slog.String("error", err.Error()))
			}
		}(k)
	}
	wg.Wait()
}

// ObjectURL returns where a client fetches an object: the CDN, a presigned S3 URL, or the
// service's own signed, expiring URL (filesystem storage). The handler redirects to it. The URL
// is a credential: it is never logged.
//
// Only a public object (of a channel anyone with its link may download: no password) goes to
// the CDN. A CDN URL is plain and never expires, and a CDN in front of the bucket serves any key
// to whoever asks; so the objects of a protected channel, and debug files, get the presigned
// or signed URL, which expires, as without a CDN. The caller decides at each request, so a
// channel given a password takes its older builds off the CDN at once.
func (o *Objects) ObjectURL(ctx context.Context, key, filename, contentType string, public bool) (string, error) {
	d := o.Downloads
	if d.CDNURL != "" && public {
		return d.CDNURL + "/" + escapeKey(key), nil
	}
	switch b := o.Storage.(type) {
	case blob.Presigner:
		u, err := b.PresignGet(ctx, key, d.TTL, blob.GetOptions{Filename: filename, ContentType: contentType})
		if err != nil {
			return "", storageErr(o.Metrics, "presign", err)
		}
		return u, nil
	case blob.FileOpener:
		q := url.Values{"name": {filename}, "type": {contentType}}
		q.Set("t", o.Signer.Token("object", d.TTL, key, filename, contentType))
		return d.PublicURL + "/objects/" + escapeKey(key) + "?" + q.Encode(), nil
	}
	return "", fmt.Errorf("storage backend %T can neither presign nor serve files", o.Storage)
}

// OpenSignedObject opens an object of the filesystem backend for a URL made by ObjectURL, after
// checking its signature: errs.Forbidden for a bad or expired one, errs.NotFound when the object
// is gone.
func (o *Objects) OpenSignedObject(ctx context.Context, key, filename, contentType, signature string) (*os.File, error) {
	fo, ok := o.Storage.(blob.FileOpener)
	if !ok || !o.Signer.CheckToken(signature, "object", key, filename, contentType) {
		return nil, errs.New(errs.Forbidden, "this download link is invalid or has expired; open the release page again")
	}
	f, err := fo.OpenFile(ctx, key)
	if err != nil {
		// A key that is not a valid object (it climbs out of the folder, or a link planted there
		// leads out) can carry a valid signature only if the secret leaked: it is not found either.
		if errs.KindOf(err) == errs.Internal && (errors.Is(err, blob.ErrNotFound) || errors.Is(err, blob.ErrInvalidKey)) {
			return nil, errs.New(errs.NotFound, "the file no longer exists")
		}
		return nil, err
	}
	return f, nil
}

func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// cleanFilename keeps the base name of a client's file name, printable and at most 200 bytes, for
// Content-Disposition; "" when nothing usable remains.
func cleanFilename(name string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" || name == ".." {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) || r == '"' {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	return strings.TrimSpace(name)
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < 0x80 || s[i] >= 0xC0 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}
