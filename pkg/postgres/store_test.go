package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

func TestTokens(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	secret, tok, err := db.CreateToken(ctx, "ci", distribution.ScopeUpload)
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) < 30 || tok.Scope != "upload" {
		t.Fatalf("token %q scope %q", secret, tok.Scope)
	}
	if _, _, err := db.CreateToken(ctx, "ci", distribution.ScopeAdmin); errs.KindOf(err) != errs.Conflict {
		t.Fatalf("duplicate name: %v", err)
	}
	got, err := db.Authenticate(ctx, secret)
	if err != nil || got.ID != tok.ID || got.Scope != distribution.ScopeUpload {
		t.Fatalf("authenticate: %+v %v", got, err)
	}
	if _, err := db.Authenticate(ctx, secret+"x"); errs.KindOf(err) != errs.Unauthenticated {
		t.Fatalf("wrong token: %v", err)
	}
	if err := db.RevokeToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); errs.KindOf(err) != errs.Unauthenticated {
		t.Fatalf("revoked token: %v", err)
	}
	if err := db.RevokeToken(ctx, "ci"); errs.KindOf(err) != errs.NotFound {
		t.Fatalf("revoke twice: %v", err)
	}
	// A revoked name may be reused.
	if _, _, err := db.CreateToken(ctx, "ci", distribution.ScopeAdmin); err != nil {
		t.Fatal(err)
	}
	toks, err := db.ListTokens(ctx)
	if err != nil || len(toks) != 2 || toks[0].RevokedAt != nil || toks[1].RevokedAt == nil {
		t.Fatalf("list: %+v %v", toks, err)
	}
}

func TestCollectorAndClaimAreOrdered(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	if err := db.MarkPending(ctx, "packages/a"); err != nil {
		t.Fatal(err)
	}
	// Within the grace period a pending object is not collectable.
	keys, err := db.Collectable(ctx, 3600e9, 10)
	if err != nil || len(keys) != 0 {
		t.Fatalf("collectable within grace: %v %v", keys, err)
	}
	keys, _ = db.Collectable(ctx, 0, 10)
	if len(keys) != 1 {
		t.Fatalf("collectable past grace: %v", keys)
	}
	var deleted []string
	var mu sync.Mutex
	del := func(_ context.Context, k string) error {
		mu.Lock()
		deleted = append(deleted, k)
		mu.Unlock()
		return nil
	}
	ok, err := db.Collect(ctx, "packages/a", 0, del)
	if err != nil || !ok || len(deleted) != 1 {
		t.Fatalf("collect: %v %v %v", ok, err, deleted)
	}
	// Collecting again is a no-op.
	if ok, err := db.Collect(ctx, "packages/a", 0, del); ok || err != nil {
		t.Fatalf("collect twice: %v %v", ok, err)
	}
	if err := db.MarkPending(ctx, "icons/b"); err != nil {
		t.Fatal(err)
	}
	if doomed, err := db.Abandon(ctx, "icons/b"); err != nil || len(doomed) != 1 {
		t.Fatalf("abandon: %v %v", doomed, err)
	}
	keys, _ = db.Collectable(ctx, 3600e9, 10)
	if len(keys) != 1 || keys[0] != "icons/b" {
		t.Fatalf("deleted objects are collectable at once: %v", keys)
	}
}

// TestFailoverToAStandby plays a connection pool left on a server that no longer accepts writes
// (a demoted primary, back as a standby; here, the same effect with default_transaction_read_only,
// which makes Postgres answer writes with SQLSTATE 25006): Ping still succeeds, Writable says
// the database refuses writes, writes are errs.Unavailable (503 with Retry-After) while reads keep
// working, and once a writable server is back the pool drops the read-only connections and
// writes work again, without a restart.
func TestFailoverToAStandby(t *testing.T) {
	ctx := context.Background()
	url := testenv.DatabaseURL(t)
	db, err := postgres.Open(ctx, url, postgres.Options{MaxConns: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Writable(ctx); err != nil {
		t.Fatalf("Writable on a primary: %v", err)
	}
	if _, err := db.CreateApp(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	setReadOnly := func(on bool) {
		t.Helper()
		q := `ALTER DATABASE ` + admin.Config().Database + ` SET default_transaction_read_only = on`
		if !on {
			q = `ALTER DATABASE ` + admin.Config().Database + ` RESET default_transaction_read_only`
		}
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	setReadOnly(true)
	// The connections made before the failover are gone (a demoted primary restarts); the pool
	// reconnects to the same address, now a standby.
	var conns []*pgxpool.Conn
	for range 3 {
		c, err := db.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Hijack().Close(ctx)
	}

	if err := db.Ping(ctx); err != nil {
		t.Fatalf("Ping on a standby: %v (it should answer: this is why readiness needs Writable)", err)
	}
	if err := db.Writable(ctx); errs.KindOf(err) != errs.Unavailable || !errors.Is(err, distribution.ErrReadOnly) {
		t.Fatalf("Writable on a read-only database: %v, want Unavailable caused by distribution.ErrReadOnly (the internal readiness says read-only)", err)
	}
	if _, err := db.CreateApp(ctx, "during"); errs.KindOf(err) != errs.Unavailable {
		t.Fatalf("a write on a read-only database: %v (kind %v), want Unavailable (503)", err, errs.KindOf(err))
	}
	if apps, err := db.ListApps(ctx, distribution.Page{Page: 1, PerPage: 10}, nil); err != nil || len(apps) != 1 {
		t.Fatalf("reads during the failover: %v %v", apps, err)
	}

	// The failover is over: new connections reach a writable server. Connections found read-only
	// are dropped as they come back, so within a few tries (at most one per pooled connection)
	// writes work again.
	setReadOnly(false)
	var werr error
	for range 5 {
		if _, werr = db.CreateApp(ctx, "after"); werr == nil {
			break
		}
		if errs.KindOf(werr) != errs.Unavailable {
			t.Fatalf("a write after the failover: %v", werr)
		}
	}
	if werr != nil {
		t.Fatalf("writes still fail after the failover: %v (the pool kept its read-only connections)", werr)
	}
	if err := db.Writable(ctx); err != nil {
		t.Fatalf("Writable after the failover: %v", err)
	}
}
