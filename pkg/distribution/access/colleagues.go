package access

import (
	"bytes"
	"context"
	htmltemplate "html/template"
	texttemplate "text/template"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
)

// Colleagues bring people to the console who have no account with the identity provider, or
// before they sign in with it: an admin invites someone to the console with a role, an admin or
// an app's member invites someone to one app. The invitation is a mailed single-use link; where
// the identity provider is configured, the first sign-in with it under the same verified email
// takes the invitation too (Logins.SignIn). A colleague who came by invitation and does not use
// the provider signs in later with a mailed login link (RequestLink).
type Colleagues struct {
	Store  ColleagueStore
	Logins *Logins
	Policy *policy.Policy
	Audit  *distribution.AuditLog
	// PublicURL is where the mailed links point; MailOn whether mail leaves (without it the
	// inviter is given the link to pass on); Mail wakes the sender after a commit that wrote mail.
	PublicURL string
	MailOn    bool
	Mail      distribution.Waker
}

// ColleagueStore keeps invitations and the login links of colleagues who came by one.
type ColleagueStore interface {
	UserByEmail(ctx context.Context, email string) (*distribution.User, error)
	AddAppMemberByID(ctx context.Context, appID, userID int64, promote bool) error
	GetApp(ctx context.Context, id int64) (*distribution.App, error)
	// CreateInvitation records an invitation (withdrawing an open one of the same email to the
	// same place) with its mail (nil: none), in one transaction.
	CreateInvitation(ctx context.Context, in distribution.Invitation, secretHash string, invitedBy int64,
		m *distribution.OutgoingMail) (*distribution.Invitation, error)
	OpenInvitation(ctx context.Context, secretHash string) (*distribution.Invitation, error)
	OpenInvitations(ctx context.Context, appID int64) ([]distribution.Invitation, error)
	RevokeInvitation(ctx context.Context, id int64) (*distribution.Invitation, error)
	// AcceptInvitation spends an invitation and every other open one of its email: the user of
	// that email (made when there is none) gets their roles and memberships.
	AcceptInvitation(ctx context.Context, secretHash string) (*distribution.User, error)
	CreateColleagueLink(ctx context.Context, idHash, email string, expires time.Time, client string,
		since time.Time, perUser, perClient int) (bool, error)
	// WriteMailNow puts one mail in the outbox on its own.
	WriteMailNow(ctx context.Context, m distribution.OutgoingMail) error
}

// InvitationTTL is how long an invitation may wait to be accepted.
const InvitationTTL = 7 * 24 * time.Hour

// Limits on mailed login links, per quarter hour, as for testers' sign-in links.
const (
	colleagueLinkWindow  = 15 * time.Minute
	colleagueLinksPerYou = 5
	colleagueLinksPerIP  = 20
)

// InviteInput is an invitation as the console asks for it: to the console with Role (AppID 0),
// or to one app (Role is then developer: a member changes the app).
type InviteInput struct {
	Email string
	Role  string
	AppID int64
}

// Invited is what an invitation did: it mailed an Invitation, or it added Member, who has an
// account already, to the app at once.
type Invited struct {
	Invitation *distribution.Invitation
	Member     *distribution.User
	// Link is the invitation's link when mail is off: the inviter passes it on themselves.
	Link string
}

// Invite invites a colleague. To the console it needs people.manage; to an app, people.invite on
// the app (admins, and the app's members who are developers); nobody but an admin makes an admin.
// Someone with an account already is added to the app at once (to the console: a 409, their role
// is changed on the Users page).
func (c *Colleagues) Invite(ctx context.Context, in InviteInput) (*Invited, error) {
	email, err := distribution.NormaliseEmail(in.Email)
	if err != nil {
		return nil, errs.Field("email", "must be an email address, like name@example.com")
	}
	role, err := c.inviteRole(ctx, in)
	if err != nil {
		return nil, err
	}
	var app *distribution.App
	if in.AppID != 0 {
		if app, err = c.Store.GetApp(ctx, in.AppID); err != nil {
			return nil, err
		}
	}
	if u, err := c.Store.UserByEmail(ctx, email); err == nil {
		return c.existing(ctx, u, app)
	} else if !errs.Is(err, errs.NotFound) {
		return nil, err
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		return nil, err
	}
	actor := distribution.ActorOf(ctx)
	inv := distribution.Invitation{Email: email, Role: role, AppID: in.AppID, InvitedBy: actor.Label(),
		ExpiresAt: time.Now().Add(InvitationTTL)}
	if app != nil {
		inv.AppName = app.Name
	}
	link := c.links().Invitation(secret)
	var m *distribution.OutgoingMail
	if c.MailOn {
		mm := invitationMail(inv, link, c.links().ConsoleSignIn(), hash)
		m = &mm
	}
	made, err := c.Store.CreateInvitation(ctx, inv, hash, actor.UserID, m)
	if err != nil {
		return nil, err
	}
	c.Audit.Record(ctx, "user.invite", distribution.AuditTarget{Kind: distribution.TargetUser, Name: email, AppID: in.AppID},
		map[string]any{"role": role, "invitation_id": made.ID, "mailed": c.MailOn})
	out := &Invited{Invitation: made}
	if c.MailOn {
		c.wake()
	} else {
		out.Link = link
	}
	return out, nil
}

// inviteRole checks the actor may invite so, and returns the role the invitation gives.
func (c *Colleagues) inviteRole(ctx context.Context, in InviteInput) (string, error) {
	if in.AppID == 0 {
		if err := c.Policy.Authorize(ctx, policy.ManagePeople, policy.Installation); err != nil {
			return "", err
		}
		if in.Role == "" {
			return "", errs.Field("role", "choose the role the colleague gets")
		}
		return userRole(in.Role)
	}
	if err := c.Policy.Authorize(ctx, policy.InvitePeople, policy.OnApp(in.AppID)); err != nil {
		return "", err
	}
	return distribution.RoleDeveloper, nil
}

// existing adds someone who has an account to the app at once; to the console, nothing is left to
// invite them to.
func (c *Colleagues) existing(ctx context.Context, u *distribution.User, app *distribution.App) (*Invited, error) {
	if u.DisabledAt != nil {
		return nil, errs.New(errs.Conflict, "%s has an account here, but it is disabled; an admin can enable it on the People page", u.Email)
	}
	if app == nil {
		return nil, errs.New(errs.Conflict, "%s has an account here already (%s); change their role on the People page", u.Email,
			distribution.WithArticle(u.Role))
	}
	if err := c.Store.AddAppMemberByID(ctx, app.ID, u.ID, true); err != nil {
		if errs.Is(err, errs.Conflict) {
			return nil, errs.New(errs.Conflict, "%s is a member of %s already", u.Email, app.Name)
		}
		return nil, err
	}
	c.Audit.Record(ctx, "member.add", distribution.AuditTarget{Kind: distribution.TargetUser, ID: u.ID, Name: u.Email, AppID: app.ID},
		map[string]any{"app_id": app.ID, "user_id": u.ID})
	return &Invited{Member: u}, nil
}

// Invitations returns the open invitations: every one (appID 0, people.manage) or an app's (the
// app's readers).
func (c *Colleagues) Invitations(ctx context.Context, appID int64) ([]distribution.Invitation, error) {
	act, res := policy.ManagePeople, policy.Installation
	if appID != 0 {
		act, res = policy.InvitePeople, policy.OnApp(appID)
	}
	if err := c.Policy.Authorize(ctx, act, res); err != nil {
		return nil, err
	}
	return c.Store.OpenInvitations(ctx, appID)
}

// Withdraw revokes an open invitation (people.manage, or people.invite on its app) and returns it.
func (c *Colleagues) Withdraw(ctx context.Context, id int64) (*distribution.Invitation, error) {
	open, err := c.Store.OpenInvitations(ctx, 0)
	if err != nil {
		return nil, err
	}
	act, res := policy.ManagePeople, policy.Installation
	for _, inv := range open {
		if inv.ID == id && inv.AppID != 0 {
			act, res = policy.InvitePeople, policy.OnApp(inv.AppID)
		}
	}
	if err := c.Policy.Authorize(ctx, act, res); err != nil {
		return nil, err
	}
	inv, err := c.Store.RevokeInvitation(ctx, id)
	if err != nil {
		return nil, err
	}
	c.Audit.Record(ctx, "user.invitation_withdraw", distribution.AuditTarget{Kind: distribution.TargetUser, Name: inv.Email, AppID: inv.AppID},
		map[string]any{"invitation_id": inv.ID})
	return inv, nil
}

// Invitation reads the open invitation of a link, for the page that accepts it.
func (c *Colleagues) Invitation(ctx context.Context, secret string) (*distribution.Invitation, error) {
	if secret == "" || len(secret) > maxSecret {
		return nil, errs.New(errs.Unauthenticated, "this invitation link is not valid")
	}
	return c.Store.OpenInvitation(ctx, distribution.HashSecret(secret))
}

const maxSecret = 128

// Accept spends an invitation's link: the colleague's account is made (or raised to the role).
// It returns a session's secret for a colleague who signs in by mail; one who signs in with the
// identity provider gets no session from a mailed link ("" and the user): they sign in with it.
func (c *Colleagues) Accept(ctx context.Context, secret string) (string, *distribution.User, error) {
	if secret == "" || len(secret) > maxSecret {
		return "", nil, errs.New(errs.Unauthenticated, "this invitation link is not valid")
	}
	u, err := c.Store.AcceptInvitation(ctx, distribution.HashSecret(secret))
	if err != nil {
		return "", nil, err
	}
	invited := u.Subject == distribution.InvitedSubject(u.Email)
	c.Logins.audit(ctx, u, "user.accept_invitation", map[string]any{"role": u.Role, "signed_in": invited})
	if !invited {
		return "", u, nil
	}
	session, err := c.Logins.startSession(ctx, u)
	if err != nil {
		return "", nil, err
	}
	return session, u, nil
}

// RequestLink mails a login link to a colleague who came by invitation. It answers the same for
// any address (nobody learns who works here): nil, whether a mail went or not; only a malformed
// address is an error. Too many requests, for the address or from the client, send nothing more.
func (c *Colleagues) RequestLink(ctx context.Context, email, client string) error {
	e, err := distribution.NormaliseEmail(email)
	if err != nil {
		return errs.Field("email", "enter your email address")
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		return err
	}
	now := time.Now()
	ok, err := c.Store.CreateColleagueLink(ctx, hash, e, now.Add(LoginLinkTTL), client, now.Add(-colleagueLinkWindow),
		colleagueLinksPerYou, colleagueLinksPerIP)
	if err != nil || !ok || !c.MailOn {
		return err
	}
	if err := c.Store.WriteMailNow(ctx, signInMail(e, c.links().ConsoleLink(secret), hash)); err != nil {
		return err
	}
	c.wake()
	return nil
}

// LoginLinkFor makes a one-time login link for the user of email: the command line's way in for
// a colleague where mail is off (whoever runs it holds the installation anyway).
func (c *Colleagues) LoginLinkFor(ctx context.Context, email string) (string, error) {
	e, err := distribution.NormaliseEmail(email)
	if err != nil {
		return "", err
	}
	u, err := c.Store.UserByEmail(ctx, e)
	if errs.Is(err, errs.NotFound) {
		return "", errs.New(errs.NotFound, "nobody with the email %s has an account here; invite them first (the People page)", e)
	}
	if err != nil {
		return "", err
	}
	if u.DisabledAt != nil {
		return "", errs.New(errs.Forbidden, "the account of %s is disabled; enable it on the People page first", e)
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		return "", err
	}
	return secret, c.Logins.Store.CreateLoginLink(ctx, hash, u.ID, time.Now().Add(LoginLinkTTL))
}

func (c *Colleagues) links() links.Links { return links.Links{Base: c.PublicURL} }

func (c *Colleagues) wake() {
	if c.Mail != nil {
		c.Mail.Wake()
	}
}

// colleagueView is what the colleagues' mails show; every value goes through the templates'
// escaping (html/template in the HTML part).
type colleagueView struct {
	InvitedBy, Place, Role, LinkURL, SignInURL string
	Days, Minutes                              int
}

func invitationMail(inv distribution.Invitation, link, signIn, hash string) distribution.OutgoingMail {
	v := colleagueView{InvitedBy: inv.InvitedBy, Role: inv.Role, LinkURL: link, SignInURL: signIn, Days: int(InvitationTTL / (24 * time.Hour))}
	subject := "You are invited to Slipway"
	if inv.AppName != "" {
		v.Place = inv.AppName
		subject = "You are invited to " + inv.AppName + " on Slipway"
	}
	// The outbox id is the link's hash prefix: unique, and it says nothing of the secret.
	return colleagueMail(distribution.MailColleagueInvitation, "colleague."+hash[:24], inv.Email, subject, v)
}

func signInMail(to, link, hash string) distribution.OutgoingMail {
	v := colleagueView{LinkURL: link, Minutes: int(LoginLinkTTL / time.Minute)}
	return colleagueMail(distribution.MailColleagueSignIn, "console-signin."+hash[:24], to, "Your sign-in link for the Slipway console", v)
}

func colleagueMail(kind, id, to, subject string, v colleagueView) distribution.OutgoingMail {
	var text, html bytes.Buffer
	// The templates are fixed and their values plain strings: executing them cannot fail.
	_ = colleagueText.ExecuteTemplate(&text, kind, v)
	_ = colleagueHTML.ExecuteTemplate(&html, kind, v)
	return distribution.OutgoingMail{ID: id, Kind: kind, To: to, Subject: subject, Text: text.String(), HTML: html.String()}
}

var colleagueText = texttemplate.Must(texttemplate.New("colleagues").Parse(`
{{define "colleague_invitation"}}Hello,

{{.InvitedBy}} invites you to {{if .Place}}{{.Place}} on Slipway, as a member who uploads and manages its builds{{else}}the Slipway console, as {{.Role}}{{end}}.

Accept the invitation here (it works once, for {{.Days}} days):

  {{.LinkURL}}

No password and no account anywhere else: Slipway mails you a link whenever you sign in, at
{{.SignInURL}}. If you did not expect this, ignore it; nothing happens.
{{end}}
{{define "colleague_sign_in"}}Here is your sign-in link for the Slipway console. It works once, for {{.Minutes}} minutes:

  {{.LinkURL}}

If you did not ask for it, ignore this mail: nothing happens.
{{end}}`))

var colleagueHTML = htmltemplate.Must(htmltemplate.New("colleagues").Parse(`
{{define "colleague_invitation"}}<p>Hello,</p>
<p>{{.InvitedBy}} invites you to {{if .Place}}<strong>{{.Place}}</strong> on Slipway, as a member who uploads and manages its builds{{else}}the Slipway console, as {{.Role}}{{end}}.</p>
<p><a href="{{.LinkURL}}">Accept the invitation</a> (it works once, for {{.Days}} days).</p>
<p>No password and no account anywhere else: Slipway mails you a link whenever you sign in, at <a href="{{.SignInURL}}">{{.SignInURL}}</a>. If you did not expect this, ignore it; nothing happens.</p>
{{end}}
{{define "colleague_sign_in"}}<p><a href="{{.LinkURL}}">Sign in to the Slipway console</a>. The link works once, for {{.Minutes}} minutes.</p>
<p>If you did not ask for it, ignore this mail: nothing happens.</p>
{{end}}`))
