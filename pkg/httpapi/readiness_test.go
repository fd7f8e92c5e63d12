package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Readiness follows the replica's own state only (docs/operations.md, Health): while it starts,
// /readyz is 503 and every request that needs the database answers 503 with Retry-After and
// {"error"}, while health, version and metrics answer; once started it is ready; shutting down,
// not ready again. The public answer never names a dependency.
func TestReadinessFollowsStartUp(t *testing.T) {
	s := newServer(t)
	get := func(path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}

	if w := get("/readyz"); w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"status":"ready"}` {
		t.Errorf("a Server nobody marked starting: readyz %d %s", w.Code, w.Body)
	}

	s.Starting("waiting for the database")
	if w := get("/readyz"); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		strings.Contains(w.Body.String(), "database") {
		t.Errorf("readyz while starting: %d %v %s", w.Code, w.Header(), w.Body)
	}
	for _, path := range []string{"/api/apps", "/api/apps/latest?channel_key=x&release_version=1&build_version=1", "/api/health", "/channels/abc"} {
		w := get(path)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"error":"this replica is starting`) {
			t.Errorf("GET %s while starting: %d %v %s", path, w.Code, w.Header(), w.Body)
		}
	}
	for _, path := range []string{"/healthz", "/api/version", "/metrics", "/static/slipway.css"} {
		if w := get(path); w.Code != http.StatusOK {
			t.Errorf("GET %s while starting: %d %s", path, w.Code, w.Body)
		}
	}

	s.Started()
	if w := get("/readyz"); w.Code != http.StatusOK {
		t.Errorf("readyz once started: %d %s", w.Code, w.Body)
	}
	s.Stopping()
	if w := get("/readyz"); w.Code != http.StatusServiceUnavailable {
		t.Errorf("readyz while shutting down: %d %s", w.Code, w.Body)
	}
	if w := get("/healthz"); w.Code != http.StatusOK {
		t.Errorf("healthz while shutting down: %d", w.Code)
	}
}

// With an internal port, /metrics and /internal/readyz are not on the public router; the internal
// handler serves them and nothing of the API.
func TestInternalPortKeepsMetricsOffThePublicRouter(t *testing.T) {
	s := newServerWith(t, "SLIPWAY_INTERNAL_ADDR", ":9090")
	for _, path := range []string{"/metrics", "/internal/readyz"} {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("public GET %s with an internal port: %d, want 404", path, w.Code)
		}
	}
	internal := s.Internal()
	for path, want := range map[string]int{"/metrics": 200, "/healthz": 200, "/readyz": 200, "/api/apps": 404, "/": 404} {
		w := httptest.NewRecorder()
		internal.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != want {
			t.Errorf("internal GET %s: %d, want %d", path, w.Code, want)
		}
	}
}
