// Package mailer is the background component that sends the mail outbox: mails written in the
// transaction of what causes them (an invitation, a new build, a sign-in link), handed to the SMTP
// relay by every replica's Sender, each mail by one replica at a time.
//
// Delivery is at most once per mail id across replicas while replicas live: a mail is leased
// (state sending, lease_until) by the replica that sends it, and its outcome is recorded only under
// that lease (the attempt number is the lease's token). A replica that dies mid-send leaves its
// lease to run out, and the mail is due again: then, if the relay had already accepted it, it goes
// out twice, with the same Message-ID (the one case no SMTP client can rule out: the relay's
// answer to the end of DATA was lost). A stop (SIGTERM) is not a death: Run finishes the sends in
// flight and records them before it returns, and gives back what it leased but had not begun.
//
// A relay that refuses for a while (4xx, a refused connection, a timeout) costs time, never mail:
// each mail is retried with exponential backoff, RetryBase doubled per attempt up to an hour, and
// given up (failed) only after MaxAttempts. A permanent refusal (5xx: an unknown recipient, a
// relay that will not relay for us) is retried PermanentAttempts times in case it was an operator's
// mistake fixed meanwhile (a wrong password is a 535), then given up; a message that cannot be
// composed (a header with a line break) fails at once.
package mailer

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// Store is the outbox (pkg/postgres's Mail part).
type Store interface {
	// LeaseMail takes up to limit due mails for lease and counts their attempt.
	LeaseMail(ctx context.Context, limit int, lease time.Duration) ([]distribution.DueMail, error)
	// FinishMail records an attempt's outcome while the mail is still leased with it (false:
	// it is not, and nothing changed).
	FinishMail(ctx context.Context, id string, attempt int, f distribution.MailFinish) (bool, error)
	// ReleaseMail gives back a leased mail that was not attempted.
	ReleaseMail(ctx context.Context, id string, attempt int) error
	// MailCounts counts the pending and the failed mails.
	MailCounts(ctx context.Context) (distribution.MailCounts, error)
	// PruneMail deletes up to limit mails finished before cutoff.
	PruneMail(ctx context.Context, cutoff time.Time, limit int) (int64, error)
}

// Objects reads a mail's inline images from the bucket (blob.Backend).
type Objects interface {
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
}

// maxInlineImage bounds one inline image read from the bucket: thumbnails are a few tens of KiB.
const maxInlineImage = 1 << 20

// Relay submits one message (mail.Client); its errors are classified by mail.ClassOf.
type Relay interface {
	Send(ctx context.Context, m mail.Message) error
}

// Config shapes sending.
type Config struct {
	// Poll is how often a replica looks for due mail (Wake looks at once).
	Poll time.Duration
	// RetryBase is the first retry's delay; each next one doubles, up to an hour.
	RetryBase time.Duration
	// MaxAttempts ends a mail as failed after this many temporary failures.
	MaxAttempts int
	// PermanentAttempts ends a mail as failed after this many attempts when the last was refused
	// for good (5xx). At most MaxAttempts.
	PermanentAttempts int
	// Rate is how many messages per second this replica hands to the relay, at most (a burst of
	// one: evenly spaced).
	Rate float64
	// SendTimeout bounds one message's whole submission (the client's own timeouts bound each
	// step; the service gives it two of them); with Rate it sizes the lease.
	SendTimeout time.Duration
}

// Defaults: what SLIPWAY_MAIL_* default to.
const (
	DefaultRate              = 10
	DefaultMaxAttempts       = 12 // at the default base, a relay may be down for about six hours
	DefaultPermanentAttempts = 3
	DefaultRetryBase         = 30 * time.Second
	DefaultPoll              = 5 * time.Second
	DefaultSendTimeout       = time.Minute
)

const (
	maxRetryDelay = time.Hour
	// parallel is how many mails a replica leases, and sends, at a time.
	parallel = 4
	// keepFinished is how long sent and failed mails stay in the outbox (their bodies are
	// cleared when sent): long enough that a use case retried with the same mail ids sends
	// nothing twice, short enough that the table does not grow for ever.
	keepFinished = 30 * 24 * time.Hour
	// pruneEvery is how often a replica prunes finished mail.
	pruneEvery = time.Hour
)

// Sender sends due mail. Every replica runs one; leases keep two from sending one mail at once.
type Sender struct {
	Store Store
	Relay Relay
	// Objects reads inline images (nil: mails go without them).
	Objects Objects
	Config  Config
	Metrics *metrics.Metrics
	Log     *slog.Logger

	limiter *rate.Limiter
	// wake is the doorbell: a write that just committed mail rings it (Wake) and the running
	// Sender looks at once instead of at its next poll.
	wake chan struct{}
	// leaseErr is the last failure to lease, "" after a success: a failure that repeats is
	// logged once, and its end once. Only Run's goroutine touches it.
	leaseErr  string
	lastPrune time.Time
}

// NewSender returns a Sender on relay; a nil relay (mail is not configured) makes one whose Run
// returns at once and whose On is false. It sends nothing until Run.
func NewSender(st Store, relay Relay, cfg Config, m *metrics.Metrics, log *slog.Logger) *Sender {
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.PermanentAttempts <= 0 {
		cfg.PermanentAttempts = DefaultPermanentAttempts
	}
	cfg.PermanentAttempts = min(cfg.PermanentAttempts, cfg.MaxAttempts)
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultRate
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	return &Sender{Store: st, Relay: relay, Config: cfg, Metrics: m, Log: log,
		limiter: rate.NewLimiter(rate.Limit(cfg.Rate), 1), wake: make(chan struct{}, 1)}
}

// On reports whether mail is configured: without a relay the outbox fills and nothing is sent
// (the pages say that mail is off).
func (s *Sender) On() bool { return s != nil && s.Relay != nil }

// Wake makes the running Sender look for due mail at once. It never blocks and starts nothing.
func (s *Sender) Wake() {
	if s == nil {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Counts counts the outbox's pending and failed mails.
func (s *Sender) Counts(ctx context.Context) (distribution.MailCounts, error) {
	return s.Store.MailCounts(ctx)
}

// lease is how long a replica holds the mails it leased: the wait for the rate limiter's turns
// and the sends themselves, twice over, so that a lease never runs out under a live sender.
func (s *Sender) lease() time.Duration {
	wait := time.Duration(float64(parallel) / s.Config.Rate * float64(time.Second))
	return 2*(wait+s.Config.SendTimeout) + 10*time.Second
}

// Run sends due mail until ctx ends, then returns nil once the sends in flight have ended and been
// recorded. A send is not cut by the stop (SendTimeout bounds it), so a shutdown never turns a
// mail into a failed attempt, nor sends one without recording it; mails leased but not begun are
// given back, due at once for the other replicas or the next one.
func (s *Sender) Run(ctx context.Context) error {
	if !s.On() {
		return nil
	}
	// The relay's kept connections end with the sender (mail.Client keeps them between mails).
	if c, ok := s.Relay.(io.Closer); ok {
		defer c.Close()
	}
	tick := time.NewTicker(s.Config.Poll)
	defer tick.Stop()
	for {
		for ctx.Err() == nil && s.sendDue(ctx) {
		}
		s.prune(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-s.wake:
		}
	}
}

// sendDue leases a few due mails, sends them side by side at the relay's rate, and reports whether
// it found as many as it asked for (more may be due).
func (s *Sender) sendDue(ctx context.Context) bool {
	// A lease once taken is always sent or given back: the query is not cut by a stop.
	leaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	due, err := s.Store.LeaseMail(leaseCtx, parallel, s.lease())
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			level := slog.LevelWarn
			if err.Error() == s.leaseErr {
				level = slog.LevelDebug
			}
			s.leaseErr = err.Error()
			s.Log.Log(ctx, level, "leasing mail failed; retrying at every poll, logged again when the error changes",
				slog.String("error", err.Error()))
		}
		return false
	}
	if s.leaseErr != "" {
		s.leaseErr = ""
		s.Log.InfoContext(ctx, "leasing mail works again")
	}
	var wg sync.WaitGroup
	for i := range due {
		wg.Go(func() { s.send(ctx, &due[i]) })
	}
	wg.Wait()
	return len(due) == parallel
}

// send waits for the relay's rate, makes one attempt of a leased mail and records it; a stop
// before its turn gives the mail back instead.
func (s *Sender) send(ctx context.Context, d *distribution.DueMail) {
	log := s.Log.With(slog.String("mail_id", d.ID), slog.String("kind", d.Kind), slog.String("recipient_domain", domainOf(d.To)),
		slog.Int("attempt", d.Attempt))
	record := context.WithoutCancel(ctx)
	if err := s.limiter.Wait(ctx); err != nil {
		if err := s.Store.ReleaseMail(record, d.ID, d.Attempt); err != nil {
			log.WarnContext(ctx, "giving back an unsent mail failed; it is due again when its lease ends", slog.String("error", err.Error()))
		}
		return
	}
	sendCtx, cancel := context.WithTimeout(record, s.Config.SendTimeout)
	err := s.Relay.Send(sendCtx, mail.Message{ID: d.ID, To: d.To, Subject: d.Subject, Text: d.Text, HTML: d.HTML, Headers: d.Headers,
		Inline: s.inline(sendCtx, d, log)})
	cancel()
	f, outcome := s.outcome(d, err)
	if s.Metrics != nil {
		s.Metrics.MailAttempts.WithLabelValues(outcome).Inc()
	}
	switch outcome {
	case "retry":
		log.InfoContext(ctx, "sending mail failed; will retry", slog.String("error", f.Error), slog.Time("next_attempt_at", f.Next))
	case "failed":
		log.WarnContext(ctx, "sending mail failed for good", slog.String("error", f.Error))
	default:
		log.DebugContext(ctx, "mail sent")
	}
	ok, ferr := s.finish(record, d, f)
	switch {
	case ferr != nil:
		log.WarnContext(ctx, "recording a mail's attempt failed; it is due again when its lease ends", slog.String("error", ferr.Error()))
	case !ok:
		log.WarnContext(ctx, "a mail's lease ran out before its attempt ended; another replica may have sent it too")
	}
}

// finish records an attempt's outcome, trying again for a few seconds when the database fails
// (a blip, a failover): a sent mail left leased is sent again when its lease runs out, so a record
// is worth a short wait, even during a stop.
func (s *Sender) finish(ctx context.Context, d *distribution.DueMail, f distribution.MailFinish) (bool, error) {
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ok, err := s.Store.FinishMail(rctx, d.ID, d.Attempt, f)
		cancel()
		if err == nil || try == finishTries {
			return ok, err
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// finishTries is how many times finish tries to record an outcome (over about three seconds).
const finishTries = 5

// outcome is what an attempt that ended with err makes of the mail, and its metric's label.
func (s *Sender) outcome(d *distribution.DueMail, err error) (distribution.MailFinish, string) {
	if err == nil {
		return distribution.MailFinish{State: distribution.OutboxSent}, "sent"
	}
	f := distribution.MailFinish{State: distribution.OutboxPending, Error: err.Error(), Next: time.Now().Add(s.retryDelay(d.Attempt))}
	limit := s.Config.MaxAttempts
	switch mail.ClassOf(err) {
	case mail.Invalid:
		limit = 0
	case mail.Permanent:
		limit = s.Config.PermanentAttempts
	}
	if d.Attempt >= limit {
		f.State, f.Next = distribution.OutboxFailed, time.Time{}
		return f, "failed"
	}
	return f, "retry"
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

// prune deletes finished mail older than keepFinished, at most every pruneEvery.
func (s *Sender) prune(ctx context.Context) {
	if ctx.Err() != nil || time.Since(s.lastPrune) < pruneEvery {
		return
	}
	s.lastPrune = time.Now()
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for pctx.Err() == nil {
		n, err := s.Store.PruneMail(pctx, time.Now().Add(-keepFinished), 1000)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.DebugContext(ctx, "pruning sent mail failed; retried in an hour", slog.String("error", err.Error()))
			}
			return
		}
		if n < 1000 {
			return
		}
	}
}

// domainOf is an address's domain: what a log line may say of a recipient.
func domainOf(addr string) string {
	if at := strings.LastIndexByte(addr, '@'); at >= 0 {
		return strings.ToLower(addr[at+1:])
	}
	return ""
}

// inline reads a mail's inline images. One that is gone (its report was deleted meanwhile) or
// cannot be read now is left out: the mail says in words what came with it, and goes.
func (s *Sender) inline(ctx context.Context, d *distribution.DueMail, log *slog.Logger) []mail.Inline {
	if s.Objects == nil || len(d.Inline) == 0 {
		return nil
	}
	var out []mail.Inline
	for _, img := range d.Inline {
		rc, err := s.Objects.GetRange(ctx, img.ObjectKey, 0, maxInlineImage+1)
		if err != nil {
			log.InfoContext(ctx, "an inline image of a mail cannot be read; the mail goes without it", slog.String("error", err.Error()))
			continue
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil || len(data) == 0 || len(data) > maxInlineImage {
			log.InfoContext(ctx, "an inline image of a mail is missing or too large; the mail goes without it", slog.Int("bytes", len(data)))
			continue
		}
		out = append(out, mail.Inline{CID: img.CID, ContentType: img.ContentType, Data: data})
	}
	return out
}
