package lifecycle

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/background/backgroundtest"
	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

var quiet = slog.New(slog.DiscardHandler)

// ledger is the collector's view of the object ledger in memory: collectable keys, some of which
// storage refuses to delete.
type ledger struct {
	mu          sync.Mutex
	collectable []string
	collected   []string
	expired     int
	runs        chan struct{}
}

func (l *ledger) ExpireSessions(context.Context) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs != nil {
		select {
		case l.runs <- struct{}{}:
		default:
		}
	}
	return l.expired, nil
}
func (l *ledger) Collectable(_ context.Context, _ time.Duration, limit int) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.collectable[:min(limit, len(l.collectable))]), nil
}
func (l *ledger) Collect(ctx context.Context, key string, _ time.Duration, del func(context.Context, string) error) (bool, error) {
	if err := del(ctx, key); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.collectable = slices.DeleteFunc(l.collectable, func(k string) bool { return k == key })
	l.collected = append(l.collected, key)
	return true, nil
}

type remover struct{ refuse map[string]bool }

func (r remover) Delete(_ context.Context, key string) error {
	if r.refuse[key] {
		return errors.New("storage said no")
	}
	return nil
}

// One collection deletes every collectable object it can and counts the ones it cannot, without
// trying them twice.
func TestCollectGarbage(t *testing.T) {
	l := &ledger{collectable: []string{"a", "b", "c"}}
	c := &Collector{Store: l, Storage: remover{refuse: map[string]bool{"b": true}}, Log: quiet}
	res, err := c.CollectGarbage(context.Background(), time.Hour)
	if err != nil || res.Deleted != 2 || res.Failed != 1 || !slices.Equal(l.collected, []string{"a", "c"}) {
		t.Fatalf("%+v %v, collected %v", res, err, l.collected)
	}
}

// auditRows keeps the audit rows written.
type auditRows struct{ rows []AuditRecord }

func (a *auditRows) WriteAudit(_ context.Context, r AuditRecord) error {
	a.rows = append(a.rows, r)
	return nil
}
func (a *auditRows) AuditEntries(context.Context, AuditFilter) ([]AuditEntry, error) { return nil, nil }

// A run that ends upload sessions leaves one audit row, the system's (gc), with the count; a run
// that ends none leaves none.
func TestCollectorAuditsExpiredSessions(t *testing.T) {
	rows := &auditRows{}
	l := &ledger{expired: 3}
	c := &Collector{Store: l, Storage: remover{}, Log: quiet, Audit: &AuditLog{Store: rows}}
	if _, err := c.CollectGarbage(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	l.expired = 0
	if _, err := c.CollectGarbage(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(rows.rows) != 1 {
		t.Fatalf("rows %+v", rows.rows)
	}
	r := rows.rows[0]
	if !reflect.DeepEqual(r.Actor, SystemActor("gc")) || r.Action != "upload_session.expire" || r.Target.Name != "3 upload sessions" || r.Detail["sessions"] != 3 {
		t.Errorf("row %+v", r)
	}
}

// The collector runs every interval and stops when its context ends; with no interval it does
// not run at all.
func TestCollectorStops(t *testing.T) {
	l := &ledger{runs: make(chan struct{}, 1)}
	stop := backgroundtest.Run(t, &Collector{Store: l, Storage: remover{}, Interval: 5 * time.Millisecond, Log: quiet})
	select {
	case <-l.runs:
	case <-time.After(5 * time.Second):
		t.Fatal("the collector never ran")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	off := &Collector{Store: l, Storage: remover{}}
	if err := off.Run(context.Background()); err != nil {
		t.Fatalf("a collector with no interval: %v", err)
	}
}

// retentionStore is a few channels of releases in memory. ApplyRetention deletes what decide
// picks, as one transaction would: all of a channel's victims or, when ctx has ended, none.
type retentionStore struct {
	RetentionStore
	mu       sync.Mutex
	channels map[int64][]RetentionCandidate
	locked   map[int64]bool
	applied  chan int64
}

func (s *retentionStore) RetentionChannels(context.Context) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id := range s.channels {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

func (s *retentionStore) ApplyRetention(ctx context.Context, id int64, decide func(*RetentionState) []RetentionVictim, emit EventFunc) ([]RetentionVictim, []string, bool, error) {
	if s.applied != nil {
		s.applied <- id
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, false, err // rolled back
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked[id] {
		return nil, nil, true, nil
	}
	keep := 1
	victims := decide(&RetentionState{ChannelID: id, Scheme: RetentionPolicy{KeepBuilds: &keep}, Releases: s.channels[id]})
	var keys []string
	for _, v := range victims {
		keys = append(keys, "packages/"+string(rune('a'+v.ID)))
		s.channels[id] = slices.DeleteFunc(s.channels[id], func(r RetentionCandidate) bool { return r.ID == v.ID })
		if emit != nil {
			if _, err := emit(&ReleaseContext{Release: Release{ID: v.ID}}); err != nil {
				return nil, nil, false, err
			}
		}
	}
	return victims, keys, false, nil
}

// objects records the deletions and cache invalidations retention sets off.
type objects struct {
	mu      sync.Mutex
	deleted []string
	changes []Change
	events  int
}

func (o *objects) DeleteObjects(ctx context.Context, keys []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deleted = append(o.deleted, keys...)
}
func (o *objects) Invalidate(ch Change) {
	o.mu.Lock()
	o.changes = append(o.changes, ch)
	o.mu.Unlock()
}
func (o *objects) ReleaseEvents(string, int64) EventFunc {
	return func(*ReleaseContext) ([]Event, error) { o.events++; return nil, nil }
}

func candidates(ids ...int64) []RetentionCandidate {
	var out []RetentionCandidate
	for i, id := range ids {
		out = append(out, RetentionCandidate{ID: id, Version: len(ids) - i, CreatedAt: time.Now()})
	}
	return out
}

// Enforcement applies each channel's rules in its own transaction: the deleted releases' objects
// are deleted after it, their views dropped and their events made; a channel another replica
// holds is skipped; a stop between channels leaves the rest for the next run.
func TestEnforceRetention(t *testing.T) {
	st := &retentionStore{channels: map[int64][]RetentionCandidate{1: candidates(3, 2, 1), 2: candidates(6, 5), 3: candidates(9, 8)},
		locked: map[int64]bool{3: true}}
	fx := &objects{}
	r := &Retention{Store: st, Effects: Effects{Objects: fx, Cache: fx, Events: fx}, Log: quiet}
	n, err := r.EnforceRetention(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	if len(fx.deleted) != 3 || len(fx.changes) != 2 || fx.events != 3 || len(st.channels[3]) != 2 {
		t.Fatalf("objects %v, invalidations %v, events %d, locked channel %v", fx.deleted, fx.changes, fx.events, st.channels[3])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st.channels[1] = candidates(12, 11)
	if n, err := r.EnforceRetention(ctx); !errors.Is(err, context.Canceled) || n != 0 || len(st.channels[1]) != 2 {
		t.Fatalf("a stopped run: %d %v, channel 1 %v", n, err, st.channels[1])
	}
}

// Retention runs every interval and stops when its context ends, leaving a channel either done
// (rows and objects gone) or untouched; with no interval it does not run.
func TestRetentionStops(t *testing.T) {
	st := &retentionStore{channels: map[int64][]RetentionCandidate{1: candidates(3, 2, 1)}, applied: make(chan int64, 100)}
	fx := &objects{}
	stop := backgroundtest.Run(t, &Retention{Store: st, Effects: Effects{Objects: fx}, Config: RetentionConfig{Interval: 5 * time.Millisecond}, Log: quiet})
	select {
	case <-st.applied:
	case <-time.After(5 * time.Second):
		t.Fatal("retention never ran")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	left := len(st.channels[1])
	st.mu.Unlock()
	fx.mu.Lock()
	deleted := len(fx.deleted)
	fx.mu.Unlock()
	if left+deleted != 3 || (left != 1 && left != 3) {
		t.Fatalf("half a channel: %d releases left, %d objects deleted", left, deleted)
	}
	if err := (&Retention{}).Run(context.Background()); err != nil {
		t.Fatalf("retention with no interval: %v", err)
	}
}

// A policy's numbers are checked before anything is read or written.
func TestPolicyRefusals(t *testing.T) {
	neg := -1
	r := &Retention{} // no store: a refused policy reaches none
	if err := r.SetChannelRetention(context.Background(), 1, &RetentionPolicy{KeepBuilds: &neg}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("negative keep_builds: %v", err)
	}
	if _, err := r.PlanChannelRetention(context.Background(), 1, &RetentionPolicy{MaxAgeDays: &neg}); !errs.Is(err, errs.Invalid) {
		t.Fatalf("planning with a negative age: %v", err)
	}
}
