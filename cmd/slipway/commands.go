package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/slipwayhq/slipway/pkg/store"
)

func migrateUp(db *store.DB) error {
	m, err := store.NewMigrator(db)
	if err != nil {
		return err
	}
	defer m.Close()
	return m.Up()
}

// migrateCmd: slipway migrate up|down|version.
func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return usageError("want one of: up, down, version")
	}
	db, _, err := openDB(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer db.Close()
	m, err := store.NewMigrator(db)
	if err != nil {
		return err
	}
	defer m.Close()
	switch args[0] {
	case "up":
		err = m.Up()
	case "down":
		err = m.Down()
	case "version":
	default:
		return usageError(fmt.Sprintf("unknown migrate action %q; want up, down or version", args[0]))
	}
	if err != nil {
		return err
	}
	v, dirty, err := m.Version()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schema version %d", v)
	if dirty {
		fmt.Fprint(stdout, " (dirty: a migration failed half-way; fix it, then force the version)")
	}
	fmt.Fprintln(stdout)
	return nil
}

// tokenCmd: slipway token create|list|revoke.
func tokenCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("want one of: create, list, revoke")
	}
	switch args[0] {
	case "create":
		fs := flag.NewFlagSet("token create", flag.ContinueOnError)
		fs.SetOutput(stderr)
		name := fs.String("name", "", "a name for the token (unique among active tokens)")
		scope := fs.String("scope", store.ScopeUpload, "upload (apps and debug files) or admin (everything)")
		if err := fs.Parse(args[1:]); err != nil {
			return usageError(err.Error())
		}
		if *name == "" {
			return usageError("--name is required")
		}
		if *scope != store.ScopeUpload && *scope != store.ScopeAdmin {
			return usageError("--scope must be upload or admin")
		}
		db, err := openMigrated(ctx, getenv, stderr)
		if err != nil {
			return err
		}
		defer db.Close()
		secret, tok, err := db.CreateToken(ctx, *name, *scope)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Created token %q with scope %s. It is shown only now; store it safely:\n", tok.Name, tok.Scope)
		fmt.Fprintln(stdout, secret)
		return nil
	case "list":
		db, err := openMigrated(ctx, getenv, stderr)
		if err != nil {
			return err
		}
		defer db.Close()
		toks, err := db.ListTokens(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSCOPE\tCREATED\tLAST USED\tSTATE")
		for _, t := range toks {
			state, used := "active", "never"
			if t.RevokedAt != nil {
				state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
			}
			if t.LastUsedAt != nil {
				used = t.LastUsedAt.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Scope, t.CreatedAt.UTC().Format(time.RFC3339), used, state)
		}
		return tw.Flush()
	case "revoke":
		if len(args) != 2 {
			return usageError("usage: slipway token revoke NAME")
		}
		db, err := openMigrated(ctx, getenv, stderr)
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.RevokeToken(ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Revoked token %q.\n", args[1])
		return nil
	}
	return usageError(fmt.Sprintf("unknown token action %q; want create, list or revoke", args[0]))
}

// openMigrated opens the database and applies migrations, so token commands work on a fresh one.
func openMigrated(ctx context.Context, getenv func(string) string, stderr io.Writer) (*store.DB, error) {
	db, _, err := openDB(ctx, getenv, stderr)
	if err != nil {
		return nil, err
	}
	if err := migrateUp(db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// gcCmd: slipway gc runs the storage collector once.
func gcCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grace := fs.Duration("grace", -1, "collect pending uploads older than this (default: SLIPWAY_GC_GRACE)")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	a, err := openApp(ctx, getenv, stderr, false)
	if err != nil {
		return err
	}
	defer a.close()
	g := a.cfg.GCGrace
	if *grace >= 0 {
		g = *grace
	}
	res, err := a.svc.CollectGarbage(ctx, g)
	fmt.Fprintf(stdout, "deleted %d objects, %d failed\n", res.Deleted, res.Failed)
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%d deletions failed; they will be retried", res.Failed)
	}
	return err
}
