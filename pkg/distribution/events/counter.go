package events

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// DownloadStore adds counted downloads to releases.
type DownloadStore interface {
	// AddDownloads adds counts (release id → downloads) in one transaction, with the
	// release.downloaded events emit makes for each release; releases deleted meanwhile are
	// skipped.
	AddDownloads(ctx context.Context, counts map[int64]int64, emit func(rc *distribution.ReleaseContext, n int64) ([]distribution.Event, error)) error
}

// maxPendingReleases bounds what a replica keeps while the database cannot take its counts.
const maxPendingReleases = 100_000

// Counter is the background component that counts downloads and iOS installs. A download costs a
// map increment, not a row update; Run writes all of them every interval in one statement (with
// their release.downloaded events), and once more when it stops.
type Counter struct {
	Store  DownloadStore
	Events *Maker
	// Interval is how often counts are written.
	Interval time.Duration
	Metrics  *metrics.Metrics
	Log      *slog.Logger

	mu     sync.Mutex
	counts map[int64]int64
}

// NewCounter returns a Counter; counts wait in memory until Run writes them.
func NewCounter(st DownloadStore, events *Maker, interval time.Duration, m *metrics.Metrics, log *slog.Logger) *Counter {
	return &Counter{Store: st, Events: events, Interval: interval, Metrics: m, Log: log, counts: map[int64]int64{}}
}

// CountDownload counts one download or iOS install of a release.
func (c *Counter) CountDownload(r *distribution.Release) {
	if c.Metrics != nil {
		c.Metrics.Downloads.WithLabelValues(r.Platform).Inc()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.counts) < maxPendingReleases || c.counts[r.ID] > 0 {
		c.counts[r.ID]++
	}
}

// Flush writes the counted downloads; on failure they are kept for the next flush.
func (c *Counter) Flush(ctx context.Context) error {
	c.mu.Lock()
	counts := c.counts
	c.counts = map[int64]int64{}
	c.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	err := c.Store.AddDownloads(ctx, counts, func(rc *distribution.ReleaseContext, n int64) ([]distribution.Event, error) {
		if c.Events == nil {
			return nil, nil
		}
		return c.Events.ReleaseEvents(webhook.EventReleaseDownloaded, n)(rc)
	})
	if err != nil {
		c.mu.Lock()
		for id, n := range counts {
			if len(c.counts) < maxPendingReleases || c.counts[id] > 0 {
				c.counts[id] += n
			}
		}
		c.mu.Unlock()
		return err
	}
	// Counts are not announced to the read caches (they would churn every replica's views), so
	// views show them up to the cache's TTL late.
	return nil
}

// Run writes the counted downloads every Interval until ctx ends, then once more (within 5
// seconds: the counts of the last requests served), and returns nil.
func (c *Counter) Run(ctx context.Context) error {
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	lastErr := "" // a failure repeated at every tick (a read-only database) is logged once
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := c.Flush(fctx); err != nil {
				c.Log.Warn("writing download counts at shutdown failed; they are lost", slog.String("error", err.Error()))
			}
			return nil
		case <-tick.C:
		}
		err := c.Flush(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			level := slog.LevelWarn
			if err.Error() == lastErr {
				level = slog.LevelDebug
			}
			lastErr = err.Error()
			c.Log.Log(ctx, level, "writing download counts failed; they are kept for the next try (logged again when the error changes)", slog.String("error", err.Error()))
		case err == nil && lastErr != "":
			lastErr = ""
			c.Log.InfoContext(ctx, "writing download counts works again")
		}
	}
}
