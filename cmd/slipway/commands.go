package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/store"
	"github.com/slipwayhq/slipway/pkg/uploader"
)

// tokenCmd: slipway token create|list|revoke, against the database (on the server, for the
// first admin token) or, with --url, against a running server's API with an admin token.
func tokenCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError("want one of: create, list, revoke")
	}
	action := args[0]
	fs := newFlagSet("token "+action, stderr)
	name := fs.String("name", "", "a name for the token (unique among active tokens)")
	scope := fs.String("scope", distribution.ScopeUpload, "upload (upload builds and debug files, edit own releases, sync devices) or admin (everything)")
	serverURL := fs.String("url", "", "manage tokens of the server at this URL over its API (needs an admin token) instead of in the database")
	adminToken := fs.String("token", "", "with --url: an admin token (default $SLIPWAY_TOKEN)")
	rest := args[1:]
	if action == "revoke" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		*name, rest = rest[0], rest[1:] // revoke NAME [flags]: the name may come before the flags
	}
	if err := parseFlags(fs, rest, stdout); err != nil {
		return err
	}
	if action == "revoke" && *name == "" && fs.NArg() == 1 {
		*name = fs.Arg(0)
	} else if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if action == "revoke" && *name == "" {
		return usageError("usage: slipway token revoke NAME [--url URL --token ADMIN_TOKEN]")
	}
	var tokens tokenManager
	if *serverURL != "" {
		if *adminToken == "" {
			*adminToken = getenv("SLIPWAY_TOKEN")
		}
		if *adminToken == "" {
			return usageError("--url needs an admin token: --token or SLIPWAY_TOKEN")
		}
		tokens = remoteTokens{&uploader.Client{BaseURL: *serverURL, Token: *adminToken, UserAgent: "slipway-cli/" + buildinfo.Version}}
	} else {
		db, err := openMigrated(ctx, getenv, stderr)
		if err != nil {
			return err
		}
		defer db.Close()
		tokens = localTokens{&access.Tokens{Store: db}}
	}
	switch action {
	case "create":
		if *name == "" {
			return usageError("--name is required")
		}
		secret, tok, err := tokens.create(ctx, *name, *scope)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Created token %q with scope %s. It is shown only now; store it safely:\n", tok.name, tok.scope)
		fmt.Fprintln(stdout, secret)
		return nil
	case "list":
		toks, err := tokens.list(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tCREATED\tLAST USED\tSTATE")
		for _, t := range toks {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.id, t.name, t.scope, t.created, t.lastUsed, t.state)
		}
		return tw.Flush()
	case "revoke":
		if err := tokens.revoke(ctx, *name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Revoked token %q.\n", *name)
		return nil
	}
	return usageError(fmt.Sprintf("unknown token action %q; want create, list or revoke", action))
}

// tokenManager is where token commands act: the database, or a server's API.
type tokenManager interface {
	create(ctx context.Context, name, scope string) (secret string, t tokenRow, err error)
	list(ctx context.Context) ([]tokenRow, error)
	revoke(ctx context.Context, name string) error
}

// tokenRow is a token as `token list` prints it.
type tokenRow struct {
	id                                    int64
	name, scope, created, lastUsed, state string
}

type localTokens struct{ tokens *access.Tokens }

func localRow(t *distribution.Token) tokenRow {
	r := tokenRow{id: t.ID, name: t.Name, scope: t.Scope, created: t.CreatedAt.UTC().Format(time.RFC3339), lastUsed: "never", state: "active"}
	if t.LastUsedAt != nil {
		r.lastUsed = t.LastUsedAt.UTC().Format(time.RFC3339)
	}
	if t.RevokedAt != nil {
		r.state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
	}
	return r
}

func (l localTokens) create(ctx context.Context, name, scope string) (string, tokenRow, error) {
	secret, t, err := l.tokens.CreateToken(ctx, name, scope)
	if err != nil {
		return "", tokenRow{}, err
	}
	return secret, localRow(t), nil
}

func (l localTokens) list(ctx context.Context) ([]tokenRow, error) {
	toks, err := l.tokens.Tokens(ctx)
	rows := make([]tokenRow, len(toks))
	for i := range toks {
		rows[i] = localRow(&toks[i])
	}
	return rows, err
}

func (l localTokens) revoke(ctx context.Context, name string) error {
	return l.tokens.RevokeToken(ctx, name)
}

type remoteTokens struct{ c *uploader.Client }

func remoteRow(t *uploader.Token) tokenRow {
	r := tokenRow{id: t.ID, name: t.Name, scope: t.Scope, created: t.CreatedAt, lastUsed: "never", state: "active"}
	if t.LastUsedAt != nil {
		r.lastUsed = *t.LastUsedAt
	}
	if t.RevokedAt != nil {
		r.state = "revoked " + *t.RevokedAt
	}
	return r
}

func (r remoteTokens) create(ctx context.Context, name, scope string) (string, tokenRow, error) {
	t, err := r.c.CreateToken(ctx, name, scope)
	if err != nil {
		return "", tokenRow{}, err
	}
	return t.Secret, remoteRow(t), nil
}

func (r remoteTokens) list(ctx context.Context) ([]tokenRow, error) {
	toks, err := r.c.ListTokens(ctx)
	rows := make([]tokenRow, len(toks))
	for i := range toks {
		rows[i] = remoteRow(&toks[i])
	}
	return rows, err
}

// revoke finds the active token with this name and revokes it by id.
func (r remoteTokens) revoke(ctx context.Context, name string) error {
	toks, err := r.c.ListTokens(ctx)
	if err != nil {
		return err
	}
	for _, t := range toks {
		if t.Name == name && t.RevokedAt == nil {
			return r.c.RevokeToken(ctx, t.ID)
		}
	}
	return fmt.Errorf("no active token named %q", name)
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
	fs := newFlagSet("gc", stderr)
	grace := fs.Duration("grace", -1, "collect pending uploads older than this (default: SLIPWAY_GC_GRACE)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
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
	res, err := a.svc.Collector.CollectGarbage(ctx, g)
	fmt.Fprintf(stdout, "deleted %d objects, %d failed\n", res.Deleted, res.Failed)
	if err == nil && res.Failed > 0 {
		err = fmt.Errorf("%d deletions failed; they will be retried", res.Failed)
	}
	return err
}
