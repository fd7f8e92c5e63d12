package uploader

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const testToken = "slw_secretsecretsecretsecret"

// sparseFile creates a file of size bytes without writing them (a hole reads as zeros), so a
// large upload costs no disk.
func sparseFile(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "big.ipa")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("PK"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// received is what the fake server saw of one upload.
type received struct {
	contentLength int64
	bodyBytes     int64
	auth          string
	expect        string
	fields        map[string]string
	order         []string
	filename      string
	fileBytes     int64
	fileSHA       string
}

// fakeServer reads uploads as Slipway does (streaming the multipart body) and answers with a
// release.
func fakeServer(t *testing.T, got chan<- received) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := received{contentLength: r.ContentLength, auth: r.Header.Get("Authorization"), expect: r.Header.Get("Expect"), fields: map[string]string{}}
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		counted := &countReader{r: r.Body}
		mr := multipart.NewReader(counted, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			rec.order = append(rec.order, p.FormName())
			if p.FileName() != "" {
				rec.filename = p.FileName()
				h := sha256.New()
				rec.fileBytes, _ = io.Copy(h, p)
				rec.fileSHA = fmt.Sprintf("%x", h.Sum(nil))
				continue
			}
			v, _ := io.ReadAll(p)
			rec.fields[p.FormName()] = string(v)
		}
		rec.bodyBytes = counted.n
		got <- rec
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(201)
		fmt.Fprintf(w, `{"id": 9, "version": 3, "app_name": "Demo Adhoc ios", "release_version": "1.0", "build_version": "1",
			"release_url": "%s/channels/abc/releases/9", "channel": {"slug": "abc"}}`, "http://"+r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func fileSHA(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// TestUploadAppStreams checks the request: every given field before the file, the file intact,
// the token only in the header, an exact Content-Length, and memory far below the file's size.
func TestUploadAppStreams(t *testing.T) {
	got := make(chan received, 1)
	srv := fakeServer(t, got)
	const size = 32 << 20
	path := sparseFile(t, size)
	c := &Client{BaseURL: srv.URL + "/", Token: testToken}
	var last atomic.Int64
	form := AppForm{ChannelKey: "abc", Changelog: "- one\n- two", Branch: "main", AllowOtherBundleID: "false",
		CustomFields: []CustomField{{Name: "QA", Value: "a=b"}, {Name: "R", Value: "x", Icon: "fa fa-check"}}}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rel, err := c.UploadApp(context.Background(), path, form, func(sent, total int64) {
		if total != size {
			t.Errorf("progress total %d", total)
		}
		last.Store(sent)
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	rec := <-got
	if rel.ID != 9 || rel.ReleaseURL != srv.URL+"/channels/abc/releases/9" || rel.Channel.Slug != "abc" || len(rel.Raw) == 0 {
		t.Errorf("release %+v", rel)
	}
	if rec.auth != "Token "+testToken || rec.expect != "" && rec.expect != "100-continue" {
		t.Errorf("Authorization %q", rec.auth)
	}
	if _, ok := rec.fields["token"]; ok {
		t.Error("the token was sent in the form too")
	}
	wantOrder := []string{"channel_key", "changelog", "branch", "allow_other_bundle_id", "custom_fields", "file"}
	if rec.fields["allow_other_bundle_id"] != "false" {
		t.Errorf("allow_other_bundle_id %q", rec.fields["allow_other_bundle_id"])
	}
	if strings.Join(rec.order, ",") != strings.Join(wantOrder, ",") {
		t.Errorf("parts %v, want %v (empty fields left out, the file last)", rec.order, wantOrder)
	}
	var cf []CustomField
	if err := json.Unmarshal([]byte(rec.fields["custom_fields"]), &cf); err != nil || len(cf) != 2 || cf[0].Value != "a=b" || cf[1].Icon != "fa fa-check" {
		t.Errorf("custom_fields %q", rec.fields["custom_fields"])
	}
	if rec.filename != "big.ipa" || rec.fileBytes != size || rec.fileSHA != fileSHA(t, path) {
		t.Errorf("file %q: %d bytes, sha %s", rec.filename, rec.fileBytes, rec.fileSHA)
	}
	if rec.contentLength != rec.bodyBytes {
		t.Errorf("Content-Length %d, body %d bytes", rec.contentLength, rec.bodyBytes)
	}
	if last.Load() != size {
		t.Errorf("last progress %d, want %d", last.Load(), size)
	}
	// Client and fake server share this process; both stream, so together they allocate a small
	// fraction of the file.
	t.Logf("allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/4 {
		t.Errorf("allocated %d bytes for a %d-byte upload: the file is being buffered", alloc, size)
	}
}

// TestUploadRejectedBeforeBody checks that a server refusing the token answers before the file is
// sent (Expect: 100-continue), and that the error carries the server's message and status but
// never the token, even when the server echoes it.
func TestUploadRejectedBeforeBody(t *testing.T) {
	var bodyRead atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reads nothing: Go's server then never sends 100 Continue.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		fmt.Fprintf(w, `{"error": "the API token %s is invalid or revoked"}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Token "))
	}))
	defer srv.Close()
	path := sparseFile(t, 256<<20)
	c := &Client{BaseURL: srv.URL, Token: testToken}
	_, err := c.UploadApp(context.Background(), path, AppForm{Password: "pw-hunter2"}, func(sent, _ int64) { bodyRead.Store(sent) })
	var api *APIError
	if !errors.As(err, &api) || api.Status != 401 {
		t.Fatalf("error %v, want a 401 APIError", err)
	}
	if strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "[REDACTED] is invalid or revoked") || !strings.Contains(err.Error(), "401") {
		t.Errorf("error %q", err)
	}
	if n := bodyRead.Load(); n > 16<<20 {
		t.Errorf("%d bytes of the file were read before the server's refusal", n)
	}
}

// TestUploadErrors covers answers that are not Slipway's JSON, redirects, timeouts and local
// mistakes.
func TestUploadErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/proxy/api/apps/upload", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		io.WriteString(w, "<html><body>Bad Gateway</body></html>\nmore")
	})
	mux.HandleFunc("/nginx/api/apps/upload", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(413)
		io.WriteString(w, "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>...</body></html>")
	})
	mux.HandleFunc("/redirect/api/apps/upload", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example.com/api/apps/upload?token=leak", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/busy/api/apps/upload", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"error": "too many uploads"}`)
	})
	mux.HandleFunc("/internal/api/debug_files/upload", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error": "internal error", "request_id": "r-42"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	path := sparseFile(t, 1<<20)
	ctx := context.Background()
	for _, c := range []struct {
		base string
		want string
	}{
		{srv.URL + "/proxy", "server answered 502 Bad Gateway: <html><body>Bad Gateway</body></html>"},
		{srv.URL + "/nginx", "server answered 413 Request Entity Too Large: 413 Request Entity Too Large"},
		{srv.URL + "/redirect", "the server redirects to https://elsewhere.example.com/api/apps/upload: use that address"},
		{srv.URL + "/busy", "server answered 429 Too Many Requests: too many uploads (retry after 7s)"},
		{"ftp://example.com", "must be an absolute http:// or https:// URL"},
	} {
		_, err := (&Client{BaseURL: c.base, Token: testToken, MaxAttempts: 1}).UploadApp(ctx, path, AppForm{}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "leak") {
			t.Errorf("%s: error %v, want %q", c.base, err, c.want)
		}
	}
	_, err := (&Client{BaseURL: srv.URL + "/internal", Token: testToken}).UploadDebugFile(ctx, path, DebugFileForm{ChannelKey: "k"}, nil)
	if err == nil || err.Error() != "server answered 500 Internal Server Error: internal error (request id r-42)" {
		t.Errorf("internal error: %v", err)
	}
	for _, p := range []string{filepath.Join(t.TempDir(), "missing.ipa"), t.TempDir()} {
		if _, err := (&Client{BaseURL: srv.URL, Token: testToken}).UploadApp(ctx, p, AppForm{}, nil); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}

// TestUploadStalled checks that an upload the server stops reading fails after StallTimeout
// instead of hanging for as long as TCP keeps the connection.
func TestUploadStalled(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 1<<20)
		_, _ = io.ReadFull(r.Body, buf) // some, then nothing
		<-release
	}))
	defer srv.Close()
	defer close(release)
	path := sparseFile(t, 512<<20)
	c := &Client{BaseURL: srv.URL, Token: testToken, StallTimeout: 500 * time.Millisecond, MaxAttempts: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := c.UploadApp(ctx, path, AppForm{}, nil)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("error %v, want ErrStalled", err)
	}
}

// TestEnvelope checks the multipart framing around the file against mime/multipart's reader.
func TestEnvelope(t *testing.T) {
	head, tail, ctype, err := envelope([]field{{"a", "1"}, {"empty", ""}, {"b", "x\r\ny"}}, `we"ird.ipa`)
	if err != nil {
		t.Fatal(err)
	}
	body := string(head) + "FILE" + string(tail)
	_, params, _ := mime.ParseMediaType(ctype)
	mr := multipart.NewReader(strings.NewReader(body), params["boundary"])
	var parts []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		v, _ := io.ReadAll(p)
		parts = append(parts, p.FormName()+"="+string(v)+"|"+p.FileName())
	}
	want := "a=1|,b=x\r\ny|,file=FILE|we\"ird.ipa"
	if strings.Join(parts, ",") != want {
		t.Errorf("parts %q, want %q", strings.Join(parts, ","), want)
	}
}

// A busy server (429, 503) is retried with backoff, honouring Retry-After, and every attempt of one
// upload carries the same Idempotency-Key, so a retry never makes a second release; an answer that
// is not about being busy is not retried.
func TestRetriesBusyServer(t *testing.T) {
	var attempts atomic.Int32
	keys := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		keys <- r.Header.Get("Idempotency-Key")
		w.Header().Set("Content-Type", "application/json")
		switch attempts.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":"queue full"}`)
		case 2:
			w.WriteHeader(503)
			io.WriteString(w, `{"error":"database unavailable"}`)
		default:
			w.WriteHeader(201)
			io.WriteString(w, `{"id":1,"release_url":"https://example.com/channels/k/releases/1"}`)
		}
	}))
	defer srv.Close()
	var waits []time.Duration
	var announced []int
	c := &Client{BaseURL: srv.URL, Token: testToken,
		sleep:   func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		OnRetry: func(attempt int, _ time.Duration, _ error) { announced = append(announced, attempt) }}
	rel, err := c.UploadApp(context.Background(), sparseFile(t, 1<<20), AppForm{}, nil)
	if err != nil || rel.ID != 1 {
		t.Fatalf("upload: %v %+v", err, rel)
	}
	if attempts.Load() != 3 || fmt.Sprint(waits) != "[30s 4s]" || fmt.Sprint(announced) != "[2 3]" {
		t.Fatalf("%d attempts, waits %v, announced %v", attempts.Load(), waits, announced)
	}
	close(keys)
	first := <-keys
	if !strings.HasPrefix(first, "slipway-cli-") {
		t.Fatalf("Idempotency-Key %q", first)
	}
	for k := range keys {
		if k != first {
			t.Fatalf("attempts sent different keys: %q, %q", first, k)
		}
	}

	// A refused upload (422) is not retried; a busy server is given up after MaxAttempts.
	attempts.Store(0)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		attempts.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/apps/upload" && r.Header.Get("X-Test") == "" {
			w.WriteHeader(422)
			io.WriteString(w, `{"error":"not a package"}`)
			return
		}
	}))
	defer bad.Close()
	c = &Client{BaseURL: bad.URL, Token: testToken, sleep: func(context.Context, time.Duration) error { return nil }}
	if _, err := c.UploadApp(context.Background(), sparseFile(t, 1<<10), AppForm{}, nil); err == nil || attempts.Load() != 1 {
		t.Fatalf("422: %v after %d attempts", err, attempts.Load())
	}
	attempts.Store(0)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		attempts.Add(1)
		w.WriteHeader(429)
	}))
	defer busy.Close()
	c = &Client{BaseURL: busy.URL, Token: testToken, MaxAttempts: 4, sleep: func(context.Context, time.Duration) error { return nil }}
	if _, err := c.UploadDebugFile(context.Background(), sparseFile(t, 1<<10), DebugFileForm{ChannelKey: "k"}, nil); err == nil || attempts.Load() != 4 {
		t.Fatalf("busy: %v after %d attempts", err, attempts.Load())
	}
}
