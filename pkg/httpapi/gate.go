package httpapi

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// uploadGate admits uploads to a replica: at most cap(slots) are received at once, and up to
// maxWaiting more wait in line (at most timeout) for a slot. Zealot's clients never retry an
// upload, so a burst of CI jobs must slow down rather than be refused: only an upload that finds
// the line full, or waits longer than timeout, gets 429 with Retry-After. A timeout of 0 turns the
// line off (429 at once when every slot is taken). While an upload waits, its body stays unread in
// the socket, and TCP holds the client back.
type uploadGate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
	timeout    time.Duration
	metrics    *metrics.Metrics
}

func newUploadGate(slots, maxWaiting int, timeout time.Duration, m *metrics.Metrics) *uploadGate {
	return &uploadGate{slots: make(chan struct{}, slots), maxWaiting: int64(maxWaiting), timeout: timeout, metrics: m}
}

// enter waits for a slot and returns the function that gives it back.
func (g *uploadGate) enter(ctx context.Context) (func(), error) {
	select {
	case g.slots <- struct{}{}:
		return g.admitted(0), nil
	default:
	}
	if g.timeout <= 0 {
		g.count("queue_full")
		return nil, g.busy("this server is receiving its maximum of %d uploads; retry shortly", cap(g.slots))
	}
	if g.waiting.Add(1) > g.maxWaiting {
		g.waiting.Add(-1)
		g.count("queue_full")
		return nil, g.busy("this server's upload queue is full (%d waiting); retry shortly", g.maxWaiting)
	}
	g.gauge()
	defer func() { g.waiting.Add(-1); g.gauge() }()
	start := time.Now()
	t := time.NewTimer(g.timeout)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return g.admitted(time.Since(start)), nil
	case <-t.C:
		g.count("timeout")
		return nil, g.busy("no upload slot freed up within %s on this server; retry shortly", g.timeout)
	case <-ctx.Done():
		g.count("cancelled")
		return nil, ctx.Err()
	}
}

func (g *uploadGate) admitted(waited time.Duration) func() {
	if g.metrics != nil {
		g.metrics.UploadsActive.Inc()
		g.metrics.UploadQueueWait.Observe(waited.Seconds())
	}
	return func() {
		<-g.slots
		if g.metrics != nil {
			g.metrics.UploadsActive.Dec()
		}
	}
}

func (g *uploadGate) busy(format string, args ...any) error {
	e := errs.New(errs.TooManyRequests, format, args...)
	e.RetryAfter = 10 * time.Second
	return e
}

func (g *uploadGate) count(reason string) {
	if g.metrics != nil {
		g.metrics.UploadsRefused.WithLabelValues(reason).Inc()
	}
}

func (g *uploadGate) gauge() {
	if g.metrics != nil {
		g.metrics.UploadsWaiting.Set(float64(g.waiting.Load()))
	}
}
