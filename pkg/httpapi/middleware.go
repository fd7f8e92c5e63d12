package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
)

const requestIDKey = "slipway.request_id"

// requestID returns the request's id (set by the requestIDs middleware).
func requestID(c *gin.Context) string { return c.GetString(requestIDKey) }

// requestIDs takes a sane X-Request-ID from the ingress or makes one, and echoes it back.
func requestIDs(c *gin.Context) {
	id := c.GetHeader("X-Request-ID")
	if !validRequestID(id) {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	}
	c.Set(requestIDKey, id)
	c.Header("X-Request-ID", id)
	c.Next()
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// accessLog logs one line per request (with SLIPWAY_ACCESS_LOG=false, only those answered 5xx),
// and counts every request in the metrics either way. It logs the path but never the query
// string, which may carry a token, a password or a URL signature.
func (s *Server) accessLog(c *gin.Context) {
	ctx := reqCtx(c)
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := c.Writer.Status()
	d := time.Since(start)
	if s.metrics != nil {
		method := metricMethod(c.Request.Method)
		s.metrics.Requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
		s.metrics.RequestDuration.WithLabelValues(route, method).Observe(d.Seconds())
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	probe := route == "/healthz" || route == "/readyz" || route == "/metrics" || route == "/internal/readyz"
	if probe {
		level = slog.LevelDebug
	}
	noteRequest(ctx, requestID(c), c.Request.Method, route, status, probe)
	if s.cfg != nil && s.cfg.AccessLogOff && status < 500 {
		return // SLIPWAY_ACCESS_LOG=false: only the failures an operator must see are logged
	}
	s.log.LogAttrs(ctx, level, "request",
		slog.String("request_id", requestID(c)),
		slog.String("method", c.Request.Method),
		slog.String("route", route),
		slog.String("path", loggedPath(route, c.Request.URL.Path)),
		slog.Int("status", status),
		slog.Int("bytes", c.Writer.Size()),
		slog.Int64("duration_ms", d.Milliseconds()),
		slog.String("client_ip", c.ClientIP()),
		slog.String("user_agent", truncate(c.Request.UserAgent(), 200)),
	)
}

// secretRoutes are the routes whose path holds a secret (a tester's mailed sign-in link, a
// mail's unsubscribe token): the access log names their route, never their path.
var secretRoutes = map[string]bool{"/t/in/:secret": true, "/t/unsubscribe/:token": true}

// loggedPath is the path an access log line shows.
func loggedPath(route, path string) string {
	if secretRoutes[route] {
		return route
	}
	return path
}

// metricMethod is a request's method as a metric label: one of a closed set, "other" for the
// rest. Clients choose the method freely, and a label per method they invent would grow the
// metrics without bound (384k invented methods once took /metrics to 712 MB).
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// recovery turns a panic into a logged internal error and a JSON 500, never a stack trace.
func (s *Server) recovery(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.fail(c, fmt.Errorf("panic: %v", r))
		}
	}()
	c.Next()
}

// bodyDeadline gives a request body SLIPWAY_UPLOAD_IDLE_TIMEOUT to start arriving, so a client
// trickling a JSON or form body cannot hold a connection. Uploads move the deadline forward on
// every read (uploadBody), so for them it bounds a stall, not the whole upload.
func (s *Server) bodyDeadline(c *gin.Context) {
	if r := c.Request; r.Body != nil && r.Body != http.NoBody {
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(s.cfg.UploadIdleTimeout))
	}
	c.Next()
}

// apiHeaders marks API responses as not cacheable (decisions.md).
func apiHeaders(c *gin.Context) {
	if strings.HasPrefix(c.Request.URL.Path, "/api/") {
		c.Header("Cache-Control", "no-store")
	}
	// Every answer says its own type: an uploaded object served from the filesystem store must
	// never be sniffed into HTML or script by a browser.
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

func (s *Server) notFound(c *gin.Context) {
	if strings.HasPrefix(c.Request.URL.Path, "/api/") {
		s.fail(c, errs.New(errs.NotFound, "no such endpoint: %s %s", c.Request.Method, truncate(c.Request.URL.Path, 100)))
		return
	}
	c.Data(http.StatusNotFound, "text/plain; charset=utf-8", []byte("404 page not found\n"))
}

func (s *Server) methodNotAllowed(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(http.StatusMethodNotAllowed, gin.H{"error": "method " + c.Request.Method + " is not allowed here"})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
