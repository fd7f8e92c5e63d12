package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

// TestMigrateCommandsRepairAndRollBack is the runbook of docs/operations.md ("A failed migration",
// "Rolling back a release") with the CLI: down lists before it reverts, a migration interrupted
// half-way leaves a dirty flag that `migrate up` (and so serve) refuses with the command that
// repairs it, and `migrate force` then `migrate up` repair it.
func TestMigrateCommandsRepairAndRollBack(t *testing.T) {
	url := testenv.DatabaseURL(t)
	getenv := func(k string) string {
		if k == "SLIPWAY_DATABASE_URL" {
			return url
		}
		return ""
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	all := m.Migrations()
	m.Close()
	newest, prev := all[len(all)-1], all[len(all)-2]

	migrate := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(ctx, append([]string{"migrate"}, args...), getenv, &stdout, &stderr); code != wantCode {
			t.Fatalf("migrate %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantCode, &stdout, &stderr)
		}
		return stdout.String(), stderr.String()
	}
	version := func(v uint) string { return fmt.Sprintf("schema version %d", v) }

	if out, _ := migrate(0, "version"); strings.TrimSpace(out) != version(newest.Version) {
		t.Fatalf("version: %q", out)
	}
	// Without --yes, down only lists what it would revert.
	out, errOut := migrate(2, "down")
	if !strings.Contains(out, newest.String()) || !strings.Contains(errOut, "--yes") {
		t.Fatalf("down without --yes: %q %q", out, errOut)
	}
	if out, _ := migrate(0, "version"); strings.TrimSpace(out) != version(newest.Version) {
		t.Fatalf("down without --yes changed the schema: %q", out)
	}
	if out, _ = migrate(0, "down", "--yes"); !strings.Contains(out, "reverted "+newest.String()) || !strings.Contains(out, version(prev.Version)+" (") {
		t.Fatalf("down --yes: %q", out)
	}
	migrate(2, "down", "zero")
	migrate(1, "down", fmt.Sprint(len(all)), "--yes") // more than are applied: refused, nothing done

	// Killed in the middle of the newest migration: its version is marked dirty and its
	// transaction rolled back.
	if _, err := db.Pool.Exec(ctx, `UPDATE schema_migrations SET version = $1, dirty = true`, newest.Version); err != nil {
		t.Fatal(err)
	}
	repair := fmt.Sprintf("slipway migrate force %d", prev.Version)
	if _, errOut := migrate(1, "up"); !strings.Contains(errOut, "dirty") || !strings.Contains(errOut, repair) {
		t.Fatalf("up on a dirty schema: %q, want the repair %q", errOut, repair)
	}
	// version reports it, and fails: a script (or a hook) must not read a dirty schema as fine.
	if out, _ := migrate(1, "version"); !strings.Contains(out, "dirty") || !strings.Contains(out, repair) {
		t.Fatalf("version on a dirty schema: %q", out)
	}
	migrate(2, "force", "seven")
	migrate(1, "force", fmt.Sprint(newest.Version+100))
	if out, _ := migrate(0, "force", fmt.Sprint(prev.Version)); !strings.Contains(out, fmt.Sprintf("forced version %d (was %d, dirty)", prev.Version, newest.Version)) {
		t.Fatalf("force: %q", out)
	}
	if out, _ := migrate(0, "up"); strings.TrimSpace(out) != version(newest.Version) {
		t.Fatalf("up after the repair: %q", out)
	}
	// Two releases back, then forward again.
	if out, _ := migrate(0, "down", "2", "--yes"); !strings.Contains(out, version(all[len(all)-3].Version)) {
		t.Fatalf("down 2: %q", out)
	}
	if out, _ := migrate(0, "up"); strings.TrimSpace(out) != version(newest.Version) {
		t.Fatalf("up: %q", out)
	}
}
