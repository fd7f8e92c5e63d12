package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestMain removes the slipway binary built for the tests.
func TestMain(m *testing.M) { e2e.Main(m) }

// requestTimeout bounds any one request of a test; waits are bounded, never asserted.
const requestTimeout = 2 * time.Minute

// env is one environment (database, storage, tokens) with its replicas.
type env struct {
	h       *e2e.Harness
	db      *pgxpool.Pool
	servers []*e2e.Server
	// admin and upload are tokens of those scopes.
	admin, upload string
}

// newEnv prepares a harness, creates an admin and an upload token, and starts `replicas`
// servers with serverEnv added to their environment.
func newEnv(t *testing.T, opts e2e.Options, replicas int, serverEnv ...string) *env {
	t.Helper()
	h := e2e.New(t, opts)
	e := &env{h: h}
	// The schema first, as an operator would (token create migrates nothing), so that the tokens
	// exist before any server starts.
	h.MustRun(t, "migrate", "up")
	e.admin = h.CreateToken(t, "admin", "admin")
	e.upload = h.CreateToken(t, "ci", "upload")
	e.db = openPool(t, h.DatabaseURL)
	for range replicas {
		e.servers = append(e.servers, h.Start(t, serverEnv...))
	}
	if dir := os.Getenv("SLIPWAY_RELIABILITY_LOG_DIR"); dir != "" {
		// The harness shows only the end of a failed test's logs; keep them whole when asked.
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			for i, s := range e.servers {
				name := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(t.Name())+fmt.Sprintf("-%d.log", i))
				_ = os.WriteFile(name, []byte(s.Logs()), 0o644)
			}
		})
	}
	return e
}

// server returns replica i modulo the number of replicas: clients are spread by index.
func (e *env) server(i int) *e2e.Server { return e.servers[i%len(e.servers)] }

// logs is the output of every replica of the environment.
func (e *env) logs() string {
	var b strings.Builder
	for _, s := range e.servers {
		b.WriteString(s.Logs())
	}
	return b.String()
}

// openPool opens the test's own pool on the database, named so that fault injection can spare it.
func openPool(t testing.TB, dbURL string) *pgxpool.Pool {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", checkerApp)
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// checkerApp is the application_name of the test's own connections.
const checkerApp = "reliability-check"

// queryInt runs a query returning one integer.
func queryInt(t testing.TB, db *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := db.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// httpClient never follows redirects (tests look at the 302s) and keeps enough idle connections
// for the concurrent tests.
var httpClient = &http.Client{
	Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// response is a whole HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) String() string {
	return fmt.Sprintf("%d %.300s", r.Status, r.Body)
}

// jsonField returns a top-level string field of a JSON body ("" when absent or not JSON).
func (r *response) jsonField(name string) string {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

// request sends a request with header name/value pairs and reads the whole response. It does not
// touch t, so goroutines may call it.
func request(method, u string, body io.Reader, header ...string) (*response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// call is request that fails the test when no response comes.
func call(t testing.TB, method, u string, body io.Reader, header ...string) *response {
	t.Helper()
	r, err := request(method, u, body, header...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	return r
}

// expectError checks an error response: the status, a JSON {"error": "..."} body, Retry-After on
// 503 and 429, WWW-Authenticate on 401.
func expectError(t testing.TB, what string, r *response, statuses ...int) {
	t.Helper()
	ok := false
	for _, s := range statuses {
		ok = ok || r.Status == s
	}
	if !ok {
		t.Errorf("%s: status %s, want one of %v", what, r, statuses)
		return
	}
	errorShape(t, what, r)
}

// errorShape checks the body and headers an error status must have.
func errorShape(t testing.TB, what string, r *response) {
	t.Helper()
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.jsonField("error") == "" {
		t.Errorf("%s: %d without a JSON {\"error\"} body (Content-Type %q): %.300s", what, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	switch r.Status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d without Retry-After", what, r.Status)
		}
	case http.StatusUnauthorized:
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Token") {
			t.Errorf("%s: 401 with WWW-Authenticate %q", what, r.Header.Get("WWW-Authenticate"))
		}
	}
}

// form builds a multipart body: fields (name, value pairs) before the file, the file in fileField
// (skipped when fileField is ""), then the fields of after.
func form(fields []string, fileField, filename string, file []byte, after ...string) (contentType string, body []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	if fileField != "" {
		fw, _ := mw.CreateFormFile(fileField, filename)
		_, _ = fw.Write(file)
	}
	for i := 0; i+1 < len(after); i += 2 {
		_ = mw.WriteField(after[i], after[i+1])
	}
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// uploadApp posts pkg to POST /api/apps/upload of s with the token in the header and fields
// before the file.
func uploadApp(s *e2e.Server, token string, pkg []byte, fields ...string) (*response, error) {
	ct, body := form(fields, "file", "App.ipa", pkg)
	return request(http.MethodPost, s.URL+"/api/apps/upload", bytes.NewReader(body),
		"Content-Type", ct, "Authorization", "Token "+token)
}

// ipa builds a synthetic .ipa with an icon (so each release has two objects), padded with filler
// bytes of incompressible stored entries.
func ipa(bundleID, build string, filler int64) []byte {
	return appletest.BuildIPA(ipaOptions(bundleID, build, filler))
}

func ipaOptions(bundleID, build string, filler int64) appletest.IPAOptions {
	return appletest.IPAOptions{
		AppName: "Demo", BundleID: bundleID, Version: "1.0", Build: build, FillerBytes: filler,
		Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}},
	}
}

// streamUpload posts the .ipa o describes to POST /api/apps/upload of s, writing it while it is
// sent (a chunked body, as a client streaming a file of unknown size sends), with fields before
// the file.
func streamUpload(s *e2e.Server, token string, o appletest.IPAOptions, fields ...string) (*response, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for i := 0; i+1 < len(fields); i += 2 {
			_ = mw.WriteField(fields[i], fields[i+1])
		}
		fw, err := mw.CreateFormFile("file", "App.ipa")
		if err == nil {
			err = appletest.WriteIPA(fw, o)
		}
		if err == nil {
			err = mw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	defer pr.Close()
	return request(http.MethodPost, s.URL+"/api/apps/upload", pr, "Content-Type", mw.FormDataContentType(), "Authorization", "Token "+token)
}

// release is the part of an upload's response the tests read.
type release struct {
	ID      int64 `json:"id"`
	Version int   `json:"version"`
	App     struct {
		ID int64 `json:"id"`
	} `json:"app"`
	Channel struct {
		Slug string `json:"slug"`
	} `json:"channel"`
}

func decodeRelease(t testing.TB, r *response) release {
	t.Helper()
	var rel release
	if r.Status != http.StatusCreated {
		t.Fatalf("upload: %s, want 201", r)
	}
	if err := json.Unmarshal(r.Body, &rel); err != nil || rel.ID == 0 || rel.Channel.Slug == "" {
		t.Fatalf("upload response is not a release (%v): %.500s", err, r.Body)
	}
	return rel
}

// stream is a request whose body the test releases bit by bit through a pipe: to hold an upload
// in the middle, trickle it, disconnect it, or pump a large one and see how much got through.
type stream struct {
	mu     sync.Mutex // guards rest and writes to pw
	pw     *io.PipeWriter
	rest   []byte
	total  int
	sent   atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
	resp   *response
	err    error
}

// startStream starts a POST of body to u. With chunked, the length is not declared (as a client
// streaming a file of unknown size does); otherwise Content-Length is set.
func startStream(t testing.TB, u, contentType string, body []byte, chunked bool, header ...string) *stream {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	st := &stream{pw: pw, rest: body, total: len(body), cancel: cancel, done: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, pr)
	if err != nil {
		t.Fatal(err)
	}
	if !chunked {
		req.ContentLength = int64(len(body))
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	// A connection of its own: a disconnect must not touch other requests. Keep-alive stays on,
	// as in most clients: with "Connection: close" and a declared length, net/http's server closes
	// at once after an early answer (413) without reading on, and the client may see the reset
	// before the answer.
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	go func() {
		defer close(st.done)
		defer tr.CloseIdleConnections()
		resp, err := client.Do(req)
		if err != nil {
			st.err = err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		st.resp, st.err = &response{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
	}()
	t.Cleanup(func() {
		_ = pw.CloseWithError(errors.New("test over"))
		cancel()
		<-st.done
	})
	return st
}

// uploadStream starts an app upload of pkg to s, with fields before the file.
func uploadStream(t testing.TB, s *e2e.Server, token string, pkg []byte, chunked bool, fields ...string) *stream {
	t.Helper()
	ct, body := form(fields, "file", "App.ipa", pkg)
	return startStream(t, s.URL+"/api/apps/upload", ct, body, chunked, "Authorization", "Token "+token)
}

// send writes the next n bytes of the body and returns once the client has taken them.
func (st *stream) send(n int) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	n = min(n, len(st.rest))
	m, err := st.pw.Write(st.rest[:n])
	st.rest = st.rest[m:]
	st.sent.Add(int64(m))
	return err
}

// finish sends the rest of the body, in pieces, and ends it. It stops at the first failed write
// (the server answered and closed the connection).
func (st *stream) finish() error {
	for {
		st.mu.Lock()
		left := len(st.rest)
		st.mu.Unlock()
		if left == 0 {
			return st.pw.Close()
		}
		if err := st.send(64 << 10); err != nil {
			return err
		}
	}
}

// pump runs finish in the background.
func (st *stream) pump() { go func() { _ = st.finish() }() }

// trickle sends chunk bytes every interval on average, never the last byte, until stopped or a
// write fails. A tick that comes late (the test process starved by the rest of the suite) sends
// what the ticks it missed would have, so the rate the server sees is the one asked for, however
// busy the machine, as long as the process runs at all within the server's idle timeout.
func (st *stream) trickle(chunk int, every time.Duration) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		start, sent := time.Now(), 0
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			due := int(time.Since(start)/every) * chunk
			st.mu.Lock()
			n := min(due-sent, len(st.rest)-1)
			st.mu.Unlock()
			if n <= 0 {
				if len(st.rest) <= 1 {
					return
				}
				continue
			}
			if st.send(n) != nil {
				return
			}
			sent += n
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-stopped }) }
}

// disconnect drops the connection, as a client that crashes or loses its network does. (The body
// is failed too: Go's transport does not give up on a request while it is reading its body.)
func (st *stream) disconnect() {
	st.cancel()
	_ = st.pw.CloseWithError(errors.New("client disconnected"))
}

func (st *stream) ended() bool {
	select {
	case <-st.done:
		return true
	default:
		return false
	}
}

// wait returns the response (or the client's error), failing the test if none comes within
// requestTimeout.
func (st *stream) wait(t testing.TB) (*response, error) {
	t.Helper()
	select {
	case <-st.done:
		return st.resp, st.err
	case <-time.After(requestTimeout + 10*time.Second):
		t.Fatal("the streamed request did not end")
		return nil, nil
	}
}

// parallel runs n calls of fn at once and returns their results in order.
func parallel(n int, fn func(i int) (*response, error)) ([]*response, []error) {
	out, errs := make([]*response, n), make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = fn(i)
		}()
	}
	close(start)
	wg.Wait()
	return out, errs
}
