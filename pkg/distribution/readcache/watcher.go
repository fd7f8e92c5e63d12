package readcache

import (
	"context"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// Watcher is the background component that keeps a replica's read cache in step with the
// database: it listens to the change announcements of every writer (Postgres LISTEN/NOTIFY, whoever
// wrote) and drops the views they touch; when its connection comes back after a break, it drops
// every view, since changes made meanwhile were not announced.
type Watcher struct {
	Cache *Cache
	Feed  ChangeFeed
}

// Run listens until ctx ends; a broken connection is retried meanwhile. With the cache off there
// is nothing to keep in step, and it returns nil at once.
func (w *Watcher) Run(ctx context.Context) error {
	if w.Cache == nil || w.Cache.lru == nil {
		return nil
	}
	c := w.Cache.lru
	err := w.Feed.ListenChanges(ctx, c.flush, func(ch distribution.Change) { c.invalidate(ch, "notify") })
	if ctx.Err() != nil {
		return nil
	}
	return err
}
