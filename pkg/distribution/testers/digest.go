package testers

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// DigestStore hands out the daily digests that are due and records them sent.
type DigestStore interface {
	// InDigestTx runs fn with the digests due (a tester and an app with builds waiting for the
	// tester's digest, whose last digest is at least every ago, or whose oldest waiting build is),
	// each locked for this transaction (other replicas skip them), at most limit of them; mark
	// records them sent with the mails fn writes.
	InDigestTx(ctx context.Context, every time.Duration, limit int,
		fn func(due []distribution.Digest, tx DigestTx) error) error
}

// DigestTx records digests in the transaction that found them.
type DigestTx interface {
	// MarkDigested records the digests sent: their builds digested, their time now.
	MarkDigested(ctx context.Context, due []distribution.Digest) error
	WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error
}

// Digests is the background component that sends each tester who chose a daily digest one mail
// a day per app, listing the builds given to them since the last one. Every replica runs it;
// row locks keep two from sending one digest.
type Digests struct {
	Testers *Testers
	Store   DigestStore
	// Interval is how often it looks for due digests (0: never); Every is how far apart one
	// tester's digests of one app are (a day).
	Interval, Every time.Duration
	Log             *slog.Logger
}

// digestBatch bounds the digests one transaction sends.
const digestBatch = 500

// Run sends due digests every Interval until ctx ends.
func (d *Digests) Run(ctx context.Context) error {
	if d.Interval <= 0 {
		return nil
	}
	tick := time.NewTicker(d.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if _, err := d.SendDue(ctx); err != nil && ctx.Err() == nil {
			d.Log.WarnContext(ctx, "sending daily digests failed; the next run retries", slog.String("error", err.Error()))
		}
	}
}

// SendDue writes every due digest to the outbox, a batch per transaction, and returns how many.
func (d *Digests) SendDue(ctx context.Context) (int, error) {
	every := d.Every
	if every <= 0 {
		every = 24 * time.Hour
	}
	total := 0
	for {
		n := 0
		err := d.Store.InDigestTx(ctx, every, digestBatch, func(due []distribution.Digest, tx DigestTx) error {
			n = len(due)
			if n == 0 {
				return nil
			}
			mails := make([]distribution.OutgoingMail, 0, len(due))
			for i := range due {
				mails = append(mails, d.Testers.digest(&due[i]))
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
		if n < digestBatch {
			return total, nil
		}
	}
}

// digest is one tester's daily mail for one app.
func (t *Testers) digest(dg *distribution.Digest) distribution.OutgoingMail {
	l := t.links()
	v := mailView{AppName: dg.AppName, Name: dg.Name, HomeURL: l.TesterHome(), SignInURL: l.TesterSignIn(),
		UnsubscribeURL: l.Unsubscribe(t.UnsubscribeToken(dg.TesterID, dg.AppID))}
	for _, b := range dg.Builds {
		v.Builds = append(v.Builds, digestBuild{Version: versionLabel(&distribution.Release{ReleaseVersion: b.ReleaseVersion, BuildVersion: b.BuildVersion}),
			Channel: b.ChannelName, URL: l.Release(b.ChannelSlug, b.ReleaseID)})
	}
	subject := fmt.Sprintf("%s: %d new build(s) to install", dg.AppName, len(dg.Builds))
	// One digest per tester, app and newest build: a retried run writes the same id.
	id := fmt.Sprintf("digest.a%d.t%d.r%d", dg.AppID, dg.TesterID, dg.Builds[len(dg.Builds)-1].ReleaseID)
	return t.compose(distribution.MailDigestKind, id, dg.Email, subject, v, unsubscribeHeaders(v.UnsubscribeURL))
}

// digestBuild is one build a digest lists.
type digestBuild struct{ Version, Channel, URL string }
