package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// The shutdown tests store through S3 with 5 MiB parts and send a 12 MiB package, so that when
// SIGTERM comes the server is in the middle of a real multipart upload, with a part stored.
var shutdownOptions = e2e.Options{Storage: e2e.S3, S3Params: url.Values{"part_size_mib": {"5"}}}

// headStart is how much of the body is sent before SIGTERM: more than one part.
const headStart = 7 << 20

// TestShutdownDrainsUploads: on SIGTERM the server stops accepting connections at once, but an
// upload in flight finishes (201) if it ends within the drain timeout; then the process exits 0.
func TestShutdownDrainsUploads(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, shutdownOptions)
	s := h.Start(t, "SLIPWAY_DRAIN_TIMEOUT=5m")
	token := h.CreateToken(t, "ci", "upload")

	up := startSlowUpload(t, s, token, appletest.BuildIPA(appletest.IPAOptions{BundleID: "com.example.drain", FillerBytes: 12 << 20}))
	up.send(t, headStart)
	testkit.Eventually(t, e2e.WaitTimeout, "the server to start a multipart upload", func() bool { return len(h.MultipartUploads(t)) == 1 })

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, "shutting down")
	waitRefused(t, s.Addr)
	if up.ended() {
		t.Fatal("the upload ended before the rest of its body was sent")
	}
	if s.Exited() {
		t.Fatal("the server exited with an upload in flight")
	}

	up.finish(t)
	status, body, err := up.wait(t)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("upload in flight at SIGTERM: status %d, error %v: %s", status, err, body)
	}
	if code := s.Wait(t); code != 0 {
		t.Errorf("exit code %d after draining, want 0", code)
	}
	if strings.Contains(s.Logs(), "drain timeout over") {
		t.Error("the drain timed out although the upload finished in time")
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM releases WHERE bundle_id = 'com.example.drain'"); n != 1 {
		t.Errorf("%d releases recorded, want 1", n)
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM storage_objects WHERE state = 'pending'"); n != 0 {
		t.Errorf("%d objects still pending after a completed upload", n)
	}
	if mu := h.MultipartUploads(t); len(mu) != 0 {
		t.Errorf("multipart uploads left: %v", mu)
	}
}

// TestShutdownDrainsThrottledUpload is a rollout during a long single-request upload (issue 26,
// #4): the client sends at a fixed, slow rate from before SIGTERM until its last byte, long after
// the signal. Meanwhile new connections to the public port are refused (the Service and the
// ingress send them elsewhere) and the internal readiness says the replica is shutting down; the
// upload ends with 201 within the configured drain (no "drain timeout over"), is recorded once,
// and the process exits 0.
func TestShutdownDrainsThrottledUpload(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, shutdownOptions)
	s := h.Start(t, "SLIPWAY_DRAIN_TIMEOUT=3m", "SLIPWAY_INTERNAL_ADDR=auto")
	token := h.CreateToken(t, "ci", "upload")

	up := startSlowUpload(t, s, token, appletest.BuildIPA(appletest.IPAOptions{BundleID: "com.example.throttled", FillerBytes: 24 << 20}))
	up.send(t, headStart)
	testkit.Eventually(t, e2e.WaitTimeout, "the server to start a multipart upload", func() bool { return len(h.MultipartUploads(t)) == 1 })
	// 256 KiB every 100 ms (2.5 MiB/s, far above SLIPWAY_UPLOAD_MIN_RATE): the remaining ~17 MiB
	// take about 7 s, all of them after SIGTERM.
	sent := up.throttle(256<<10, 100*time.Millisecond)

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, "shutting down: draining")
	waitRefused(t, s.Addr)
	r, err := http.Get(s.InternalURL + "/internal/readyz")
	if err != nil {
		t.Fatalf("the internal port during the drain: %v", err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"status":"shutting down"`) {
		t.Errorf("internal readyz during the drain: %d %s", r.StatusCode, body)
	}
	if up.ended() {
		t.Fatal("the upload ended before its client sent the rest of the body")
	}

	if err := <-sent; err != nil {
		t.Fatalf("sending the body during the drain: %v", err)
	}
	status, respBody, err := up.wait(t)
	if err != nil || status != http.StatusCreated {
		t.Fatalf("throttled upload in flight at SIGTERM: status %d, error %v: %s", status, err, respBody)
	}
	if code := s.Wait(t); code != 0 {
		t.Errorf("exit code %d after draining, want 0", code)
	}
	if strings.Contains(s.Logs(), "drain timeout over") {
		t.Error("the drain timed out although the upload finished within it")
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM releases WHERE bundle_id = 'com.example.throttled'"); n != 1 {
		t.Errorf("%d releases recorded, want 1", n)
	}
	if mu := h.MultipartUploads(t); len(mu) != 0 {
		t.Errorf("multipart uploads left: %v", mu)
	}
}

// TestShutdownAbortsUploadsPastDrainTimeout: an upload still trickling in when the drain timeout
// ends is cut. Nothing of it is recorded, its multipart upload is aborted, and nothing is left in
// the bucket for the collector either.
func TestShutdownAbortsUploadsPastDrainTimeout(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, shutdownOptions)
	s := h.Start(t, "SLIPWAY_DRAIN_TIMEOUT=1s")
	token := h.CreateToken(t, "ci", "upload")

	up := startSlowUpload(t, s, token, appletest.BuildIPA(appletest.IPAOptions{BundleID: "com.example.cut", FillerBytes: 12 << 20}))
	up.send(t, headStart)
	testkit.Eventually(t, e2e.WaitTimeout, "the server to start a multipart upload", func() bool { return len(h.MultipartUploads(t)) == 1 })
	stopTrickle := up.trickle(512, 20*time.Millisecond) // 25 KiB/s: far from done when the drain ends
	defer stopTrickle()

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.Wait(t); code != 0 {
		t.Errorf("exit code %d after cutting an upload, want 0", code)
	}
	status, body, err := up.wait(t)
	stopTrickle()
	if err == nil && status < 400 {
		t.Fatalf("the cut upload got status %d: %s", status, body)
	}
	t.Logf("the client saw: status %d, error %v, body %s", status, err, body)
	if !strings.Contains(s.Logs(), "drain timeout over") {
		t.Error("the server did not log that the drain timed out")
	}

	if n := h.QueryInt(t, "SELECT count(*) FROM releases"); n != 0 {
		t.Errorf("%d releases recorded by a cut upload", n)
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM apps"); n != 0 {
		t.Errorf("%d apps created by a cut upload", n)
	}
	if mu := h.MultipartUploads(t); len(mu) != 0 {
		t.Errorf("multipart uploads left after the abort: %v", mu)
	}
	h.MustRun(t, "gc", "--grace", "0s")
	if objs := h.Objects(t); len(objs) != 0 {
		t.Errorf("objects left after gc: %v", objs)
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM storage_objects"); n != 0 {
		t.Errorf("%d storage bookkeeping rows left after gc", n)
	}
}

// TestShutdownAbortsStalledUploads: an upload whose client stops sending altogether (so the
// server's handler is blocked reading it, deaf to cancellation) is cut when the connections are
// closed, and the process waits for its clean-up before exiting: the multipart upload is aborted,
// not left to a bucket lifecycle rule.
func TestShutdownAbortsStalledUploads(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, shutdownOptions)
	s := h.Start(t, "SLIPWAY_DRAIN_TIMEOUT=1s")
	token := h.CreateToken(t, "ci", "upload")

	up := startSlowUpload(t, s, token, appletest.BuildIPA(appletest.IPAOptions{BundleID: "com.example.stall", FillerBytes: 12 << 20}))
	up.send(t, headStart)
	testkit.Eventually(t, e2e.WaitTimeout, "the server to start a multipart upload", func() bool { return len(h.MultipartUploads(t)) == 1 })

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.Wait(t); code != 0 {
		t.Errorf("exit code %d after cutting an upload, want 0", code)
	}
	if mu := h.MultipartUploads(t); len(mu) != 0 {
		t.Errorf("multipart uploads left after the process exited: %v", mu)
	}
	// The handler finished its clean-up (and logged the request) before the process exited:
	// the object it had marked pending is forgotten, not left to the collector.
	if !strings.Contains(s.Logs(), `"route":"/api/apps/upload"`) {
		t.Errorf("the process exited before the cut upload's handler returned:\n%s", s.Logs())
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM storage_objects"); n != 0 {
		t.Errorf("%d storage bookkeeping rows left by the cut upload", n)
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM releases"); n != 0 {
		t.Errorf("%d releases recorded by a cut upload", n)
	}
	h.MustRun(t, "gc", "--grace", "0s")
	if objs := h.Objects(t); len(objs) != 0 {
		t.Errorf("objects left after gc: %v", objs)
	}
}

// slowUpload posts an app upload whose body the test releases bit by bit through a pipe.
type slowUpload struct {
	mu     sync.Mutex // guards rest and pw writes between send, trickle and finish
	pw     *io.PipeWriter
	rest   []byte
	done   chan struct{}
	status int
	body   []byte
	err    error
}

func startSlowUpload(t *testing.T, s *e2e.Server, token string, pkg []byte) *slowUpload {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "App.ipa")
	_, _ = fw.Write(pkg)
	_ = mw.Close()

	pr, pw := io.Pipe()
	u := &slowUpload{pw: pw, rest: body.Bytes(), done: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), e2e.WaitTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/api/apps/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(body.Len())
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Token "+token)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	go func() {
		defer close(u.done)
		defer cancel()
		resp, err := client.Do(req)
		if err != nil {
			u.err = err
			return
		}
		defer resp.Body.Close()
		u.status = resp.StatusCode
		u.body, u.err = io.ReadAll(resp.Body)
	}()
	t.Cleanup(func() {
		_ = pw.CloseWithError(errors.New("test over"))
		cancel()
		<-u.done
	})
	return u
}

// send writes the next n bytes of the body; it returns once the client has taken them.
func (u *slowUpload) send(t *testing.T, n int) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	n = min(n, len(u.rest))
	if _, err := u.pw.Write(u.rest[:n]); err != nil {
		t.Fatalf("sending the body: %v", err)
	}
	u.rest = u.rest[n:]
}

// trickle sends chunk bytes every interval, never the last byte, until stopped or the connection
// fails.
func (u *slowUpload) trickle(chunk int, every time.Duration) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			u.mu.Lock()
			n := min(chunk, len(u.rest)-1)
			var err error
			if n > 0 {
				_, err = u.pw.Write(u.rest[:n])
				u.rest = u.rest[n:]
			}
			u.mu.Unlock()
			if err != nil || n <= 0 {
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-stopped }) }
}

// throttle sends the rest of the body, chunk bytes every interval, then closes it; the channel
// gets the first write error, or nil once everything was sent.
func (u *slowUpload) throttle(chunk int, every time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for range tick.C {
			u.mu.Lock()
			n := min(chunk, len(u.rest))
			_, err := u.pw.Write(u.rest[:n])
			u.rest = u.rest[n:]
			last := len(u.rest) == 0
			u.mu.Unlock()
			if err != nil {
				done <- err
				return
			}
			if last {
				done <- u.pw.Close()
				return
			}
		}
	}()
	return done
}

// finish sends the rest of the body.
func (u *slowUpload) finish(t *testing.T) {
	t.Helper()
	u.send(t, len(u.rest))
	_ = u.pw.Close()
}

func (u *slowUpload) ended() bool {
	select {
	case <-u.done:
		return true
	default:
		return false
	}
}

// wait returns the answer (or the client's error), failing the test after e2e.WaitTimeout.
func (u *slowUpload) wait(t *testing.T) (int, []byte, error) {
	t.Helper()
	select {
	case <-u.done:
		return u.status, u.body, u.err
	case <-time.After(e2e.WaitTimeout):
		t.Fatalf("the upload did not end within %s", e2e.WaitTimeout)
		return 0, nil, nil
	}
}

// waitRefused waits until nothing accepts connections at addr any more.
func waitRefused(t *testing.T, addr string) {
	t.Helper()
	testkit.Eventually(t, e2e.WaitTimeout, "connections to "+addr+" to be refused", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	})
}
