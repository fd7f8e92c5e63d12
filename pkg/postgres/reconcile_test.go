package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/slipwayhq/slipway/test/testenv"
)

// ObjectOwners yields keys in byte order (as Go compares strings and storage lists them), not in
// the database's collation, which would put "a-b" after "a/b" or "B" after "a"; Unowned answers
// from a fresh read.
func TestObjectOwnersByteOrder(t *testing.T) {
	t.Parallel()
	db := testenv.DB(t)
	ctx := context.Background()
	keys := []string{"packages/a/b", "packages/é", "packages/B", "packages/a-b", "packages/a.b", "icons/x", "packages/~"}
	for _, k := range keys {
		if err := db.MarkPending(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for o, err := range db.ObjectOwners(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if o.Kind != "ledger" || o.Expected() {
			t.Errorf("%+v: want a ledger row, not expected to exist", o)
		}
		got = append(got, o.Key)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ObjectOwners yields %q, want byte order %q", got, want)
	}
	unowned, err := db.Unowned(ctx, []string{"packages/a-b", "packages/none", "icons/none", "packages/a-b"})
	if err != nil || !slices.Equal(unowned, []string{"icons/none", "packages/none"}) {
		t.Errorf("Unowned: %q %v", unowned, err)
	}
}
