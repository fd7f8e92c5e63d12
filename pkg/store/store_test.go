package store_test

import (
	"context"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
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
	if err != nil || got.ID != tok.ID || !got.Allows(distribution.ScopeUpload) || got.Allows(distribution.ScopeAdmin) {
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
