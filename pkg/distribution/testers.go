package distribution

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Tester is a person who installs builds: an email address (normalised: NormaliseEmail) with an
// optional name. Staff who sign in to the console are testers with the same email.
type Tester struct {
	ID        int64
	Email     string
	Name      string
	CreatedAt time.Time
	// Groups are the aliases of the groups the tester is in (filled by listings).
	Groups []string
}

// TesterGroup is a named set of testers, shared across apps.
type TesterGroup struct {
	ID        int64
	Alias     string
	Name      string
	CreatedAt time.Time
	// Testers is how many testers are in the group.
	Testers int
}

// Tester states on a release, in order: distributed to them, the release page opened, the
// build installed (its manifest or package fetched with the tester's session or link).
const (
	TesterInvited   = "invited"
	TesterOpened    = "opened"
	TesterInstalled = "installed"
)

// ReleaseTester is a tester a release went to, with what they did with it.
type ReleaseTester struct {
	Tester
	// Direct: named for this build (an upload's testers), not reached through a group.
	Direct      bool
	InvitedAt   time.Time
	OpenedAt    *time.Time
	InstalledAt *time.Time
	// Mail is what was sent for it (MailNone, MailQueued, MailDigest, MailDigested).
	Mail string
}

// State is the furthest the tester went with the release.
func (rt ReleaseTester) State() string {
	switch {
	case rt.InstalledAt != nil:
		return TesterInstalled
	case rt.OpenedAt != nil:
		return TesterOpened
	}
	return TesterInvited
}

// What was mailed for a release to a tester (ReleaseTester.Mail).
const (
	MailNone     = "none"
	MailPending  = "pending"
	MailQueued   = "queued"
	MailDigest   = "digest"
	MailDigested = "digested"
)

// A tester's mail choice for an app: every build, a daily digest, or none.
const (
	MailEvery = "every"
	MailDaily = "daily"
	MailOff   = "none"
)

// MailChoices lists a tester's mail choices for an app.
var MailChoices = []string{MailEvery, MailDaily, MailOff}

// TesterApp is an app a tester may install builds of, with their mail choice for it.
type TesterApp struct {
	AppID   int64
	AppName string
	Mail    string
}

// Mail kinds (OutgoingMail.Kind).
const (
	MailInvitation = "invitation"
	MailNewBuild   = "new_build"
	MailDigestKind = "digest"
	MailSignIn     = "sign_in"
)

// OutgoingMail is a mail in the outbox: written in the transaction of what causes it, sent by the
// mail sender. ID is the Message-ID's local part (a retried send is the same message).
type OutgoingMail struct {
	ID      string
	Kind    string
	To      string
	Subject string
	Text    string
	HTML    string
	// Headers are extra headers (List-Unsubscribe, List-Unsubscribe-Post).
	Headers map[string]string
	// Inline are images the HTML shows by content id (<img src="cid:…">), read from the bucket
	// when the mail is sent.
	Inline []MailImage
}

// MailImage is an image of a mail's HTML, by its object in the bucket.
type MailImage struct {
	CID         string
	ObjectKey   string
	ContentType string
}

// MaxEmailLength bounds an email address (RFC 5321's path limit).
const MaxEmailLength = 254

// NormaliseEmail returns an email address as testers are keyed by: a bare addr-spec (no display
// name), trimmed and lower-cased. An address that is not one is an error naming it.
func NormaliseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxEmailLength || strings.ContainsAny(s, " \t\r\n<>,;\"") {
		return "", errs.New(errs.Invalid, "%q is not an email address", clip(s, 80))
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return "", errs.New(errs.Invalid, "%q is not an email address", clip(s, 80))
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || !strings.Contains(s[at+1:], ".") && s[at+1:] != "localhost" {
		return "", errs.New(errs.Invalid, "%q is not an email address", clip(s, 80))
	}
	return strings.ToLower(s), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Audit targets of testers and groups.
const (
	TargetTester = "tester"
	TargetGroup  = "tester_group"
)

// TesterInput is a tester to add: an email (normalised by the use case) and an optional name.
type TesterInput struct {
	Email string
	Name  string
}

// DistributionRequest is who a release goes to: its channel's tester groups always, and beyond
// them the testers named (Emails, normalised; made when missing) and the groups named (GroupIDs).
type DistributionRequest struct {
	ReleaseID, AppID, ChannelID int64
	Emails                      []string
	GroupIDs                    []int64
}

// Recipient is a tester a release goes to, as the store finds them.
type Recipient struct {
	TesterID    int64
	Email, Name string
	// Direct: named for this release (not only through a group).
	Direct bool
	// KnowsApp: the tester was invited to the app before (their next mail is a new-build mail,
	// not an invitation).
	KnowsApp bool
	// Mail is their mail choice for the app (MailEvery when they are new to it).
	Mail string
	// Already: the release went to them before (a second distribution sends nothing again).
	Already bool
}

// Delivery is what a distribution records for one recipient: the release went to them, and
// what is mailed (MailNone, MailPending with the Kind of mail, MailDigest).
type Delivery struct {
	TesterID int64
	Direct   bool
	Mail     string
	// Kind is the mail to write (MailInvitation, MailNewBuild) when Mail is MailPending.
	Kind string
}

// PendingMail is a mail a distribution recorded and the mailing component is to write: the
// release's Kind of mail to one tester.
type PendingMail struct {
	ReleaseID, TesterID int64
	Email, Name         string
	Kind                string
	// Summary is what changed since the channel's previous build, as the upload found it.
	Summary []string
}

// DistributionTx is what distributing a release asks of the database inside the transaction
// that records it (the upload's, or the distribution's own).
type DistributionTx interface {
	// GroupsByAlias returns the groups of those aliases; an unknown alias is errs.Invalid naming it.
	GroupsByAlias(ctx context.Context, aliases []string) ([]TesterGroup, error)
	// Recipients makes the testers req names that are missing and returns everyone req reaches.
	Recipients(ctx context.Context, req DistributionRequest) ([]Recipient, error)
	// RecordDistribution records that the release went to each delivery's tester (their first
	// invitation to the app among them), the groups it was distributed to, and, when summary is
	// not nil, what its mails say changed.
	RecordDistribution(ctx context.Context, req DistributionRequest, ds []Delivery, summary []string) error
	// WriteMail puts mails in the outbox, sent once the transaction commits.
	WriteMail(ctx context.Context, mails []OutgoingMail) error
	// WriteEvents puts webhook events in the outbox.
	WriteEvents(ctx context.Context, evs []Event) error
	// QueueDistribution records a distribution for the mailing component to expand (making the
	// named testers that are missing, and recording the groups named) and counts whom it will
	// reach: testers anew, mailed now, new to the app.
	QueueDistribution(ctx context.Context, req DistributionRequest, notify bool, summary []string) (Distributed, error)
}

// QueuedDistribution is a distribution waiting to be expanded.
type QueuedDistribution struct {
	ID      int64
	Request DistributionRequest
	Notify  bool
	Summary []string
}

// DistributeInput is how a client distributes a release: testers named by email, groups by
// alias (both beyond the channel's groups), and whether to mail them (nil: yes).
type DistributeInput struct {
	Testers []string `param:"testers,names"`
	Groups  []string `param:"groups,names"`
	Notify  *bool    `param:"notify"`
}

// Empty reports a distribution that names nobody beyond the channel's groups.
func (in DistributeInput) Empty() bool { return len(in.Testers) == 0 && len(in.Groups) == 0 }

// MaxTestersPerCall bounds the emails one call names (Firebase's groups:batchJoin takes 999).
const MaxTestersPerCall = 999

// NormaliseEmails normalises a list of emails, without duplicates; every invalid one is named
// in one errs.Invalid on field.
func NormaliseEmails(field string, emails []string) ([]string, error) {
	if len(emails) > MaxTestersPerCall {
		return nil, errs.Field(field, "names %d emails; at most %d a call", len(emails), MaxTestersPerCall)
	}
	out := make([]string, 0, len(emails))
	seen := make(map[string]bool, len(emails))
	var bad []string
	for _, e := range emails {
		n, err := NormaliseEmail(e)
		if err != nil {
			if len(bad) < 10 {
				bad = append(bad, fmt.Sprintf("%q", clip(strings.TrimSpace(e), 80)))
			}
			continue
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(bad) > 0 {
		return nil, errs.Field(field, "not email addresses: %s", strings.Join(bad, ", "))
	}
	return out, nil
}

// TesterRelease is a release a tester may install, for their home page.
type TesterRelease struct {
	AppID                        int64
	AppName                      string
	ChannelID                    int64
	ChannelSlug, ChannelName     string
	ReleaseID                    int64
	Version                      int
	ReleaseVersion, BuildVersion string
	Platform                     string
	CreatedAt                    time.Time
	// State is the tester's furthest step with it (TesterInvited, TesterOpened, TesterInstalled).
	State string
}

// Digest is one tester's daily digest of one app: the builds given to them since the last.
type Digest struct {
	TesterID    int64
	Email, Name string
	AppID       int64
	AppName     string
	// Builds are the builds waiting for the digest, oldest first.
	Builds []DigestBuild
}

// DigestBuild is a build a digest lists.
type DigestBuild struct {
	ReleaseID                    int64
	ReleaseVersion, BuildVersion string
	ChannelSlug, ChannelName     string
}
