package httpapi

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// uploadGate admits uploads to a replica: at most cap(slots) are received at once, at most
// perToken of them for any one token, and up to maxWaiting more wait in line (at most timeout) for
// a slot. Zealot's clients never retry an upload, so a burst of CI jobs must slow down rather than
// be refused: only an upload that finds the line full, or waits longer than timeout, gets 429
// with Retry-After. A timeout of 0 turns the line off (429 at once when no slot is free). While an
// upload waits, its body stays unread in the socket, and TCP holds the client back.
//
// Only authenticated uploads come here (the token is checked before the gate), and the per-token
// cap keeps one client, or one stolen token, from holding every slot: its other uploads wait in
// the same line while other tokens' uploads go by.
type uploadGate struct {
	slots      chan struct{}
	perToken   int
	waiting    atomic.Int64
	maxWaiting int64
	timeout    time.Duration
	metrics    *metrics.Metrics

	mu     sync.Mutex
	tokens map[int64]*tokenSlots // the tokens holding or awaiting a slot
}

// tokenSlots is one token's share of the slots: a semaphore of perToken, and how many uploads
// hold or await it (the entry goes when none does).
type tokenSlots struct {
	sem   chan struct{}
	users int
}

func newUploadGate(slots, perToken, maxWaiting int, timeout time.Duration, m *metrics.Metrics) *uploadGate {
	if perToken <= 0 || perToken > slots {
		perToken = slots
	}
	if m != nil {
		m.UploadSlots.Set(float64(slots))
	}
	return &uploadGate{slots: make(chan struct{}, slots), perToken: perToken, maxWaiting: int64(maxWaiting),
		timeout: timeout, metrics: m, tokens: map[int64]*tokenSlots{}}
}

// token returns the token's semaphore, counting one more user; put gives it back.
func (g *uploadGate) token(id int64) *tokenSlots {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.tokens[id]
	if t == nil {
		t = &tokenSlots{sem: make(chan struct{}, g.perToken)}
		g.tokens[id] = t
	}
	t.users++
	return t
}

func (g *uploadGate) put(id int64, t *tokenSlots) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.users--; t.users == 0 {
		delete(g.tokens, id)
	}
}

// enter waits for one of the token's slots and one of the replica's, and returns the function
// that gives both back.
func (g *uploadGate) enter(ctx context.Context, tokenID int64) (func(), error) {
	tok := g.token(tokenID)
	admitted := false
	defer func() {
		if !admitted {
			g.put(tokenID, tok)
		}
	}()
	// The fast path: both free.
	select {
	case tok.sem <- struct{}{}:
		select {
		case g.slots <- struct{}{}:
			admitted = true
			return g.admitted(0, tokenID, tok), nil
		default:
			<-tok.sem
		}
	default:
	}
	if g.timeout <= 0 {
		g.count("queue_full")
		if len(tok.sem) == cap(tok.sem) {
			return nil, g.busy("this token already has %d uploads in flight on this server, its maximum; retry shortly", cap(tok.sem))
		}
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
	// The token's share first, then a replica slot, within one timeout.
	select {
	case tok.sem <- struct{}{}:
	case <-t.C:
		g.count("timeout")
		return nil, g.busy("no upload slot freed up within %s on this server; retry shortly", g.timeout)
	case <-ctx.Done():
		g.count("cancelled")
		return nil, ctx.Err()
	}
	select {
	case g.slots <- struct{}{}:
		admitted = true
		return g.admitted(time.Since(start), tokenID, tok), nil
	case <-t.C:
		<-tok.sem
		g.count("timeout")
		return nil, g.busy("no upload slot freed up within %s on this server; retry shortly", g.timeout)
	case <-ctx.Done():
		<-tok.sem
		g.count("cancelled")
		return nil, ctx.Err()
	}
}

func (g *uploadGate) admitted(waited time.Duration, tokenID int64, tok *tokenSlots) func() {
	if g.metrics != nil {
		g.metrics.UploadsActive.Inc()
		g.metrics.UploadQueueWait.Observe(waited.Seconds())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-g.slots
			<-tok.sem
			g.put(tokenID, tok)
			if g.metrics != nil {
				g.metrics.UploadsActive.Dec()
			}
		})
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
