package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
	"github.com/slipwayhq/slipway/pkg/blob/s3"
)

// plainReader hides *os.File's WriterTo and ReaderFrom, so no client gets a zero-copy sendfile
// path the others lack: every path reads the file the way a streaming client does.
type plainReader struct{ r io.Reader }

func (p plainReader) Read(b []byte) (int, error) { return p.r.Read(b) }

// releaseResponse is the part of the upload response the benchmark uses.
type releaseResponse struct {
	ID      int64 `json:"id"`
	Version int   `json:"version"`
	Size    int64 `json:"size"`
	Channel struct {
		Slug string `json:"slug"`
	} `json:"channel"`
}

// uploadClient sends uploads the way fastlane and curl do: one multipart/form-data request with
// a known Content-Length, the form fields first and the file part last, streamed from disk.
type uploadClient struct {
	http  *http.Client
	base  string
	token string
	// chunked sends the body without a Content-Length (Transfer-Encoding: chunked), as a client
	// streaming from a pipe does (curl -T -, Gradle's streaming mode).
	chunked bool
}

func newUploadClient(base, token string) *uploadClient {
	return &uploadClient{base: base, token: token, http: &http.Client{Transport: &http.Transport{
		DisableCompression: true, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute,
	}}}
}

// uploadTiming is how long an upload took, and how much of that came after the client had
// sent the last byte (the server finishing storage, parsing and recording the release).
type uploadTiming struct {
	Total, AfterBody time.Duration
	LastByte, End    time.Time
}

// upload posts the file (open returns a fresh reader of it and its size) with the fields and
// returns the time from the request's start to the response.
func (c *uploadClient) upload(ctx context.Context, open func() (io.ReadCloser, int64, error), fields map[string]string) (uploadTiming, *releaseResponse, error) {
	var t uploadTiming
	rc, size, err := open()
	if err != nil {
		return t, nil, err
	}
	defer rc.Close()
	// The multipart framing comes from multipart.Writer, so the length is known before sending.
	var frame bytes.Buffer
	mw := multipart.NewWriter(&frame)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := mw.WriteField(k, fields[k]); err != nil {
			return t, nil, err
		}
	}
	if _, err := mw.CreateFormFile("file", "Bench.ipa"); err != nil {
		return t, nil, err
	}
	head := bytes.Clone(frame.Bytes())
	frame.Reset()
	if err := mw.Close(); err != nil {
		return t, nil, err
	}
	tail := bytes.Clone(frame.Bytes())

	// The body streams through a pipe fed by a goroutine, as a Go client built on
	// multipart.Writer does.
	pr, pw := io.Pipe()
	sent := make(chan time.Time, 1)
	go func() {
		_, err := pw.Write(head)
		if err == nil {
			_, err = io.CopyBuffer(pw, plainReader{rc}, make([]byte, 256<<10))
		}
		if err == nil {
			_, err = pw.Write(tail) // returns once the transport has taken the last byte
		}
		sent <- time.Now()
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/apps/upload", pr)
	if err != nil {
		pr.Close()
		return t, nil, err
	}
	req.ContentLength = int64(len(head)) + size + int64(len(tail))
	if c.chunked {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Token "+c.token)
	req.Header.Set("User-Agent", "slipway-bench")
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		pr.Close()
		return t, nil, fmt.Errorf("upload: %w", err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	end := time.Now()
	pr.Close()
	t.Total = end.Sub(start)
	t.End, t.LastByte = end, <-sent
	if t.LastByte.Before(end) {
		t.AfterBody = end.Sub(t.LastByte)
	}
	if err != nil {
		return t, nil, err
	}
	if resp.StatusCode != http.StatusCreated {
		return t, nil, fmt.Errorf("upload: %s: %s", resp.Status, body)
	}
	var rel releaseResponse
	if err := json.Unmarshal(body, &rel); err != nil {
		return t, nil, fmt.Errorf("upload response: %w", err)
	}
	if rel.Size != size {
		return t, nil, fmt.Errorf("upload stored %d bytes, want %d", rel.Size, size)
	}
	return t, &rel, nil
}

// openFile returns an open function for upload.
func openFile(path string) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, 0, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		return f, st.Size(), nil
	}
}

// openBytes returns an open function over data.
func openBytes(data []byte) func() (io.ReadCloser, int64, error) {
	return func() (io.ReadCloser, int64, error) {
		return io.NopCloser(bytes.NewReader(data)), int64(len(data)), nil
	}
}

// directPut puts the file straight into the bucket with one streamed PutObject of known length,
// signed as Slipway signs (UNSIGNED-PAYLOAD, checksums only when required), through the SDK's
// default HTTP client.
func (e *env) directPut(ctx context.Context, path, key string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	_, err = e.s3.PutObject(ctx, &awss3.PutObjectInput{
		Bucket: &e.bucket, Key: aws.String(key), Body: plainReader{f}, ContentLength: aws.Int64(st.Size()),
		ContentType: aws.String("application/octet-stream"),
	}, awss3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("direct PutObject: %w", err)
	}
	return took, nil
}

// directStore puts the file into a backend through Slipway's own storage code (blob/s3's
// multipart strategy, or blob/fs's temp file, fsync and rename), without the HTTP server,
// hashing, parsing or database: the storage half of an upload alone.
func directStore(ctx context.Context, b blob.Backend, path, key string) (time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	start := time.Now()
	if _, err := b.Put(ctx, key, plainReader{f}, blob.PutOptions{ContentType: "application/octet-stream"}); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// s3Backend is blob/s3 over the benchmark bucket with Slipway's defaults.
func (e *env) s3Backend(ctx context.Context) (blob.Backend, error) {
	return s3.New(ctx, s3.Config{Bucket: e.bucket, Region: e.s3Region, Endpoint: e.s3Endpoint, PathStyle: true,
		AccessKey: e.s3Access, SecretKey: e.s3Secret})
}

// fsBackend is blob/fs over dir.
func fsBackend(dir string) (blob.Backend, error) {
	return fs.New(dir)
}

// sessionUpload sends the file at path through an upload session, as a client that needs no
// checksums of its own would: POST /api/uploads, the parts PUT straight to storage by their URLs
// (three at a time, read from the file with ReadAt), then complete. It measures the path itself;
// the Slipway CLI adds a SHA-256 of the file and a Content-MD5 per part (sessionCLI).
func (c *uploadClient) sessionUpload(ctx context.Context, path string, size int64) error {
	body, _ := json.Marshal(map[string]any{"filename": filepath.Base(path), "size": size, "changelog": "session upload"})
	var sess struct {
		ID       string `json:"id"`
		PartSize int64  `json:"part_size"`
		Parts    []struct {
			Number int    `json:"number"`
			Size   int64  `json:"size"`
			URL    string `json:"url"`
		} `json:"parts"`
	}
	if err := c.json(ctx, http.MethodPost, "/api/uploads", body, http.StatusCreated, &sess); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	work := make(chan int, len(sess.Parts))
	for i := range sess.Parts {
		work <- i
	}
	close(work)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			buf := make([]byte, sess.PartSize)
			for i := range work {
				p := sess.Parts[i]
				data := buf[:p.Size]
				if _, err := f.ReadAt(data, int64(p.Number-1)*sess.PartSize); err != nil && err != io.EOF {
					errs <- err
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.URL, bytes.NewReader(data))
				if err != nil {
					errs <- err
					return
				}
				resp, err := c.http.Do(req)
				if err != nil {
					errs <- err
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					errs <- fmt.Errorf("part %d: %s", p.Number, resp.Status)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			return err
		}
	}
	return c.json(ctx, http.MethodPost, "/api/uploads/"+sess.ID+"/complete", nil, http.StatusCreated, nil)
}

// json sends a JSON request with the token and decodes a JSON answer of the wanted status.
func (c *uploadClient) json(ctx context.Context, method, path string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %s: %.300s", method, path, resp.Status, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
