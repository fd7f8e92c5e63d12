package readcache

import (
	"context"
	"testing"
	"time"

	. "github.com/slipwayhq/slipway/pkg/distribution"
)

// feed is a change feed that connects, announces what is sent on changes, and ends with ctx.
type feed struct {
	changes chan Change
	connect chan struct{}
}

func (f *feed) ListenChanges(ctx context.Context, onConnect func(), onChange func(Change)) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.connect:
			onConnect()
		case ch := <-f.changes:
			onChange(ch)
		}
	}
}

// The watcher drops the views other replicas' changes touch, drops every view when its
// connection comes back, and stops (returning nil) when its context ends.
func TestWatcherFollowsChangesAndStops(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 3)
	st.add(2, 20, 200, "two", 3)
	cache := cachedService(st, 1<<20, time.Hour)
	f := &feed{changes: make(chan Change), connect: make(chan struct{})}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (&Watcher{Cache: cache, Feed: f}).Run(runCtx) }()

	for _, slug := range []string{"one", "two"} {
		if _, err := cache.View(ctx, slug); err != nil {
			t.Fatal(err)
		}
	}
	loads := st.loads.Load()
	f.changes <- Change{AppID: 100}
	f.changes <- Change{} // a no-op change, received only once the first was handled
	cache.View(ctx, "one")
	cache.View(ctx, "two")
	if n := st.loads.Load() - loads; n != 1 {
		t.Fatalf("%d reloads after a change to one app, want 1", n)
	}
	f.connect <- struct{}{}
	f.changes <- Change{}
	cache.View(ctx, "one")
	cache.View(ctx, "two")
	if n := st.loads.Load() - loads; n != 3 {
		t.Fatalf("%d reloads after a reconnection, want 3", n)
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a stopped watcher returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not stop")
	}
	if err := (&Watcher{Cache: New(Config{}, st, nil), Feed: f}).Run(ctx); err != nil {
		t.Fatalf("with the cache off: %v", err)
	}
}
