package lifecycle

import (
	"context"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	. "github.com/slipwayhq/slipway/pkg/distribution"
)

// owners is the database as reconciliation reads it: the rows of the snapshot, and the keys rows
// name now (a row may have come since).
type owners struct {
	snapshot []ObjectOwner
	now      map[string]bool
}

func (o *owners) ObjectOwners(context.Context) iter.Seq2[ObjectOwner, error] {
	return func(yield func(ObjectOwner, error) bool) {
		for _, r := range o.snapshot {
			if !yield(r, nil) {
				return
			}
		}
	}
}

func (o *owners) Unowned(_ context.Context, keys []string) ([]string, error) {
	var out []string
	for _, k := range keys {
		if !o.now[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// bucket lists its objects in pages of two, in the order given.
type bucket struct {
	objects []blob.Object
	mu      sync.Mutex
	deleted []string
}

func (b *bucket) List(_ context.Context, fn func([]blob.Object) error) error {
	for c := range slices.Chunk(b.objects, 2) {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

func (b *bucket) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleted = append(b.deleted, key)
	return nil
}

// Reconciliation deletes only the objects no row names, older than the minimum age and under
// Slipway's prefixes, asking the database again before deleting; it reports the rows whose
// packages, icons or debug files are missing (not the ledger's), and a dry run deletes nothing.
func TestReconcile(t *testing.T) {
	old, young := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Minute)
	b := &bucket{objects: []blob.Object{
		{Key: "debug_files/f", Size: 1, ModTime: old},
		{Key: "icons/a", Size: 2, ModTime: old},
		{Key: "other/x", Size: 4, ModTime: old},
		{Key: "packages/b", Size: 8, ModTime: old},
		{Key: "packages/c", Size: 16, ModTime: old},
		{Key: "packages/d", Size: 32, ModTime: young},
		{Key: "packages/e", Size: 64, ModTime: old},
		{Key: "packages/s", Size: 128, ModTime: old},
	}}
	o := &owners{snapshot: []ObjectOwner{
		{Key: "debug_files/f", Kind: OwnerLedger},
		{Key: "icons/a", Kind: OwnerIcon, ID: 1},
		{Key: "icons/gone", Kind: OwnerIcon, ID: 2},
		{Key: "packages/a-gone", Kind: OwnerRelease, ID: 2},
		{Key: "packages/b", Kind: OwnerRelease, ID: 1},
		{Key: "packages/pending", Kind: OwnerLedger},
		{Key: "packages/s", Kind: OwnerLedger},
		{Key: "packages/s", Kind: OwnerSession},
		{Key: "packages/z-gone", Kind: OwnerDebugFile, ID: 3},
	}, now: map[string]bool{"packages/e": true}}
	r := &Reconciler{Store: o, Storage: b, Prefixes: []string{"packages", "icons", "debug_files"}}

	for _, dry := range []bool{true, false} {
		var found []string
		res, err := r.Reconcile(t.Context(), ReconcileOptions{MinAge: time.Hour, DryRun: dry, Report: func(f Finding) {
			key := f.Object.Key
			if f.Kind == FindingMissing {
				key = f.Owner.Key
			}
			found = append(found, f.Kind+" "+key)
		}})
		if err != nil {
			t.Fatal(err)
		}
		// Orphans are reported once their page was checked again (c and d share a page).
		want := []string{"missing icons/gone", "foreign other/x", "missing packages/a-gone", "young packages/d", "orphan packages/c", "missing packages/z-gone"}
		if !slices.Equal(found, want) {
			t.Errorf("dry run %v: found\n%s\nwant\n%s", dry, strings.Join(found, "\n"), strings.Join(want, "\n"))
		}
		if res.Listed != 8 || res.ListedBytes != 255 || res.Orphans != 1 || res.OrphanBytes != 16 || res.Young != 1 ||
			res.Foreign != 1 || res.Missing != 3 || res.Failed != 0 {
			t.Errorf("dry run %v: %+v", dry, res)
		}
		wantDeleted := []string{"packages/c"}
		if dry {
			wantDeleted = nil
		}
		if !slices.Equal(b.deleted, wantDeleted) {
			t.Errorf("dry run %v: deleted %v, want %v", dry, b.deleted, wantDeleted)
		}
	}
}

// A listing out of key order stops the run before it deletes anything: the merge with the rows
// would otherwise take owned objects for orphans.
func TestReconcileRefusesUnorderedListing(t *testing.T) {
	old := time.Now().Add(-2 * time.Hour)
	b := &bucket{objects: []blob.Object{{Key: "packages/b", ModTime: old}, {Key: "packages/a", ModTime: old}}}
	o := &owners{snapshot: []ObjectOwner{{Key: "packages/a", Kind: OwnerRelease, ID: 1}}}
	r := &Reconciler{Store: o, Storage: b, Prefixes: []string{"packages"}}
	if _, err := r.Reconcile(t.Context(), ReconcileOptions{}); err == nil || !strings.Contains(err.Error(), "not in key order") {
		t.Fatalf("err = %v", err)
	}
	if len(b.deleted) != 0 {
		t.Fatalf("deleted %v", b.deleted)
	}
}

// uploadBucket is a bucket with unfinished uploads too.
type uploadBucket struct {
	bucket
	uploads []blob.Upload
	removed []string
}

func (b *uploadBucket) ListUploads(_ context.Context, fn func([]blob.Upload) error) error {
	return fn(b.uploads)
}

func (b *uploadBucket) RemoveUpload(_ context.Context, u blob.Upload) error {
	b.removed = append(b.removed, u.Key+u.ID)
	return nil
}

// Unfinished uploads: those of keys no row names, older than the minimum age, are removed; those
// of a key a row names (an upload in progress) are not; a leftover whose key the storage cannot
// name is removed only once older than LeftoverAge; nothing outside Slipway's prefixes is touched.
func TestReconcileUploads(t *testing.T) {
	now := time.Now()
	b := &uploadBucket{uploads: []blob.Upload{
		{Key: "packages/orphan", ID: "1", Started: now.Add(-2 * time.Hour)},
		{Key: "packages/young", ID: "2", Started: now.Add(-time.Minute)},
		{Key: "packages/pending", ID: "3", Started: now.Add(-2 * time.Hour)},
		{Key: "other/x", ID: "4", Started: now.Add(-48 * time.Hour)},
		{ID: "packages/.slipway-tmp-ab-parts-5", Started: now.Add(-2 * time.Hour)},
		{ID: "packages/.slipway-tmp-ab-6", Started: now.Add(-25 * time.Hour)},
	}}
	o := &owners{snapshot: []ObjectOwner{{Key: "packages/pending", Kind: OwnerLedger}}, now: map[string]bool{"packages/pending": true}}
	r := &Reconciler{Store: o, Storage: b, Prefixes: []string{"packages"}, LeftoverAge: 24 * time.Hour}
	for _, dry := range []bool{true, false} {
		var found []string
		res, err := r.Reconcile(t.Context(), ReconcileOptions{MinAge: time.Hour, DryRun: dry, Report: func(f Finding) {
			found = append(found, f.Kind+" "+f.Upload.Key+f.Upload.ID)
		}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"upload packages/orphan1", "young packages/young2", "young packages/.slipway-tmp-ab-parts-5",
			"upload packages/.slipway-tmp-ab-6"}
		slices.Sort(found)
		slices.Sort(want)
		if !slices.Equal(found, want) || res.Uploads != 2 || res.Young != 2 {
			t.Errorf("dry run %v: %+v, found\n%s\nwant\n%s", dry, res, strings.Join(found, "\n"), strings.Join(want, "\n"))
		}
		wantRemoved := []string{"packages/orphan1", "packages/.slipway-tmp-ab-6"}
		if dry {
			wantRemoved = nil
		}
		if !slices.Equal(b.removed, wantRemoved) {
			t.Errorf("dry run %v: removed %v, want %v", dry, b.removed, wantRemoved)
		}
	}
}
