// Package testenv gives tests real services: a fresh Postgres database per test, cloned from a
// migrated template, and a fresh S3 bucket on a real S3 server. `make test` (test/with-services.sh)
// starts what is needed and sets the SLIPWAY_TEST_* variables read here.
package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testkit"
)

// requireServices reports whether a missing service must fail the test (make test, CI) rather
// than skip it (a plain `go test` on a laptop).
func requireServices() bool { return os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" }

func missing(tb testing.TB, what string) {
	tb.Helper()
	msg := what + " is not configured: run `make test`, which starts Postgres and MinIO for the tests " +
		"(testcontainers-go would need a Docker engine, and this machine has none)"
	if requireServices() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

var template struct {
	once sync.Once
	name string
	err  error
}

// DatabaseURL returns the URL of a new, migrated, empty database, dropped when the test ends.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("SLIPWAY_TEST_DATABASE_URL")
	if base == "" {
		missing(tb, "SLIPWAY_TEST_DATABASE_URL")
	}
	ctx := context.Background()
	template.once.Do(func() { template.name, template.err = ensureTemplate(ctx, base) })
	if template.err != nil {
		tb.Fatalf("preparing the template database: %v", template.err)
	}
	name := "slipway_test_" + testkit.RandomHex(6)
	admin := connect(tb, base)
	defer admin.Close(ctx)
	// A template being copied must have no other connection; retry briefly if a parallel copy is
	// still starting.
	var err error
	for i := 0; i < 50; i++ {
		_, err = admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template.name))
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		tb.Fatalf("creating test database: %v", err)
	}
	tb.Cleanup(func() {
		c := connect(tb, base)
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("dropping test database %s: %v", name, err)
		}
	})
	return withDatabase(base, name)
}

// DB returns an open store on a fresh database (see DatabaseURL), closed when the test ends.
func DB(tb testing.TB) *postgres.DB {
	tb.Helper()
	db, err := postgres.Open(context.Background(), DatabaseURL(tb), postgres.Options{MaxConns: 20})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	return db
}

// templateComment starts the comment of a template database; the time it was made follows.
const templateComment = "slipway test template, made "

// ensureTemplate creates (once per schema version, shared by parallel test processes through an
// advisory lock) a database holding the migrated schema, named after a hash of the migrations.
func ensureTemplate(ctx context.Context, base string) (string, error) {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := migrations.FS.ReadFile(p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	name := "slipway_tmpl_" + hex.EncodeToString(h.Sum(nil))[:12]

	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(74631)"); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, "SELECT pg_advisory_unlock(74631)") //nolint:errcheck
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Templates of other schemas may still be in use: another checkout's test run (a branch, a
	// worktree, an older commit's soak) on the same Postgres clones from its own template, and
	// dropping it under that run failed every one of its tests at once. Only templates made over
	// a day ago are dropped (their comment says when).
	rows, _ := conn.Query(ctx, `SELECT d.datname FROM pg_database d JOIN pg_shdescription s ON s.objoid = d.oid
		AND s.classoid = 'pg_database'::regclass
		WHERE d.datname LIKE 'slipway_tmpl_%' AND s.description LIKE $1 || '%'
		AND substr(s.description, length($1) + 1)::timestamptz < now() - interval '1 day'`, templateComment)
	old, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, o := range old {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+o+" WITH (FORCE)")
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%s%s'", name, templateComment, time.Now().UTC().Format(time.RFC3339))); err != nil {
		return "", err
	}
	db, err := postgres.Open(ctx, withDatabase(base, name), postgres.Options{})
	if err != nil {
		return "", err
	}
	defer db.Close()
	m, err := postgres.NewMigrator(db)
	if err != nil {
		return "", err
	}
	defer m.Close()
	if err := m.Up(); err != nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return "", err
	}
	return name, nil
}

func connect(tb testing.TB, base string) *pgx.Conn {
	tb.Helper()
	c, err := pgx.Connect(context.Background(), base)
	if err != nil {
		tb.Fatalf("connecting to the test Postgres: %v", err)
	}
	return c
}

func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + name
	return u.String()
}
