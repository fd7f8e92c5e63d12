package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestRollbackAcrossOneRelease is `helm rollback` after a schema change: the next release
// migrated the database (here, one more migration that only adds, as docs/decisions.md's
// expand/contract rule asks), then this release's binary, which does not have that migration,
// starts on it. It serves, reads and writes, warns, and leaves the schema as it is; its
// `migrate down` refuses a version it does not know.
func TestRollbackAcrossOneRelease(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	next := nextReleaseMigrations(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, h.DatabaseURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := postgres.NewMigratorFS(db, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	newer := m.Latest()
	m.Close()
	db.Close()

	s := h.Start(t)
	s.WaitLog(t, "the database schema is newer than this binary")
	if v := h.QueryInt(t, `SELECT version FROM schema_migrations WHERE NOT dirty`); v != int64(newer) {
		t.Fatalf("schema version %d after the older binary started, want %d, clean", v, newer)
	}
	token := h.CreateToken(t, "ci", "upload")
	ipa := writeFile(t, t.TempDir(), "Harbor.ipa", appletest.BuildIPA(appletest.IPAOptions{
		AppName: "Harbor", BundleID: "com.example.rollback", Version: "1.0", Build: "7"}))
	res := h.Run(t, "upload", ipa, "--url", s.URL, "--token", token, "--progress", "none")
	if res.ExitCode != 0 {
		t.Fatalf("upload on the newer schema:\n%s", res)
	}
	slug, id := releaseURLParts(t, s, res.LastLine())
	if rel := latestRelease(t, s, slug); rel.BuildVersion != "7" {
		t.Fatalf("latest on the newer schema: %+v", rel)
	}
	if r := s.Get(t, fmt.Sprintf("/download/releases/%d", id)); r.Status != 302 {
		t.Fatalf("download on the newer schema: %d %s", r.Status, r.Body)
	}
	if out := h.MustRun(t, "migrate", "version").LastLine(); !strings.Contains(out, fmt.Sprintf("schema version %d (newer than this binary's", newer)) {
		t.Errorf("migrate version: %q", out)
	}
	if res := h.Run(t, "migrate", "down", "--yes"); res.ExitCode != 1 || !strings.Contains(res.Stderr, "binary of the release") {
		t.Errorf("migrate down on a newer schema:\n%s", res)
	}
}

// nextReleaseMigrations is the embedded migrations plus what a next release could add.
func nextReleaseMigrations(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{
		"000900_next.up.sql": {Data: []byte(`ALTER TABLE releases ADD COLUMN notarized boolean;
			CREATE TABLE release_notes (release_id bigint PRIMARY KEY REFERENCES releases (id) ON DELETE CASCADE, body text NOT NULL DEFAULT '');
			CREATE INDEX releases_created_idx ON releases (created_at);`)},
		"000900_next.down.sql": {Data: []byte(`DROP INDEX releases_created_idx; DROP TABLE release_notes; ALTER TABLE releases DROP COLUMN notarized;`)},
	}
	entries, err := migrations.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			b, _ := migrations.FS.ReadFile(e.Name())
			fsys[e.Name()] = &fstest.MapFile{Data: b}
		}
	}
	return fsys
}

// TestReadOnlyDatabaseAnswers503 is a Postgres failover as a replica sees it: its connections end
// (the old primary shuts down) and new ones reach a server that refuses writes (SQLSTATE 25006:
// here default_transaction_read_only, as on a standby). Writes answer 503 with Retry-After, reads
// keep answering, and when a writable server is back, writes work again without a restart.
func TestReadOnlyDatabaseAnswers503(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	admin := h.CreateToken(t, "ops", "admin")
	if r := appsPost(t, s, admin); r.Status != 201 {
		t.Fatalf("create an app: %d %s", r.Status, r.Body)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, h.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	failover := func(readOnly bool) {
		t.Helper()
		q := `ALTER DATABASE ` + conn.Config().Database + ` RESET default_transaction_read_only`
		if readOnly {
			q = `ALTER DATABASE ` + conn.Config().Database + ` SET default_transaction_read_only = on`
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
			t.Fatal(err)
		}
	}

	failover(true)
	for i := range 3 {
		r := appsPost(t, s, admin)
		if r.Status != 503 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("write %d on a read-only database: %d (Retry-After %q) %s, want 503 with Retry-After", i, r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	}
	get := func() int {
		return s.Do(t, "GET", "/api/apps", nil, "Authorization", "Token "+admin).Status
	}
	testkit.Eventually(t, e2e.WaitTimeout, "reads on the read-only database", func() bool { return get() == 200 })

	failover(false)
	testkit.EventuallyOK(t, 30*time.Second, "a write after the failover", func() error {
		switch r := appsPost(t, s, admin); r.Status {
		case 201:
			return nil
		case 503:
			return fmt.Errorf("still %d %s", r.Status, r.Body)
		default:
			t.Fatalf("write after the failover: %d %s", r.Status, r.Body)
			return nil
		}
	})
}

// TestSecretRotationWindow rotates SLIPWAY_SECRET as docs/operations.md says, with replicas of each
// step side by side: signed download URLs made by any of them are accepted by the others while
// both keys are listed, and an old-key URL is refused once the old key is removed.
func TestSecretRotationWindow(t *testing.T) {
	t.Parallel()
	const oldKey, newKey = e2e.Secret, "rotated-secret-rotated-secret-rotated-secret-42"
	h := e2e.New(t, e2e.Options{})
	before := h.Start(t)                                                              // SLIPWAY_SECRET=old
	phase1 := h.Start(t, "SLIPWAY_SECRET_PREVIOUS="+newKey)                           // signs with old, accepts new
	phase2 := h.Start(t, "SLIPWAY_SECRET="+newKey, "SLIPWAY_SECRET_PREVIOUS="+oldKey) // signs with new, accepts old
	after := h.Start(t, "SLIPWAY_SECRET="+newKey)                                     // old key removed
	token := h.CreateToken(t, "ci", "upload")
	ipa := writeFile(t, t.TempDir(), "Harbor.ipa", appletest.BuildIPA(appletest.IPAOptions{
		AppName: "Harbor", BundleID: "com.example.rotate", Version: "1.0", Build: "1"}))
	res := h.Run(t, "upload", ipa, "--url", before.URL, "--token", token, "--progress", "none")
	if res.ExitCode != 0 {
		t.Fatalf("upload:\n%s", res)
	}
	_, id := releaseURLParts(t, before, res.LastLine())

	// signedURL asks s for the release's download and returns the signed object URL's path.
	signedURL := func(s *e2e.Server) string {
		t.Helper()
		r := s.Get(t, fmt.Sprintf("/download/releases/%d", id))
		u, err := url.Parse(r.Header.Get("Location"))
		if r.Status != 302 || err != nil || !strings.HasPrefix(u.Path, "/objects/") || u.Query().Get("t") == "" {
			t.Fatalf("download from %s: %d, Location %q", s.URL, r.Status, r.Header.Get("Location"))
		}
		return u.RequestURI()
	}
	servers := map[string]*e2e.Server{"before": before, "phase 1": phase1, "phase 2": phase2, "after": after}
	for signer, accepted := range map[string][]string{
		"before":  {"before", "phase 1", "phase 2"},
		"phase 1": {"before", "phase 1", "phase 2"},
		"phase 2": {"phase 1", "phase 2", "after"},
		"after":   {"phase 1", "phase 2", "after"},
	} {
		u := signedURL(servers[signer])
		for name, s := range servers {
			want := slices.Contains(accepted, name)
			got := s.Get(t, u).Status == 200
			if got != want {
				t.Errorf("a URL signed by the %q replica: accepted by %q = %v, want %v", signer, name, got, want)
			}
		}
	}
}
