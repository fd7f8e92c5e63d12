package distribution

import (
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
