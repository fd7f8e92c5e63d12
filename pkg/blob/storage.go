// Package blob is Slipway's object storage: a small Backend interface, implemented by
// blob/s3 (any S3-compatible service, through aws-sdk-go-v2) and blob/fs (a local folder),
// plus the pieces every backend shares: a block-cached io.ReaderAt for parsers and a tail keeper
// that seeds it with the end of an upload stream.
//
// Whether a download is redirected (presigned S3 URL, CDN) or served by Slipway itself (filesystem,
// behind a signed URL) is decided by the HTTP handler, not by the backend.
package blob

import (
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// ErrNotFound is returned (wrapped) when an object does not exist.
var ErrNotFound = errors.New("object not found")

// ErrInvalidKey is returned when a key is empty, absolute or climbs out of the store ("..").
// Every backend checks keys with CheckKey, so all accept and refuse the same keys.
var ErrInvalidKey = errors.New("invalid object key")

// Backend stores objects under keys such as "packages/01J.../app.ipa".
type Backend interface {
	// Put streams r into the object key and returns the number of bytes written. r's length is not
	// known in advance; implementations hold a bounded amount of it in memory and never spool it
	// to a local temp file (the filesystem backend writes a temp file in the destination folder).
	// If r fails or ctx is cancelled, Put returns the error and nothing remains under key (S3
	// multipart uploads are aborted).
	Put(ctx context.Context, key string, r io.Reader, opts PutOptions) (int64, error)
	// GetRange returns a reader of n bytes of the object starting at off; n < 0 reads to the end.
	// A range that runs past the end is cut short there; one that starts at or after the end
	// yields no bytes (not an error), so callers need not know the size exactly.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	// Stat returns the object's size and modification time.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object. Deleting an absent object is not an error.
	Delete(ctx context.Context, key string) error
	// Ping checks that the store is reachable (readiness).
	Ping(ctx context.Context) error
}

// PutOptions describe the stored object.
type PutOptions struct {
	ContentType string
	// Observe, when set, is given every byte of the stream, in order, in chunks as large as the
	// backend handles them (S3: whole parts), before Put returns. The upload path hashes the
	// stream and keeps its tail with it, so the bytes are not copied through a TeeReader on the
	// reading goroutine: the S3 backend calls it on a goroutine of its own, beside sending the
	// part and reading the next. It must not keep p after it returns.
	Observe func(p []byte)
}

// Info describes a stored object.
type Info struct {
	Size    int64
	ModTime time.Time
}

// Object is one object a Lister found.
type Object struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// ListPageSize is the most objects a Lister hands over at once.
const ListPageSize = 1000

// Lister is implemented by backends that can enumerate what they hold (all of Slipway's): the
// reconciliation of `slipway gc --reconcile` compares it with the rows that own objects.
type Lister interface {
	// List calls fn with every object, a page of at most ListPageSize at a time, in byte order of
	// their keys (as Go compares strings and Postgres's "C" collation orders them), and stops at
	// fn's first error, which it returns. Only whole objects are listed: not the temp files of
	// writes in progress nor the parts of unfinished multipart uploads. It holds about one page
	// in memory whatever the store's size; fn must not keep the page after it returns.
	List(ctx context.Context, fn func(page []Object) error) error
}

// Upload is an unfinished write an UploadLister found: a multipart upload never completed nor
// aborted (S3), or the temp file or part folder of a write or upload session (filesystem).
type Upload struct {
	// Key is the key it writes, when the store can tell (S3); "" when it cannot (the filesystem
	// names its leftovers after a hash of the key).
	Key string
	// ID identifies it for RemoveUpload: the multipart upload id (S3), or the leftover's path
	// (filesystem).
	ID string
	// Started is when it began (S3), or when it last changed (filesystem: a part folder changes
	// whenever a part arrives, a temp file whenever bytes are written).
	Started time.Time
}

// UploadLister is implemented by backends that can enumerate and remove unfinished writes: after
// a database restore, those of uploads the restored database does not know are left behind.
type UploadLister interface {
	// ListUploads calls fn with the unfinished writes, a page of at most ListPageSize at a time,
	// and stops at fn's first error, which it returns.
	ListUploads(ctx context.Context, fn func(page []Upload) error) error
	// RemoveUpload aborts the upload and removes what it stored. Removing one already gone is not
	// an error.
	RemoveUpload(ctx context.Context, u Upload) error
}

// GetOptions shape a presigned download.
type GetOptions struct {
	// Filename sets the response's Content-Disposition (attachment; filename="...").
	Filename string
	// ContentType overrides the response's Content-Type.
	ContentType string
}

// Presigner is implemented by backends whose objects clients fetch directly (S3): a short-lived
// URL that needs no credentials.
type Presigner interface {
	PresignGet(ctx context.Context, key string, ttl time.Duration, opts GetOptions) (string, error)
}

// FileOpener is implemented by backends whose objects Slipway serves itself (filesystem), so the
// handler can answer Range requests with http.ServeContent.
type FileOpener interface {
	OpenFile(ctx context.Context, key string) (*os.File, error)
}

// Part is one part of a multipart upload, as storage holds it.
type Part struct {
	Number int
	Size   int64
	ETag   string
}

// Multipart is implemented by backends that assemble an object from parts uploaded separately,
// in any order, possibly by another process: resumable upload sessions (pkg/distribution). A part
// may be uploaded again to replace it. Parts are numbered from 1.
type Multipart interface {
	// CreateMultipart starts an upload to key and returns its id.
	CreateMultipart(ctx context.Context, key, contentType string) (uploadID string, err error)
	// ListParts lists the parts uploaded so far, by number.
	ListParts(ctx context.Context, key, uploadID string) ([]Part, error)
	// CompleteMultipart makes the object of parts (all of them, in order); the upload ends.
	CompleteMultipart(ctx context.Context, key, uploadID string, parts []Part) error
	// AbortMultipart ends the upload and removes its parts.
	AbortMultipart(ctx context.Context, key, uploadID string) error
}

// PartPresigner is implemented by backends to which clients upload parts directly (S3): a
// short-lived URL for one PUT of exactly size bytes.
type PartPresigner interface {
	PresignPart(ctx context.Context, key, uploadID string, number int, size int64, ttl time.Duration) (string, error)
}

// PartWriter is implemented by backends whose parts Slipway receives itself (filesystem).
type PartWriter interface {
	// PutPart stores part number of the upload from r, which must hold exactly size bytes.
	PutPart(ctx context.Context, key, uploadID string, number int, r io.Reader, size int64) (Part, error)
}

// ContextReader returns a reader that fails once ctx is done, so a cancelled upload stops between
// two reads even when the underlying reader would block or go on.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
