package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// OutboxStore hands out due deliveries and records their attempts.
type OutboxStore interface {
	// LeaseDeliveries takes up to limit due pending deliveries for lease (no other replica takes
	// them meanwhile) and counts the attempt.
	LeaseDeliveries(ctx context.Context, limit int, lease time.Duration) ([]distribution.DueDelivery, error)
	// FinishAttempt records an attempt and moves the delivery to state (pending: due at next).
	FinishAttempt(ctx context.Context, deliveryID int64, a distribution.WebhookAttempt, state string, next time.Time) error
}

// SenderConfig shapes delivery.
type SenderConfig struct {
	// RetryBase is the first retry's delay; each next one doubles, up to maxRetryDelay.
	RetryBase time.Duration
	// MaxAttempts ends a delivery as failed.
	MaxAttempts int
	// Poll is how often a replica looks for due deliveries.
	Poll time.Duration
	// Timeout bounds one attempt (the Client's own timeout; also sizes the lease).
	Timeout time.Duration
}

const maxRetryDelay = time.Hour

// parallel is how many deliveries a replica leases, and sends, at a time.
const parallel = 4

// Sender is the background component that delivers due webhook deliveries. Every replica runs
// one; leases keep two from sending one delivery at the same time, and a lease that runs out (its
// replica died mid-send) makes the delivery due again.
type Sender struct {
	Store   OutboxStore
	Client  *http.Client
	Config  SenderConfig
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// wake is the Sender's own doorbell: a request that just committed an event rings it (Wake)
	// and the running Sender looks at once instead of at its next poll.
	wake chan struct{}
	// leaseErr is the last failure to lease deliveries, "" after a success: a failure that
	// repeats (a read-only database during a failover, every poll for minutes) is logged once,
	// and its end once. Only Run's goroutine touches it.
	leaseErr string
}

// NewSender returns a Sender; it sends nothing until Run.
func NewSender(st OutboxStore, client *http.Client, cfg SenderConfig, m *metrics.Metrics, log *slog.Logger) *Sender {
	return &Sender{Store: st, Client: client, Config: cfg, Metrics: m, Log: log, wake: make(chan struct{}, 1)}
}

// Wake makes the running Sender look for due deliveries at once. It never blocks and starts
// nothing; when the Sender is busy or not running, the ring waits for its next look.
func (s *Sender) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run delivers due deliveries until ctx ends, then returns nil once the attempts in flight have
// ended and been recorded. Those attempts are not cut short by the stop: each runs to its answer
// or to the webhook timeout, so a shutdown never turns a delivery into a failed attempt (nor, at
// the last attempt, into a failed delivery); it leases nothing more after ctx ends, so whatever
// else is due stays due, for the other replicas or the next one.
func (s *Sender) Run(ctx context.Context) error {
	tick := time.NewTicker(s.Config.Poll)
	defer tick.Stop()
	for {
		for ctx.Err() == nil && s.deliverDue(ctx) {
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// deliverDue leases a few due deliveries, sends them side by side, and reports whether it found as
// many as it asked for (more may be due). It leases only what it sends at once, so a stop never
// leaves a leased delivery unsent.
func (s *Sender) deliverDue(ctx context.Context) bool {
	// A lease once taken is always sent: the query is not cut by a stop (only bounded), so it
	// cannot have leased rows nobody sends until the lease runs out.
	leaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	due, err := s.Store.LeaseDeliveries(leaseCtx, parallel, 2*s.Config.Timeout+10*time.Second)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			level := slog.LevelWarn
			if err.Error() == s.leaseErr {
				level = slog.LevelDebug // the same failure as at the last poll: said already
			}
			s.leaseErr = err.Error()
			s.Log.Log(ctx, level, "leasing webhook deliveries failed; retrying at every poll, logged again when the error changes",
				slog.String("error", err.Error()))
		}
		return false
	}
	if s.leaseErr != "" {
		s.leaseErr = ""
		s.Log.InfoContext(ctx, "leasing webhook deliveries works again")
	}
	// The attempts outlive a stop (see Run); the client's timeout bounds them.
	sendCtx := context.WithoutCancel(ctx)
	var wg sync.WaitGroup
	for i := range due {
		wg.Go(func() { s.deliver(sendCtx, &due[i]) })
	}
	wg.Wait()
	return len(due) == parallel
}

// deliver makes one attempt of a leased delivery and records it.
func (s *Sender) deliver(ctx context.Context, d *distribution.DueDelivery) {
	var env webhook.Envelope
	var a distribution.WebhookAttempt
	if err := json.Unmarshal(d.Payload, &env); err != nil {
		a = distribution.WebhookAttempt{At: time.Now(), Error: "the stored event is unreadable"}
	} else {
		a = send(ctx, s.Client, d, &env)
	}
	state, next := distribution.DeliveryDelivered, time.Time{}
	outcome := "delivered"
	if a.Error != "" {
		state, next, outcome = distribution.DeliveryPending, time.Now().Add(s.retryDelay(d.Attempts)), "retry"
		if d.Attempts >= s.Config.MaxAttempts {
			state, outcome = distribution.DeliveryFailed, "failed"
		}
	}
	if s.Metrics != nil {
		s.Metrics.WebhookDeliveries.WithLabelValues(outcome).Inc()
	}
	log := s.Log.With(slog.Int64("webhook_id", d.WebhookID), slog.Int64("delivery_id", d.ID), slog.String("event", d.Event),
		slog.Int("attempt", d.Attempts), slog.Int("status", a.StatusCode))
	switch outcome {
	case "retry":
		log.InfoContext(ctx, "webhook delivery failed; will retry", slog.String("error", a.Error), slog.Time("next_attempt_at", next))
	case "failed":
		log.WarnContext(ctx, "webhook delivery failed for good", slog.String("error", a.Error))
	}
	if err := s.Store.FinishAttempt(context.WithoutCancel(ctx), d.ID, a, state, next); err != nil {
		log.WarnContext(ctx, "recording a webhook attempt failed; the delivery is retried when its lease ends", slog.String("error", err.Error()))
	}
}

// retryDelay is the wait after the n-th failed attempt: RetryBase doubled per attempt, at most an
// hour.
func (s *Sender) retryDelay(n int) time.Duration {
	d := float64(s.Config.RetryBase) * math.Pow(2, float64(max(n-1, 0)))
	if d > float64(maxRetryDelay) {
		return maxRetryDelay
	}
	return time.Duration(d)
}
