package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// newStore returns a Store on env's bucket under a fresh prefix, with 5 MiB parts so the suite's
// large objects go through multipart uploads.
func newStore(t testing.TB, env testenv.S3Env, cfg Config) *Store {
	t.Helper()
	cfg.Bucket = env.Bucket
	if cfg.Endpoint == "" {
		cfg.Endpoint = env.Endpoint
	}
	cfg.Region, cfg.PathStyle = env.Region, true
	if cfg.AccessKey == "" {
		cfg.AccessKey, cfg.SecretKey = env.AccessKey, env.SecretKey
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = MinPartSize
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "t-" + strings.ReplaceAll(time.Now().Format("150405.000000000"), ".", "")
	}
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	env := testenv.S3(t)
	blobtest.Run(t, func(t *testing.T) blob.Backend {
		return newStore(t, env, Config{})
	})
	assertNoUploads(t, env)
}

// assertNoUploads fails if a multipart upload was left in the bucket.
func assertNoUploads(t *testing.T, env testenv.S3Env) {
	t.Helper()
	out, err := env.Client().ListMultipartUploads(context.Background(), &awss3.ListMultipartUploadsInput{Bucket: &env.Bucket})
	if err != nil {
		t.Fatalf("ListMultipartUploads: %v", err)
	}
	for _, u := range out.Uploads {
		t.Errorf("multipart upload left behind: %s (started %v)", aws.ToString(u.Key), u.Initiated)
	}
}

// TestAbortOnCancel cancels uploads in the middle of a multipart upload, with parts in flight, and
// checks the upload is aborted even though the caller's context is gone.
func TestAbortOnCancel(t *testing.T) {
	env := testenv.S3(t)
	s := newStore(t, env, Config{Prefix: "abort", Concurrency: 3})
	for _, at := range []int{5<<20 + 1, 12 << 20, 20<<20 - 1} {
		ctx, cancel := context.WithCancel(t.Context())
		r := io.MultiReader(
			io.LimitReader(blobtest.Repeat([]byte("abcdefgh"), 1<<40), int64(at)),
			readerFunc(func([]byte) (int, error) { cancel(); <-ctx.Done(); return 0, context.Cause(ctx) }),
		)
		_, err := s.Put(ctx, "big.ipa", r, blob.PutOptions{})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled at %d: Put = %v, want context.Canceled", at, err)
		}
		uploads, err := env.Client().ListMultipartUploads(t.Context(), &awss3.ListMultipartUploadsInput{
			Bucket: &env.Bucket, Prefix: aws.String("abort/big.ipa"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(uploads.Uploads); n != 0 {
			t.Errorf("cancelled at %d: %d multipart uploads remain", at, n)
		}
	}
	assertNoUploads(t, env)
}

// TestPutMemoryBound checks that a streamed upload allocates about (Concurrency+1)×PartSize in
// all, whatever its length: parts are reused, never accumulated. The SDK's own allocations grow
// with what the request meets (a slow server's retries, the transport's buffers), and the count is
// the process's: the headroom is 8 MiB, and the upload is 96 MiB so that accumulating parts
// (at least the upload's size) stays far outside the bound. (With 4 MiB over a 48 MiB upload, a
// run of the whole suite at once counted 20 MiB against a 19 MiB bound.)
func TestPutMemoryBound(t *testing.T) {
	env := testenv.S3(t)
	s := newStore(t, env, Config{Prefix: "mem", PartSize: MinPartSize, Concurrency: 2})
	const size = 96 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := s.Put(t.Context(), "obj", blobtest.Repeat([]byte("0123456789"), size), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	bound := uint64(3*MinPartSize + 8<<20) // three part buffers, plus the SDK's own
	if got := after.TotalAlloc - before.TotalAlloc; got > bound {
		t.Errorf("a %d MiB upload allocated %d MiB, want at most %d MiB", size>>20, got>>20, bound>>20)
	} else {
		t.Logf("a %d MiB upload allocated %.1f MiB", size>>20, float64(got)/(1<<20))
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

// TestUnsignedPayload checks, through a recording proxy, that uploads over plain http send
// UNSIGNED-PAYLOAD (no SHA-256 pass over each part) and no checksum trailer.
func TestUnsignedPayload(t *testing.T) {
	env := testenv.S3(t)
	target, err := url.Parse(env.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[string]string{} // method + query kind → x-amz-content-sha256
	)
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the signature covers the host the client used
			kind := r.In.Method
			switch q := r.In.URL.Query(); {
			case q.Has("partNumber"):
				kind += " part"
			case q.Has("uploads"), q.Has("uploadId"):
				kind += " multipart"
			}
			mu.Lock()
			seen[kind] = r.In.Header.Get("X-Amz-Content-Sha256")
			if r.In.Header.Get("Content-Encoding") == "aws-chunked" {
				seen[kind] += " aws-chunked"
			}
			mu.Unlock()
		},
	})
	defer proxy.Close()
	s := newStore(t, env, Config{Endpoint: proxy.URL, Prefix: "unsigned"})
	data := blobtest.Random(11<<20, 1)
	for _, n := range []int{1000, len(data)} {
		if _, err := s.Put(t.Context(), "obj", bytes.NewReader(data[:n]), blob.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, kind := range []string{"PUT", "PUT part"} {
		if got := seen[kind]; got != "UNSIGNED-PAYLOAD" {
			t.Errorf("%s: x-amz-content-sha256 = %q, want UNSIGNED-PAYLOAD", kind, got)
		}
	}
}

// TestErrorsHideSecrets checks that failures never echo the secret key or a presigned URL.
func TestErrorsHideSecrets(t *testing.T) {
	env := testenv.S3(t)
	const secret = "wrong-secret-VERYSECRET"
	s := newStore(t, env, Config{AccessKey: env.AccessKey, SecretKey: secret, Prefix: "secrets"})
	ctx := t.Context()
	var errs []error
	_, err := s.Put(ctx, "k", strings.NewReader("x"), blob.PutOptions{})
	errs = append(errs, err)
	_, err = s.Put(ctx, "k", bytes.NewReader(make([]byte, 6<<20)), blob.PutOptions{})
	errs = append(errs, err)
	_, err = s.Stat(ctx, "k")
	errs = append(errs, err)
	_, err = s.GetRange(ctx, "k", 0, 10)
	errs = append(errs, err)
	errs = append(errs, s.Ping(ctx), s.Delete(ctx, "k"))
	_, err = s.PresignGet(ctx, "k", 30*24*time.Hour, blob.GetOptions{Filename: "x"})
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d succeeded with a wrong secret key", i)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, secret) || strings.Contains(msg, "X-Amz-Signature") || strings.Contains(msg, "X-Amz-Credential") {
			t.Errorf("error leaks a secret: %s", msg)
		}
	}
	if errors.Is(errs[2], blob.ErrNotFound) {
		t.Error("an authentication failure was reported as not found")
	}
}

func TestNewValidates(t *testing.T) {
	ctx := t.Context()
	for _, cfg := range []Config{
		{},
		{Bucket: "b", PartSize: 1 << 20, Endpoint: "http://x"},
		{Bucket: "b", Concurrency: -1, Endpoint: "http://x"},
		{Bucket: "b", Endpoint: "ftp://x"},
		{Bucket: "b", Endpoint: "http://user:pass@x"},
		{Bucket: "b", Endpoint: "http://x", AccessKey: "only-access"},
		{Bucket: "b", Endpoint: "http://x", Prefix: "../up"},
	} {
		if _, err := New(ctx, cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		} else if strings.Contains(err.Error(), "pass") {
			t.Errorf("New error echoes credentials: %v", err)
		}
	}
}

func TestPingMissingBucket(t *testing.T) {
	env := testenv.S3(t)
	env.Bucket += "-absent"
	s := newStore(t, env, Config{})
	if err := s.Ping(t.Context()); err == nil {
		t.Error("Ping of a missing bucket succeeded")
	}
}

// BenchmarkPut streams 64 MiB uploads to MinIO: 8 MiB parts, 2 in flight (the defaults).
func BenchmarkPut(b *testing.B) {
	env := testenv.S3(b)
	for _, bc := range []struct {
		name   string
		cfg    Config
		signed bool
	}{
		{"default", Config{PartSize: DefaultPartSize, Concurrency: DefaultConcurrency}, false},
		{"default-sha256-payload", Config{PartSize: DefaultPartSize, Concurrency: DefaultConcurrency}, true},
		{"parts16MiB-c4", Config{PartSize: 16 << 20, Concurrency: 4}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := newStore(b, env, bc.cfg)
			s.signPayload = bc.signed
			const size = 64 << 20
			src := blobtest.Random(1<<20, 1)
			b.SetBytes(size)
			cpu := testkit.SelfCPU()
			for b.Loop() {
				if _, err := s.Put(b.Context(), "bench/obj", blobtest.Repeat(src, size), blob.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			// The client's own CPU (MinIO runs in another process): what signing choices change,
			// and steadier than MB/s on a shared machine.
			b.ReportMetric(float64((testkit.SelfCPU()-cpu).Milliseconds())/float64(b.N), "client-cpu-ms/op")
		})
	}
}

// BenchmarkReaderAtZip opens a stored 24 MiB IPA-like zip (5000 entries) through a ReaderAt and
// reads two entries, as the upload path does, with and without seeding the stream's tail.
func BenchmarkReaderAtZip(b *testing.B) {
	env := testenv.S3(b)
	s := newStore(b, env, Config{})
	zipData, _ := blobtest.Zip(b, 5000, 20<<20)
	if _, err := s.Put(b.Context(), "zip/app.ipa", bytes.NewReader(zipData), blob.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	benchZip(b, s, "zip/app.ipa", zipData)
}

func benchZip(b *testing.B, backend blob.Backend, key string, zipData []byte) {
	t := blob.NewTail(4 << 20)
	t.Write(zipData)
	tail, tailOff := t.Bytes(), t.Total()-int64(len(t.Bytes()))
	for _, seeded := range []bool{false, true} {
		name := "cold"
		if seeded {
			name = "seeded"
		}
		b.Run(name, func(b *testing.B) {
			var st blob.ReadStats
			for b.Loop() {
				ra := blob.NewReaderAt(b.Context(), backend, key, int64(len(zipData)))
				if seeded {
					ra.Seed(tailOff, tail)
				}
				if err := blobtest.ReadZip(ra, int64(len(zipData)), "Payload/App.app/file-0007.txt", "Payload/App.app/file-4000.txt"); err != nil {
					b.Fatal(err)
				}
				st = ra.Stats()
			}
			b.ReportMetric(float64(st.GETs), "GETs/op")
			b.ReportMetric(float64(st.Bytes)/float64(1<<10), "KiB-fetched/op")
		})
	}
}

// New works with and without a CA bundle in the environment (the SDK builds its own HTTP client
// only in the first case; the per-request deadline wraps either).
func TestNewWithAndWithoutCABundle(t *testing.T) {
	for _, bundle := range []string{"", "/etc/ssl/certs/ca-certificates.crt"} {
		if bundle != "" {
			if _, err := os.Stat(bundle); err != nil {
				continue
			}
		}
		t.Setenv("AWS_CA_BUNDLE", bundle)
		s, err := New(t.Context(), Config{Bucket: "b", Region: "us-east-1", Endpoint: "http://127.0.0.1:1", PathStyle: true,
			AccessKey: "a", SecretKey: "s", RequestTimeout: time.Second})
		if err != nil {
			t.Fatalf("AWS_CA_BUNDLE=%q: %v", bundle, err)
		}
		// Nothing listens on port 1: the request fails, without a panic, within its deadline.
		if err := s.Ping(t.Context()); err == nil {
			t.Fatalf("AWS_CA_BUNDLE=%q: ping of a closed port succeeded", bundle)
		}
	}
}

// deniedOnce is a proxy in front of the test's MinIO that answers each write's first attempt
// (PUT of an object or part, POST starting or completing a multipart upload) with 403
// AccessDenied, as single-drive MinIO does to a write racing a delete of its key's folder
// (TestConcurrentWritesAndDeletes), or every attempt when always is set.
func deniedOnce(t *testing.T, env testenv.S3Env, always bool) (endpoint string, denied func() int) {
	t.Helper()
	target, err := url.Parse(env.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	n := 0
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host
	}}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		write := r.Method == http.MethodPut || r.Method == http.MethodPost
		mu.Lock()
		id := r.Method + " " + r.URL.RequestURI()
		deny := write && (always || !seen[id])
		seen[id] = true
		if deny {
			n++
		}
		mu.Unlock()
		if deny {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// A write answered AccessDenied once is sent again and succeeds: a single PUT and every call of
// a multipart upload (start, parts, completion), through Put and through upload sessions' calls.
func TestWriteRetriesAccessDenied(t *testing.T) {
	env := testenv.S3(t)
	endpoint, denied := deniedOnce(t, env, false)
	s := newStore(t, env, Config{Endpoint: endpoint, Prefix: "denied-once"})
	data := blobtest.Random(11<<20, 2)
	for _, n := range []int{1000, len(data)} {
		if _, err := s.Put(t.Context(), fmt.Sprintf("obj-%d", n), bytes.NewReader(data[:n]), blob.PutOptions{}); err != nil {
			t.Fatalf("put of %d bytes: %v", n, err)
		}
		rc, err := s.GetRange(t.Context(), fmt.Sprintf("obj-%d", n), 0, int64(n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data[:n]) {
			t.Fatalf("object of %d bytes reads back %d bytes, %v", n, len(got), err)
		}
	}
	id, err := s.CreateMultipart(t.Context(), "session", "")
	if err != nil {
		t.Fatalf("start an upload session's multipart upload: %v", err)
	}
	_ = s.AbortMultipart(t.Context(), "session", id)
	// 1 single PUT; start, 3 parts and completion of the multipart one; the session's start.
	if n := denied(); n != 7 {
		t.Errorf("%d writes were denied once, want 7", n)
	}
}

// A write denied every time (a real permission problem) still fails, after the SDK's attempts.
func TestWriteDeniedForGoodFails(t *testing.T) {
	env := testenv.S3(t)
	endpoint, denied := deniedOnce(t, env, true)
	s := newStore(t, env, Config{Endpoint: endpoint, Prefix: "denied"})
	_, err := s.Put(t.Context(), "obj", bytes.NewReader([]byte("x")), blob.PutOptions{})
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("put with no permission: %v, want AccessDenied", err)
	}
	if n := denied(); n != 3 {
		t.Errorf("%d attempts, want the SDK's 3", n)
	}
}

// TestConcurrentWritesAndDeletes writes and deletes objects side by side under shared folders,
// as refused uploads being discarded beside new ones do: every write succeeds. (Single-drive
// MinIO answered about one write in 3,000 with AccessDenied before writes retried it.)
func TestConcurrentWritesAndDeletes(t *testing.T) {
	env := testenv.S3(t)
	s := newStore(t, env, Config{Prefix: "racing"})
	var wg sync.WaitGroup
	errs := make(chan error, 8*150)
	for w := range 8 {
		wg.Go(func() {
			for i := range 150 {
				key := fmt.Sprintf("packages/2026/11/%02d/%d-%d", i%3, w, i)
				if _, err := s.Put(t.Context(), key, bytes.NewReader([]byte("x")), blob.PutOptions{}); err != nil {
					errs <- err
					continue
				}
				_ = s.Delete(t.Context(), key)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Every request to S3 is timed under its operation's name (the latency histogram), multipart
// parts included; nothing goes unnamed.
func TestRequestsAreObserved(t *testing.T) {
	env := testenv.S3(t)
	var mu sync.Mutex
	seen := map[string]int{}
	s := newStore(t, env, Config{ObserveRequest: func(op string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d <= 0 {
			t.Errorf("%s took %s", op, d)
		}
		seen[op]++
	}})
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "packages/x/small.bin", strings.NewReader("hello"), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 2*MinPartSize+1)
	if _, err := s.Put(ctx, "packages/x/big.bin", bytes.NewReader(big), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := s.GetRange(ctx, "packages/x/small.bin", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, r)
	r.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, op := range []string{"HeadBucket", "PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "GetObject"} {
		if seen[op] == 0 {
			t.Errorf("no %s request observed (saw %v)", op, seen)
		}
	}
	if seen["other"] > 0 {
		t.Errorf("requests without an operation name: %v", seen)
	}
	if seen["UploadPart"] < 3 {
		t.Errorf("%d UploadPart requests for three parts", seen["UploadPart"])
	}
}
