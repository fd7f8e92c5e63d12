package testers

import (
	"context"
	"fmt"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// CheckInput normalises a distribution's emails and checks its size, before anything is stored
// (an upload checks it before it reads the package).
func CheckInput(in *distribution.DistributeInput) error {
	emails, err := distribution.NormaliseEmails("testers", in.Testers)
	if err != nil {
		return err
	}
	in.Testers = emails
	if len(in.Groups) > 100 {
		return errs.Field("groups", "names %d groups; at most 100 a call", len(in.Groups))
	}
	return nil
}

// Distribute sends a release already uploaded to testers and groups (and to its channel's
// groups), in one transaction: the rows saying where it went and the mails, all or nothing.
func (t *Testers) Distribute(ctx context.Context, releaseID int64, in distribution.DistributeInput) (distribution.Distributed, error) {
	rc, err := t.Releases.GetRelease(ctx, releaseID)
	if err != nil {
		return distribution.Distributed{}, err
	}
	if err := t.Policy.Authorize(ctx, policy.Distribute, policy.OnApp(rc.App.ID)); err != nil {
		return distribution.Distributed{}, err
	}
	if err := CheckInput(&in); err != nil {
		return distribution.Distributed{}, err
	}
	var d distribution.Distributed
	err = t.Store.InDistributionTx(ctx, func(tx distribution.DistributionTx) error {
		var err error
		d, err = t.DistributeIn(ctx, tx, rc, in)
		return err
	})
	if err != nil {
		return distribution.Distributed{}, err
	}
	t.Committed(d)
	t.Audit.Record(ctx, "release.distribute", distribution.ReleaseTarget(rc),
		map[string]any{"testers": d.Testers, "notified": d.Notified, "groups": in.Groups, "named": len(in.Testers)})
	return d, nil
}

// DistributeIn distributes rc inside tx, the transaction recording it (an upload's, or
// Distribute's): it records the distribution (the groups named, the testers named, made when new)
// and counts whom it reaches; the mailing component expands it after the commit (expand), so the
// transaction takes no longer for a group of ten thousand than for one of ten. The caller
// authorized the actor (Upload or Distribute) and checked in (CheckInput), and calls Committed
// after the commit.
func (t *Testers) DistributeIn(ctx context.Context, tx distribution.DistributionTx, rc *distribution.ReleaseContext,
	in distribution.DistributeInput) (distribution.Distributed, error) {
	if !rc.Channel.TesterOnly && in.Empty() {
		// A channel without tester groups reaches nobody by itself: nothing to look up.
		return distribution.Distributed{}, nil
	}
	gs, err := tx.GroupsByAlias(ctx, in.Groups)
	if err != nil {
		return distribution.Distributed{}, err
	}
	req := distribution.DistributionRequest{ReleaseID: rc.ID, AppID: rc.App.ID, ChannelID: rc.Channel.ID, Emails: in.Testers}
	for _, g := range gs {
		req.GroupIDs = append(req.GroupIDs, g.ID)
	}
	summary := []string{}
	if rc.News != nil && rc.News.Summary != nil {
		summary = rc.News.Summary
	}
	return tx.QueueDistribution(ctx, req, in.Notify == nil || *in.Notify, summary)
}

// expand turns a queued distribution into where the release went and which mail each tester
// gets, in tx (the mailing component's): everyone its channel's groups, its groups and its named
// testers reach now, except those it went to before (nobody gets a second mail for one release).
func (t *Testers) expand(ctx context.Context, tx distribution.DistributionTx, rc *distribution.ReleaseContext,
	q *distribution.QueuedDistribution) (distribution.Distributed, error) {
	rs, err := tx.Recipients(ctx, q.Request)
	if err != nil {
		return distribution.Distributed{}, err
	}
	var d distribution.Distributed
	ds := make([]distribution.Delivery, 0, len(rs))
	var invited []distribution.Tester
	for _, r := range rs {
		if r.Already {
			// Only a change of "named for this build" is recorded; no second mail.
			ds = append(ds, distribution.Delivery{TesterID: r.TesterID, Direct: r.Direct, Mail: distribution.MailNone})
			continue
		}
		d.Testers++
		if !r.KnowsApp {
			invited = append(invited, distribution.Tester{ID: r.TesterID, Email: r.Email, Name: r.Name})
		}
		del := distribution.Delivery{TesterID: r.TesterID, Direct: r.Direct, Mail: distribution.MailNone}
		switch {
		case !q.Notify:
		case !r.KnowsApp:
			del.Mail, del.Kind = distribution.MailPending, distribution.MailInvitation
		case r.Mail == distribution.MailEvery:
			del.Mail, del.Kind = distribution.MailPending, distribution.MailNewBuild
		case r.Mail == distribution.MailDaily:
			del.Mail = distribution.MailDigest
		}
		if del.Mail == distribution.MailPending {
			d.Notified++
		}
		ds = append(ds, del)
	}
	var summary []string
	if d.Notified > 0 {
		summary = q.Summary
	}
	if err := tx.RecordDistribution(ctx, q.Request, ds, summary); err != nil {
		return distribution.Distributed{}, err
	}
	if len(invited) > 0 && t.Events != nil {
		// One tester.invited per distribution (not per tester: a group of ten thousand is one
		// chat message, not ten thousand).
		ev, err := t.Events.TesterEvent(webhook.EventTesterInvited, rc, invited)
		if err != nil {
			return distribution.Distributed{}, err
		}
		if err := tx.WriteEvents(ctx, []distribution.Event{ev}); err != nil {
			return distribution.Distributed{}, err
		}
		d.Invited = len(invited)
	}
	return d, nil
}

// Committed is called after the transaction of a distribution commits: the mailing component
// writes its mails at once, and the webhook sender sends its tester.invited.
func (t *Testers) Committed(d distribution.Distributed) {
	if d.Queued && t.Mailings != nil {
		t.Mailings.Wake()
	}
}

// mailID is the outbox id (the Message-ID's local part) of a release's mail to a tester: one per
// release and tester, so that no retry sends it twice.
func mailID(kind string, releaseID, testerID int64) string {
	return fmt.Sprintf("%s.r%d.t%d", kind, releaseID, testerID)
}
