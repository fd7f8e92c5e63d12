package testers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// MailingStore hands out the mails distributions recorded and the daily digests that are due,
// and records them written.
type MailingStore interface {
	// InQueuedTx runs fn with the oldest queued distribution (nil: none), locked for this
	// transaction (other replicas take the next), and deletes it when fn succeeds.
	InQueuedTx(ctx context.Context, fn func(q *distribution.QueuedDistribution, tx distribution.DistributionTx) error) error
	// InPendingTx runs fn with up to limit mails distributions recorded and not yet written,
	// each locked for this transaction (other replicas skip them).
	InPendingTx(ctx context.Context, limit int, fn func(pending []distribution.PendingMail, tx PendingTx) error) error
	// InDigestTx runs fn with the digests due (a tester and an app with builds waiting for the
	// tester's digest, whose last digest is at least every ago, or whose oldest waiting build is),
	// each locked for this transaction (other replicas skip them), at most limit of them; mark
	// records them sent with the mails fn writes.
	InDigestTx(ctx context.Context, every time.Duration, limit int,
		fn func(due []distribution.Digest, tx DigestTx) error) error
}

// PendingTx writes pending mails in the transaction that found them.
type PendingTx interface {
	// MarkQueued records the mails written to the outbox.
	MarkQueued(ctx context.Context, pending []distribution.PendingMail) error
	WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error
}

// DigestTx records digests in the transaction that found them.
type DigestTx interface {
	// MarkDigested records the digests sent: their builds digested, their time now.
	MarkDigested(ctx context.Context, due []distribution.Digest) error
	WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error
}

// Mailings is the background component that writes testers' mail to the outbox: the invitations
// and new-build mails that distributions recorded (woken after each commit, and polling), and,
// every DigestInterval, the daily digests that are due (one mail a day per tester and app listing
// the builds given since the last). An upload's transaction records only who gets which mail, so
// a group of ten thousand testers does not make the upload wait for ten thousand mails. Every
// replica runs it; row locks keep two from writing one mail.
type Mailings struct {
	Testers *Testers
	Store   MailingStore
	// Poll is how often it looks for pending mail without being woken; DigestInterval how often
	// for due digests (0: never); DigestEvery how far apart one tester's digests of an app are.
	Poll, DigestInterval, DigestEvery time.Duration
	Log                               *slog.Logger
	wake                              chan struct{}
}

// NewMailings returns the component; it writes nothing until Run.
func NewMailings(t *Testers, st MailingStore, poll, digestInterval, digestEvery time.Duration, log *slog.Logger) *Mailings {
	return &Mailings{Testers: t, Store: st, Poll: poll, DigestInterval: digestInterval, DigestEvery: digestEvery, Log: log,
		wake: make(chan struct{}, 1)}
}

// Wake makes the running component write pending mail at once. It never blocks.
func (d *Mailings) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// batch bounds the mails or digests one transaction writes.
const batch = 500

// Run writes pending mail when woken or every Poll, and due digests every DigestInterval, until
// ctx ends. A batch in progress when ctx ends is rolled back, to be written by the next run.
func (d *Mailings) Run(ctx context.Context) error {
	poll := time.NewTicker(max(d.Poll, 10*time.Millisecond))
	defer poll.Stop()
	var digests <-chan time.Time
	if d.DigestInterval > 0 {
		tick := time.NewTicker(d.DigestInterval)
		defer tick.Stop()
		digests = tick.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-poll.C:
		case <-digests:
			if _, err := d.SendDue(ctx); err != nil && ctx.Err() == nil {
				d.Log.WarnContext(ctx, "writing daily digests failed; the next run retries", slog.String("error", err.Error()))
			}
			continue
		}
		if _, err := d.Expand(ctx); err != nil && ctx.Err() == nil {
			d.Log.WarnContext(ctx, "expanding distributions failed; the next run retries", slog.String("error", err.Error()))
		}
		if _, err := d.WritePending(ctx); err != nil && ctx.Err() == nil {
			d.Log.WarnContext(ctx, "writing testers' mail failed; the next run retries", slog.String("error", err.Error()))
		}
	}
}

// Expand expands every queued distribution, one per transaction, and returns how many.
func (d *Mailings) Expand(ctx context.Context) (int, error) {
	total := 0
	for {
		found := false
		var out distribution.Distributed
		err := d.Store.InQueuedTx(ctx, func(q *distribution.QueuedDistribution, tx distribution.DistributionTx) error {
			if q == nil {
				return nil
			}
			found = true
			rc, err := d.Testers.Releases.GetRelease(ctx, q.Request.ReleaseID)
			if errs.Is(err, errs.NotFound) {
				return nil // deleted meanwhile: nothing to send (its rows went with it)
			}
			if err != nil {
				return err
			}
			out, err = d.Testers.expand(ctx, tx, rc, q)
			return err
		})
		if err != nil || !found {
			return total, err
		}
		total++
		if out.Invited > 0 && d.Testers.Webhooks != nil {
			d.Testers.Webhooks.Wake()
		}
	}
}

// WritePending writes every mail distributions recorded to the outbox, a batch per transaction,
// and returns how many.
func (d *Mailings) WritePending(ctx context.Context) (int, error) {
	total := 0
	for {
		n := 0
		err := d.Store.InPendingTx(ctx, batch, func(pending []distribution.PendingMail, tx PendingTx) error {
			n = len(pending)
			if n == 0 {
				return nil
			}
			releases := map[int64]*distribution.ReleaseContext{}
			mails := make([]distribution.OutgoingMail, 0, n)
			for i := range pending {
				p := &pending[i]
				rc := releases[p.ReleaseID]
				if rc == nil {
					var err error
					if rc, err = d.Testers.Releases.GetRelease(ctx, p.ReleaseID); err != nil {
						return err
					}
					releases[p.ReleaseID] = rc
				}
				mails = append(mails, d.Testers.mail().releaseMail(rc, p))
			}
			if err := tx.WriteMail(ctx, mails); err != nil {
				return err
			}
			return tx.MarkQueued(ctx, pending)
		})
		if err != nil {
			return total, err
		}
		total += n
		if n > 0 {
			d.Testers.wake()
		}
		if n < batch {
			return total, nil
		}
	}
}

// SendDue writes every due digest to the outbox, a batch per transaction, and returns how many.
func (d *Mailings) SendDue(ctx context.Context) (int, error) {
	every := d.DigestEvery
	if every <= 0 {
		every = 24 * time.Hour
	}
	total := 0
	for {
		n := 0
		err := d.Store.InDigestTx(ctx, every, batch, func(due []distribution.Digest, tx DigestTx) error {
			n = len(due)
			if n == 0 {
				return nil
			}
			mails := make([]distribution.OutgoingMail, 0, len(due))
			for i := range due {
				mails = append(mails, d.Testers.mail().digest(&due[i]))
			}
			if err := tx.WriteMail(ctx, mails); err != nil {
				return err
			}
			return tx.MarkDigested(ctx, due)
		})
		if err != nil {
			return total, err
		}
		total += n
		if n > 0 {
			d.Testers.wake()
		}
		if n < batch {
			return total, nil
		}
	}
}

// digest is one tester's daily mail for one app.
func (m composer) digest(dg *distribution.Digest) distribution.OutgoingMail {
	l := m.links
	v := mailView{AppName: dg.AppName, Name: dg.Name, HomeURL: l.TesterHome(), SignInURL: l.TesterSignIn(),
		UnsubscribeURL: l.Unsubscribe(m.unsubscribeToken(dg.TesterID, dg.AppID))}
	for _, b := range dg.Builds {
		v.Builds = append(v.Builds, digestBuild{Version: versionLabel(&distribution.Release{ReleaseVersion: b.ReleaseVersion, BuildVersion: b.BuildVersion}),
			Channel: b.ChannelName, URL: l.Release(b.ChannelSlug, b.ReleaseID)})
	}
	subject := fmt.Sprintf("%s: %d new build(s) to install", dg.AppName, len(dg.Builds))
	// One digest per tester, app and newest build: a retried run writes the same id.
	id := fmt.Sprintf("digest.a%d.t%d.r%d", dg.AppID, dg.TesterID, dg.Builds[len(dg.Builds)-1].ReleaseID)
	return m.compose(distribution.MailDigestKind, id, dg.Email, subject, v, unsubscribeHeaders(v.UnsubscribeURL))
}

// digestBuild is one build a digest lists.
type digestBuild struct{ Version, Channel, URL string }
