package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/test/testkit"
)

// connServer serves a small upload-like route (it reads the whole body, then answers 201) through
// the same http.Server and listener serve uses, with short connection timeouts.
func connServer(t *testing.T, header, idle time.Duration) (addr string, logs *testkit.LockedBuffer, m *metrics.Metrics) {
	t.Helper()
	logs = &testkit.LockedBuffer{}
	m = metrics.New()
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := &Server{cfg: &config.Config{}, log: log, metrics: m, headerTimeout: header, idleTimeout: idle,
		conns: newConnTracker(log, func(outcome string) { m.ConnectionsClosed.WithLabelValues(outcome).Inc() })}
	gin.SetMode(gin.ReleaseMode)
	s.engine = gin.New()
	s.engine.Use(requestIDs, s.accessLog)
	s.engine.POST("/upload", func(c *gin.Context) {
		n, err := io.Copy(io.Discard, c.Request.Body)
		if err != nil {
			c.String(http.StatusBadRequest, err.Error())
			return
		}
		c.String(http.StatusCreated, "stored %d bytes", n)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.Listener(ln)) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String(), logs, m
}

// stallingDialer dials, then waits before handing the connection to the transport: a client
// whose process stalls between connecting and writing (a CI job on a loaded runner), or a Go
// transport that parks a freshly dialed connection in its pool.
func stallingDialer(stall time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			time.Sleep(stall)
		}
		return c, err
	}
}

// An upload begun on a connection that stayed silent longer than the header timeout is received,
// not lost (issue 19: "upload 0 got write: broken pipe", and nothing in the logs). The server
// used to close a new connection when its header timeout ran out, counted from the accept, so a
// client that connected and then stalled found the connection closed as it started sending;
// Go's transport does not retry a POST on a fresh connection, and no request had reached the
// server to be logged. Now the header timeout counts from the first byte.
func TestUploadOnConnectionSilentPastHeaderTimeout(t *testing.T) {
	const header = 200 * time.Millisecond
	addr, logs, _ := connServer(t, header, time.Minute)
	client := &http.Client{Transport: &http.Transport{DialContext: stallingDialer(5 * header)}}
	body := bytes.Repeat([]byte("x"), 1<<20)
	resp, err := client.Post("http://"+addr+"/upload", "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the upload on a connection silent for %s was lost: %v\nserver log:\n%s", 5*header, err, logs.String())
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(got) != fmt.Sprintf("stored %d bytes", len(body)) {
		t.Fatalf("upload: %d %q", resp.StatusCode, got)
	}

	// The same with a raw connection that sends its request only after the pause.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(5 * header)
	if _, err := fmt.Fprintf(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"); err != nil {
		t.Fatalf("writing after a pause: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	answer := make([]byte, 12)
	if _, err := io.ReadFull(conn, answer); err != nil || string(answer) != "HTTP/1.1 201" {
		t.Fatalf("answer after a pause: %q, %v", answer, err)
	}
}

// A header must still arrive in time once it has begun: half a header is cut at the header
// timeout (counted from its first byte), and that connection's end is logged as a warning.
func TestHalfHeaderIsCutAndLogged(t *testing.T) {
	const header = 200 * time.Millisecond
	addr, logs, m := connServer(t, header, time.Minute)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the server kept half a header for a minute: %v", err)
	}
	testkit.Eventually(t, time.Minute, "the close to be logged", func() bool { return strings.Contains(logs.String(), `"outcome":"unanswered"`) })
	if !strings.Contains(logs.String(), `"level":"WARN","msg":"connection closed","outcome":"unanswered"`) {
		t.Errorf("an unanswered request is not logged as a warning:\n%s", logs.String())
	}
	if n := testutil.ToFloat64(m.ConnectionsClosed.WithLabelValues(connUnanswered)); n != 1 {
		t.Errorf("slipway_http_connections_closed_total{outcome=unanswered} = %v, want 1", n)
	}
}

// Every connection the server closes leaves one log line and a metric with its outcome: one
// that answered its requests, and one that never sent a byte (closed after the idle timeout).
func TestEveryClosedConnectionIsLogged(t *testing.T) {
	addr, logs, m := connServer(t, time.Minute, 300*time.Millisecond)
	client := &http.Client{Transport: &http.Transport{}}
	for range 2 { // two requests on one kept-alive connection
		resp, err := client.Post("http://"+addr+"/upload", "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	client.CloseIdleConnections()
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_ = silent.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(silent); err != nil {
		t.Fatalf("a silent connection was kept past the idle timeout: %v", err)
	}
	testkit.Eventually(t, time.Minute, "both closes to be logged", func() bool {
		return testutil.ToFloat64(m.ConnectionsClosed.WithLabelValues(connAnswered)) == 1 &&
			testutil.ToFloat64(m.ConnectionsClosed.WithLabelValues(connNoRequest)) == 1
	})
	out := logs.String()
	if !strings.Contains(out, `"msg":"connection closed","outcome":"answered"`) || !strings.Contains(out, `"requests":2`) ||
		!strings.Contains(out, `"last_status":201`) {
		t.Errorf("the answered connection's line is missing or incomplete:\n%s", out)
	}
	if !strings.Contains(out, `"msg":"connection closed","outcome":"no_request"`) {
		t.Errorf("the silent connection's line is missing:\n%s", out)
	}
}

// Closing the listener (shutdown) closes the connections still waiting for their first byte and
// ends Serve.
func TestFirstByteListenerClose(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := newConnTracker(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ln := newFirstByteListener(inner, time.Minute, tr)
	conn, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	testkit.Eventually(t, time.Minute, "the connection to wait for its first byte", func() bool {
		ln.mu.Lock()
		defer ln.mu.Unlock()
		return len(ln.pending) == 1
	})
	accepted := make(chan error, 1)
	go func() { _, err := ln.Accept(); accepted <- err }()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := io.ReadAll(conn); err != nil {
		t.Errorf("the waiting connection was not closed: %v", err)
	}
}

// Request metrics take the method from a closed set: a client inventing methods cannot grow the
// metrics (issue 20: 5,000 methods added 100,000 lines to /metrics).
func TestMetricLabelsAreBounded(t *testing.T) {
	addr, _, m := connServer(t, time.Minute, time.Minute)
	client := &http.Client{}
	for i := range 50 {
		req, err := http.NewRequest(fmt.Sprintf("M%d", i), "http://"+addr+"/upload", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if n := testutil.CollectAndCount(m.Requests); n != 1 {
		t.Errorf("50 invented methods made %d request series, want 1 (method=\"other\")", n)
	}
	if n := testutil.ToFloat64(m.Requests.WithLabelValues("unmatched", "other", "404")); n != 50 {
		t.Errorf("slipway_http_requests_total{method=\"other\"} = %v, want 50", n)
	}
}

// SLIPWAY_ACCESS_LOG=false turns the request lines off but for 5xx answers; the metrics still
// count every request.
func TestAccessLogSwitch(t *testing.T) {
	for _, off := range []bool{false, true} {
		logs := &testkit.LockedBuffer{}
		m := metrics.New()
		s := &Server{cfg: &config.Config{AccessLogOff: off}, log: slog.New(slog.NewJSONHandler(logs, nil)), metrics: m}
		gin.SetMode(gin.ReleaseMode)
		s.engine = gin.New()
		s.engine.Use(requestIDs, s.accessLog)
		s.engine.GET("/ok", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		s.engine.GET("/fail", func(c *gin.Context) { c.String(http.StatusInternalServerError, "no") })
		for _, path := range []string{"/ok", "/fail"} {
			s.engine.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
		}
		out := logs.String()
		if got := strings.Contains(out, `"route":"/ok"`); got == off {
			t.Errorf("access log off=%v: the 200 request logged=%v\n%s", off, got, out)
		}
		if !strings.Contains(out, `"route":"/fail"`) {
			t.Errorf("access log off=%v: the 500 request was not logged\n%s", off, out)
		}
		if n := testutil.ToFloat64(m.Requests.WithLabelValues("/ok", "GET", "200")); n != 1 {
			t.Errorf("access log off=%v: %v requests counted, want 1", off, n)
		}
	}
}
