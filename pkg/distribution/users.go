package distribution

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// User is a person who signs in to the console.
type User struct {
	ID int64
	// Subject is the identity provider's issuer and subject ("iss|sub"); "" for local users.
	Subject   string
	Email     string
	Name      string
	Role      string
	CreatedAt time.Time
	LastLogin *time.Time
	// DisabledAt is when an admin disabled the user: they can neither sign in nor use their tokens.
	DisabledAt *time.Time
}

// Console roles.
const (
	RoleAdmin     = "admin"
	RoleDeveloper = "developer"
	RoleViewer    = "viewer"
)

// Identity is what an identity provider says of who signed in.
type Identity struct {
	Issuer, Subject, Email, Name string
	EmailVerified                bool
	Groups                       []string
}

// UserStore keeps users, their sessions, login links and the audit log.
type UserStore interface {
	// UpsertUser finds the user with u.Subject (creating it with u's role when new) and updates
	// its email, name and last login.
	UpsertUser(ctx context.Context, u *User) (*User, error)
	// LocalAdmin returns the local admin user (made on first use) that login links sign in.
	LocalAdmin(ctx context.Context) (*User, error)
	CountUsers(ctx context.Context) (int, error)
	CreateUserSession(ctx context.Context, idHash string, userID int64, expires time.Time) error
	// SessionUser returns the user of an active, unexpired session of an enabled user, or
	// errs.Unauthenticated.
	SessionUser(ctx context.Context, idHash string) (*User, error)
	RevokeUserSession(ctx context.Context, idHash string) error
	CreateLoginLink(ctx context.Context, idHash string, userID int64, expires time.Time) error
	// UseLoginLink marks an unused, unexpired link used and returns its user, once.
	UseLoginLink(ctx context.Context, idHash string) (*User, error)
	Audit(ctx context.Context, userID int64, action, target string, detail map[string]any) error
	AuditEntries(ctx context.Context, limit int) ([]AuditEntry, error)
	IsAppMember(ctx context.Context, appID, userID int64) (bool, error)
	// AddAppMember adds the user with this email to an app, making a viewer a developer
	// (errs.NotFound when nobody with that email has signed in).
	AddAppMember(ctx context.Context, appID int64, email string) error
	// CreateUserToken makes an API token owned by a user (its rights never exceed the user's).
	CreateUserToken(ctx context.Context, name, scope string, userID int64) (string, *Token, error)
	// UserUploadToken returns the token a user's console uploads are recorded with (made on first
	// use; its secret is never shown).
	UserUploadToken(ctx context.Context, userID int64) (*Token, error)
	ListUsers(ctx context.Context) ([]User, error)
	AppMembers(ctx context.Context, appID int64) ([]User, error)
	RemoveAppMember(ctx context.Context, appID, userID int64) error
	// SetUserAccess sets a user's role and disables (ending their sessions) or enables them.
	SetUserAccess(ctx context.Context, id int64, role string, disabled bool) (*User, error)
	GetUser(ctx context.Context, id int64) (*User, error)
	UserByEmail(ctx context.Context, email string) (*User, error)
	DeleteUser(ctx context.Context, id int64) error
	// AddAppMemberByID adds a user to an app (errs.Conflict when already one), making a viewer a
	// developer when promote is set.
	AddAppMemberByID(ctx context.Context, appID, userID int64, promote bool) error
	PromoteUser(ctx context.Context, id int64) error
	// RecentUploads returns the newest releases across every app.
	RecentUploads(ctx context.Context, limit int) ([]ReleaseContext, error)
}

// SessionTTL is how long a console session lasts.
const SessionTTL = 12 * time.Hour

// LoginLinkTTL is how long a login link may wait to be used.
const LoginLinkTTL = 15 * time.Minute

// SignInPolicy says who may sign in with the identity provider.
type SignInPolicy struct {
	// AllowedDomains, when set, are the email domains allowed (the email must be verified).
	AllowedDomains []string
	// AllowedGroups, when set, are the groups (from the groups claim) of which one is needed.
	AllowedGroups []string
	// AdminGroups make their members admins; the first user is an admin too.
	AdminGroups []string
}

// secretAndHash returns a random secret and the hash stored in its place.
func secretAndHash() (string, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	return secret, hashSecret(secret), nil
}

func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// SignIn admits an identity under the policy, records the user and starts a session; it returns
// the session's secret (the cookie's value).
func (s *Service) SignIn(ctx context.Context, id Identity, policy SignInPolicy) (string, *User, error) {
	if id.Subject == "" || id.Issuer == "" {
		return "", nil, errs.New(errs.Unauthenticated, "the identity provider named nobody")
	}
	if len(policy.AllowedDomains) > 0 {
		_, domain, _ := strings.Cut(strings.ToLower(id.Email), "@")
		if !id.EmailVerified || !containsFold(policy.AllowedDomains, domain) {
			return "", nil, errs.New(errs.Forbidden, "this account's email domain may not sign in here")
		}
	}
	if len(policy.AllowedGroups) > 0 && !anyIn(id.Groups, policy.AllowedGroups) {
		return "", nil, errs.New(errs.Forbidden, "this account is in none of the groups allowed to sign in here")
	}
	role := RoleViewer
	if anyIn(id.Groups, policy.AdminGroups) {
		role = RoleAdmin
	} else if n, err := s.Store.CountUsers(ctx); err != nil {
		return "", nil, err
	} else if n == 0 {
		role = RoleAdmin // the first person to sign in runs the installation
	}
	u, err := s.Store.UpsertUser(ctx, &User{Subject: id.Issuer + "|" + id.Subject, Email: id.Email, Name: id.Name, Role: role})
	if err != nil {
		return "", nil, err
	}
	secret, err := s.startSession(ctx, u)
	if err != nil {
		return "", nil, err
	}
	_ = s.Store.Audit(ctx, u.ID, "sign_in", "", map[string]any{"method": "oidc"})
	return secret, u, nil
}

func (s *Service) startSession(ctx context.Context, u *User) (string, error) {
	secret, hash, err := secretAndHash()
	if err != nil {
		return "", err
	}
	return secret, s.Store.CreateUserSession(ctx, hash, u.ID, time.Now().Add(SessionTTL))
}

// SessionUser returns the user of a session secret (the cookie), or errs.Unauthenticated.
func (s *Service) SessionUser(ctx context.Context, secret string) (*User, error) {
	if secret == "" || len(secret) > 128 {
		return nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	return s.Store.SessionUser(ctx, hashSecret(secret))
}

// SignOut ends a session on every replica.
func (s *Service) SignOut(ctx context.Context, secret string, u *User) error {
	if err := s.Store.RevokeUserSession(ctx, hashSecret(secret)); err != nil {
		return err
	}
	_ = s.Store.Audit(ctx, u.ID, "sign_out", "", nil)
	return nil
}

// NewLoginLink makes a one-time secret that signs in the local admin (first-run bootstrap for
// installations without an identity provider).
func (s *Service) NewLoginLink(ctx context.Context) (string, error) {
	u, err := s.Store.LocalAdmin(ctx)
	if err != nil {
		return "", err
	}
	secret, hash, err := secretAndHash()
	if err != nil {
		return "", err
	}
	return secret, s.Store.CreateLoginLink(ctx, hash, u.ID, time.Now().Add(LoginLinkTTL))
}

// UseLoginLink signs in with a login link, once, and returns the session's secret.
func (s *Service) UseLoginLink(ctx context.Context, secret string) (string, *User, error) {
	if secret == "" || len(secret) > 128 {
		return "", nil, errs.New(errs.Unauthenticated, "this login link is not valid")
	}
	u, err := s.Store.UseLoginLink(ctx, hashSecret(secret))
	if err != nil {
		return "", nil, err
	}
	session, err := s.startSession(ctx, u)
	if err != nil {
		return "", nil, err
	}
	_ = s.Store.Audit(ctx, u.ID, "sign_in", "", map[string]any{"method": "login_link"})
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

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	At       time.Time
	UserName string
	Action   string
	Target   string
}

// AuditLog returns the newest audit entries (admins read it in the console).
func (s *Service) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	return s.Store.AuditEntries(ctx, limit)
}

// RequireRole refuses a user whose role is below role (viewer < developer < admin).
func RequireRole(u *User, role string) error {
	rank := map[string]int{RoleViewer: 1, RoleDeveloper: 2, RoleAdmin: 3}
	if rank[u.Role] < rank[role] {
		return errs.New(errs.Forbidden, "this needs the %s role; you are a %s", role, u.Role)
	}
	return nil
}

// ConsoleCreateToken makes an API token on behalf of a console user (admins only), audited.
func (s *Service) ConsoleCreateToken(ctx context.Context, u *User, name, scope string) (string, *Token, error) {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return "", nil, err
	}
	name, scope, err := checkToken(name, scope)
	if err != nil {
		return "", nil, err
	}
	secret, t, err := s.Store.CreateUserToken(ctx, name, scope, u.ID)
	if err != nil {
		return "", nil, err
	}
	_ = s.Store.Audit(ctx, u.ID, "token.create", t.Name, map[string]any{"scope": t.Scope, "token_id": t.ID})
	return secret, t, nil
}

// ConsoleRevokeToken revokes an API token on behalf of a console user (admins only), audited.
func (s *Service) ConsoleRevokeToken(ctx context.Context, u *User, id int64) error {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return err
	}
	t, err := s.RevokeTokenByID(ctx, id)
	if err != nil {
		return err
	}
	_ = s.Store.Audit(ctx, u.ID, "token.revoke", t.Name, map[string]any{"token_id": t.ID})
	return nil
}

// CanManageApp refuses a user who may not change an app: admins manage every app, developers the
// apps they are members of, viewers none.
func (s *Service) CanManageApp(ctx context.Context, u *User, appID int64) error {
	switch u.Role {
	case RoleAdmin:
		return nil
	case RoleDeveloper:
		ok, err := s.Store.IsAppMember(ctx, appID, u.ID)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		return errs.New(errs.Forbidden, "you are not a member of this app; an admin can add you")
	}
	return errs.New(errs.Forbidden, "viewers cannot change anything; an admin can make you a developer")
}

// AddAppMember makes a user (by email) a member of an app and, if a viewer, a developer (admins
// only), audited.
func (s *Service) AddAppMember(ctx context.Context, by *User, appID int64, email string) error {
	if err := RequireRole(by, RoleAdmin); err != nil {
		return err
	}
	if _, err := s.Store.GetApp(ctx, appID); err != nil {
		return err
	}
	email = strings.TrimSpace(email)
	if email == "" {
		return errs.Field("email", "can't be blank")
	}
	if err := s.Store.AddAppMember(ctx, appID, email); err != nil {
		return err
	}
	return s.Store.Audit(ctx, by.ID, "member.add", email, map[string]any{"app_id": appID})
}

// ConsoleChannelReleases returns a page of a channel's releases, newest first.
func (s *Service) ConsoleChannelReleases(ctx context.Context, channelID int64, p Page) ([]Release, error) {
	return s.Store.ListReleases(ctx, channelID, p)
}

// consoleToken stands for a console user who may manage an app, where the domain asks for a
// token's rights (release edits).
var consoleToken = &Token{Name: "console", Scope: ScopeAdmin}

// ConsoleUpdateRelease edits a release for a console user who may manage its app, audited.
func (s *Service) ConsoleUpdateRelease(ctx context.Context, u *User, id int64, ch ReleaseChanges) (*ReleaseContext, error) {
	rc, err := s.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.CanManageApp(ctx, u, rc.App.ID); err != nil {
		return nil, err
	}
	if ch.Pinned != nil {
		if err := RequireRole(u, RoleAdmin); err != nil {
			return nil, err
		}
	}
	out, err := s.UpdateRelease(ctx, consoleToken, id, ch)
	if err != nil {
		return nil, err
	}
	_ = s.Store.Audit(ctx, u.ID, "release.update", out.App.Name+" "+out.ReleaseVersion+" ("+out.BuildVersion+")", map[string]any{"release_id": id})
	return out, nil
}

// Audit records a console user's change.
func (s *Service) Audit(ctx context.Context, u *User, action, target string, detail map[string]any) {
	if err := s.Store.Audit(ctx, u.ID, action, target, detail); err != nil {
		s.Log.WarnContext(ctx, "writing the audit log failed", "action", action, "error", err.Error())
	}
}
