package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"math/rand/v2"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// BenchmarkIngest models the server half of an upload in one process, to weigh changes to the
// hot path before making them in pkg/: an HTTP handler reads a multipart body the way
// httpapi.readUpload and distribution.StoreUpload do (mime/multipart, then a TeeReader into
// SHA-256 and a blob.Tail) and hands it to a sink that consumes it the way blob/s3
// (readFull into 8 MiB parts) or blob/fs (io.CopyBuffer into a file, then fsync) does. The
// variants change one thing each. The client and the network are the same in every variant, so
// differences in cpu-ms/op and syscalls/op are the server's.
//
//	go test ./test/bench -run '^$' -bench Ingest -benchtime 10x -count 3
//
// It makes no request to MinIO or Postgres; plain `go test ./...` runs no benchmark.
func BenchmarkIngest(b *testing.B) {
	const size = 64 << 20
	payload := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(payload)

	variants := []struct {
		name     string
		bodyBuf  int  // a bufio.Reader of this size between the request body and mime/multipart
		noHash   bool // skip SHA-256
		sink     string
		fillFile bool // fs sink: fill a 256 KiB buffer before each write
	}{
		{name: "s3/current", sink: "s3"},
		{name: "s3/bufio-1MiB-under-multipart", sink: "s3", bodyBuf: 1 << 20},
		{name: "s3/current-without-sha256", sink: "s3", noHash: true},
		{name: "fs/current", sink: "fs"},
		{name: "fs/filled-256KiB-writes", sink: "fs", fillFile: true},
		{name: "fs/filled-writes+bufio-1MiB", sink: "fs", fillFile: true, bodyBuf: 1 << 20},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			dir := b.TempDir()
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				var body io.Reader = r.Body
				if v.bodyBuf > 0 {
					body = bufio.NewReaderSize(r.Body, v.bodyBuf)
				}
				mr := multipart.NewReader(body, params["boundary"])
				part, err := mr.NextPart()
				if err != nil {
					http.Error(w, err.Error(), 400)
					return
				}
				var h hash.Hash = sha256.New()
				tail := blob.NewTail(2 << 20)
				var sinkW io.Writer = tail
				if !v.noHash {
					sinkW = io.MultiWriter(h, tail)
				}
				src := io.TeeReader(part, sinkW)
				switch v.sink {
				case "s3":
					err = sinkParts(src)
				case "fs":
					err = sinkFile(r.Context(), filepath.Join(dir, "obj"), src, v.fillFile)
				}
				if err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			srv := httptest.NewServer(handler)
			defer srv.Close()

			var frame bytes.Buffer
			mw := multipart.NewWriter(&frame)
			_, _ = mw.CreateFormFile("file", "Bench.ipa")
			head := bytes.Clone(frame.Bytes())
			frame.Reset()
			_ = mw.Close()
			tailBytes := bytes.Clone(frame.Bytes())
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}

			b.SetBytes(size)
			io0, cpu0 := readSyscalls(os.Getpid()), selfCPU()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(bytes.NewReader(head), plainReader{bytes.NewReader(payload)}, bytes.NewReader(tailBytes)))
				req.ContentLength = int64(len(head) + size + len(tailBytes))
				req.Header.Set("Content-Type", mw.FormDataContentType())
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusCreated {
					b.Fatalf("status %s", resp.Status)
				}
			}
			io1 := readSyscalls(os.Getpid())
			n := float64(b.N)
			b.ReportMetric(float64(io1.Reads-io0.Reads)/n, "read-syscalls/op")
			b.ReportMetric(float64(io1.Writes-io0.Writes)/n, "write-syscalls/op")
			b.ReportMetric(float64(selfCPU()-cpu0)/1e6/n, "cpu-ms/op")
		})
	}
}

// sinkParts consumes r as blob/s3.Put does: readFull into 8 MiB part buffers (3 of them,
// rotating), here without sending them anywhere.
func sinkParts(r io.Reader) error {
	bufs := [3][]byte{make([]byte, 8<<20), make([]byte, 8<<20), make([]byte, 8<<20)}
	for i := 0; ; i++ {
		buf := bufs[i%3]
		n := 0
		for n < len(buf) {
			m, err := r.Read(buf[n:])
			n += m
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// sinkFile consumes r as blob/fs.Put does (io.CopyBuffer into a file with a 256 KiB buffer,
// then fsync), or, with fill, filling the buffer before each write.
func sinkFile(ctx context.Context, path string, r io.Reader, fill bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	if !fill {
		if _, err := io.CopyBuffer(f, ctxReaderModel{ctx, r}, buf); err != nil {
			return err
		}
	} else {
		for {
			n, err := io.ReadFull(r, buf)
			if n > 0 {
				if _, werr := f.Write(buf[:n]); werr != nil {
					return werr
				}
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return f.Sync()
}

// ctxReaderModel is blob/fs's ctxReader: it hides nothing, so io.CopyBuffer takes the file's
// ReadFrom path as the real one does.
type ctxReaderModel struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReaderModel) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
