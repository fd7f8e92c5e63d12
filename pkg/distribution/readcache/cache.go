// Package readcache is the read cache: each replica's copy of the channels being asked about (their
// ChannelView), and of the answers already encoded from them. The update check, the versions
// listing and the release pages read through it.
package readcache

import (
	"container/list"
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// The read cache: every installed test build asks GET /api/apps/latest on launch, so the update
// check grows with devices, not with uploads. Each replica keeps a copy of the channels being
// asked about (their ChannelView: the channel with its app and scheme and its newest releases),
// and of the answers already encoded from them. It is a copy of the database and nothing more
// (design.md, property 1): it is bounded in bytes (least recently used views go first), every view
// expires after a short TTL, and every change that shows in a view removes it on every replica:
//   - on the replica that made the change, at once, before the writer is answered;
//   - on the others, through Postgres LISTEN/NOTIFY: triggers announce every change from the
//     writing transaction (migration 3), whoever the writer is;
//   - if a notification is lost (the listening connection broke), the listener forgets every view
//     when it reconnects, and the TTL bounds what a lost notification can cost.

// ChangeFeed announces changes made by any writer of the database.
type ChangeFeed interface {
	// ListenChanges calls onChange for every change until ctx ends, and onConnect whenever it
	// (re)connects, since changes made while it was not listening are not announced.
	ListenChanges(ctx context.Context, onConnect func(), onChange func(distribution.Change)) error
}

// ViewStore reads what a view holds.
type ViewStore interface {
	ChannelContextBySlug(ctx context.Context, slug string) (*distribution.ChannelContext, error)
	// RecentReleases returns up to limit of a channel's newest releases, only those with bundleID
	// unless it is "".
	RecentReleases(ctx context.Context, channelID int64, bundleID string, limit int) ([]distribution.Release, error)
	CountReleases(ctx context.Context, channelID int64) (int, error)
}

// Config sizes the read cache.
type Config struct {
	// MaxBytes bounds the views and encoded answers kept (0 turns the cache off).
	MaxBytes int64
	// TTL bounds how stale an answer can be when a change notification is lost.
	TTL time.Duration
	// LoadTimeout bounds one load of a view from the database (0: DefaultLoadTimeout).
	LoadTimeout time.Duration
}

// DefaultLoadTimeout bounds a view's load when Config does not: the load runs for every request
// waiting on it, so none of them may bound it, and without a bound one read stuck behind an
// exhausted pool or a lock would hold every request for that channel for ever.
const DefaultLoadTimeout = 30 * time.Second

// ViewReleases is how many of a channel's newest releases a view holds. It is also how many the
// SDK form of latest compares (decisions.md), so that form is always answered from the view.
const ViewReleases = 200

// maxMemos bounds the encoded answers kept per view (one per distinct query), so queries with
// ever-new parameters cannot grow a view without bound.
const maxMemos = 64

// ChannelView is a channel's read model: the channel with its app and scheme, and its newest
// releases. Views from the cache are shared: never modify one.
type ChannelView struct {
	distribution.ChannelContext
	// Releases are the channel's newest releases, newest first: all of them when Complete.
	Releases []distribution.Release
	Complete bool
	// Total is the number of releases in the channel.
	Total int

	loaded time.Time
	size   int64
	cache  *lru // nil for a view that is not cached

	mu    sync.Mutex
	memos map[string]*Encoded
}

// Encoded is an answer encoded once from a view and served many times.
type Encoded struct {
	Body []byte
	// ETag is a strong validator of Body.
	ETag string
	// Version is the version an answer offers, where a handler compares it per request (the
	// Tauri feed answers 204 to an app already at it).
	Version string
}

// Memo returns the answer stored under key, building and storing it on first use. The key must
// name everything the answer depends on besides the view.
func (v *ChannelView) Memo(key string, build func() (*Encoded, error)) (*Encoded, error) {
	v.mu.Lock()
	e, ok := v.memos[key]
	v.mu.Unlock()
	if ok {
		return e, nil
	}
	e, err := build()
	if err != nil || v.cache == nil {
		return e, err
	}
	v.mu.Lock()
	if len(v.memos) < maxMemos {
		if v.memos == nil {
			v.memos = map[string]*Encoded{}
		}
		if _, dup := v.memos[key]; !dup {
			v.memos[key] = e
			v.cache.grow(int64(len(key) + len(e.Body) + len(e.ETag) + 64))
		}
	}
	v.mu.Unlock()
	return e, nil
}

// lru holds ChannelViews by channel key, least recently used first out.
type lru struct {
	cfg     Config
	metrics *metrics.Metrics

	mu    sync.Mutex
	views map[string]*list.Element // of *ChannelView, by slug
	lru   *list.List               // front: most recently used
	bytes int64
	// generation grows with every invalidation: a view loaded while one happened may hold what
	// the change replaced, so it is not kept.
	generation uint64

	loads singleflight.Group
}

func (c *lru) loadTimeout() time.Duration {
	if c.cfg.LoadTimeout > 0 {
		return c.cfg.LoadTimeout
	}
	return DefaultLoadTimeout
}

func newLRU(cfg Config, m *metrics.Metrics) *lru {
	return &lru{cfg: cfg, metrics: m, views: map[string]*list.Element{}, lru: list.New()}
}

// get returns a fresh cached view, or nil and the generation a load must check against.
func (c *lru) get(slug string) (*ChannelView, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.views[slug]
	if ok {
		v := el.Value.(*ChannelView)
		if time.Since(v.loaded) < c.cfg.TTL {
			c.lru.MoveToFront(el)
			c.count("hit")
			return v, c.generation
		}
		c.remove(el)
		c.count("expired")
		return nil, c.generation
	}
	c.count("miss")
	return nil, c.generation
}

// put keeps a view loaded at generation gen, unless a change came in since.
func (c *lru) put(slug string, v *ChannelView, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.generation {
		return
	}
	if el, ok := c.views[slug]; ok {
		c.remove(el)
	}
	v.cache = c
	c.views[slug] = c.lru.PushFront(v)
	c.bytes += v.size
	c.evict()
	c.gauges()
}

// grow accounts for bytes added to a cached view (an encoded answer).
func (c *lru) grow(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += n
	c.evict()
	c.gauges()
}

func (c *lru) evict() {
	for c.bytes > c.cfg.MaxBytes && c.lru.Len() > 0 {
		c.remove(c.lru.Back())
		if c.metrics != nil {
			c.metrics.ReadCacheEvictions.Inc()
		}
	}
}

func (c *lru) remove(el *list.Element) {
	v := el.Value.(*ChannelView)
	c.lru.Remove(el)
	delete(c.views, v.Channel.Slug)
	v.mu.Lock()
	memoBytes := int64(0)
	for k, e := range v.memos {
		memoBytes += int64(len(k) + len(e.Body) + len(e.ETag) + 64)
	}
	v.mu.Unlock()
	c.bytes -= v.size + memoBytes
}

// invalidate removes the views a change touches; source labels the metric (local, notify).
func (c *lru) invalidate(ch distribution.Change, source string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		v := el.Value.(*ChannelView)
		if (ch.ChannelID != 0 && v.Channel.ID == ch.ChannelID) || (ch.SchemeID != 0 && v.Scheme.ID == ch.SchemeID) ||
			(ch.AppID != 0 && v.App.ID == ch.AppID) {
			c.remove(el)
		}
		el = next
	}
	if c.metrics != nil {
		c.metrics.ReadCacheInvalidations.WithLabelValues(source).Inc()
	}
	c.gauges()
}

// flush forgets every view (the change listener reconnected: changes may have been missed).
func (c *lru) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	c.views, c.bytes = map[string]*list.Element{}, 0
	c.lru.Init()
	if c.metrics != nil {
		c.metrics.ReadCacheInvalidations.WithLabelValues("reconnect").Inc()
	}
	c.gauges()
}

func (c *lru) count(result string) {
	if c.metrics != nil {
		c.metrics.ReadCacheLookups.WithLabelValues(result).Inc()
	}
}

func (c *lru) gauges() {
	if c.metrics != nil {
		c.metrics.ReadCacheBytes.Set(float64(c.bytes))
		c.metrics.ReadCacheViews.Set(float64(c.lru.Len()))
	}
}

// Cache serves channel views: from memory when it holds a fresh one (when the cache is on), else
// from the database.
type Cache struct {
	Store   ViewStore
	Metrics *metrics.Metrics
	lru     *lru // nil when the cache is off
}

// New returns the read cache; it keeps nothing (every view is read from the database) when
// cfg.MaxBytes or cfg.TTL is 0. A Watcher keeps it in step with other replicas.
func New(cfg Config, st ViewStore, m *metrics.Metrics) *Cache {
	c := &Cache{Store: st, Metrics: m}
	if cfg.MaxBytes > 0 && cfg.TTL > 0 {
		c.lru = newLRU(cfg, m)
	}
	return c
}

// Invalidate drops at once what a write on this replica changed, before the writer is answered,
// so the writer's next read is fresh; other replicas learn it from the database's notification.
func (c *Cache) Invalidate(ch distribution.Change) {
	if c.lru != nil {
		c.lru.invalidate(ch, "local")
	}
}

// View returns the read model of the channel a key names, from the cache when it holds a fresh
// one.
func (c *Cache) View(ctx context.Context, key string) (*ChannelView, error) {
	key, err := distribution.CheckChannelKey(key)
	if err != nil {
		return nil, err
	}
	if c.lru == nil {
		return c.load(ctx, key)
	}
	v, gen := c.lru.get(key)
	if v != nil {
		return v, nil
	}
	// One load per key and generation at a time, however many requests miss together. A request
	// that comes after an invalidation does not join a load that started before it (that load may
	// have read what the change replaced: the writer must read its own write). The load runs
	// detached from the first caller's cancellation, since others may be waiting on it, but within
	// the load timeout; each waiter stops waiting when its own request ends.
	done := c.lru.loads.DoChan(key+"@"+strconv.FormatUint(gen, 10), func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.lru.loadTimeout())
		defer cancel()
		v, err := c.load(lctx, key)
		if err == nil {
			c.lru.put(key, v, gen)
		}
		return v, err
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*ChannelView), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *Cache) load(ctx context.Context, key string) (*ChannelView, error) {
	// The view is as old as its first read: its TTL counts from here, not from the end of the
	// load, so a slow load cannot stretch how long what it read may be served.
	loaded := time.Now()
	cc, err := c.Store.ChannelContextBySlug(ctx, key)
	if err != nil {
		return nil, err
	}
	rels, err := c.Store.RecentReleases(ctx, cc.Channel.ID, "", ViewReleases)
	if err != nil {
		return nil, err
	}
	v := &ChannelView{ChannelContext: *cc, Releases: rels, Complete: len(rels) < ViewReleases, Total: len(rels), loaded: loaded}
	if !v.Complete {
		if v.Total, err = c.Store.CountReleases(ctx, cc.Channel.ID); err != nil {
			return nil, err
		}
	}
	v.size = viewSize(v)
	return v, nil
}

// viewSize estimates the memory a view holds.
func viewSize(v *ChannelView) int64 {
	n := int64(1024 + len(v.App.Name) + len(v.Scheme.Name) + len(v.Channel.Name) + len(v.Channel.BundleID))
	for i := range v.Releases {
		r := &v.Releases[i]
		n += 512 + int64(len(r.Name)+len(r.BundleID)+len(r.ReleaseVersion)+len(r.BuildVersion)+len(r.Source)+len(r.Branch)+
			len(r.GitCommit)+len(r.CIURL)+len(r.ObjectKey)+len(r.Filename)+len(r.SHA256))
		for _, e := range r.Changelog {
			n += int64(64 + len(e.Message) + len(e.Author) + len(e.Email) + len(e.Date))
		}
		for _, f := range r.CustomFields {
			n += int64(48 + len(f.Name) + len(f.Value) + len(f.Icon))
		}
		n += factsSize(&r.Facts)
	}
	return n
}

// factsSize estimates the memory of a release's platform facts (at most about 40 KiB: see
// uploads.platformFacts).
func factsSize(f *distribution.PlatformFacts) int64 {
	n := int64(len(f.Publisher) + len(f.Description))
	for _, s := range f.Architectures {
		n += int64(16 + len(s))
	}
	for _, s := range f.Permissions {
		n += int64(16 + len(s))
	}
	for k, v := range f.Properties {
		n += int64(48 + len(k) + len(v))
	}
	return n
}
