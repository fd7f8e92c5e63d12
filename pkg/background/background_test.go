package background

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a component that notes when it started and when it stopped, taking hold to stop.
type recorder struct {
	name string
	log  *events
	hold time.Duration
}

type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(s string) { e.mu.Lock(); e.list = append(e.list, s); e.mu.Unlock() }

func (r *recorder) Run(ctx context.Context) error {
	<-ctx.Done()
	time.Sleep(r.hold)
	r.log.add(r.name)
	return nil
}

type failing struct{}

func (failing) Run(context.Context) error { return errors.New("gave up") }

type off struct{}

func (off) Run(context.Context) error { return nil }

// Components run until Stop, which stops them stage by stage: a stage is over only when all of its
// components have returned, however slowly. A component that ends early, with or without an
// error, does not hold the others up; its error is logged.
func TestStopsInStages(t *testing.T) {
	ev := &events{}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	g := Start(context.Background(), log,
		Stage{{Name: "slow producer", Component: &recorder{name: "slow producer", log: ev, hold: 50 * time.Millisecond}},
			{Name: "producer", Component: &recorder{name: "producer", log: ev}}, {Name: "off", Component: off{}}},
		Stage{{Name: "counter", Component: &recorder{name: "counter", log: ev}}, {Name: "failing", Component: failing{}}},
		Stage{{Name: "listener", Component: &recorder{name: "listener", log: ev}}},
	)
	time.Sleep(20 * time.Millisecond)
	if len(ev.list) != 0 {
		t.Fatalf("components stopped before Stop: %v", ev.list)
	}
	g.Stop()
	if got := strings.Join(ev.list, ", "); got != "producer, slow producer, counter, listener" {
		t.Fatalf("stop order: %s", got)
	}
	if !strings.Contains(logs.String(), `component=failing error="gave up"`) {
		t.Errorf("the failing component's error was not logged:\n%s", logs.String())
	}
}

// A signal (the context given to Start ending) does not stop the components: only Stop does, so
// they keep working while the HTTP server drains.
func TestSignalDoesNotStop(t *testing.T) {
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	g := Start(ctx, slog.New(slog.DiscardHandler), Stage{{Name: "c", Component: &recorder{name: "c", log: ev}}})
	cancel()
	time.Sleep(20 * time.Millisecond)
	if len(ev.list) != 0 {
		t.Fatal("a component stopped with the signal")
	}
	g.Stop()
	if len(ev.list) != 1 {
		t.Fatal("Stop returned before the component")
	}
}
