package access

import (
	"context"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Identity is what an identity provider says of who signed in.
type Identity struct {
	Issuer, Subject, Email, Name string
	// EmailVerified: the provider said the email is verified (email_verified true, or "true").
	EmailVerified bool
	// EmailVerifiedAbsent: the provider sent no email_verified claim at all (Entra ID, for one),
	// which only SignInPolicy.TrustEmails lets pass an allowed-domain check.
	EmailVerifiedAbsent bool
	Groups              []string
}

// LoginStore keeps users as they sign in, their sessions and login links.
type LoginStore interface {
	// SignInUser records a sign-in of u.Subject: it makes the user when new (a viewer, or an admin
	// given by the groups when inAdminGroups) and updates its email, name and last login. It
	// applies the admin groups at every sign-in: a user in them who is not an admin becomes one
	// (AdminByGroups); a user outside them whose admin role the groups gave loses it (a developer
	// when a member of an app, else a viewer), and every session of theirs ends. A role given in
	// the console is left as it is.
	SignInUser(ctx context.Context, u *distribution.User, inAdminGroups bool) (*distribution.User, error)
	// EndSessionsOf ends every session of the user with this subject, if there is one.
	EndSessionsOf(ctx context.Context, subject string) error
	// LocalAdmin returns the local admin user (made on first use) that login links sign in.
	LocalAdmin(ctx context.Context) (*distribution.User, error)
	CreateUserSession(ctx context.Context, idHash string, userID int64, expires time.Time) error
	// SessionUser returns the user of an active, unexpired session of an enabled user, or
	// errs.Unauthenticated.
	SessionUser(ctx context.Context, idHash string) (*distribution.User, error)
	RevokeUserSession(ctx context.Context, idHash string) error
	CreateLoginLink(ctx context.Context, idHash string, userID int64, expires time.Time) error
	// UseLoginLink marks an unused, unexpired link used and returns its user, once.
	UseLoginLink(ctx context.Context, idHash string) (*distribution.User, error)
	// BindInvited ties a first sign-in (subject) under a verified email to the colleague invited
	// by it (Invitations.BindInvited); nothing when nobody was.
	BindInvited(ctx context.Context, subject, email string) error
	WriteAudit(ctx context.Context, r distribution.AuditRecord) error
}

// SessionTTL is how long a console session lasts.
const SessionTTL = 12 * time.Hour

// LoginLinkTTL is how long a login link may wait to be used.
const LoginLinkTTL = 15 * time.Minute

// SignInPolicy says who may sign in with the identity provider. It fails closed: with neither
// AllowedDomains, AllowedGroups nor AllowAnyone nobody may (an issuer such as Google or
// GitLab.com has the whole internet among its accounts).
type SignInPolicy struct {
	// AllowedDomains, when set, are the email domains allowed (the email must be verified).
	AllowedDomains []string
	// AllowedGroups, when set, are the groups (from the groups claim) of which one is needed.
	AllowedGroups []string
	// AllowAnyone admits every account of the issuer that the other rules admit, when none is
	// set: the operator's statement that the issuer's accounts are all theirs (a single-tenant
	// Entra ID, a company Keycloak realm).
	AllowAnyone bool
	// TrustEmails lets an email without an email_verified claim pass the AllowedDomains check:
	// the operator's statement that the issuer only hands out emails it verified. An explicit
	// email_verified false never passes.
	TrustEmails bool
	// AdminGroups make their members admins, re-evaluated at every sign-in. Nobody is an admin
	// by coming first: the first admin comes from here or from the CLI (`slipway admin
	// login-link`).
	AdminGroups []string
}

// Closed reports a policy that admits nobody: neither allowed domains, allowed groups nor
// AllowAnyone.
func (p SignInPolicy) Closed() bool {
	return len(p.AllowedDomains) == 0 && len(p.AllowedGroups) == 0 && !p.AllowAnyone
}

// ErrSignInClosed is the refusal of every sign-in under a closed policy.
var ErrSignInClosed = errs.New(errs.Forbidden, "signing in with the identity provider is closed: this Slipway admits nobody until "+
	"its operator sets SLIPWAY_OIDC_ALLOWED_DOMAINS, SLIPWAY_OIDC_ALLOWED_GROUPS or SLIPWAY_OIDC_ALLOW_ANY=true "+
	"(the console opens meanwhile with `slipway admin login-link`)")

// admit returns why the policy refuses an identity, or nil.
func (p SignInPolicy) admit(id Identity) error {
	if p.Closed() {
		return ErrSignInClosed
	}
	if len(p.AllowedDomains) > 0 {
		_, domain, _ := strings.Cut(strings.ToLower(id.Email), "@")
		if !containsFold(p.AllowedDomains, domain) {
			return errs.New(errs.Forbidden, "this account's email domain may not sign in here")
		}
		if !id.EmailVerified && !(id.EmailVerifiedAbsent && p.TrustEmails) {
			return errs.New(errs.Forbidden, "the identity provider does not say this account's email is verified, and only verified emails of the allowed domains may sign in here")
		}
	}
	if len(p.AllowedGroups) > 0 && !anyIn(id.Groups, p.AllowedGroups) {
		return errs.New(errs.Forbidden, "this account is in none of the groups allowed to sign in here")
	}
	return nil
}

// Logins signs people in to the console: with the identity provider or a one-time login link, into
// a session kept in the database (so every replica knows it, and signing out ends it everywhere).
// Expired sessions are refused when read; nothing needs to run in the background to end them.
type Logins struct {
	Store LoginStore
}

// secretAndHash returns a random secret and the hash stored in its place.
func secretAndHash() (string, string, error) { return distribution.NewSecret() }

func hashSecret(s string) string { return distribution.HashSecret(s) }

// SignIn admits an identity under the policy, records the user (applying the admin groups, see
// LoginStore.SignInUser) and starts a session; it returns the session's secret (the cookie's
// value). A refused identity's existing sessions end.
func (l *Logins) SignIn(ctx context.Context, id Identity, policy SignInPolicy) (string, *distribution.User, error) {
	if id.Subject == "" || id.Issuer == "" {
		return "", nil, errs.New(errs.Unauthenticated, "the identity provider named nobody")
	}
	subject := id.Issuer + "|" + id.Subject
	if err := policy.admit(id); err != nil {
		// Whoever the identity provider no longer lets in here has no session left either.
		if endErr := l.Store.EndSessionsOf(ctx, subject); endErr != nil {
			return "", nil, endErr
		}
		return "", nil, err
	}
	// An invitation by this email, when the provider vouches for it, is taken at the first
	// sign-in: the colleague keeps what they were invited to (and stops signing in by mail).
	if email, err := distribution.NormaliseEmail(id.Email); err == nil && (id.EmailVerified || id.EmailVerifiedAbsent && policy.TrustEmails) {
		if err := l.Store.BindInvited(ctx, subject, email); err != nil {
			return "", nil, err
		}
	}
	u, err := l.Store.SignInUser(ctx, &distribution.User{Subject: subject, Email: id.Email, Name: id.Name}, anyIn(id.Groups, policy.AdminGroups))
	if err != nil {
		return "", nil, err
	}
	secret, err := l.startSession(ctx, u)
	if err != nil {
		return "", nil, err
	}
	l.audit(ctx, u, "sign_in", map[string]any{"method": "oidc"})
	return secret, u, nil
}

func (l *Logins) startSession(ctx context.Context, u *distribution.User) (string, error) {
	secret, hash, err := secretAndHash()
	if err != nil {
		return "", err
	}
	return secret, l.Store.CreateUserSession(ctx, hash, u.ID, time.Now().Add(SessionTTL))
}

// SessionUser returns the user of a session secret (the cookie), or errs.Unauthenticated.
func (l *Logins) SessionUser(ctx context.Context, secret string) (*distribution.User, error) {
	if secret == "" || len(secret) > 128 {
		return nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	return l.Store.SessionUser(ctx, hashSecret(secret))
}

// SignOut ends a session on every replica.
func (l *Logins) SignOut(ctx context.Context, secret string, u *distribution.User) error {
	if err := l.Store.RevokeUserSession(ctx, hashSecret(secret)); err != nil {
		return err
	}
	l.audit(ctx, u, "sign_out", nil)
	return nil
}

// NewLoginLink makes a one-time secret that signs in the local admin (first-run bootstrap for
// installations without an identity provider).
func (l *Logins) NewLoginLink(ctx context.Context) (string, error) {
	u, err := l.Store.LocalAdmin(ctx)
	if err != nil {
		return "", err
	}
	secret, hash, err := secretAndHash()
	if err != nil {
		return "", err
	}
	return secret, l.Store.CreateLoginLink(ctx, hash, u.ID, time.Now().Add(LoginLinkTTL))
}

// UseLoginLink signs in with a login link, once, and returns the session's secret.
func (l *Logins) UseLoginLink(ctx context.Context, secret string) (string, *distribution.User, error) {
	if secret == "" || len(secret) > 128 {
		return "", nil, errs.New(errs.Unauthenticated, "this login link is not valid")
	}
	u, err := l.Store.UseLoginLink(ctx, hashSecret(secret))
	if err != nil {
		return "", nil, err
	}
	session, err := l.startSession(ctx, u)
	if err != nil {
		return "", nil, err
	}
	l.audit(ctx, u, "sign_in", map[string]any{"method": "login_link"})
	return session, u, nil
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(strings.TrimSpace(x), v) {
			return true
		}
	}
	return false
}

func anyIn(have, want []string) bool {
	for _, h := range have {
		if containsFold(want, h) {
			return true
		}
	}
	return false
}

// audit records a sign-in or sign-out as the user's own row (a failure is not the user's).
func (l *Logins) audit(ctx context.Context, u *distribution.User, action string, detail map[string]any) {
	_ = l.Store.WriteAudit(ctx, distribution.AuditRecord{Actor: distribution.UserActor(u), Action: action,
		Target: distribution.AuditTarget{Kind: distribution.TargetUser, ID: u.ID, Name: u.Email}, Detail: detail})
}
