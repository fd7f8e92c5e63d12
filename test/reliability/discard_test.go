package reliability

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/test/testenv"
)

// TestDiscardKeepsClaimedObjects pins down the rule the database faults above rely on, which
// the end-to-end tests hit only by chance: an upload may fail after the transaction recording it
// has committed (the database goes away before the answer is read), and then its objects belong
// to the release. Discarding a failed upload deletes only objects still pending; a claimed one is
// kept, and an unclaimed one is deleted and forgotten.
func TestDiscardKeepsClaimedObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testenv.DB(t)
	st, err := fs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := &uploads.Objects{Ledger: db, Storage: st, Log: slog.New(slog.DiscardHandler), MaxUploadBytes: 1 << 20}

	claimed, err := svc.StoreUpload(ctx, "packages", strings.NewReader("claimed by a committed transaction"), "a.ipa")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := svc.StoreUpload(ctx, "packages", strings.NewReader("never recorded"), "b.ipa")
	if err != nil {
		t.Fatal(err)
	}
	// What the recording transaction's claim does at its commit.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM storage_objects WHERE key = $1`, claimed.Key); err != nil {
		t.Fatal(err)
	}

	svc.Discard(ctx, claimed.Key, failed.Key)

	if _, err := st.Stat(ctx, claimed.Key); err != nil {
		t.Errorf("the claimed object was deleted by Discard: %v", err)
	}
	if _, err := st.Stat(ctx, failed.Key); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("the failed upload's object is still there: %v", err)
	}
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM storage_objects`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("%d bookkeeping rows left; the discarded object should be forgotten", rows)
	}
	rc, err := st.GetRange(ctx, claimed.Key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "claimed by a committed transaction" {
		t.Errorf("claimed object holds %q", b)
	}
}
