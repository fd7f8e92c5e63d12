package testers

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// SignInStore keeps testers' sign-in links and sessions.
type SignInStore interface {
	CreateTesterLink(ctx context.Context, idHash string, testerID int64, expires time.Time, client string,
		since time.Time, perTester, perClient int) (bool, error)
	UseTesterLink(ctx context.Context, idHash string) (*distribution.Tester, error)
	CreateTesterSession(ctx context.Context, idHash string, testerID int64, expires time.Time) error
	SessionTester(ctx context.Context, idHash string) (*distribution.Tester, error)
	RevokeTesterSession(ctx context.Context, idHash string) error
	RevokeTesterSessions(ctx context.Context, testerID int64) error
	// WriteMailNow puts one mail in the outbox on its own (a sign-in link).
	WriteMailNow(ctx context.Context, m distribution.OutgoingMail) error
}

// LinkTTL is how long a mailed sign-in link may wait to be used.
const LinkTTL = 20 * time.Minute

// DefaultSessionTTL is how long a tester stays signed in when Config.SessionTTL is not set.
const DefaultSessionTTL = 30 * 24 * time.Hour

// Limits on sign-in links, per quarter hour: a tester gets at most linksPerTester mails, and a
// client may ask at most linksPerClient times (whichever addresses it names).
const (
	linkWindow      = 15 * time.Minute
	linksPerTester  = 5
	linksPerClient  = 20
	maxSecretLength = 128
)

// RequestLink mails a sign-in link to a tester's address. It answers the same for any address
// (nobody learns who is a tester): nil, whether a mail went or not. Only a malformed address is
// an error. Too many requests, for the address or from the client, send nothing more.
func (t *Testers) RequestLink(ctx context.Context, email, client string) error {
	e, err := distribution.NormaliseEmail(email)
	if err != nil {
		return errs.Field("email", "enter your email address")
	}
	var testerID int64
	if tr, err := t.Store.TesterByEmail(ctx, e); err == nil {
		testerID = tr.ID
	} else if !errs.Is(err, errs.NotFound) {
		return err
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		return err
	}
	now := time.Now()
	ok, err := t.Store.CreateTesterLink(ctx, hash, testerID, now.Add(LinkTTL), client, now.Add(-linkWindow), linksPerTester, linksPerClient)
	if err != nil || !ok {
		return err
	}
	v := mailView{LinkURL: t.mail().links.TesterLink(secret), LinkMinutes: int(LinkTTL / time.Minute)}
	// The outbox id is the link's hash prefix: unique, and it says nothing of the secret.
	m := t.mail().compose(distribution.MailSignIn, "signin."+hash[:24], e, "Your sign-in link for Slipway", v, nil)
	if err := t.Store.WriteMailNow(ctx, m); err != nil {
		return err
	}
	t.wake()
	return nil
}

// SignIn spends a sign-in link, once, and starts a session: it returns the session's secret (the
// cookie's value) and the tester.
func (t *Testers) SignIn(ctx context.Context, secret string) (string, *distribution.Tester, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return "", nil, errs.New(errs.Unauthenticated, "this sign-in link is not valid; ask for a new one")
	}
	tr, err := t.Store.UseTesterLink(ctx, distribution.HashSecret(secret))
	if err != nil {
		return "", nil, err
	}
	session, hash, err := distribution.NewSecret()
	if err != nil {
		return "", nil, err
	}
	if err := t.Store.CreateTesterSession(ctx, hash, tr.ID, time.Now().Add(t.SessionTTL())); err != nil {
		return "", nil, err
	}
	t.Audit.RecordAs(ctx, distribution.TesterActor(tr), "tester.sign_in", distribution.AuditTarget{Kind: distribution.TargetTester,
		ID: tr.ID, Name: tr.Email}, nil)
	return session, tr, nil
}

// SessionTTL is how long a tester's session lasts.
func (t *Testers) SessionTTL() time.Duration {
	if t.Config.SessionTTL > 0 {
		return t.Config.SessionTTL
	}
	return DefaultSessionTTL
}

// SessionTester returns the tester of a session secret (the cookie), or errs.Unauthenticated.
func (t *Testers) SessionTester(ctx context.Context, secret string) (*distribution.Tester, error) {
	if secret == "" || len(secret) > maxSecretLength {
		return nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	return t.Store.SessionTester(ctx, distribution.HashSecret(secret))
}

// SignOut ends a tester's session on every replica.
func (t *Testers) SignOut(ctx context.Context, secret string) error {
	if secret == "" || len(secret) > maxSecretLength {
		return nil
	}
	return t.Store.RevokeTesterSession(ctx, distribution.HashSecret(secret))
}

// TesterOf returns the tester a console user is, by their email (nil: none).
func (t *Testers) TesterOf(ctx context.Context, u *distribution.User) *distribution.Tester {
	e, err := distribution.NormaliseEmail(u.Email)
	if err != nil {
		return nil
	}
	tr, err := t.Store.TesterByEmail(ctx, e)
	if err != nil {
		return nil
	}
	return tr
}

// Unsubscribe turns off a tester's mail for an app, from a mail's one-click link (no session
// needed: the token is the proof).
func (t *Testers) Unsubscribe(ctx context.Context, token string) (*distribution.TesterApp, error) {
	testerID, appID, ok := t.mail().checkUnsubscribe(token)
	if !ok {
		return nil, errs.New(errs.NotFound, "this unsubscribe link is not valid")
	}
	if err := t.Store.SetTesterMail(ctx, testerID, appID, distribution.MailOff); err != nil {
		return nil, err
	}
	t.Audit.RecordAs(ctx, distribution.Actor{Kind: distribution.ActorTester, TesterID: testerID, Name: "tester " + strconv.FormatInt(testerID, 10)},
		"tester.unsubscribe", distribution.AuditTarget{Kind: distribution.TargetTester, ID: testerID, AppID: appID}, nil)
	return &distribution.TesterApp{AppID: appID, Mail: distribution.MailOff}, nil
}

// checkUnsubscribe reads an unsubscribe token's tester and app. The token is
// "<tester>.<app>.<expiry>.<signature>", the signature covering both ids.
func (m composer) checkUnsubscribe(token string) (testerID, appID int64, ok bool) {
	if len(token) > 512 {
		return 0, 0, false
	}
	parts := strings.SplitN(token, ".", 3)
	if len(parts) != 3 {
		return 0, 0, false
	}
	tid, err1 := strconv.ParseInt(parts[0], 10, 64)
	aid, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || tid <= 0 || aid <= 0 || !m.signer.CheckToken(parts[2], "tester-unsubscribe", parts[0], parts[1]) {
		return 0, 0, false
	}
	return tid, aid, true
}
