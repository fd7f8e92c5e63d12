// Package testers runs the use cases of testers: groups and who is in them, which channels they
// open, distributing a release to testers (with the mails it causes, written to the outbox in
// the same transaction), tester sign-in with a mailed link, and what each tester did with each
// release. A tester is an email address; nobody needs an account anywhere else.
package testers

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Store keeps testers and groups (pkg/postgres).
type Store interface {
	CreateGroup(ctx context.Context, alias, name string) (*distribution.TesterGroup, error)
	Groups(ctx context.Context) ([]distribution.TesterGroup, error)
	GroupsByAlias(ctx context.Context, aliases []string) ([]distribution.TesterGroup, error)
	DeleteGroup(ctx context.Context, alias string) (*distribution.TesterGroup, error)
	AddToGroup(ctx context.Context, alias string, ts []distribution.TesterInput) ([]distribution.Tester, error)
	RemoveFromGroup(ctx context.Context, alias, email string) (*distribution.Tester, error)
	ListTesters(ctx context.Context, alias string) ([]distribution.Tester, error)
	TesterByEmail(ctx context.Context, email string) (*distribution.Tester, error)
	TesterByID(ctx context.Context, id int64) (*distribution.Tester, error)
	ChannelGroups(ctx context.Context, channelID int64) ([]distribution.TesterGroup, error)
	SetChannelGroups(ctx context.Context, channelID int64, groupIDs []int64) error
	ReleaseTesters(ctx context.Context, releaseID int64) ([]distribution.ReleaseTester, error)
	MarkSeen(ctx context.Context, releaseID, testerID int64, installed bool) (bool, error)
	TesterReleases(ctx context.Context, testerID int64, limit int) ([]distribution.TesterRelease, error)
	TesterApps(ctx context.Context, testerID int64) ([]distribution.TesterApp, error)
	SetTesterMail(ctx context.Context, testerID, appID int64, mode string) error
	InDistributionTx(ctx context.Context, fn func(tx distribution.DistributionTx) error) error
	SignInStore
	StateStore
	policy.TesterGrants
	// WriteEventsNow puts webhook events in the outbox in a transaction of their own.
	WriteEventsNow(ctx context.Context, evs []distribution.Event) error
}

// Events makes the webhook events of testers (events.Maker).
type Events interface {
	TesterEvent(kind string, rc *distribution.ReleaseContext, testers []distribution.Tester) (distribution.Event, error)
}

// Releases reads the release a distribution names (catalog.Releases's store).
type Releases interface {
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
}

// Config shapes testers' sign-in and mail.
type Config struct {
	// PublicURL is the service's address, for the links in mails.
	PublicURL string
	// SessionTTL is how long a tester stays signed in after using a link.
	SessionTTL time.Duration
	// MailOn: an SMTP relay is configured (without one, mails wait in the outbox and the
	// console says mail is off).
	MailOn bool
}

// Testers runs the use cases of testers and groups.
type Testers struct {
	Store    Store
	Releases Releases
	Policy   *policy.Policy
	Audit    *distribution.AuditLog
	Signer   *signing.Signer
	Config   Config
	// Mail wakes the mail sender after a commit that wrote mail (nil: it finds it at its poll);
	// Mailings wakes the component that writes distributions' mail (Mailings).
	Mail     distribution.Waker
	Mailings distribution.Waker
	// Events makes tester.invited and tester.installed; Webhooks wakes their sender (nil: no
	// events).
	Events   Events
	Webhooks distribution.Waker
}

// mail is what composes testers' mails: the links they carry and the signer of their tokens.
func (t *Testers) mail() composer {
	return composer{links: links.Links{Base: t.Config.PublicURL}, signer: t.Signer}
}

// composer composes testers' mails (mails.go).
type composer struct {
	links  links.Links
	signer *signing.Signer
}

// wake makes the mail sender look at the outbox at once.
func (t *Testers) wake() {
	if t.Mail != nil {
		t.Mail.Wake()
	}
}

// GroupInput is a group as a client makes it.
type GroupInput struct {
	Alias string `param:"alias"`
	Name  string `param:"name"`
}

var aliasRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CreateGroup makes a group.
func (t *Testers) CreateGroup(ctx context.Context, in GroupInput) (*distribution.TesterGroup, error) {
	if err := t.Policy.Authorize(ctx, policy.ManageTesters, policy.Installation); err != nil {
		return nil, err
	}
	alias := strings.TrimSpace(in.Alias)
	if !aliasRe.MatchString(alias) {
		return nil, errs.Field("alias", "must be 1 to 63 lower-case letters, digits, dots, dashes or underscores, starting with a letter or digit (e.g. qa)")
	}
	name, err := distribution.ShortText("name", in.Name)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = alias
	}
	g, err := t.Store.CreateGroup(ctx, alias, name)
	if err != nil {
		return nil, err
	}
	t.Audit.Record(ctx, "tester_group.create", groupTarget(g), map[string]any{"alias": g.Alias})
	return g, nil
}

func groupTarget(g *distribution.TesterGroup) distribution.AuditTarget {
	return distribution.AuditTarget{Kind: distribution.TargetGroup, ID: g.ID, Name: "tester group " + g.Alias}
}

// Groups lists every group.
func (t *Testers) Groups(ctx context.Context) ([]distribution.TesterGroup, error) {
	if err := t.Policy.Authorize(ctx, policy.ReadTesters, policy.Installation); err != nil {
		return nil, err
	}
	return t.Store.Groups(ctx)
}

// DeleteGroup deletes a group. A channel it opened stays open to its other groups' testers only
// (to nobody else, when it was the last): deleting a group never opens a channel.
func (t *Testers) DeleteGroup(ctx context.Context, alias string) error {
	if err := t.Policy.Authorize(ctx, policy.ManageTesters, policy.Installation); err != nil {
		return err
	}
	g, err := t.Store.DeleteGroup(ctx, alias)
	if err != nil {
		return err
	}
	t.Audit.Record(ctx, "tester_group.delete", groupTarget(g), map[string]any{"alias": g.Alias})
	return nil
}

// AddTestersInput names the testers to put in a group: emails, and optionally their names (in
// the same order; a CSV's name column).
type AddTestersInput struct {
	Emails []string `param:"emails"`
	Names  []string `param:"names"`
}

// AddTesters puts testers in a group, making those that are new (all or nothing; at most
// distribution.MaxTestersPerCall a call; each invalid email named), and returns everyone now in
// the group.
func (t *Testers) AddTesters(ctx context.Context, alias string, in AddTestersInput) ([]distribution.Tester, error) {
	if err := t.Policy.Authorize(ctx, policy.ManageTesters, policy.Installation); err != nil {
		return nil, err
	}
	if len(in.Emails) == 0 {
		return nil, errs.Field("emails", "name at least one email")
	}
	if len(in.Names) > 0 && len(in.Names) != len(in.Emails) {
		return nil, errs.Field("names", "gives %d names for %d emails; give one for each, or none", len(in.Names), len(in.Emails))
	}
	emails, err := distribution.NormaliseEmails("emails", in.Emails)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for i, n := range in.Names {
		e, _ := distribution.NormaliseEmail(in.Emails[i])
		if n, err = distribution.ShortText("names", n); err != nil {
			return nil, err
		}
		names[e] = n
	}
	ts := make([]distribution.TesterInput, len(emails))
	for i, e := range emails {
		ts[i] = distribution.TesterInput{Email: e, Name: names[e]}
	}
	out, err := t.Store.AddToGroup(ctx, alias, ts)
	if err != nil {
		return nil, err
	}
	t.Audit.Record(ctx, "tester_group.add", distribution.AuditTarget{Kind: distribution.TargetGroup, Name: "tester group " + alias},
		map[string]any{"alias": alias, "added": len(emails)})
	return out, nil
}

// RemoveTester takes a tester out of a group: at once, they reach nothing the group opened.
func (t *Testers) RemoveTester(ctx context.Context, alias, email string) error {
	if err := t.Policy.Authorize(ctx, policy.ManageTesters, policy.Installation); err != nil {
		return err
	}
	e, err := distribution.NormaliseEmail(email)
	if err != nil {
		return err
	}
	tr, err := t.Store.RemoveFromGroup(ctx, alias, e)
	if err != nil {
		return err
	}
	t.Audit.Record(ctx, "tester_group.remove", distribution.AuditTarget{Kind: distribution.TargetTester, ID: tr.ID, Name: tr.Email},
		map[string]any{"alias": alias})
	return nil
}

// ListTesters lists testers: a group's (alias), or every one ("").
func (t *Testers) ListTesters(ctx context.Context, alias string) ([]distribution.Tester, error) {
	if err := t.Policy.Authorize(ctx, policy.ReadTesters, policy.Installation); err != nil {
		return nil, err
	}
	return t.Store.ListTesters(ctx, alias)
}

// ReleaseTesters lists everyone who may install a release, with what they did with it.
func (t *Testers) ReleaseTesters(ctx context.Context, releaseID int64) ([]distribution.ReleaseTester, error) {
	rc, err := t.Releases.GetRelease(ctx, releaseID)
	if err != nil {
		return nil, err
	}
	if err := t.Policy.Authorize(ctx, policy.ReadTesters, policy.OnApp(rc.App.ID)); err != nil {
		return nil, err
	}
	return t.Store.ReleaseTesters(ctx, releaseID)
}

// ChannelGroups lists the groups that open a channel (the channel's view and page).
func (t *Testers) ChannelGroups(ctx context.Context, channelID int64) ([]distribution.TesterGroup, error) {
	return t.Store.ChannelGroups(ctx, channelID)
}

// SetChannelGroups makes the groups of those aliases the ones that open a channel (none: it is
// open as before, to anyone with its link or its password). The caller (catalog.Apps) checked
// that the actor may manage the channel's app.
func (t *Testers) SetChannelGroups(ctx context.Context, cc *distribution.ChannelContext, aliases []string) error {
	gs, err := t.Store.GroupsByAlias(ctx, aliases)
	if err != nil {
		return err
	}
	ids := make([]int64, len(gs))
	names := make([]string, len(gs))
	for i, g := range gs {
		ids[i], names[i] = g.ID, g.Alias
	}
	if err := t.Store.SetChannelGroups(ctx, cc.Channel.ID, ids); err != nil {
		return err
	}
	t.Audit.Record(ctx, "channel.tester_groups", distribution.ChannelTarget(cc), map[string]any{"tester_groups": names})
	return nil
}

// Opened and Installed record that the context's tester (a tester session, or the tester a
// console user is) opened a release's page or installed it; the first install is reported
// (true) so the caller can send tester.installed.
func (t *Testers) Seen(ctx context.Context, releaseID int64, installed bool) (bool, error) {
	a, ok := distribution.ActorIn(ctx)
	if !ok || a.TesterID == 0 {
		return false, nil
	}
	first, err := t.Store.MarkSeen(ctx, releaseID, a.TesterID, installed)
	if err != nil || !first || !installed || t.Events == nil {
		return first, err
	}
	// The first install by this tester: tester.installed.
	rc, err := t.Releases.GetRelease(ctx, releaseID)
	if err != nil {
		return first, err
	}
	tr, err := t.Store.TesterByID(ctx, a.TesterID)
	if err != nil {
		return first, err
	}
	ev, err := t.Events.TesterEvent(webhook.EventTesterInstalled, rc, []distribution.Tester{*tr})
	if err == nil {
		err = t.Store.WriteEventsNow(ctx, []distribution.Event{ev})
	}
	if err == nil && t.Webhooks != nil {
		t.Webhooks.Wake()
	}
	return first, err
}

// Home is what a tester's home page shows: the releases given to them, newest first, and their
// mail choice for each app.
type Home struct {
	Tester   *distribution.Tester
	Releases []distribution.TesterRelease
	Apps     []distribution.TesterApp
}

// homeLimit bounds the releases a home page lists.
const homeLimit = 200

// HomeOf returns the home of the context's tester (a tester session, or the tester a console
// user is by their email); errs.Unauthenticated for anyone else.
func (t *Testers) HomeOf(ctx context.Context, tr *distribution.Tester) (*Home, error) {
	if tr == nil {
		return nil, errs.New(errs.Unauthenticated, "sign in with the link Slipway mails you")
	}
	rs, err := t.Store.TesterReleases(ctx, tr.ID, homeLimit)
	if err != nil {
		return nil, err
	}
	apps, err := t.Store.TesterApps(ctx, tr.ID)
	if err != nil {
		return nil, err
	}
	return &Home{Tester: tr, Releases: rs, Apps: apps}, nil
}

// SetMail sets a tester's mail choice for an app (every build, a daily digest, or none).
func (t *Testers) SetMail(ctx context.Context, tr *distribution.Tester, appID int64, mode string) error {
	if tr == nil {
		return errs.New(errs.Unauthenticated, "sign in with the link Slipway mails you")
	}
	if !slices.Contains(distribution.MailChoices, mode) {
		return errs.Field("mail", "must be one of %s", strings.Join(distribution.MailChoices, ", "))
	}
	if err := t.Store.SetTesterMail(ctx, tr.ID, appID, mode); err != nil {
		return err
	}
	t.Audit.RecordAs(ctx, distribution.TesterActor(tr), "tester.mail", distribution.AuditTarget{Kind: distribution.TargetTester,
		ID: tr.ID, Name: tr.Email, AppID: appID}, map[string]any{"mail": mode})
	return nil
}
