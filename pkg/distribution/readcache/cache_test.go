package readcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// viewStore is a database of channels for the read cache's tests: only the reads a view needs.
type viewStore struct {
	mu       sync.Mutex
	channels map[string]*ChannelContext
	releases map[int64][]Release // newest first
	loads    atomic.Int64
	// during, when set, runs in the middle of a load (to change things while a view loads).
	during func()
	// afterReleases, when set, runs once a load has read the releases.
	afterReleases func()
}

func newViewStore() *viewStore {
	return &viewStore{channels: map[string]*ChannelContext{}, releases: map[int64][]Release{}}
}

func (s *viewStore) add(id, schemeID, appID int64, slug string, releases int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.channels[slug] = &ChannelContext{Channel: Channel{ID: id, Slug: slug, SchemeID: schemeID, Name: "ios"},
		Scheme: Scheme{ID: schemeID, AppID: appID, Name: "Adhoc"}, App: App{ID: appID, Name: "App"}}
	for v := releases; v >= 1; v-- {
		s.releases[id] = append(s.releases[id], Release{ID: id*1000 + int64(v), ChannelID: id, Version: v, BundleID: "com.example.app",
			ReleaseVersion: fmt.Sprintf("1.%d", v), BuildVersion: fmt.Sprint(v), Changelog: []ChangelogEntry{{Message: strings.Repeat("x", 100)}}})
	}
}

func (s *viewStore) ChannelContextBySlug(_ context.Context, slug string) (*ChannelContext, error) {
	s.loads.Add(1)
	if s.during != nil {
		s.during()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cc, ok := s.channels[slug]
	if !ok {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	c := *cc
	return &c, nil
}

func (s *viewStore) RecentReleases(_ context.Context, channelID int64, _ string, limit int) ([]Release, error) {
	s.mu.Lock()
	rels := s.releases[channelID]
	out := append([]Release(nil), rels[:min(limit, len(rels))]...)
	hook := s.afterReleases
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return out, nil
}

func (s *viewStore) CountReleases(_ context.Context, channelID int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.releases[channelID]), nil
}

func cachedService(st *viewStore, maxBytes int64, ttl time.Duration) *Cache {
	return New(Config{MaxBytes: maxBytes, TTL: ttl}, st, nil)
}

// A view is loaded once and served from the cache until a change touching it (its channel, its
// scheme or its app) removes it; changes elsewhere leave it.
func TestReadCacheServesAndInvalidates(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 3)
	st.add(2, 20, 100, "two", 3)
	st.add(3, 30, 300, "three", 3)
	s := cachedService(st, 1<<20, time.Hour)
	view := func(slug string) *ChannelView {
		t.Helper()
		v, err := s.View(ctx, slug)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, slug := range []string{"one", "two", "three", "one", "two", "three"} {
		view(slug)
	}
	if n := st.loads.Load(); n != 3 {
		t.Fatalf("%d loads for 3 channels asked twice", n)
	}
	for _, c := range []struct {
		change Change
		reload []string // views the change must drop
	}{
		{Change{ChannelID: 1}, []string{"one"}},
		{Change{SchemeID: 20}, []string{"two"}},
		{Change{AppID: 100}, []string{"one", "two"}},
		{Change{ChannelID: 99}, nil},
	} {
		for _, slug := range []string{"one", "two", "three"} {
			view(slug)
		}
		before := st.loads.Load()
		s.lru.invalidate(c.change, "local")
		for _, slug := range []string{"one", "two", "three"} {
			view(slug)
		}
		if got := st.loads.Load() - before; got != int64(len(c.reload)) {
			t.Errorf("%+v: %d views reloaded, want %v", c.change, got, c.reload)
		}
	}
	// Unknown and malformed keys are not cached (a channel created later must be found).
	if _, err := s.View(ctx, "nope"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("unknown key: %v", err)
	}
	if _, err := s.View(ctx, "no pe"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("malformed key: %v", err)
	}
	st.add(4, 40, 400, "nope", 1)
	if _, err := s.View(ctx, "nope"); err != nil {
		t.Fatalf("channel created after a miss: %v", err)
	}
}

// A view loaded while a change came in may hold what the change replaced: it is answered but not
// kept, so the next question loads again.
func TestReadCacheDropsViewsLoadedDuringAChange(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 2)
	s := cachedService(st, 1<<20, time.Hour)
	st.during = func() { s.lru.invalidate(Change{ChannelID: 1}, "notify") }
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	st.during = nil
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if n := st.loads.Load(); n != 2 {
		t.Fatalf("%d loads: the view loaded during a change was kept", n)
	}
}

// A writer's read after its change does not join a load that started before the change (it
// would answer what the change replaced): read-your-writes holds while others are loading.
func TestReadCacheWriterDoesNotJoinAnOlderLoad(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 2)
	s := cachedService(st, 1<<20, time.Hour)
	entered, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	st.afterReleases = func() {
		if first.CompareAndSwap(false, true) {
			close(entered)
			<-release // the reader's load holds the old releases until the writer has read
		}
	}
	reader := make(chan *ChannelView)
	go func() {
		v, _ := s.View(ctx, "one")
		reader <- v
	}()
	<-entered
	// The write: a third release, then the local invalidation, as the service does.
	st.mu.Lock()
	st.releases[1] = append([]Release{{ID: 1003, ChannelID: 1, Version: 3}}, st.releases[1]...)
	st.mu.Unlock()
	s.Invalidate(Change{ChannelID: 1})
	writer := make(chan *ChannelView)
	go func() {
		v, _ := s.View(ctx, "one")
		writer <- v
	}()
	var mine *ChannelView
	select {
	case mine = <-writer:
	case <-time.After(time.Minute): // it joined the older load, which waits for release
		close(release)
		mine = <-writer
		<-reader
		t.Fatalf("the writer's read waited for a load that started before its write, and saw %d releases", mine.Total)
	}
	close(release)
	old := <-reader
	if mine.Total != 3 || old.Total != 2 {
		t.Errorf("the writer saw %d releases (want 3), the earlier reader %d (want 2)", mine.Total, old.Total)
	}
	// The earlier load came before the change: it is not kept.
	if v, _ := s.View(ctx, "one"); v.Total != 3 {
		t.Errorf("the cache holds the view from before the change: %d releases", v.Total)
	}
}

// Views expire after the TTL; a reconnect of the change listener forgets them all.
func TestReadCacheExpiresAndFlushes(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 2)
	s := cachedService(st, 1<<20, 50*time.Millisecond)
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if n := st.loads.Load(); n != 2 {
		t.Fatalf("%d loads: an expired view was served", n)
	}
	s.lru.cfg.TTL = time.Hour
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	s.lru.flush()
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if n := st.loads.Load(); n != 3 {
		t.Fatalf("%d loads: a flush kept views", n)
	}
}

// However many channels are asked about, the cache holds no more than its byte budget: the least
// recently used views go first, and encoded answers count too.
func TestReadCacheStaysWithinItsBudget(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	const channels = 2000
	for i := range channels {
		st.add(int64(i+1), int64(i+1), int64(i+1), fmt.Sprintf("ch%d", i), 20)
	}
	const budget = 1 << 20
	s := cachedService(st, budget, time.Hour)
	for i := range channels {
		v, err := s.View(ctx, fmt.Sprintf("ch%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for q := range 3 {
			if _, err := v.Memo(fmt.Sprint("q", q), func() (*Encoded, error) {
				return &Encoded{Body: make([]byte, 2048), ETag: `"x"`}, nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if b := s.lru.bytes; b > budget {
			t.Fatalf("after %d channels the cache holds %d bytes, over its %d", i+1, b, budget)
		}
	}
	if n := s.lru.lru.Len(); n == 0 || n == channels {
		t.Fatalf("%d views kept of %d: eviction did not work", n, channels)
	}
	// The most recently used view is still there.
	before := st.loads.Load()
	if _, err := s.View(ctx, fmt.Sprintf("ch%d", channels-1)); err != nil || st.loads.Load() != before {
		t.Fatalf("the newest view was evicted (%v)", err)
	}
	// Many distinct questions do not grow one view without bound.
	v, _ := s.View(ctx, "ch0")
	for q := range 10 * maxMemos {
		_, _ = v.Memo(fmt.Sprint("many", q), func() (*Encoded, error) { return &Encoded{Body: []byte("{}")}, nil })
	}
	if len(v.memos) > maxMemos {
		t.Fatalf("%d memos in one view", len(v.memos))
	}
}

// A view's age counts from before its reads, not from when the load finished: what it holds is
// as old as its first query, so a load slowed after its reads (a busy database, a busy machine)
// must not extend how long a stale answer may be served. (The TTL is the bound on staleness when
// a change notification is lost; test/reliability's TestReadCacheAcrossReplicas checks it across
// replicas.)
func TestReadCacheAgeCountsFromTheReads(t *testing.T) {
	ctx := context.Background()
	st := newViewStore()
	st.add(1, 10, 100, "one", 3)
	const ttl = 50 * time.Millisecond
	s := cachedService(st, 1<<20, ttl)
	st.afterReleases = func() { time.Sleep(4 * ttl) } // the load ends well past a TTL after its reads
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	st.afterReleases = nil
	if _, err := s.View(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if n := st.loads.Load(); n != 2 {
		t.Fatalf("%d loads: a view read more than its TTL ago was served as fresh", n)
	}
}

// blockingStore's reads wait until their context ends, as a read stuck behind an exhausted pool or
// a lock does.
type blockingStore struct {
	*viewStore
	block   atomic.Bool
	started chan struct{}
}

func (s *blockingStore) ChannelContextBySlug(ctx context.Context, slug string) (*ChannelContext, error) {
	if s.block.Load() {
		s.started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.viewStore.ChannelContextBySlug(ctx, slug)
}

// A load that is stuck neither holds its waiters past their own deadlines nor lasts for ever: a
// request whose client has gone returns at once, and the load ends at the cache's load timeout,
// so the next request loads afresh.
func TestReadCacheStuckLoadReleasesItsWaiters(t *testing.T) {
	st := &blockingStore{viewStore: newViewStore(), started: make(chan struct{}, 1)}
	st.add(1, 10, 100, "one", 2)
	st.block.Store(true)
	s := New(Config{MaxBytes: 1 << 20, TTL: time.Hour, LoadTimeout: 200 * time.Millisecond}, st, nil)

	ctx, cancel := context.WithCancel(context.Background())
	waiter := make(chan error, 1)
	go func() {
		_, err := s.View(ctx, "one")
		waiter <- err
	}()
	<-st.started
	cancel()
	select {
	case err := <-waiter:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the waiter whose request ended got %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a request whose context ended still waits for a stuck load")
	}

	// The stuck load itself ends at the load timeout; once the store answers, so does the cache.
	if _, err := s.View(context.Background(), "one"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a load stuck past the load timeout ended with %v, want context.DeadlineExceeded", err)
	}
	st.block.Store(false)
	if v, err := s.View(context.Background(), "one"); err != nil || v.Total != 2 {
		t.Fatalf("after the store recovered: %v, %v", v, err)
	}
}
