package lifecycle

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
)

// ReconcileStore is the database as reconciliation reads it.
type ReconcileStore interface {
	// ObjectOwners yields every row that names an object key, in byte order of the keys, from one
	// snapshot, streamed.
	ObjectOwners(ctx context.Context) iter.Seq2[distribution.ObjectOwner, error]
	// Unowned returns those of keys that no row names now.
	Unowned(ctx context.Context, keys []string) ([]string, error)
}

// Reconciler compares the bucket with the rows that own objects (`slipway gc --reconcile`). The
// collector works from the database's ledger and never sees an object no row names; after a
// database is restored from a backup older than the bucket, the objects written since (and a
// bug's leftovers) are such objects. The Reconciler lists the bucket beside the rows, both in
// key order, deletes what no row names, and reports rows whose object is missing (what was deleted
// since the backup), which it leaves for the operator.
//
// It is safe beside running servers: an object modified less than MinAge before the run began is
// never deleted (an upload records its ledger row before it writes a byte, so only objects written
// after the run's snapshot can lack a row, and they are that young), and the database is asked
// again, in a fresh snapshot, right before each batch is deleted.
type Reconciler struct {
	Store ReconcileStore
	// Storage must also be a blob.Lister (every backend of Slipway is), and may be a
	// blob.UploadLister.
	Storage ObjectRemover
	// Prefixes are the top-level folders of the keys Slipway writes (uploads.KeyPrefixes): an
	// object outside them is someone else's (a shared bucket) and is reported, never deleted.
	Prefixes []string
	// LeftoverAge: an unfinished write whose key the storage cannot name (the filesystem's temp
	// files and part folders) is removed only once unchanged for this long and MinAge; set it to
	// the upload session lifetime, since a session's parts may sit that long.
	LeftoverAge time.Duration
}

// ReconcileOptions shape one run.
type ReconcileOptions struct {
	// MinAge: objects modified less than this long before the run began are kept.
	MinAge time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Report, when set, is told of each finding as it is made.
	Report func(Finding)
}

// Kinds of Finding.
const (
	FindingOrphan  = "orphan"  // no row names the object: deleted (in a dry run: would be)
	FindingYoung   = "young"   // no row names the object, but it is newer than MinAge: kept
	FindingForeign = "foreign" // outside Slipway's prefixes: kept
	FindingMissing = "missing" // a row names an object the bucket does not hold
	FindingFailed  = "failed"  // deleting the orphan (or removing the unfinished upload) failed
	// FindingUpload is an unfinished upload (parts of a multipart upload, a temp file) whose key no
	// row names, or, where the storage cannot name it, unchanged for longer than LeftoverAge:
	// removed (in a dry run: would be). Young ones are FindingYoung.
	FindingUpload = "upload"
)

// Finding is one thing a reconciliation found.
type Finding struct {
	Kind   string
	Object blob.Object              // the object (orphan, young, foreign, failed)
	Upload blob.Upload              // the unfinished upload (upload; young and failed when Object is unset)
	Owner  distribution.ObjectOwner // the row (missing)
	Err    error                    // why (failed)
}

// ReconcileResult counts what one run found and did.
type ReconcileResult struct {
	Listed      int
	ListedBytes int64
	// Orphans were deleted (in a dry run: would be), OrphanBytes their size.
	Orphans     int
	OrphanBytes int64
	Young       int
	Foreign     int
	// Uploads are the unfinished uploads removed (in a dry run: that would be).
	Uploads int
	Missing int
	Failed  int
}

// Reconcile runs once over the whole bucket.
func (r *Reconciler) Reconcile(ctx context.Context, opts ReconcileOptions) (ReconcileResult, error) {
	var res ReconcileResult
	lister, ok := r.Storage.(blob.Lister)
	if !ok {
		return res, fmt.Errorf("this storage (%T) cannot be listed", r.Storage)
	}
	report := opts.Report
	if report == nil {
		report = func(Finding) {}
	}
	// The cutoff comes before the snapshot: whatever was written after the snapshot is newer.
	cutoff := time.Now().Add(-opts.MinAge)
	next, stop := iter.Pull2(r.Store.ObjectOwners(ctx))
	defer stop()
	var (
		owner    distribution.ObjectOwner
		hasOwner bool
		ownerErr error
	)
	advance := func() {
		var err error
		owner, err, hasOwner = next()
		if hasOwner && err != nil {
			ownerErr, hasOwner = err, false
		}
	}
	// missingUpTo reports the rows before key (all rows when all is set) whose objects must exist.
	missingUpTo := func(key string, all bool) {
		for hasOwner && (all || owner.Key < key) {
			if owner.Expected() {
				res.Missing++
				report(Finding{Kind: FindingMissing, Owner: owner})
			}
			advance()
		}
	}
	advance()
	prev := ""
	err := lister.List(ctx, func(page []blob.Object) error {
		var candidates []blob.Object
		for _, obj := range page {
			// The merge below is only right if both sides are in the same order; a listing out of
			// order must not turn owned objects into orphans.
			if res.Listed > 0 && obj.Key <= prev {
				return fmt.Errorf("storage listed %q after %q: not in key order; nothing more is deleted", obj.Key, prev)
			}
			prev = obj.Key
			res.Listed++
			res.ListedBytes += obj.Size
			missingUpTo(obj.Key, false)
			if ownerErr != nil {
				return ownerErr
			}
			owned := false
			for hasOwner && owner.Key == obj.Key {
				owned = true
				advance()
			}
			switch {
			case owned:
			case !r.ours(obj.Key):
				res.Foreign++
				report(Finding{Kind: FindingForeign, Object: obj})
			case obj.ModTime.After(cutoff):
				res.Young++
				report(Finding{Kind: FindingYoung, Object: obj})
			default:
				candidates = append(candidates, obj)
			}
		}
		if ownerErr != nil {
			return ownerErr
		}
		return r.settle(ctx, candidates, opts.DryRun, report, &res)
	})
	if err != nil {
		return res, err
	}
	missingUpTo("", true)
	if ownerErr != nil {
		return res, ownerErr
	}
	if ul, ok := r.Storage.(blob.UploadLister); ok {
		err = ul.ListUploads(ctx, func(page []blob.Upload) error {
			return r.settleUploads(ctx, ul, page, cutoff, opts.DryRun, report, &res)
		})
	}
	return res, err
}

// settleUploads removes the unfinished uploads of a page that no row names now and that are older
// than the cutoff (and, when the storage cannot name their key, than LeftoverAge).
func (r *Reconciler) settleUploads(ctx context.Context, ul blob.UploadLister, page []blob.Upload, cutoff time.Time,
	dryRun bool, report func(Finding), res *ReconcileResult) error {
	leftoverCutoff := cutoff
	if c := time.Now().Add(-r.LeftoverAge); c.Before(leftoverCutoff) {
		leftoverCutoff = c
	}
	var candidates []blob.Upload
	var keys []string
	for _, u := range page {
		switch {
		case u.Key != "" && !r.ours(u.Key):
		case u.Key != "" && u.Started.After(cutoff), u.Key == "" && u.Started.After(leftoverCutoff):
			res.Young++
			report(Finding{Kind: FindingYoung, Upload: u})
		default:
			candidates = append(candidates, u)
			if u.Key != "" {
				keys = append(keys, u.Key)
			}
		}
	}
	owned := map[string]bool{}
	if len(keys) > 0 {
		unowned, err := r.Store.Unowned(ctx, keys)
		if err != nil {
			return err
		}
		for _, k := range keys {
			owned[k] = true
		}
		for _, k := range unowned {
			owned[k] = false
		}
	}
	for _, u := range candidates {
		if u.Key != "" && owned[u.Key] {
			continue // an upload in progress (its ledger row), or one the collector will end
		}
		if !dryRun {
			if err := ul.RemoveUpload(ctx, u); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				res.Failed++
				report(Finding{Kind: FindingFailed, Upload: u, Err: err})
				continue
			}
		}
		res.Uploads++
		report(Finding{Kind: FindingUpload, Upload: u})
	}
	return nil
}

// settle deletes the candidates no row names now (a fresh read: a row may have come since the
// snapshot).
func (r *Reconciler) settle(ctx context.Context, candidates []blob.Object, dryRun bool, report func(Finding), res *ReconcileResult) error {
	if len(candidates) == 0 {
		return nil
	}
	keys := make([]string, len(candidates))
	for i, c := range candidates {
		keys[i] = c.Key
	}
	unowned, err := r.Store.Unowned(ctx, keys)
	if err != nil {
		return err
	}
	orphan := make(map[string]bool, len(unowned))
	for _, k := range unowned {
		orphan[k] = true
	}
	var orphans []blob.Object
	for _, obj := range candidates {
		if orphan[obj.Key] {
			orphans = append(orphans, obj)
		}
	}
	// Deleted a few at a time (one S3 deletion is two requests), reported in key order.
	errs := make([]error, len(orphans))
	if !dryRun {
		var wg sync.WaitGroup
		slots := make(chan struct{}, deleteConcurrency)
		for i, obj := range orphans {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				errs[i] = r.Storage.Delete(ctx, obj.Key)
			}()
		}
		wg.Wait()
	}
	for i, obj := range orphans {
		if errs[i] != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.Failed++
			report(Finding{Kind: FindingFailed, Object: obj, Err: errs[i]})
			continue
		}
		res.Orphans++
		res.OrphanBytes += obj.Size
		report(Finding{Kind: FindingOrphan, Object: obj})
	}
	return nil
}

// deleteConcurrency is how many deletions a reconciliation runs at once.
const deleteConcurrency = 8

// ours reports whether key is under one of Slipway's prefixes.
func (r *Reconciler) ours(key string) bool {
	for _, p := range r.Prefixes {
		if strings.HasPrefix(key, p+"/") {
			return true
		}
	}
	return false
}
