package lifecycle

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// CollectorStore is the object ledger as the collector works from it (design.md, property 4).
type CollectorStore interface {
	// ExpireSessions ends the open upload sessions past their expiry and hands their objects to
	// the collector (state deleted), in one transaction; it returns how many it ended.
	ExpireSessions(ctx context.Context) (int, error)
	// Collectable lists up to limit objects recorded as deleted, or pending for longer than grace.
	Collectable(ctx context.Context, grace time.Duration, limit int) ([]string, error)
	// Collect deletes one collectable object with del under a row lock and forgets it; it
	// reports false when the object is no longer collectable or another collector holds it.
	Collect(ctx context.Context, key string, grace time.Duration, del func(ctx context.Context, key string) error) (bool, error)
}

// ObjectRemover deletes an object from storage (blob.Backend).
type ObjectRemover interface {
	Delete(ctx context.Context, key string) error
}

// Collector deletes objects no row owns any more: those recorded as deleted (after a failed
// deletion), and pending ones older than Grace (uploads whose process died). It works from the
// database, never by listing the bucket. It is also a background component: Run collects every
// Interval.
type Collector struct {
	Store   CollectorStore
	Storage ObjectRemover
	// Interval between runs of Run (0: Run returns at once); Grace is how old a pending object
	// must be to be collected.
	Interval, Grace time.Duration
	Metrics         *metrics.Metrics
	Log             *slog.Logger
	// Audit records the upload sessions a run ends, as the system's "gc".
	Audit *distribution.AuditLog
}

// GCResult counts what one collector run did.
type GCResult struct {
	Deleted int
	Failed  int
}

// CollectGarbage deletes objects recorded as deleted, and pending ones older than grace (uploads
// whose process died), in batches until none is left or only failing ones remain.
func (c *Collector) CollectGarbage(ctx context.Context, grace time.Duration) (GCResult, error) {
	var res GCResult
	// Sessions past their expiry end first, so their objects are collected in this run.
	if n, err := c.Store.ExpireSessions(ctx); err != nil {
		return res, err
	} else if n > 0 {
		c.Log.InfoContext(ctx, "collector: upload sessions expired", slog.Int("sessions", n))
		// One row a run, not one a session: a flood of abandoned sessions must not flood the log.
		c.Audit.RecordAs(ctx, distribution.SystemActor("gc"), "upload_session.expire",
			distribution.AuditTarget{Kind: distribution.TargetSession, Name: plural(n, "upload session")}, map[string]any{"sessions": n})
	}
	const batch = 100
	// seen holds keys tried in this run: failed ones, and ones another collector holds.
	seen := map[string]bool{}
	for {
		keys, err := c.Store.Collectable(ctx, grace, batch+len(seen))
		if err != nil {
			return res, err
		}
		progressed := false
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k], progressed = true, true
			ok, err := c.Store.Collect(ctx, k, grace, c.Storage.Delete)
			switch {
			case err != nil:
				res.Failed++
				if c.Metrics != nil {
					c.Metrics.GCFailed.Inc()
				}
				c.Log.WarnContext(ctx, "collector: deletion failed", slog.String("error", err.Error()))
			case ok:
				res.Deleted++
				if c.Metrics != nil {
					c.Metrics.GCDeleted.Inc()
				}
			}
		}
		if !progressed || ctx.Err() != nil {
			return res, ctx.Err()
		}
	}
}

// Run collects every Interval until ctx ends (with an interval of 0 it returns at once: this
// replica does not collect), and returns nil. A stop cuts a run between objects or inside one
// object's transaction, which then rolls back: the object stays recorded for the next run.
func (c *Collector) Run(ctx context.Context) error {
	if c.Interval <= 0 {
		return nil
	}
	t := time.NewTicker(c.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			res, err := c.CollectGarbage(ctx, c.Grace)
			if err != nil && ctx.Err() == nil {
				c.Log.Warn("collector run failed", slog.String("error", err.Error()))
			} else if res.Deleted+res.Failed > 0 {
				c.Log.Info("collector run", slog.Int("deleted", res.Deleted), slog.Int("failed", res.Failed))
			}
		}
	}
}

// plural is "1 upload session", "3 upload sessions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
