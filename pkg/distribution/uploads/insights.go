package uploads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// InsightsStore reads and records releases' insights snapshots.
type InsightsStore interface {
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
	// ReleaseInsights returns a release's snapshot (JSON), nil when none is recorded.
	ReleaseInsights(ctx context.Context, releaseID int64) ([]byte, error)
	// SaveReleaseInsights records a snapshot unless one is recorded already.
	SaveReleaseInsights(ctx context.Context, releaseID int64, snapshot []byte) error
	// PreviousRelease returns the id of the release before version in a channel, or errs.NotFound.
	PreviousRelease(ctx context.Context, channelID int64, version int) (int64, error)
	// ReleasesWithoutInsights returns up to limit releases above afterID without a snapshot, in id
	// order, and how many there are in all.
	ReleasesWithoutInsights(ctx context.Context, afterID int64, limit int) ([]distribution.ReleaseContext, int, error)
	// ReleaseInsightsOf returns the recorded snapshots of the releases ids names (those that have one).
	ReleaseInsightsOf(ctx context.Context, ids []int64) (map[int64][]byte, error)
}

// Insights answers "what changed in this build?": each release's snapshot (recorded
// at upload from the reads the parse made; for a release uploaded before, computed on first
// request by parsing its package again, which reads its zip directory and manifests, and then
// recorded), and the diff of two releases.
type Insights struct {
	Store   InsightsStore
	Objects *Objects
	Metrics *metrics.Metrics
	// Parses is the replica's parse-memory budget, which computing a snapshot again shares with
	// uploads (nil: unbounded).
	Parses *appinfo.Budget
	// Policy decides who may read a release's insights through the API (the release page's
	// one-line summary, Changes, goes with the page).
	Policy *policy.Policy
}

// readable reads a release the context's actor may read.
func (s *Insights) readable(ctx context.Context, id int64) (*distribution.ReleaseContext, error) {
	rc, err := s.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	return rc, s.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(rc.App.ID))
}

// ReleaseInsights is a release with its snapshot.
type ReleaseInsights struct {
	Release  *distribution.ReleaseContext
	Snapshot *insights.Snapshot
}

// ReleaseDiff is what changed from one release (Against) to another (Release).
type ReleaseDiff struct {
	Release, Against *distribution.ReleaseContext
	Diff             *insights.Diff
	Summary          []string
	// Groups are Summary's lines by kind, the most important first (the console's build page).
	Groups []insights.Group
}

// Release returns a release with its snapshot, computing and recording the snapshot when none
// is recorded yet.
func (s *Insights) Release(ctx context.Context, id int64) (*ReleaseInsights, error) {
	rc, err := s.readable(ctx, id)
	if err != nil {
		return nil, err
	}
	snap, err := s.snapshot(ctx, rc)
	if err != nil {
		return nil, err
	}
	return &ReleaseInsights{Release: rc, Snapshot: snap}, nil
}

// Diff compares release id with release against, or with the release before it in its channel
// when against is 0. It is errs.NotFound for an unknown release, and errs.Invalid when there is
// nothing to compare with (the channel's first release) or the two are of different platforms.
func (s *Insights) Diff(ctx context.Context, id, against int64) (*ReleaseDiff, error) {
	rc, err := s.readable(ctx, id)
	if err != nil {
		return nil, err
	}
	if against == 0 {
		if against, err = s.Store.PreviousRelease(ctx, rc.ChannelID, rc.Version); err != nil {
			if errs.KindOf(err) == errs.NotFound {
				return nil, errs.Field("against", "release %d is the first in its channel: name a release to compare it with", id)
			}
			return nil, err
		}
	}
	old, err := s.readable(ctx, against)
	if err != nil {
		return nil, err
	}
	if old.Platform != rc.Platform {
		return nil, errs.Field("against", "release %d is %s build and release %d %s build: they cannot be compared",
			against, distribution.WithArticle(old.Platform), id, distribution.WithArticle(rc.Platform))
	}
	oldSnap, err := s.snapshot(ctx, old)
	if err != nil {
		return nil, err
	}
	newSnap, err := s.snapshot(ctx, rc)
	if err != nil {
		return nil, err
	}
	d := insights.Compare(oldSnap, newSnap)
	return &ReleaseDiff{Release: rc, Against: old, Diff: d, Summary: insights.Summary(d), Groups: insights.Groups(d)}, nil
}

// Changes says in one short line what changed in release id since release prev, for the tester
// page: the size change and the permissions added ("+3.2 MB (+4.1%), new permission:
// android.permission.CAMERA"). It reads only recorded snapshots, in one query, and never the
// packages (a public page does not set off storage reads): "" when either snapshot is missing or
// neither size nor permissions changed.
func (s *Insights) Changes(ctx context.Context, id, prev int64) (string, error) {
	raw, err := s.Store.ReleaseInsightsOf(ctx, []int64{id, prev})
	if err != nil || raw[id] == nil || raw[prev] == nil {
		return "", err
	}
	var old, new insights.Snapshot
	if json.Unmarshal(raw[prev], &old) != nil || json.Unmarshal(raw[id], &new) != nil {
		return "", nil
	}
	d := insights.Compare(&old, &new)
	var parts []string
	if d.Size != nil && d.Size.Download.Change != 0 {
		parts = append(parts, insights.Summary(&insights.Diff{Size: &insights.SizeDiff{Download: d.Size.Download}})...)
	}
	if p := d.Permissions; p != nil && len(p.Added) > 0 {
		parts = append(parts, insights.Summary(&insights.Diff{Permissions: &insights.SetChange{Added: p.Added}})...)
	}
	return strings.Join(parts, ", "), nil
}

// snapshot returns a release's recorded snapshot, or computes and records it.
func (s *Insights) snapshot(ctx context.Context, rc *distribution.ReleaseContext) (*insights.Snapshot, error) {
	raw, err := s.Store.ReleaseInsights(ctx, rc.ID)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		var snap insights.Snapshot
		if err := json.Unmarshal(raw, &snap); err == nil {
			return &snap, nil
		}
		// A snapshot that no longer decodes is computed again below (and not recorded over).
	}
	snap, err := s.compute(ctx, rc)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		b, err := json.Marshal(snap)
		if err != nil {
			return nil, err
		}
		if err := s.Store.SaveReleaseInsights(ctx, rc.ID, b); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// compute parses a release's package again, as an upload does (its zip directory and manifests,
// by ranged reads), and returns its snapshot. A package Slipway cannot parse (one recorded by an
// older version, a format whose parser this program lacks) gets the snapshot its release row
// allows: identity, versions and size.
func (s *Insights) compute(ctx context.Context, rc *distribution.ReleaseContext) (*insights.Snapshot, error) {
	ra := s.Objects.ReaderAt(ctx, &StoredObject{Key: rc.ObjectKey, Size: rc.Size})
	info, err := appinfo.ParseWithin(ctx, s.Parses, ra, rc.Size, min(blob.CacheSize, rc.Size))
	if err != nil {
		if errs.KindOf(err) == errs.Internal {
			return nil, storageErr(s.Metrics, "get", err)
		}
		info = &appinfo.Info{Platform: appinfo.Platform(rc.Platform), Format: appinfo.Format(rc.Format)}
	}
	if info.Format == appinfo.FormatDMG || info.BundleID == "" {
		info.BundleID, info.ReleaseVersion, info.BuildVersion = rc.BundleID, rc.ReleaseVersion, rc.BuildVersion
	}
	if info.MinOS == "" {
		info.MinOS = rc.MinOS
	}
	if info.TargetSDK == "" {
		info.TargetSDK = rc.TargetSDK
	}
	snap := insights.FromInfo(info)
	if snap.Sizes == nil {
		snap.Sizes = &insights.Sizes{Download: rc.Size}
	}
	return snap, nil
}

// BackfillProgress is where a backfill stands.
type BackfillProgress struct {
	// Total is the number of releases without a snapshot when the backfill started; Done those
	// given one since, Failed those that could not be (storage errors), each listed in Errors.
	Total, Done, Failed int
	Errors              []string
}

// Backfill records the snapshot of every release that has none, concurrency at a time, calling
// progress after each release. It is resumable: a release done stays done, and a run that stops
// (ctx ends, storage fails) leaves the rest for the next. Failures are counted, not fatal.
func (s *Insights) Backfill(ctx context.Context, concurrency int, progress func(BackfillProgress)) (BackfillProgress, error) {
	concurrency = max(concurrency, 1)
	var p BackfillProgress
	var mu sync.Mutex
	var after int64
	first := true
	for ctx.Err() == nil {
		batch, total, err := s.Store.ReleasesWithoutInsights(ctx, after, 100)
		if err != nil {
			return p, err
		}
		if first {
			p.Total, first = total, false
		}
		if len(batch) == 0 {
			break
		}
		after = batch[len(batch)-1].ID
		sem := make(chan struct{}, concurrency)
		var wg sync.WaitGroup
		for i := range batch {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func(rc *distribution.ReleaseContext) {
				defer func() { <-sem; wg.Done() }()
				_, err := s.snapshot(ctx, rc)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && errs.KindOf(err) != errs.NotFound { // deleted meanwhile: nothing to do
					p.Failed++
					p.Errors = append(p.Errors, fmt.Sprintf("release %d: %v", rc.ID, err))
				} else {
					p.Done++
				}
				if progress != nil {
					progress(p)
				}
			}(&batch[i])
		}
		wg.Wait()
	}
	return p, ctx.Err()
}

// BudgetWarnings says which of a channel's size budgets a build of size bytes crosses; prev is
// the channel's newest release before it (nil: none, so no growth is measured).
func BudgetWarnings(b distribution.SizeBudget, size int64, prev *distribution.Release) []string {
	var out []string
	if b.MaxBytes != nil && size > *b.MaxBytes {
		out = append(out, fmt.Sprintf("the build is %s, over the channel's maximum of %s", insights.Bytes(size), insights.Bytes(*b.MaxBytes)))
	}
	if b.MaxGrowthPercent != nil && prev != nil && prev.Size > 0 {
		growth := float64(size-prev.Size) * 100 / float64(prev.Size)
		if growth > *b.MaxGrowthPercent {
			out = append(out, fmt.Sprintf("the build grew %.1f%% (%s → %s) since %s (%s), over the channel's maximum growth of %s%%",
				growth, insights.Bytes(prev.Size), insights.Bytes(size), prev.ReleaseVersion, prev.BuildVersion,
				strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", *b.MaxGrowthPercent), "0"), ".")))
		}
	}
	return out
}
