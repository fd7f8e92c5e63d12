package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// recorder stands for the parts a write sets off (the read cache, the webhook sender, the object
// deleter, the event maker) and records what it was asked.
type recorder struct {
	mu      sync.Mutex
	changes []Change
	wakes   int
	deleted []string
	kinds   []string
}

func (r *recorder) Invalidate(ch Change) {
	r.mu.Lock()
	r.changes = append(r.changes, ch)
	r.mu.Unlock()
}
func (r *recorder) Wake() { r.mu.Lock(); r.wakes++; r.mu.Unlock() }
func (r *recorder) DeleteObjects(ctx context.Context, keys []string) {
	if ctx.Err() != nil {
		panic("objects deleted under a cancelled context")
	}
	r.mu.Lock()
	r.deleted = append(r.deleted, keys...)
	r.mu.Unlock()
}
func (r *recorder) ReleaseEvents(kind string, _ int64) EventFunc {
	r.mu.Lock()
	r.kinds = append(r.kinds, kind)
	r.mu.Unlock()
	return func(*ReleaseContext) ([]Event, error) { return nil, nil }
}
func (r *recorder) effects() Effects { return Effects{Cache: r, Webhooks: r, Objects: r, Events: r} }

// deleteStore deletes apps, schemes, channels and releases in memory: each deletion returns the
// object keys it recorded as deleted, or fail.
type deleteStore struct {
	AppStore
	ReleaseStore
	fail  error
	emits []bool // whether each deletion was given an EventFunc
}

func (s *deleteStore) keys(kind string, id int64, emit EventFunc) ([]string, error) {
	s.emits = append(s.emits, emit != nil)
	if s.fail != nil {
		return nil, s.fail
	}
	return []string{fmt.Sprintf("packages/%s-%d", kind, id), fmt.Sprintf("icons/%s-%d", kind, id)}, nil
}
func (s *deleteStore) DestroyApp(_ context.Context, id int64) ([]string, error) {
	return s.keys("app", id, nil)
}
func (s *deleteStore) DeleteScheme(_ context.Context, id int64, emit EventFunc) ([]string, error) {
	return s.keys("scheme", id, emit)
}
func (s *deleteStore) DeleteChannel(_ context.Context, id int64, emit EventFunc) ([]string, error) {
	return s.keys("channel", id, emit)
}
func (s *deleteStore) GetRelease(_ context.Context, id int64) (*ReleaseContext, error) {
	return &ReleaseContext{Release: Release{ID: id}, Channel: Channel{ID: 70, Slug: "k"}}, nil
}
func (s *deleteStore) GetApp(_ context.Context, id int64) (*App, error) { return &App{ID: id}, nil }
func (s *deleteStore) GetScheme(_ context.Context, id int64) (*Scheme, error) {
	return &Scheme{ID: id, AppID: 1}, nil
}
func (s *deleteStore) ChannelContextByID(_ context.Context, id int64) (*ChannelContext, error) {
	return &ChannelContext{Channel: Channel{ID: id}}, nil
}
func (s *deleteStore) DeleteRelease(_ context.Context, id int64, _ Actor, emit EventFunc) ([]string, error) {
	return s.keys("release", id, emit)
}

// A deletion drops the cached views of what it deleted, deletes the objects the store recorded as
// deleted (after the commit, even when the request is gone), and makes release.deleted events and
// wakes the sender when releases went with it (an app's destruction sends none).
func TestDeletionsSetOffTheirEffects(t *testing.T) {
	// The request's context is cancelled by the time the objects go: they are deleted anyway.
	ctx, cancel := context.WithCancel(WithActor(context.Background(), SystemActor("test")))
	cancel()
	for _, c := range []struct {
		name   string
		id     int64
		delete func(*Apps, *Releases) error
		change Change
		wakes  int
	}{
		{"app", 1, func(a *Apps, _ *Releases) error { return a.DestroyApp(ctx, 1) }, Change{AppID: 1}, 0},
		{"scheme", 2, func(a *Apps, _ *Releases) error { return a.DeleteScheme(ctx, 2) }, Change{SchemeID: 2}, 1},
		{"channel", 3, func(a *Apps, _ *Releases) error { return a.DeleteChannel(ctx, 3) }, Change{ChannelID: 3}, 1},
		{"release", 4, func(_ *Apps, r *Releases) error { return r.DeleteRelease(ctx, 4) }, Change{ChannelID: 70}, 1},
	} {
		rec, st := &recorder{}, &deleteStore{}
		a, r := &Apps{Store: st, Effects: rec.effects()}, &Releases{Store: st, Effects: rec.effects()}
		if err := c.delete(a, r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(rec.deleted) != 2 || !slices.Contains(rec.deleted, fmt.Sprintf("packages/%s-%d", c.name, c.id)) {
			t.Errorf("%s: objects deleted %v", c.name, rec.deleted)
		}
		if len(rec.changes) != 1 || rec.changes[0] != c.change {
			t.Errorf("%s: cache invalidations %v, want %v", c.name, rec.changes, c.change)
		}
		if rec.wakes != c.wakes {
			t.Errorf("%s: %d wake-ups of the sender, want %d", c.name, rec.wakes, c.wakes)
		}
		if c.wakes > 0 && (len(st.emits) != 1 || !st.emits[0] || !slices.Equal(rec.kinds, []string{webhook.EventReleaseDeleted})) {
			t.Errorf("%s: events %v (emit given: %v)", c.name, rec.kinds, st.emits)
		}
	}
}

// A deletion the store refuses (or that fails) deletes no object: the rows are still there.
func TestFailedDeletionDeletesNoObject(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	rec, st := &recorder{}, &deleteStore{fail: errs.New(errs.NotFound, "scheme 2 not found")}
	a := &Apps{Store: st, Effects: rec.effects()}
	if err := a.DeleteScheme(ctx, 2); !errs.Is(err, errs.NotFound) {
		t.Fatalf("delete: %v", err)
	}
	st.fail = errors.New("connection reset")
	if err := a.DestroyApp(ctx, 1); err == nil {
		t.Fatal("a failed destruction reported success")
	}
	if len(rec.deleted) != 0 {
		t.Fatalf("objects deleted after failed deletions: %v", rec.deleted)
	}
}

// staleStore is a scheme row that other requests keep editing: the first stale writes find it
// changed since it was read.
type staleStore struct {
	AppStore
	stale  int
	reads  int
	writes []Scheme
}

func (s *staleStore) GetScheme(_ context.Context, id int64) (*Scheme, error) {
	s.reads++
	// Each read sees what the other requests wrote meanwhile.
	return &Scheme{ID: id, AppID: 1, Name: "Adhoc", RetainedBuilds: s.reads}, nil
}
func (s *staleStore) UpdateScheme(_ context.Context, sc *Scheme) (*Scheme, error) {
	s.writes = append(s.writes, *sc)
	if len(s.writes) <= s.stale {
		return nil, fmt.Errorf("update scheme: %w", ErrStale)
	}
	return sc, nil
}

// An edit whose row changed between its read and its write is read and applied again, so the
// other request's fields survive; one that keeps losing the race ends as a conflict.
func TestEditsRetryStaleRows(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &staleStore{stale: 2}
	a := &Apps{Store: st}
	sc, err := a.UpdateScheme(ctx, 3, SchemeChanges{Name: str("Beta")})
	if err != nil || sc.Name != "Beta" || sc.RetainedBuilds != 3 || st.reads != 3 {
		t.Fatalf("after two stale writes: %+v %v (%d reads)", sc, err, st.reads)
	}
	st = &staleStore{stale: 100}
	a = &Apps{Store: st}
	if _, err := a.UpdateScheme(ctx, 3, SchemeChanges{Name: str("Beta")}); !errs.Is(err, errs.Conflict) || len(st.writes) != 5 {
		t.Fatalf("a row that never settles: %v after %d writes", err, len(st.writes))
	}
}

// A channel key that cannot be one never reaches the database (the store here panics if asked).
func TestChannelKeysAreCheckedFirst(t *testing.T) {
	a := &Apps{Store: &deleteStore{}}
	if _, err := a.Channel(context.Background(), "  "); !errs.Is(err, errs.Invalid) {
		t.Errorf("blank key: %v", err)
	}
	for _, key := range []string{"a b", "../x", "k\x00"} {
		if _, err := a.Channel(context.Background(), key); !errs.Is(err, errs.NotFound) {
			t.Errorf("key %q: %v", key, err)
		}
	}
}

// A release asked for under another channel's key is not found: pages and install links carry
// both, and one channel's password must not open another's builds.
func TestReleaseInAnotherChannelIsNotFound(t *testing.T) {
	r := &Releases{Store: &deleteStore{}}
	if _, err := r.ReleaseInChannel(context.Background(), "other", 4); !errs.Is(err, errs.NotFound) {
		t.Fatalf("release of channel k under key other: %v", err)
	}
	if rc, err := r.ReleaseInChannel(context.Background(), "k", 4); err != nil || rc.ID != 4 {
		t.Fatalf("its own channel: %+v %v", rc, err)
	}
}
