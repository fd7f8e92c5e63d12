package distribution

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/webhook"
)

// DownloadStore adds counted downloads to releases.
type DownloadStore interface {
	// AddDownloads adds counts (release id → downloads) in one transaction, with the
	// release.downloaded events emit makes for each release; releases deleted meanwhile are
	// skipped.
	AddDownloads(ctx context.Context, counts map[int64]int64, emit func(rc *ReleaseContext, n int64) ([]Event, error)) error
}

// downloadCounter holds a replica's downloads between flushes: a download costs a map increment,
// not a row update, and a flush writes all of them in one statement.
type downloadCounter struct {
	mu     sync.Mutex
	counts map[int64]int64
}

// maxPendingReleases bounds what a replica keeps while the database cannot take its counts.
const maxPendingReleases = 100_000

// CountDownload counts one download or iOS install of a release.
func (s *Service) CountDownload(r *Release) {
	if s.Metrics != nil {
		s.Metrics.Downloads.WithLabelValues(r.Platform).Inc()
	}
	c := s.counter()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.counts) < maxPendingReleases || c.counts[r.ID] > 0 {
		c.counts[r.ID]++
	}
}

func (s *Service) counter() *downloadCounter {
	s.counterOnce.Do(func() { s.downloads = &downloadCounter{counts: map[int64]int64{}} })
	return s.downloads
}

// FlushDownloads writes the counted downloads; on failure they are kept for the next flush.
func (s *Service) FlushDownloads(ctx context.Context) error {
	c := s.counter()
	c.mu.Lock()
	counts := c.counts
	c.counts = map[int64]int64{}
	c.mu.Unlock()
	if len(counts) == 0 {
		return nil
	}
	err := s.Store.AddDownloads(ctx, counts, func(rc *ReleaseContext, n int64) ([]Event, error) {
		return s.releaseEvents(webhook.EventReleaseDownloaded, n)(rc)
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

// RunDownloadCounts flushes counted downloads every interval until ctx ends, then once more.
func (s *Service) RunDownloadCounts(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := s.FlushDownloads(fctx); err != nil {
				s.Log.Warn("writing download counts at shutdown failed; they are lost", slog.String("error", err.Error()))
			}
			cancel()
			return
		case <-tick.C:
		}
		if err := s.FlushDownloads(ctx); err != nil && ctx.Err() == nil {
			s.Log.WarnContext(ctx, "writing download counts failed; they are kept for the next try", slog.String("error", err.Error()))
		}
	}
}
