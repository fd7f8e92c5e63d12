// Package s3 is a blob.Backend over any S3-compatible service (AWS S3, MinIO, Ceph, R2, ...),
// built on aws-sdk-go-v2. The package is named s3 after its folder; code that also imports the
// SDK's service/s3 aliases one of the two.
//
// # Credentials
//
// Config.AccessKey/SecretKey, when set, are used as static credentials. Otherwise the SDK's
// standard chain applies (config.LoadDefaultConfig): AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY,
// shared config files, web identity (IRSA / EKS Pod Identity on Kubernetes), ECS and EC2 roles.
//
// # Uploads and memory
//
// Put streams a reader of unknown length. Up to PartSize bytes it sends one PutObject (a small
// object costs one 64 KiB buffer, and a part-sized one only if the stream goes on). Beyond that it
// runs a multipart upload with at most Concurrency parts in flight and one more being filled from
// the reader, so an upload holds at most (Concurrency+1)×PartSize bytes: 24 MiB with the defaults
// (8 MiB parts, 2 in flight). Two parts in flight keep a link to S3 busy while the next part is
// read from the client; larger values help only when S3 is slower than the client. Part buffers
// come from a blob.BufferPool shared by every upload of the process (Config.MemoryBudget), so
// that however many uploads run, their parts never hold more than the budget: uploads beyond it
// wait for a buffer and slow down instead of failing. A buffer goes back to the pool after its
// part was sent; after a failed request it is dropped instead (the HTTP transport may still be
// reading it). Once no buffer has been out for blob.IdleRelease, the pool lets its free buffers go.
// A part goes to the socket in one write (conn.go). The object limit is 10,000 parts: 80 GiB with 8 MiB parts.
//
// A failed or cancelled multipart upload is aborted with a context detached from the caller's (a
// cancelled request must still clean up). If even the abort fails (S3 unreachable), or the process
// dies mid-upload, Delete of the key aborts it later: the collector deletes every key an upload
// left behind.
//
// This is a small uploader of its own rather than feature/s3/manager.Uploader, which is deprecated,
// reads its first part with io.ReadAll outside its buffer pool (so (Concurrency+2)×PartSize plus
// growth copies), and aborts with the caller's context, which fails once that context is cancelled.
//
// # Checksums and signing
//
// Request checksums are computed only where an operation requires them
// (aws.RequestChecksumCalculationWhenRequired) and responses are validated likewise: the SDK's
// default (CRC32 on every upload, sent as an aws-chunked trailer) is rejected by several
// S3-compatible services, and parsers check the zip's own CRCs anyway. PutObject and UploadPart are
// signed with UNSIGNED-PAYLOAD even over plain http: otherwise SigV4 hashes every part with
// SHA-256 before sending it, a second pass over every byte. Integrity in transit then rests on TLS
// (use https outside a trusted network) or TCP; the upload path hashes the stream itself.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/slipwayhq/slipway/pkg/blob"
)

const (
	// DefaultPartSize is the multipart part size when Config.PartSize is 0.
	DefaultPartSize = 8 << 20
	// MinPartSize is S3's smallest part (all but the last).
	MinPartSize = 5 << 20
	// DefaultConcurrency is the number of parts in flight per upload when Config.Concurrency is 0.
	DefaultConcurrency = 2
	// DefaultMemoryBudget bounds the part buffers of all uploads together when
	// Config.MemoryBudget is 0: 16 parts of 8 MiB, five uploads at full speed.
	DefaultMemoryBudget = 128 << 20
	// maxParts is S3's limit on the parts of one upload.
	maxParts = 10_000
	// firstRead is the buffer a Put starts with, so small objects do not cost a whole part.
	firstRead = 64 << 10
	// abortTimeout bounds the clean-up of a failed multipart upload.
	abortTimeout = time.Minute
	// maxPresignTTL is SigV4's limit on a presigned URL's lifetime.
	maxPresignTTL = 7 * 24 * time.Hour
)

// Config selects a bucket and tunes uploads.
type Config struct {
	// Bucket is required.
	Bucket string
	// Prefix is prepended to every key ("slipway" stores "packages/x" as "slipway/packages/x").
	Prefix string
	// Region is the bucket's region; empty uses AWS_REGION / the shared config, or "us-east-1"
	// when Endpoint is set (MinIO and most S3-compatible services ignore it).
	Region string
	// Endpoint is the service's URL for S3-compatible services (e.g. "http://minio:9000"); empty
	// means AWS S3 (or AWS_ENDPOINT_URL_S3).
	Endpoint string
	// PathStyle addresses buckets as endpoint/bucket instead of bucket.endpoint (MinIO needs it).
	PathStyle bool
	// PartSize is the multipart part size (default 8 MiB, at least 5 MiB).
	PartSize int64
	// Concurrency is the number of parts uploaded at once per upload (default 2).
	Concurrency int
	// AccessKey and SecretKey, when both set, are static credentials; empty uses the default chain.
	AccessKey, SecretKey string
	// RequestTimeout bounds each HTTP request to S3 (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// MemoryBudget bounds the bytes of part buffers all uploads hold at once (default
	// DefaultMemoryBudget; at least one part).
	MemoryBudget int64
	// ObserveRequest, when set, is told how long each HTTP request to S3 took to its response's
	// headers (every attempt), with its S3 operation: the request latency histogram.
	ObserveRequest func(operation string, d time.Duration)
}

// Store is a blob.Backend and blob.Presigner over one bucket (and prefix). It is safe for
// concurrent use.
type Store struct {
	client      *awss3.Client
	presign     *awss3.PresignClient
	bucket      string
	prefix      string
	partSize    int64
	concurrency int
	// buffers are the part buffers of every upload through this Store.
	buffers *blob.BufferPool
	// signPayload restores SigV4 payload hashing over plain http; benchmarks use it to measure
	// what UNSIGNED-PAYLOAD saves.
	signPayload bool
}

var (
	_ blob.Backend      = (*Store)(nil)
	_ blob.Presigner    = (*Store)(nil)
	_ blob.Lister       = (*Store)(nil)
	_ blob.UploadLister = (*Store)(nil)
)

// payloadOpts are the options of the calls that send an object's bytes (PutObject, UploadPart):
// UNSIGNED-PAYLOAD instead of the body's SHA-256 unless asked (see the package documentation),
// and writeOpts.
func (s *Store) payloadOpts() []func(*awss3.Options) {
	if s.signPayload {
		return writeOpts
	}
	return append([]func(*awss3.Options){awss3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)}, writeOpts...)
}

// writeOpts are the options of the calls that create an object: AccessDenied is retried, with the
// SDK's backoff and attempt limit. MinIO keeps a key's folders on its drive, and a delete removes
// the folders it leaves empty: a write into a folder that a concurrent delete of its last object
// is removing is answered AccessDenied (seen about once in 3,000 writes beside deletes of the same
// day's keys; TestConcurrentWritesAndDeletes), and succeeds when sent again. Slipway's clients do
// not retry an upload, so Slipway does. On AWS S3, AccessDenied is a permission problem that a
// retry does not change: the error comes a moment later, the same.
var writeOpts = []func(*awss3.Options){func(o *awss3.Options) {
	o.Retryer = retry.AddWithErrorCodes(o.Retryer, "AccessDenied")
}}

// New returns a Store for cfg. It makes no request: use Ping to check the bucket is reachable.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 storage: no bucket given")
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := blob.CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("s3 storage: prefix: %w", err)
		}
		prefix += "/"
	}
	s := &Store{bucket: cfg.Bucket, prefix: prefix, partSize: cfg.PartSize, concurrency: cfg.Concurrency}
	if s.partSize == 0 {
		s.partSize = DefaultPartSize
	}
	if s.partSize < MinPartSize {
		return nil, fmt.Errorf("s3 storage: part size %d is below S3's minimum of %d bytes", s.partSize, MinPartSize)
	}
	if s.concurrency == 0 {
		s.concurrency = DefaultConcurrency
	}
	if s.concurrency < 1 {
		return nil, fmt.Errorf("s3 storage: concurrency %d is not positive", s.concurrency)
	}
	if cfg.MemoryBudget < 0 {
		return nil, fmt.Errorf("s3 storage: memory budget %d is negative", cfg.MemoryBudget)
	}
	if cfg.MemoryBudget == 0 {
		cfg.MemoryBudget = DefaultMemoryBudget
	}
	s.buffers = blob.NewBufferPool(int(s.partSize), cfg.MemoryBudget)
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("s3 storage: endpoint must be an http:// or https:// URL with a host")
		}
		if u.User != nil {
			return nil, errors.New("s3 storage: endpoint must not contain credentials; use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
		}
	}

	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, errors.New("s3 storage: give both an access key and a secret key, or neither")
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 storage: load AWS configuration: %w", err)
	}
	// Wrap the client the SDK built (with AWS_CA_BUNDLE and the like applied), or its default one
	// when it built none, in per-request deadlines.
	next := awsCfg.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	if bc, ok := next.(*awshttp.BuildableClient); ok {
		next = bc.WithTransportOptions(largeWrites)
	}
	awsCfg.HTTPClient = deadlineClient{next: next, timeout: cfg.RequestTimeout, observe: cfg.ObserveRequest}
	if awsCfg.Region == "" {
		if cfg.Endpoint == "" {
			return nil, errors.New("s3 storage: no region given (set it in the storage URL or AWS_REGION)")
		}
		awsCfg.Region = "us-east-1"
	}
	s.client = awss3.NewFromConfig(awsCfg, func(o *awss3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	s.presign = awss3.NewPresignClient(s.client)
	return s, nil
}

// Put implements blob.Backend (see the package documentation for memory and signing).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts blob.PutOptions) (int64, error) {
	if err := blob.CheckKey(key); err != nil {
		return 0, err
	}
	r = blob.ContextReader(ctx, r)
	small := make([]byte, min(firstRead, s.partSize))
	n, eof, err := blob.Fill(r, small)
	if err != nil {
		return 0, fmt.Errorf("s3 storage: put %q: %w", key, err)
	}
	if eof {
		observe(opts, small[:n])
		return s.putSingle(ctx, key, small[:n], opts)
	}
	// More to come: a whole part, from the shared pool.
	buf, err := s.buffers.Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("s3 storage: put %q: waiting for a part buffer: %w", key, err)
	}
	copy(buf, small[:n])
	m, eof, err := blob.Fill(r, buf[n:])
	if err != nil {
		s.buffers.Put(buf)
		return 0, fmt.Errorf("s3 storage: put %q: %w", key, err)
	}
	if eof {
		observe(opts, buf[:n+m])
		total, err := s.putSingle(ctx, key, buf[:n+m], opts)
		if err != nil {
			s.buffers.Drop() // the transport may still hold it
		} else {
			s.buffers.Put(buf)
		}
		return total, err
	}
	return s.putMultipart(ctx, key, buf, r, opts)
}

func observe(opts blob.PutOptions, p []byte) {
	if opts.Observe != nil {
		opts.Observe(p)
	}
}

// part is a filled part buffer on its way to S3 and to PutOptions.Observe. It goes back to the
// pool when both are done with it, or is dropped from it if its request failed.
type part struct {
	buf    []byte
	refs   atomic.Int32
	failed atomic.Bool
}

func (s *Store) release(p *part) {
	if p.refs.Add(-1) > 0 {
		return
	}
	if p.failed.Load() {
		s.buffers.Drop() // the transport may still be reading it
	} else {
		s.buffers.Put(p.buf)
	}
}

func (s *Store) putSingle(ctx context.Context, key string, data []byte, opts blob.PutOptions) (int64, error) {
	_, err := s.client.PutObject(withBodyBytes(ctx, data), &awss3.PutObjectInput{
		Bucket:        &s.bucket,
		Key:           aws.String(s.prefix + key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentType:   optional(opts.ContentType),
	}, s.payloadOpts()...)
	if err != nil {
		return 0, fmt.Errorf("s3 storage: put %q: %w", key, err)
	}
	return int64(len(data)), nil
}

// putMultipart uploads first (a full part) and the rest of r as a multipart upload, and aborts it
// on any failure.
func (s *Store) putMultipart(ctx context.Context, key string, first []byte, r io.Reader, opts blob.PutOptions) (total int64, err error) {
	k := aws.String(s.prefix + key)
	created, err := s.client.CreateMultipartUpload(ctx, &awss3.CreateMultipartUploadInput{
		Bucket: &s.bucket, Key: k, ContentType: optional(opts.ContentType),
	}, writeOpts...)
	if err != nil {
		return 0, fmt.Errorf("s3 storage: put %q: start multipart upload: %w", key, err)
	}
	id := created.UploadId
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		if _, aerr := s.client.AbortMultipartUpload(actx, &awss3.AbortMultipartUploadInput{
			Bucket: &s.bucket, Key: k, UploadId: id,
		}); aerr != nil {
			err = fmt.Errorf("%w (and aborting the multipart upload failed: %v)", err, aerr)
		}
	}()

	// Uploads run with a context cancelled at the first failure, which stops the others.
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r = blob.ContextReader(uctx, r) // stop reading the client once a part has failed
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		parts []types.CompletedPart
		slots = make(chan struct{}, s.concurrency) // parts in flight
	)
	// Observe runs on a goroutine of its own, in part order, beside the uploads and the reading
	// of the next part: the upload path's SHA-256 then costs no time on the reading goroutine.
	var observed chan *part
	if opts.Observe != nil {
		observed = make(chan *part, s.concurrency+1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for p := range observed {
				opts.Observe(p.buf)
				s.release(p)
			}
		}()
		defer func() { close(observed); <-done }()
	}
	buf, n, eof := first, len(first), false
	for num := int32(1); ; num++ {
		if num > maxParts {
			cancel(fmt.Errorf("object exceeds %d parts of %d bytes; raise the part size", maxParts, s.partSize))
			s.buffers.Put(buf)
			break
		}
		select {
		case slots <- struct{}{}:
		case <-uctx.Done():
		}
		if uctx.Err() != nil {
			s.buffers.Put(buf)
			break
		}
		total += int64(n)
		p := &part{buf: buf[:n]}
		p.refs.Store(1)
		if observed != nil {
			p.refs.Add(1)
			observed <- p
		}
		wg.Add(1)
		go func(num int32, p *part) {
			defer wg.Done()
			defer s.release(p)
			out, err := s.client.UploadPart(withBodyBytes(uctx, p.buf), &awss3.UploadPartInput{
				Bucket: &s.bucket, Key: k, UploadId: id, PartNumber: aws.Int32(num),
				Body: bytes.NewReader(p.buf), ContentLength: aws.Int64(int64(len(p.buf))),
			}, s.payloadOpts()...)
			if err != nil {
				cancel(fmt.Errorf("upload part %d: %w", num, err))
				p.failed.Store(true)
				return
			}
			mu.Lock()
			parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
			mu.Unlock()
			<-slots
		}(num, p)
		if eof {
			break
		}
		// The next part: the pool may make this upload wait while others hold the budget.
		var err error
		if buf, err = s.buffers.Get(uctx); err != nil {
			break
		}
		var rerr error
		n, eof, rerr = blob.Fill(r, buf)
		if rerr != nil {
			cancel(rerr)
			s.buffers.Put(buf)
			break
		}
		if n == 0 && eof {
			s.buffers.Put(buf) // the stream ended exactly at a part boundary
			break
		}
	}
	wg.Wait()
	if uctx.Err() != nil {
		return total, fmt.Errorf("s3 storage: put %q: %w", key, context.Cause(uctx))
	}

	slices.SortFunc(parts, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	if _, err := s.client.CompleteMultipartUpload(ctx, &awss3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: k, UploadId: id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	}, writeOpts...); err != nil {
		return total, fmt.Errorf("s3 storage: put %q: complete multipart upload: %w", key, err)
	}
	return total, nil
}

// GetRange implements blob.Backend with an HTTP Range request.
func (s *Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("s3 storage: get %q: negative offset %d", key, off)
	}
	if n == 0 { // no bytes, but the object must exist
		if _, err := s.Stat(ctx, key); err != nil {
			return nil, err
		}
		return io.NopCloser(strings.NewReader("")), nil
	}
	in := &awss3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)}
	switch {
	case n > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		if in.Range != nil && status(err) == 416 { // starts at or past the end
			return io.NopCloser(strings.NewReader("")), nil
		}
		return nil, wrap("get", key, err)
	}
	return out.Body, nil
}

// Stat implements blob.Backend with HeadObject.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	out, err := s.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil {
		return blob.Info{}, wrap("stat", key, err)
	}
	return blob.Info{Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Delete implements blob.Backend. It also aborts any unfinished multipart upload of the key:
// one whose abort failed because S3 was unreachable, or whose process died in the middle. Such a
// key stays in the collector's bookkeeping until Delete succeeds, so its parts are removed once S3
// is back rather than left to a bucket lifecycle rule.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err = wrap("delete", key, err); err != nil && !errors.Is(err, blob.ErrNotFound) {
		return err
	}
	return s.abortUploads(ctx, key)
}

// abortUploads aborts the unfinished multipart uploads of exactly key. Listing them needs
// s3:ListBucketMultipartUploads; without it (403) the uploads are left to a lifecycle rule, as
// before, rather than failing the deletion forever.
func (s *Store) abortUploads(ctx context.Context, key string) error {
	k := s.prefix + key
	in := &awss3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: &k}
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if status(err) == 403 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("s3 storage: delete %q: list unfinished uploads: %w", key, err)
		}
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) != k {
				continue // a longer key with this one as prefix
			}
			_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			var nsu *types.NoSuchUpload
			if err != nil && !errors.As(err, &nsu) && status(err) != 404 {
				return fmt.Errorf("s3 storage: delete %q: abort unfinished upload: %w", key, err)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Ping checks that the bucket exists and the credentials reach it (HeadBucket).
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &s.bucket}); err != nil {
		return fmt.Errorf("s3 storage: bucket %q: %w", s.bucket, err)
	}
	return nil
}

// PresignGet returns a URL that downloads the object without credentials for ttl (at most 7 days,
// and no longer than temporary credentials live). opts set the response's Content-Disposition
// (blob.ContentDisposition) and Content-Type. The URL is a bearer secret: errors never contain
// it, and callers should not log it.
func (s *Store) PresignGet(ctx context.Context, key string, ttl time.Duration, opts blob.GetOptions) (string, error) {
	if err := blob.CheckKey(key); err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > maxPresignTTL {
		return "", fmt.Errorf("s3 storage: presign %q: lifetime %s is outside (0, 7 days]", key, ttl)
	}
	in := &awss3.GetObjectInput{
		Bucket:              &s.bucket,
		Key:                 aws.String(s.prefix + key),
		ResponseContentType: optional(opts.ContentType),
	}
	if opts.Filename != "" {
		in.ResponseContentDisposition = aws.String(blob.ContentDisposition(opts.Filename))
	}
	req, err := s.presign.PresignGetObject(ctx, in, awss3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("s3 storage: presign %q: %w", key, err)
	}
	return req.URL, nil
}

// wrap maps "no such key" to blob.ErrNotFound and prefixes other errors with the operation.
func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("s3 storage: %s %q: %w", op, key, blob.ErrNotFound)
		}
	}
	return fmt.Errorf("s3 storage: %s %q: %w", op, key, err)
}

// status returns the HTTP status of a failed request, or 0.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// List implements blob.Lister with ListObjectsV2 (S3 returns keys in byte order of their UTF-8,
// a page of at most 1,000 at a time). With a Prefix, only the objects under it are listed, without
// it. Listing needs s3:ListBucket.
func (s *Store) List(ctx context.Context, fn func(page []blob.Object) error) error {
	in := &awss3.ListObjectsV2Input{Bucket: &s.bucket, MaxKeys: aws.Int32(blob.ListPageSize)}
	if s.prefix != "" {
		in.Prefix = aws.String(s.prefix)
	}
	pages := awss3.NewListObjectsV2Paginator(s.client, in)
	page := make([]blob.Object, 0, blob.ListPageSize)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 storage: list bucket %q: %w", s.bucket, err)
		}
		page = page[:0]
		for _, o := range out.Contents {
			page = append(page, blob.Object{
				Key: strings.TrimPrefix(aws.ToString(o.Key), s.prefix), Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified),
			})
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
	}
	return nil
}

// ListUploads implements blob.UploadLister with ListMultipartUploads (needs
// s3:ListBucketMultipartUploads). The bucket's uploads are listed whole and those outside the
// Prefix left out here: MinIO answers a Prefix that is not a whole key with no uploads at all.
func (s *Store) ListUploads(ctx context.Context, fn func(page []blob.Upload) error) error {
	in := &awss3.ListMultipartUploadsInput{Bucket: &s.bucket, MaxUploads: aws.Int32(blob.ListPageSize)}
	page := make([]blob.Upload, 0, blob.ListPageSize)
	for {
		out, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return fmt.Errorf("s3 storage: list unfinished uploads of bucket %q: %w", s.bucket, err)
		}
		page = page[:0]
		for _, u := range out.Uploads {
			if !strings.HasPrefix(aws.ToString(u.Key), s.prefix) {
				continue
			}
			page = append(page, blob.Upload{Key: strings.TrimPrefix(aws.ToString(u.Key), s.prefix),
				ID: aws.ToString(u.UploadId), Started: aws.ToTime(u.Initiated)})
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// RemoveUpload implements blob.UploadLister: AbortMultipartUpload.
func (s *Store) RemoveUpload(ctx context.Context, u blob.Upload) error {
	if err := blob.CheckKey(u.Key); err != nil {
		return err
	}
	_, err := s.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: aws.String(s.prefix + u.Key), UploadId: &u.ID})
	var nsu *types.NoSuchUpload
	if err != nil && !errors.As(err, &nsu) && status(err) != 404 {
		return fmt.Errorf("s3 storage: abort unfinished upload of %q: %w", u.Key, err)
	}
	return nil
}
