// Package e2e runs the real slipway binary, as operators and CI jobs do: `slipway serve` child
// processes on loopback ports against a fresh Postgres database and filesystem storage or a fresh
// MinIO bucket, and CLI commands (token, migrate, gc, upload) against the same environment.
//
// Unlike test/apptest, which serves the handler in the test process, this exercises what only a
// process shows: configuration from the environment, exit codes, signals and graceful shutdown,
// logs, and several replicas sharing one database and one bucket:
//
//	h := e2e.New(t, e2e.Options{Storage: e2e.S3})
//	s1 := h.Start(t, "SLIPWAY_DRAIN_TIMEOUT=5s")
//	s2 := h.Start(t)
//	token := h.CreateToken(t, "ci", "upload")
//	res := h.Run(t, "upload", ipaPath, "--url", s1.URL, "--token", token)
//	s2.Signal(syscall.SIGKILL)
//
// The binary is built once per test process (with -race when the tests run with -race, so the
// server's own races fail the test that provoked them); call Main from TestMain to remove it at
// the end, or set SLIPWAY_E2E_BINARY to a prebuilt one. Servers still running when their test
// ends are stopped with SIGTERM (SIGKILL if that does not end them); on Linux they are also
// killed if the test process dies, so a timed-out `go test` leaves none behind.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// Storage kinds for Options.Storage.
const (
	FS = "fs"
	S3 = "s3"
)

// Bounds on waiting for processes; generous, because two cores may be building or racing.
const (
	// StartTimeout bounds a server's start (migrations, storage check) until /healthz answers.
	StartTimeout = 2 * time.Minute
	// WaitTimeout bounds Server.Wait and the stop at clean-up.
	WaitTimeout = 2 * time.Minute
	// RunTimeout bounds a CLI command.
	RunTimeout = 5 * time.Minute
)

// Secret is SLIPWAY_SECRET of every server of a Harness: replicas must share it.
const Secret = "e2e-secret-e2e-secret-e2e-secret-0123456789"

// Options shape a Harness.
type Options struct {
	// Storage is FS (default: a temporary folder) or S3 (a fresh MinIO bucket).
	Storage string
	// S3Params are added to the s3:// storage URL, e.g. {"part_size_mib": {"5"}}.
	S3Params url.Values
	// Env is added to the environment of every server and command of the harness (after the
	// harness's own variables, so it overrides them).
	Env []string
	// DatabaseURL, when set, is used instead of a fresh database on the test Postgres: for tests
	// that run a Postgres of their own (to stop and restart it). The caller owns that database;
	// serve creates it if it is missing (the harness sets SLIPWAY_CREATE_DATABASE=true, as `make
	// run` does) and migrates it when it starts (run `slipway migrate up` first to use it before).
	DatabaseURL string
	// S3, when set with Storage S3, is the bucket to use instead of a fresh one on the shared test
	// MinIO: for tests that run a MinIO of their own (to kill and restart it). The caller creates
	// the bucket and removes it.
	S3 *testenv.S3Env
	// NoRace runs a binary built without -race even when the tests have it: for tests that
	// measure memory, which the race detector multiplies.
	NoRace bool
}

// Harness is one environment (database, storage, secret) shared by the servers and commands of a
// test.
type Harness struct {
	// DatabaseURL is the fresh database (dropped when the test ends).
	DatabaseURL string
	// StorageURL is SLIPWAY_STORAGE_URL: file://DIR or s3://BUCKET?....
	StorageURL string
	// StorageDir is the folder of FS storage ("" for S3).
	StorageDir string
	// S3 is the bucket of S3 storage (nil for FS).
	S3 *testenv.S3Env

	env []string
	bin string

	dbOnce sync.Once
	db     *pgxpool.Pool
	dbErr  error
}

// New prepares a fresh database and storage for the test. It builds the binary the first time.
func New(t testing.TB, opts Options) *Harness {
	t.Helper()
	h := &Harness{DatabaseURL: opts.DatabaseURL, bin: binary(t, raceEnabled && !opts.NoRace)}
	if h.DatabaseURL == "" {
		h.DatabaseURL = testenv.DatabaseURL(t)
	}
	switch opts.Storage {
	case "", FS:
		h.StorageDir = t.TempDir()
		h.StorageURL = "file://" + h.StorageDir
	case S3:
		var e testenv.S3Env
		if opts.S3 != nil {
			e = *opts.S3
		} else {
			e = testenv.S3(t)
		}
		h.S3 = &e
		h.StorageURL = e.URL
		if len(opts.S3Params) > 0 {
			u, err := url.Parse(e.URL)
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			for k, vs := range opts.S3Params {
				q[k] = vs
			}
			u.RawQuery = q.Encode()
			h.StorageURL = u.String()
		}
	default:
		t.Fatalf("e2e: unknown storage %q (want %q or %q)", opts.Storage, FS, S3)
	}
	h.env = append(h.env,
		"SLIPWAY_DATABASE_URL="+h.DatabaseURL,
		"SLIPWAY_STORAGE_URL="+h.StorageURL,
		"SLIPWAY_SECRET="+Secret,
		// No collector run in the middle of a test unless it asks for one.
		"SLIPWAY_GC_INTERVAL=0",
		"SLIPWAY_LOG_LEVEL=debug",
		// Short enough that a server left with a stuck request stops quickly at clean-up.
		"SLIPWAY_DRAIN_TIMEOUT=10s",
	)
	if opts.DatabaseURL != "" {
		h.env = append(h.env, "SLIPWAY_CREATE_DATABASE=true")
	}
	if h.S3 != nil {
		h.env = append(h.env, h.S3.Environ()...)
	}
	h.env = append(h.env, opts.Env...)
	return h
}

// WithBinary returns a harness on the same database, storage and environment whose servers and
// commands run the slipway binary at path: another release's, beside this one's (the
// rolling-update test).
func (h *Harness) WithBinary(path string) *Harness {
	return &Harness{DatabaseURL: h.DatabaseURL, StorageURL: h.StorageURL, StorageDir: h.StorageDir, S3: h.S3,
		env: slices.Clone(h.env), bin: path}
}

// Environ returns the environment of the harness's processes: this process's, without any
// SLIPWAY_* or AWS_* variable (a developer's own settings must not leak in), plus the harness's
// variables, then extra. A later entry of a name wins.
func (h *Harness) Environ(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLIPWAY_") || strings.HasPrefix(kv, "AWS_") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, h.env...)
	return append(out, extra...)
}

// Server is a running `slipway serve`.
type Server struct {
	// URL is http://127.0.0.1:PORT, also its SLIPWAY_PUBLIC_URL unless the caller set one.
	URL string
	// Addr is 127.0.0.1:PORT.
	Addr string
	// InternalURL is http://ADDR of the internal listener when SLIPWAY_INTERNAL_ADDR was given
	// ("SLIPWAY_INTERNAL_ADDR=auto" picks a free loopback port); "" otherwise.
	InternalURL string
	// PID is the process id.
	PID int

	cmd  *exec.Cmd
	logs *testkit.LockedBuffer
	done chan struct{}
	// state is set when done is closed.
	state *os.ProcessState
}

// errPortTaken is a start that lost its port to another process between choosing and binding it.
var errPortTaken = errors.New("port taken")

// Start starts `slipway serve` with the harness's environment plus extraEnv (e.g.
// "SLIPWAY_DRAIN_TIMEOUT=1s"), on a free loopback port unless extraEnv sets SLIPWAY_ADDR, and
// returns once GET /readyz answers 200 (its start-up is done: the schema is there). The server is
// stopped when the test ends.
func (h *Harness) Start(t testing.TB, extraEnv ...string) *Server {
	t.Helper()
	return h.startWaiting(t, "/readyz", extraEnv)
}

// StartListening is Start, returning as soon as GET /healthz answers 200: the server listens, but
// may still be starting (waiting for the database or its schema).
func (h *Harness) StartListening(t testing.TB, extraEnv ...string) *Server {
	t.Helper()
	return h.startWaiting(t, "/healthz", extraEnv)
}

func (h *Harness) startWaiting(t testing.TB, probe string, extraEnv []string) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s, err := h.start(t, probe, extraEnv)
		if errors.Is(err, errPortTaken) && attempt < 5 {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func (h *Harness) start(t testing.TB, probe string, extraEnv []string) (*Server, error) {
	addr := lastValue(extraEnv, "SLIPWAY_ADDR")
	if addr == "" {
		port, err := testkit.FreePort()
		if err != nil {
			return nil, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	s := &Server{URL: "http://" + addr, Addr: addr, logs: &testkit.LockedBuffer{}, done: make(chan struct{})}
	switch internal := lastValue(extraEnv, "SLIPWAY_INTERNAL_ADDR"); internal {
	case "":
	case "auto":
		port, err := testkit.FreePort()
		if err != nil {
			return nil, err
		}
		internal = fmt.Sprintf("127.0.0.1:%d", port)
		extraEnv = append(slices.Clone(extraEnv), "SLIPWAY_INTERNAL_ADDR="+internal)
		s.InternalURL = "http://" + internal
	default:
		s.InternalURL = "http://" + internal
	}
	env := h.Environ(append([]string{"SLIPWAY_ADDR=" + addr, "SLIPWAY_PUBLIC_URL=" + s.URL}, extraEnv...)...)
	s.cmd = exec.Command(h.bin, "serve")
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	s.cmd.WaitDelay = 10 * time.Second
	if err := startCmd(s.cmd); err != nil {
		return nil, fmt.Errorf("e2e: starting slipway serve: %w", err)
	}
	s.PID = s.cmd.Process.Pid
	go func() {
		_ = s.cmd.Wait()
		s.state = s.cmd.ProcessState
		close(s.done)
	}()
	t.Cleanup(func() { s.cleanup(t) })

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(StartTimeout)
	for {
		resp, err := client.Get(s.URL + probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.done:
			if strings.Contains(s.Logs(), "address already in use") {
				return nil, errPortTaken
			}
			return nil, fmt.Errorf("e2e: slipway serve exited with %s before answering %s; its output:\n%s", s.state, probe, s.Logs())
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("e2e: slipway serve did not answer %s within %s; its output:\n%s", probe, StartTimeout, s.Logs())
		}
	}
}

// cleanup stops the server if it still runs, and reports data races and, for a failed test, the
// end of its logs.
func (s *Server) cleanup(t testing.TB) {
	if !s.Exited() {
		_ = s.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(WaitTimeout):
			// SIGQUIT first: the Go runtime writes every goroutine's stack to the server's
			// output, so a server stuck in shutdown says where it is stuck.
			t.Errorf("e2e: server %s ignored SIGTERM for %s; its goroutines follow its output; killing it", s.Addr, WaitTimeout)
			_ = s.Signal(syscall.SIGQUIT)
			select {
			case <-s.done:
			case <-time.After(5 * time.Second):
				_ = s.Signal(syscall.SIGKILL)
				<-s.done
			}
		}
	}
	logs := s.Logs()
	if strings.Contains(logs, "WARNING: DATA RACE") {
		t.Errorf("e2e: the server %s (pid %d) reported a data race:\n%s", s.Addr, s.PID, logs)
		return
	}
	if t.Failed() {
		tail := 32 << 10
		if strings.Contains(logs, "goroutine ") && strings.Contains(logs, "SIGQUIT") {
			tail = 512 << 10 // a goroutine dump: keep it whole
		}
		if len(logs) > tail {
			logs = "…" + logs[len(logs)-tail:]
		}
		t.Logf("e2e: output of the server %s (pid %d, %s):\n%s", s.Addr, s.PID, s.state, logs)
	}
}

// Logs returns everything the server has written to stdout and stderr so far.
func (s *Server) Logs() string { return s.logs.String() }

// Signal sends sig to the server process (syscall.SIGTERM to stop it gracefully, SIGKILL for a
// crash).
func (s *Server) Signal(sig os.Signal) error { return s.cmd.Process.Signal(sig) }

// Exited reports whether the process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait waits (at most WaitTimeout, failing the test beyond) for the process to end and returns
// its exit code: -1 when a signal killed it.
func (s *Server) Wait(t testing.TB) int {
	t.Helper()
	select {
	case <-s.done:
		return s.state.ExitCode()
	case <-time.After(WaitTimeout):
		t.Fatalf("e2e: server %s still running after %s", s.Addr, WaitTimeout)
		return 0
	}
}

// Stop sends SIGTERM and waits for the exit code.
func (s *Server) Stop(t testing.TB) int {
	t.Helper()
	if err := s.Signal(syscall.SIGTERM); err != nil && !s.Exited() {
		t.Fatal(err)
	}
	return s.Wait(t)
}

// Kill sends SIGKILL and waits for the process to end.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if err := s.Signal(syscall.SIGKILL); err != nil && !s.Exited() {
		t.Fatal(err)
	}
	s.Wait(t)
}

// WaitLog waits until the server's output contains substr, failing the test if the process ends
// first or after WaitTimeout.
func (s *Server) WaitLog(t testing.TB, substr string) {
	t.Helper()
	testkit.EventuallyOK(t, WaitTimeout, fmt.Sprintf("server %s to log %q", s.Addr, substr), func() error {
		if strings.Contains(s.Logs(), substr) {
			return nil
		}
		if s.Exited() {
			t.Fatalf("e2e: server %s exited (%s) without logging %q", s.Addr, s.state, substr)
		}
		return errors.New("not logged yet")
	})
}

// Response is a whole HTTP response.
type Response = testkit.Response

// noRedirects is the client of Get: tests see the 302s of downloads.
var noRedirects = &http.Client{
	Timeout:       time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// Get fetches path (relative to the server's URL) and reads the whole response.
func (s *Server) Get(t testing.TB, path string) *Response {
	t.Helper()
	return s.Do(t, http.MethodGet, path, nil)
}

// Do sends a request to path (relative to the server's URL) with header name/value pairs, e.g.
// "Authorization", "Token "+token, and reads the whole response. Redirects are not followed.
func (s *Server) Do(t testing.TB, method, path string, body io.Reader, header ...string) *Response {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Result is a finished CLI command.
type Result struct {
	Args     []string
	Stdout   string
	Stderr   string
	ExitCode int
}

// LastLine is the last non-empty line of stdout, where commands put what scripts take (a token,
// a release URL).
func (r Result) LastLine() string {
	lines := strings.Split(strings.TrimRight(r.Stdout, "\r\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func (r Result) String() string {
	return fmt.Sprintf("slipway %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.ExitCode, r.Stdout, r.Stderr)
}

// Run runs `slipway args...` with the harness's environment and returns its result, whatever the
// exit code; it fails the test only when the command cannot run or outlives RunTimeout.
func (h *Harness) Run(t testing.TB, args ...string) Result {
	t.Helper()
	return h.RunEnv(t, nil, args...)
}

// RunEnv is Run with extra environment variables.
func (h *Harness) RunEnv(t testing.TB, extraEnv []string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.Environ(extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := startCmd(cmd); err != nil {
		t.Fatalf("e2e: starting slipway %s: %v", strings.Join(args, " "), err)
	}
	err := cmd.Wait()
	res := Result{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: cmd.ProcessState.ExitCode()}
	if ctx.Err() != nil {
		t.Fatalf("e2e: slipway %s did not end within %s\n%s", strings.Join(args, " "), RunTimeout, res)
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("e2e: slipway %s: %v\n%s", strings.Join(args, " "), err, res)
	}
	return res
}

// MustRun is Run that fails the test unless the command exits 0.
func (h *Harness) MustRun(t testing.TB, args ...string) Result {
	t.Helper()
	res := h.Run(t, args...)
	if res.ExitCode != 0 {
		t.Fatalf("e2e: command failed:\n%s", res)
	}
	return res
}

// CreateToken creates an API token with `slipway token create` and returns its secret.
func (h *Harness) CreateToken(t testing.TB, name, scope string) string {
	t.Helper()
	return h.MustRun(t, "token", "create", "--name", name, "--scope", scope).LastLine()
}

// DB returns a connection pool on the harness's database, closed when the test ends, for tests
// that check what was (not) recorded.
func (h *Harness) DB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	h.dbOnce.Do(func() {
		h.db, h.dbErr = pgxpool.New(context.Background(), h.DatabaseURL)
		if h.dbErr == nil {
			t.Cleanup(h.db.Close)
		}
	})
	if h.dbErr != nil {
		t.Fatal(h.dbErr)
	}
	return h.db
}

// QueryInt runs a query returning one integer, e.g. "SELECT count(*) FROM releases".
func (h *Harness) QueryInt(t testing.TB, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := h.DB(t).QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("e2e: %s: %v", sql, err)
	}
	return n
}

// Objects lists every file in the storage: object keys, and for FS storage also the temporary
// files of unfinished writes (named .slipway-tmp-*), so "nothing left" checks see those too.
func (h *Harness) Objects(t testing.TB) []string {
	t.Helper()
	var keys []string
	if h.S3 == nil {
		err := filepath.WalkDir(h.StorageDir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(h.StorageDir, p)
				keys = append(keys, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := awss3.NewListObjectsV2Paginator(h.S3.Client(), &awss3.ListObjectsV2Input{Bucket: &h.S3.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

// MultipartUploads lists the keys of the bucket's unfinished multipart uploads (S3 storage only).
func (h *Harness) MultipartUploads(t testing.TB) []string {
	t.Helper()
	if h.S3 == nil {
		t.Fatal("e2e: MultipartUploads needs S3 storage")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := h.S3.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &h.S3.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, *u.Key)
	}
	return keys
}

// StartProcess starts cmd as the harness starts its servers: on Linux the process is killed if the
// test process dies. For tests that run services of their own (a MinIO or Postgres to stop and
// restart).
func StartProcess(cmd *exec.Cmd) error { return startCmd(cmd) }

// lastValue returns the value of the last NAME=... in env.
func lastValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}
