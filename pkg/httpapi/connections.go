package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Connection outcomes, as the "connection closed" log line and the
// slipway_http_connections_closed_total metric name them.
const (
	// connAnswered: every request that arrived on the connection was answered.
	connAnswered = "answered"
	// connNoRequest: the connection closed before a request arrived (a probe, a client that
	// connected and left, or sent nothing for the idle timeout).
	connNoRequest = "no_request"
	// connUnanswered: a request began to arrive but never reached a handler: its headers were
	// malformed, too large or too slow (the server may have written a bare 4xx), or the client
	// went away while sending them. Nothing else logs such a request.
	connUnanswered = "unanswered"
	// connCut: the connection closed while a handler was still running (shutdown past the drain
	// timeout, or a hijack).
	connCut = "cut"
)

// connTracker follows every connection of an http.Server from accept to close, so that each one
// the server ends, for whatever reason, leaves one log line and a metric with its outcome: a
// request lost without an answer is always visible, whether the client, a timeout or a
// shutdown ended it.
// Install it with Track.
type connTracker struct {
	log      *slog.Logger
	closed   func(outcome string)
	mu       sync.Mutex
	conns    map[net.Conn]*connInfo
	inFlight atomic.Int64 // handlers running, on every connection
}

// connInfo is what is known of one connection. Its counters are touched by the connection's own
// goroutine (handler) and by ConnState, which net/http calls from that goroutine too, but the
// final read happens on close, possibly from Shutdown's goroutine: hence atomics.
type connInfo struct {
	opened   time.Time
	remote   string
	arrived  atomic.Int64 // requests whose first bytes arrived (StateActive transitions)
	started  atomic.Int64 // requests that reached the handler
	finished atomic.Int64 // handlers that returned
	probes   atomic.Int64 // of those, health and metrics probes
	last     atomic.Value // string: the last request's id, method and path
	status   atomic.Int64 // the last status written
}

type connInfoKey struct{}

func newConnTracker(log *slog.Logger, closed func(outcome string)) *connTracker {
	return &connTracker{log: log, closed: closed, conns: map[net.Conn]*connInfo{}}
}

// Track installs the tracker on srv: ConnContext, ConnState and a wrapper of srv.Handler.
func (t *connTracker) Track(srv *http.Server) {
	next := srv.Handler
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		info := &connInfo{opened: time.Now(), remote: c.RemoteAddr().String()}
		t.mu.Lock()
		t.conns[c] = info
		t.mu.Unlock()
		return context.WithValue(ctx, connInfoKey{}, info)
	}
	srv.ConnState = t.state
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.inFlight.Add(1)
		defer t.inFlight.Add(-1)
		info, _ := r.Context().Value(connInfoKey{}).(*connInfo)
		if info != nil {
			info.started.Add(1)
			defer info.finished.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

// InFlight is the number of handlers running.
func (t *connTracker) InFlight() int64 { return t.inFlight.Load() }

func (t *connTracker) state(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateActive:
		if info := t.info(c, false); info != nil {
			info.arrived.Add(1)
		}
	case http.StateClosed, http.StateHijacked:
		if info := t.info(c, true); info != nil {
			t.report(info, st == http.StateHijacked)
		}
	}
}

func (t *connTracker) info(c net.Conn, remove bool) *connInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.conns[c]
	if remove {
		delete(t.conns, c)
	}
	return info
}

// report writes the connection's one line: at warning level when a request was left without
// an answer, at debug level when it served only probes, else at info level.
func (t *connTracker) report(info *connInfo, hijacked bool) {
	arrived, started, finished := info.arrived.Load(), info.started.Load(), info.finished.Load()
	outcome, level := connAnswered, slog.LevelInfo
	switch {
	case started > finished || hijacked:
		outcome, level = connCut, slog.LevelWarn
	case arrived > started:
		outcome, level = connUnanswered, slog.LevelWarn
	case arrived == 0:
		outcome, level = connNoRequest, slog.LevelDebug
	case info.probes.Load() == finished:
		level = slog.LevelDebug
	}
	last, _ := info.last.Load().(string)
	t.log.LogAttrs(context.Background(), level, "connection closed",
		slog.String("outcome", outcome),
		slog.String("client_addr", info.remote),
		slog.Int64("requests", finished),
		slog.Int64("requests_arrived", arrived),
		slog.String("last_request", last),
		slog.Int64("last_status", info.status.Load()),
		slog.Int64("open_ms", time.Since(info.opened).Milliseconds()),
	)
	// Counted after the line is written: whoever sees the count finds the line.
	if t.closed != nil {
		t.closed(outcome)
	}
}

// silent reports a connection that closed before sending a byte (firstByteListener).
func (t *connTracker) silent(remote string, opened time.Time) {
	t.log.LogAttrs(context.Background(), slog.LevelDebug, "connection closed",
		slog.String("outcome", connNoRequest),
		slog.String("client_addr", remote),
		slog.Int64("requests", 0),
		slog.Int64("open_ms", time.Since(opened).Milliseconds()),
	)
	if t.closed != nil {
		t.closed(connNoRequest)
	}
}

// noteRequest records the request a connection served last, for its close line. The access log
// calls it once the handler chain is done.
func noteRequest(ctx context.Context, id, method, path string, status int, probe bool) {
	info, _ := ctx.Value(connInfoKey{}).(*connInfo)
	if info == nil {
		return
	}
	info.last.Store(id + " " + method + " " + truncate(path, 100))
	info.status.Store(int64(status))
	if probe {
		info.probes.Add(1)
	}
}

// firstByteListener hands a connection to the HTTP server only once its first byte has arrived,
// and closes (and logs) one that sends nothing for idle.
//
// Why: net/http starts a new connection's header timeout (ReadHeaderTimeout, 10 s) when it
// accepts it, but a kept-alive connection's only when the next request's first byte arrives (it
// waits IdleTimeout for that). A client that opens a connection and then stalls before writing,
// a CI job on an overloaded runner, or a Go client whose transport parks a freshly dialed
// connection in its pool, found the connection closed after 10 s, and it began its upload on
// it just then: the upload failed with "broken pipe", "EOF" or "server closed idle connection",
// and Go's transport does not retry on a fresh connection ("there's no reason the server
// should've hung up"). Nothing was logged, because no request had arrived. Waiting
// for the first byte here gives a new connection the same idle allowance as a kept-alive one;
// the header timeout then bounds a slow header from its first byte, as it does for kept-alive
// connections.
type firstByteListener struct {
	net.Listener
	idle    time.Duration
	tracker *connTracker

	ready     chan net.Conn
	errs      chan error
	done      chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	pending   map[net.Conn]struct{} // accepted, waiting for their first byte
}

func newFirstByteListener(ln net.Listener, idle time.Duration, t *connTracker) *firstByteListener {
	l := &firstByteListener{Listener: ln, idle: idle, tracker: t, ready: make(chan net.Conn),
		errs: make(chan error, 1), done: make(chan struct{}), pending: map[net.Conn]struct{}{}}
	go l.acceptLoop()
	return l
}

func (l *firstByteListener) acceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			// The HTTP server decides: it retries temporary errors (EMFILE) after a pause and
			// stops on others; a closed listener ends this loop.
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			_ = c.Close()
			return
		default:
		}
		l.pending[c] = struct{}{}
		l.mu.Unlock()
		go l.awaitFirstByte(c)
	}
}

// awaitFirstByte reads one byte with a deadline of idle, then hands the connection on with that
// byte put back in front.
func (l *firstByteListener) awaitFirstByte(c net.Conn) {
	opened := time.Now()
	var b [1]byte
	_ = c.SetReadDeadline(opened.Add(l.idle))
	n, _ := c.Read(b[:])
	_ = c.SetReadDeadline(time.Time{})
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if n == 0 { // nothing came: closed, reset or silent for idle
		_ = c.Close()
		l.tracker.silent(c.RemoteAddr().String(), opened)
		return
	}
	select {
	case l.ready <- &firstByteConn{Conn: c, first: b[0], has: true}:
	case <-l.done:
		_ = c.Close()
	}
}

// Accept returns the next connection whose first byte has arrived.
func (l *firstByteListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections still waiting for their first byte.
func (l *firstByteListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() {
		l.mu.Lock()
		close(l.done)
		for c := range l.pending {
			_ = c.Close()
		}
		l.mu.Unlock()
	})
	return err
}

// firstByteConn is a connection whose first byte was read by firstByteListener; its first Read
// returns that byte. net/http never reads a connection from two goroutines at once.
type firstByteConn struct {
	net.Conn
	first byte
	has   bool
}

func (c *firstByteConn) Read(p []byte) (int, error) {
	if c.has && len(p) > 0 {
		p[0], c.has = c.first, false
		return 1, nil
	}
	return c.Conn.Read(p)
}
