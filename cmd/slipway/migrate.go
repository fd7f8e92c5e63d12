package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/postgres"
)

// newMigrator is the migrator with the configuration's lock timeout and retry budget.
func newMigrator(db *postgres.DB, cfg *config.Config) (*postgres.Migrator, error) {
	return postgres.NewMigratorWith(db, postgres.MigrateOptions{LockTimeout: cfg.MigrateLockTimeout, Timeout: cfg.MigrateTimeout})
}

// migrateCmd: slipway migrate up | down [N] [--yes] | force VERSION | version. See
// docs/operations.md, "A failed migration" and "Rolling back a release".
func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("want one of: up, down, force, version")
	}
	action, rest := args[0], args[1:]
	steps, yes, force := 0, false, uint(0)
	switch action {
	case "up", "version":
		if len(rest) != 0 {
			return usageError(fmt.Sprintf("migrate %s takes no arguments", action))
		}
	case "down":
		fs := newFlagSet("migrate down [N]", stderr)
		y := fs.Bool("yes", false, "revert them; without it, down only lists the migrations it would revert and exits with status 2")
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			rest = append(append([]string{}, rest[1:]...), rest[0]) // down N --yes: the count may come before the flags
		}
		if err := parseFlags(fs, rest, stdout); err != nil {
			return err
		}
		yes, steps = *y, 1
		switch fs.NArg() {
		case 0:
		case 1:
			n, err := strconv.Atoi(fs.Arg(0))
			if err != nil || n < 1 {
				return usageError(fmt.Sprintf("migrate down: N must be a positive number of migrations, got %q", fs.Arg(0)))
			}
			steps = n
		default:
			return usageError("usage: slipway migrate down [N] [--yes]")
		}
	case "force":
		if len(rest) != 1 {
			return usageError("usage: slipway migrate force VERSION (0: no migration applied)")
		}
		v, err := strconv.ParseUint(rest[0], 10, 32)
		if err != nil {
			return usageError(fmt.Sprintf("migrate force: VERSION must be a migration number, got %q", rest[0]))
		}
		force = uint(v)
	default:
		return usageError(fmt.Sprintf("unknown migrate action %q; want up, down, force or version", action))
	}

	// Only `migrate up` may create a missing database, and only with SLIPWAY_CREATE_DATABASE.
	db, cfg, err := openDB(ctx, getenv, stderr, action == "up")
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := newMigrator(db, cfg)
	if err != nil {
		return err
	}
	defer m.Close()
	switch action {
	case "up":
		err = m.UpContext(ctx)
	case "down":
		var plan []postgres.Migration
		if plan, err = m.DownPlan(steps); err != nil {
			break
		}
		if !yes {
			fmt.Fprintln(stdout, "migrate down would revert, newest first (dropping what each added, with its data):")
			for _, mig := range plan {
				fmt.Fprintf(stdout, "  %s\n", mig)
			}
			return usageError("nothing reverted: add --yes to revert these migrations")
		}
		for _, mig := range plan {
			if err = m.Down(1); err != nil {
				break
			}
			fmt.Fprintf(stdout, "reverted %s\n", mig)
		}
	case "force":
		before, dirty, verr := m.Version()
		if verr != nil {
			return verr
		}
		if err = m.Force(force); err == nil {
			state := ""
			if dirty {
				state = ", dirty"
			}
			fmt.Fprintf(stdout, "forced version %d (was %d%s); nothing was run\n", force, before, state)
		}
	}
	if err != nil {
		return err
	}
	v, dirty, err := m.Version()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema version %d", v)
	switch {
	case dirty:
		// A dirty schema is not a state to report and move on from: every other command and
		// serve refuse it, so scripts (and the chart's hooks) must see a failure.
		err := m.Check()
		fmt.Fprintf(stdout, " (dirty: %v)\n", err)
		return err
	case v > m.Latest():
		fmt.Fprintf(stdout, " (newer than this binary's %d: served as it is, not migrated)", m.Latest())
	case v < m.Latest():
		fmt.Fprintf(stdout, " (this binary's migrations go to %d: `slipway migrate up` applies them)", m.Latest())
	}
	fmt.Fprintln(stdout)
	return nil
}
