package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestReplicaWaitsForItsSchema is a pod of the chart (SLIPWAY_MIGRATE_ON_START=false: the hook Job
// migrates) that starts before the schema it needs is there: here the newest migration reverted.
// It neither migrates nor exits: it listens, answers /healthz 200, /readyz 503 and the API 503
// with Retry-After, and logs what it waits for. A dirty schema keeps it waiting the same way. Once
// `slipway migrate up` (the Job) has run, it becomes ready by itself and serves.
func TestReplicaWaitsForItsSchema(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	h.MustRun(t, "migrate", "down", "1", "--yes")
	reverted := h.QueryInt(t, `SELECT version FROM schema_migrations`) // the version before the newest

	s := h.StartListening(t, "SLIPWAY_MIGRATE_ON_START=false")
	s.WaitLog(t, "not ready: waiting for the schema")
	if r := s.Get(t, "/healthz"); r.Status != http.StatusOK {
		t.Errorf("healthz while waiting for the schema: %d", r.Status)
	}
	if r := s.Get(t, "/readyz"); r.Status != http.StatusServiceUnavailable {
		t.Errorf("readyz while waiting for the schema: %d %s", r.Status, r.Body)
	}
	r := s.Get(t, "/api/apps")
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), `"error"`) {
		t.Errorf("API while waiting for the schema: %d %v %s", r.Status, r.Header, r.Body)
	}
	if v := h.QueryInt(t, `SELECT version FROM schema_migrations`); v != reverted {
		t.Fatalf("schema version %d: the replica migrated although SLIPWAY_MIGRATE_ON_START=false", v)
	}

	// A dirty flag (an interrupted migration) keeps it waiting too, logged as an error.
	if _, err := h.DB(t).Exec(t.Context(), `UPDATE schema_migrations SET dirty = true`); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, "the schema is dirty")
	if s.Exited() {
		t.Fatal("the replica exited on a dirty schema")
	}
	if r := s.Get(t, "/readyz"); r.Status != http.StatusServiceUnavailable {
		t.Errorf("readyz on a dirty schema: %d", r.Status)
	}
	h.MustRun(t, "migrate", "force", fmt.Sprint(reverted)) // the repair of docs/operations.md

	// The Job migrates; the replica becomes ready without a restart.
	h.MustRun(t, "migrate", "up")
	pid := s.PID
	testkit.Eventually(t, e2e.WaitTimeout, "readyz once the schema is there", func() bool { return s.Get(t, "/readyz").Status == http.StatusOK })
	token := h.CreateToken(t, "ops", "admin")
	if r := appsPost(t, s, token); r.Status != http.StatusCreated {
		t.Errorf("create an app once ready: %d %s", r.Status, r.Body)
	}
	if s.Exited() || s.PID != pid {
		t.Error("the replica exited or was restarted")
	}
}
