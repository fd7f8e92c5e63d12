package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Readiness means "this replica can serve" (docs/operations.md, Health): it is lost only for the
// replica's own state, never for a dependency's outage. An outage of Postgres or object storage
// is the same for every replica; taking them all out of the Service would replace the app's own
// 503 with Retry-After (and the read cache's answers) by the ingress's bare 503. So:
//   - starting: serve listens at once, and until it has found (or made) the database schema it
//     needs, /readyz answers 503 and every request but the health, version and internal
//     endpoints answers 503 with Retry-After (startupGate);
//   - ready: /readyz answers 200 whatever the dependencies do; requests that need one that is
//     down answer 503 with Retry-After on their own;
//   - shutting down: /readyz answers 503 (the internal port still answers during the drain).
//
// The dependencies' state is reported on the internal endpoint only (/internal/readyz).
type readiness struct {
	state  atomic.Int32
	reason atomic.Pointer[string]
}

const (
	stateReady int32 = iota
	stateStarting
	stateStopping
)

// Starting marks the replica as starting, for reason (shown on the internal endpoint only):
// not ready, and requests that need the database answer 503 until Started.
func (s *Server) Starting(reason string) {
	s.ready.reason.Store(&reason)
	s.ready.state.Store(stateStarting)
}

// Started marks the replica ready: its start-up is done.
func (s *Server) Started() {
	s.ready.state.Store(stateReady)
	s.ready.reason.Store(nil)
}

// Stopping marks the replica as shutting down: /readyz answers 503 from now on.
func (s *Server) Stopping() { s.ready.state.Store(stateStopping) }

func (s *Server) readyState() (state int32, name, reason string) {
	state = s.ready.state.Load()
	if r := s.ready.reason.Load(); r != nil {
		reason = *r
	}
	switch state {
	case stateStarting:
		return state, "starting", reason
	case stateStopping:
		return state, "shutting down", ""
	}
	return state, "ready", ""
}

// startupGate answers 503 with Retry-After to every request that needs the database while the
// replica is starting. Health, version, metrics and static files are served meanwhile.
func (s *Server) startupGate(c *gin.Context) {
	if s.ready.state.Load() != stateStarting {
		return
	}
	switch p := c.Request.URL.Path; {
	case p == "/healthz", p == "/readyz", p == "/metrics", p == "/internal/readyz", p == "/api/version",
		strings.HasPrefix(p, "/static/"):
		return
	}
	s.fail(c, &errs.Error{Kind: errs.Unavailable, RetryAfter: 5 * time.Second,
		Msg: "this replica is starting (waiting for the database and its schema); retry later"})
}

// healthz: the process is alive (liveness). It touches no dependency, so a database outage does
// not make Kubernetes restart healthy replicas.
func (s *Server) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz: whether this replica can serve (readiness), and nothing more: the public answer names
// no dependency. See readiness.
func (s *Server) readyz(c *gin.Context) {
	if state, _, _ := s.readyState(); state != stateReady {
		c.Header("Retry-After", "5")
		c.JSON(http.StatusServiceUnavailable, gin.H{"error": "not ready"})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready"})
}

// internalReadyz: the detailed readiness report of the internal endpoint. The status code is the
// public /readyz's (200 when this replica can serve); the body adds the start-up's state and each
// dependency's, checked now (within 3 s).
func (s *Server) internalReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	state, name, reason := s.readyState()
	body := map[string]any{"status": name, "ready": state == stateReady, "checks": s.svc.DependencyChecks(ctx),
		"version": buildinfo.Version}
	if reason != "" {
		body["reason"] = reason
	}
	status := http.StatusOK
	if state != stateReady {
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Internal is the handler of the internal listener (SLIPWAY_INTERNAL_ADDR): /metrics, the
// detailed readiness /internal/readyz, and /healthz and /readyz as on the public port. Nothing
// else: the API and pages are not served there.
func (s *Server) Internal() http.Handler {
	mux := http.NewServeMux()
	if s.metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /internal/readyz", s.internalReadyz)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if state, _, _ := s.readyState(); state != stateReady {
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"not ready"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"not found: the internal port serves /metrics, /internal/readyz, /readyz and /healthz"}`))
	})
	return mux
}

// version: GET /api/version.
func (s *Server) version(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"version": buildinfo.Version, "vcs_ref": buildinfo.CommitOrVCS(), "api_version": buildinfo.APIVersion})
}

// health: GET /api/health, Zealot's health check: 200 while the database answers.
func (s *Server) health(c *gin.Context) error {
	ctx := reqCtx(c)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.svc.DatabaseReady(ctx); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"healthy": true})
	return nil
}
