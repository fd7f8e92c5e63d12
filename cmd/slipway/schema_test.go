package main

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

// envOf returns a getenv with these variables (and nothing else).
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// withDatabaseName returns rawURL naming another database.
func withDatabaseName(t *testing.T, rawURL, name string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// databaseExists asks the server (through the URL's own database) whether name exists.
func databaseExists(t *testing.T, serverURL, name string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var ok bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

// A misspelt database name: every command that only uses the schema exits non-zero naming the
// database, and none creates it; `migrate up` creates it only when SLIPWAY_CREATE_DATABASE says so.
func TestCommandsCreateNoDatabase(t *testing.T) {
	ctx := context.Background()
	existing := testenv.DatabaseURL(t)
	name := "slipway_missing_" + strings.ToLower(t.Name()[len(t.Name())-8:])
	missing := withDatabaseName(t, existing, name)
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, existing)
		if err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	env := map[string]string{"SLIPWAY_DATABASE_URL": missing, "SLIPWAY_STORAGE_URL": "file://" + t.TempDir(), "SLIPWAY_MIGRATE_ON_START": "false"}
	for _, args := range [][]string{
		{"token", "list"},
		{"token", "create", "--name", "ci"},
		{"gc"},
		{"gc", "--reconcile", "--dry-run"},
		{"admin", "login-link"},
		{"insights", "backfill"},
		{"retention", "plan"},
		{"migrate", "version"},
		{"migrate", "up"}, // without SLIPWAY_CREATE_DATABASE
	} {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, envOf(env), &stdout, &stderr)
		if code == 0 {
			t.Errorf("slipway %s on a missing database exited 0\n%s%s", strings.Join(args, " "), &stdout, &stderr)
		}
		if args[0] != "migrate" && !strings.Contains(stderr.String(), `database "`+name+`" does not exist`) {
			t.Errorf("slipway %s: %q, want the missing database named", strings.Join(args, " "), stderr.String())
		}
		if databaseExists(t, existing, name) {
			t.Fatalf("slipway %s created the database", strings.Join(args, " "))
		}
	}

	// Asked to, `migrate up` creates it and migrates it.
	env["SLIPWAY_CREATE_DATABASE"] = "true"
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"migrate", "up"}, envOf(env), &stdout, &stderr); code != 0 {
		t.Fatalf("migrate up with SLIPWAY_CREATE_DATABASE: exit %d\n%s%s", code, &stdout, &stderr)
	}
	if !databaseExists(t, existing, name) {
		t.Fatal("migrate up with SLIPWAY_CREATE_DATABASE did not create the database")
	}
	// Other commands still create nothing, even with it set: token create works on it now.
	stdout.Reset()
	if code := run(ctx, []string{"token", "list"}, envOf(env), &stdout, &stderr); code != 0 {
		t.Fatalf("token list on the migrated database: exit %d\n%s", code, &stderr)
	}
}

// A command that only uses the schema refuses one it does not serve (empty, behind the binary,
// dirty) and changes nothing: no migration, not even golang-migrate's bookkeeping table.
func TestCommandsMigrateNothing(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	db, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Down(len(m.Migrations())); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if _, err := db.Pool.Exec(ctx, `DROP TABLE schema_migrations, schema_backfills`); err != nil {
		t.Fatal(err)
	}
	tables := func() int {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	env := map[string]string{"SLIPWAY_DATABASE_URL": dbURL, "SLIPWAY_STORAGE_URL": "file://" + t.TempDir(), "SLIPWAY_MIGRATE_ON_START": "true"}
	commands := [][]string{{"token", "list"}, {"token", "create", "--name", "ci"}, {"token", "revoke", "ci"}, {"gc"},
		{"gc", "--reconcile", "--dry-run"}, {"admin", "login-link"}, {"insights", "backfill"}, {"retention", "plan"}}
	refuse := func(want string) {
		t.Helper()
		for _, args := range commands {
			var stdout, stderr bytes.Buffer
			if code := run(ctx, args, envOf(env), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), want) {
				t.Errorf("slipway %s: exit %d %q, want 1 and %q", strings.Join(args, " "), code, stderr.String(), want)
			}
		}
	}
	refuse("has no Slipway schema")
	if n := tables(); n != 0 {
		t.Fatalf("the commands created %d tables in an empty database", n)
	}

	// One migration behind.
	m, err = postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// (The version before the newest, which need not be latest-1: numbers may have gaps.)
	migs := m.Migrations()
	before := migs[len(migs)-2].Version
	if err := m.UpTo(before); err != nil {
		t.Fatal(err)
	}
	refuse("run `slipway migrate up` first")
	if v, dirty, err := postgres.ReadVersion(ctx, db); err != nil || dirty || v != before {
		t.Fatalf("version %d dirty=%v err=%v: a command migrated", v, dirty, err)
	}
	// Dirty.
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE schema_migrations SET dirty = true`); err != nil {
		t.Fatal(err)
	}
	refuse("dirty")
	if _, err := db.Pool.Exec(ctx, `UPDATE schema_migrations SET dirty = false`); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"token", "list"}, envOf(env), &stdout, &stderr); code != 0 {
		t.Fatalf("token list on the current schema: exit %d %s", code, &stderr)
	}
}
