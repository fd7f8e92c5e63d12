package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slipwayhq/slipway/pkg/buildinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/lifecycle"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/postgres"
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
	expires := fs.String("expires", "", "create: the token stops working after this long (90d, 36h) or at this date (2027-01-31, RFC 3339); default: never")
	var limits tokenLimits
	fs.Func("app", "create: limit the token to this app, by id or name (repeatable, or comma-separated); default: every app", func(v string) error {
		limits.apps = append(limits.apps, strings.Split(v, ",")...)
		return nil
	})
	fs.Func("ability", "create: limit the token to these abilities, comma-separated: "+strings.Join(distribution.Abilities, ", ")+" (repeatable); default: all its scope allows", func(v string) error {
		limits.abilities = append(limits.abilities, strings.Split(v, ",")...)
		return nil
	})
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
	if action != "create" && (len(limits.apps) > 0 || len(limits.abilities) > 0) {
		return usageError("--app and --ability go with token create")
	}
	var until *time.Time
	if *expires != "" {
		if action != "create" {
			return usageError("--expires goes with token create")
		}
		u, err := parseExpiry(*expires, time.Now())
		if err != nil {
			return usageError("--expires: " + err.Error())
		}
		if *serverURL != "" {
			return usageError("--expires is for tokens made on the server (without --url): the API makes tokens that do not expire")
		}
		until = &u
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
		db, err := openSchema(ctx, getenv, stderr)
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
		secret, tok, err := tokens.create(ctx, *name, *scope, until, limits)
		if err != nil {
			return err
		}
		var limited string
		if tok.apps != "any" {
			limited += ", limited to apps " + tok.apps
		}
		if tok.abilities != "all" {
			limited += ", limited to " + tok.abilities
		}
		if until != nil {
			fmt.Fprintf(stdout, "Created token %q with scope %s%s, expiring %s. It is shown only now; store it safely:\n", tok.name, tok.scope, limited, tok.expires)
		} else {
			fmt.Fprintf(stdout, "Created token %q with scope %s%s. It is shown only now; store it safely:\n", tok.name, tok.scope, limited)
		}
		fmt.Fprintln(stdout, secret)
		return nil
	case "list":
		toks, err := tokens.list(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPE\tAPPS\tABILITIES\tCREATED\tLAST USED\tEXPIRES\tSTATE")
		for _, t := range toks {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.id, t.name, t.scope, t.apps, t.abilities, t.created, t.lastUsed, t.expires, t.state)
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
	create(ctx context.Context, name, scope string, expires *time.Time, limits tokenLimits) (secret string, t tokenRow, err error)
	list(ctx context.Context) ([]tokenRow, error)
	revoke(ctx context.Context, name string) error
}

// tokenLimits are what `token create --app --ability` limits a token to (apps by id or name).
type tokenLimits struct {
	apps, abilities []string
}

// tokenRow is a token as `token list` prints it: apps "any" and abilities "all" when the token
// has no such limit, comma-separated lists otherwise.
type tokenRow struct {
	id                                                              int64
	name, scope, apps, abilities, created, lastUsed, expires, state string
}

// limitsText renders a token's limits for tokenRow.
func limitsText(apps []int64, abilities []string) (string, string) {
	a, b := "any", "all"
	if len(apps) > 0 {
		ids := make([]string, len(apps))
		for i, id := range apps {
			ids[i] = strconv.FormatInt(id, 10)
		}
		a = strings.Join(ids, ",")
	}
	if len(abilities) > 0 {
		b = strings.Join(abilities, ",")
	}
	return a, b
}

type localTokens struct{ tokens *access.Tokens }

func localRow(t *distribution.Token) tokenRow {
	r := tokenRow{id: t.ID, name: t.Name, scope: t.Scope, created: t.CreatedAt.UTC().Format(time.RFC3339), lastUsed: "never", expires: "never", state: "active"}
	r.apps, r.abilities = limitsText(t.Apps, t.Abilities)
	if t.ExpiresAt != nil {
		r.expires = t.ExpiresAt.UTC().Format(time.RFC3339)
		if !t.ExpiresAt.After(time.Now()) {
			r.state = "expired"
		}
	}
	if t.LastUsedAt != nil {
		r.lastUsed = t.LastUsedAt.UTC().Format(time.RFC3339)
	}
	if t.RevokedAt != nil {
		r.state = "revoked " + t.RevokedAt.UTC().Format(time.RFC3339)
	}
	return r
}

func (l localTokens) create(ctx context.Context, name, scope string, expires *time.Time, limits tokenLimits) (string, tokenRow, error) {
	secret, t, err := l.tokens.MakeToken(ctx, access.TokenRequest{Name: name, Scope: scope, Expires: expires,
		Apps: limits.apps, Abilities: limits.abilities})
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
	r := tokenRow{id: t.ID, name: t.Name, scope: t.Scope, created: t.CreatedAt, lastUsed: "never", expires: "never", state: "active"}
	r.apps, r.abilities = limitsText(t.AppIDs, t.Abilities)
	if t.LastUsedAt != nil {
		r.lastUsed = *t.LastUsedAt
	}
	if t.RevokedAt != nil {
		r.state = "revoked " + *t.RevokedAt
	}
	return r
}

func (r remoteTokens) create(ctx context.Context, name, scope string, _ *time.Time, limits tokenLimits) (string, tokenRow, error) {
	t, err := r.c.CreateLimitedToken(ctx, name, scope, limits.apps, limits.abilities)
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

// openSchema opens the database for the token commands, refusing one whose schema this binary
// does not serve (postgres.CheckSchema): they never migrate nor create it.
func openSchema(ctx context.Context, getenv func(string) string, stderr io.Writer) (*postgres.DB, error) {
	db, _, err := openDB(ctx, getenv, stderr, false)
	if err != nil {
		return nil, err
	}
	if err := postgres.CheckSchema(ctx, db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// gcCmd: slipway gc runs the storage collector once; with --reconcile, it lists the bucket and
// deletes the objects no row names instead (after a database restore).
func gcCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlagSet("gc", stderr)
	grace := fs.Duration("grace", -1, "collect pending uploads older than this (default: SLIPWAY_GC_GRACE)")
	reconcile := fs.Bool("reconcile", false, "list the bucket and delete the objects no row names (after restoring an older database); report rows whose object is missing")
	dryRun := fs.Bool("dry-run", false, "with --reconcile: print what would be deleted, delete nothing")
	minAge := fs.Duration("min-age", time.Hour, "with --reconcile: never delete an object modified less than this long ago")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !*reconcile && (set["dry-run"] || set["min-age"]) {
		return usageError("--dry-run and --min-age go with --reconcile")
	}
	if *reconcile && set["grace"] {
		return usageError("--grace is for the collector, not --reconcile (which has --min-age)")
	}
	if *minAge < 0 {
		return usageError("--min-age must not be negative")
	}
	a, err := openChecked(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	if *reconcile {
		return reconcileCmd(ctx, a, *dryRun, *minAge, stdout)
	}
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

// reconcileCmd prints one line per finding (keys and sizes, never a URL), then a summary. It
// fails when a deletion failed or a row names a missing object, so a restore drill's script sees it.
func reconcileCmd(ctx context.Context, a *app, dryRun bool, minAge time.Duration, stdout io.Writer) error {
	deleted, aborted := "deleted", "aborted"
	if dryRun {
		deleted, aborted = "would delete", "would abort"
	}
	report := func(f lifecycle.Finding) {
		o, u := f.Object, f.Upload
		upload := u.Key // the filesystem cannot name the key of its leftovers: their path, then
		if upload == "" {
			upload = u.ID
		}
		switch {
		case f.Kind == lifecycle.FindingOrphan:
			fmt.Fprintf(stdout, "%s %s (%d bytes, modified %s): no row names it\n", deleted, o.Key, o.Size, o.ModTime.UTC().Format(time.RFC3339))
		case f.Kind == lifecycle.FindingUpload:
			fmt.Fprintf(stdout, "%s unfinished upload %s (started %s): no row names it\n", aborted, upload, u.Started.UTC().Format(time.RFC3339))
		case f.Kind == lifecycle.FindingYoung && o.Key != "":
			fmt.Fprintf(stdout, "kept %s (%d bytes, modified %s): no row names it, but it is newer than --min-age %s\n", o.Key, o.Size, o.ModTime.UTC().Format(time.RFC3339), minAge)
		case f.Kind == lifecycle.FindingYoung:
			fmt.Fprintf(stdout, "kept unfinished upload %s (started %s): it may still be in progress\n", upload, u.Started.UTC().Format(time.RFC3339))
		case f.Kind == lifecycle.FindingForeign:
			fmt.Fprintf(stdout, "kept %s: not under %s/, so not Slipway's\n", o.Key, strings.Join(uploads.KeyPrefixes, "/, "))
		case f.Kind == lifecycle.FindingFailed && o.Key != "":
			fmt.Fprintf(stdout, "failed to delete %s: %v\n", o.Key, f.Err)
		case f.Kind == lifecycle.FindingFailed:
			fmt.Fprintf(stdout, "failed to abort unfinished upload %s: %v\n", upload, f.Err)
		case f.Kind == lifecycle.FindingMissing:
			fmt.Fprintf(stdout, "missing %s: %s\n", f.Owner.Key, describeOwner(f.Owner))
		}
	}
	res, err := a.svc.Reconciler.Reconcile(ctx, lifecycle.ReconcileOptions{MinAge: minAge, DryRun: dryRun, Report: report})
	fmt.Fprintf(stdout, "listed %d objects (%d bytes); %s %d objects no row names (%d bytes); %s %d unfinished uploads; kept %d newer than %s and %d outside Slipway's prefixes; %d failed; %d rows name a missing object\n",
		res.Listed, res.ListedBytes, deleted, res.Orphans, res.OrphanBytes, aborted, res.Uploads, res.Young, minAge, res.Foreign, res.Failed, res.Missing)
	switch {
	case err != nil:
		return err
	case res.Failed > 0:
		return fmt.Errorf("%d deletions failed; run it again", res.Failed)
	case res.Missing > 0:
		return fmt.Errorf("%d rows name objects the storage does not hold (see docs/operations.md, Backup and restore)", res.Missing)
	}
	return nil
}

// describeOwner names the row of a missing object.
func describeOwner(o distribution.ObjectOwner) string {
	switch o.Kind {
	case distribution.OwnerRelease:
		return fmt.Sprintf("the package of release %d", o.ID)
	case distribution.OwnerIcon:
		return fmt.Sprintf("the icon of release %d", o.ID)
	case distribution.OwnerDebugFile:
		return fmt.Sprintf("debug file %d", o.ID)
	}
	return o.Kind
}

// insightsCmd: slipway insights backfill [--concurrency N] records the insights snapshot of every
// release that has none (uploaded before Slipway kept them), reading each package's zip directory
// and manifests by ranged reads, N at a time. A line of progress every 10 releases and at the end;
// run it again after a failure or an interruption: what is done stays done.
func insightsCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "backfill" {
		return usageError("want: slipway insights backfill [--concurrency N]")
	}
	fs := newFlagSet("insights backfill", stderr)
	concurrency := fs.Int("concurrency", 4, "releases read at once (1 to 64)")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	if *concurrency < 1 || *concurrency > 64 {
		return usageError("--concurrency must be 1 to 64")
	}
	a, err := openChecked(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	p, err := a.svc.Insights.Backfill(ctx, *concurrency, func(p uploads.BackfillProgress) {
		if n := p.Done + p.Failed; n%10 == 0 {
			fmt.Fprintf(stdout, "%d of %d releases (%d failed)\n", n, p.Total, p.Failed)
		}
	})
	for _, e := range p.Errors {
		fmt.Fprintln(stderr, e)
	}
	fmt.Fprintf(stdout, "done: %d releases given their insights, %d failed, of %d without\n", p.Done, p.Failed, p.Total)
	if err == nil && p.Failed > 0 {
		err = fmt.Errorf("%d releases failed; run the command again to retry them", p.Failed)
	}
	return err
}

// parseExpiry reads --expires: a duration from now (90d, 36h, 30m) or a moment (2027-01-31, in
// UTC, or RFC 3339), which must be in the future.
func parseExpiry(v string, now time.Time) (time.Time, error) {
	var at time.Time
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return time.Time{}, fmt.Errorf("want a positive number of days, got %q", v)
		}
		at = now.AddDate(0, 0, n)
	} else if d, err := time.ParseDuration(v); err == nil {
		at = now.Add(d)
	} else if t, err := time.Parse("2006-01-02", v); err == nil {
		at = t
	} else if t, err := time.Parse(time.RFC3339, v); err == nil {
		at = t
	} else {
		return time.Time{}, fmt.Errorf("want a duration (90d, 36h) or a date (2027-01-31, RFC 3339), got %q", v)
	}
	if !at.After(now) {
		return time.Time{}, fmt.Errorf("%q is not in the future", v)
	}
	return at, nil
}
