package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// as returns a context acting as a.
func as(a Actor) context.Context { return WithActor(context.Background(), a) }

// asUser returns a context acting as a console user.
func asUser(u *User) context.Context { return as(UserActor(u)) }

// Tokens: a name and a scope of upload (the default) or admin; authentication refuses a missing
// secret.
func TestTokenRules(t *testing.T) {
	s := &Tokens{Store: &memStore{}, Policy: &policy.Policy{}}
	for name, c := range map[string][2]string{"no name": {" ", "upload"}, "long name": {strings.Repeat("n", 256), "upload"}, "scope": {"ci", "root"}} {
		if _, _, err := s.CreateToken(as(SystemActor("cli")), c[0], c[1]); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := s.Authenticate(context.Background(), ""); errs.KindOf(err) != errs.Unauthenticated {
		t.Fatalf("empty secret: %v", err)
	}
}

// memStore is the database of people, sessions and tokens in memory; methods a rule is not
// expected to call panic (the embedded nil interfaces).
type memStore struct {
	TokenStore
	PeopleStore
	users    map[string]*User // by subject
	sessions map[string]int64 // by hash
	members  map[[2]int64]bool
	audit    []string
	tokens   []string
}

// SignInUser applies the admin groups as the store's statement does (postgres.SignInUser).
func (s *memStore) SignInUser(_ context.Context, u *User, inAdminGroups bool) (*User, error) {
	if s.users == nil {
		s.users = map[string]*User{}
	}
	old, ok := s.users[u.Subject]
	if !ok {
		u.ID = int64(len(s.users) + 1)
		u.Role, u.AdminByGroups = RoleViewer, inAdminGroups
		if inAdminGroups {
			u.Role = RoleAdmin
		}
		s.users[u.Subject] = u
		return u, nil
	}
	switch {
	case inAdminGroups && old.Role != RoleAdmin:
		old.Role, old.AdminByGroups = RoleAdmin, true
	case !inAdminGroups && old.Role == RoleAdmin && old.AdminByGroups:
		old.Role, old.AdminByGroups = RoleViewer, false
		for h, id := range s.sessions {
			if id == old.ID {
				delete(s.sessions, h)
			}
		}
	}
	return old, nil
}
func (s *memStore) EndSessionsOf(_ context.Context, subject string) error {
	if u, ok := s.users[subject]; ok {
		for h, id := range s.sessions {
			if id == u.ID {
				delete(s.sessions, h)
			}
		}
	}
	return nil
}
func (s *memStore) CreateUserSession(_ context.Context, hash string, userID int64, _ time.Time) error {
	if s.sessions == nil {
		s.sessions = map[string]int64{}
	}
	s.sessions[hash] = userID
	return nil
}
func (s *memStore) SessionUser(_ context.Context, hash string) (*User, error) {
	id, ok := s.sessions[hash]
	if !ok {
		return nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	for _, u := range s.users {
		if u.ID == id {
			return u, nil
		}
	}
	return nil, errs.New(errs.Unauthenticated, "sign in first")
}
func (s *memStore) RevokeUserSession(_ context.Context, hash string) error {
	delete(s.sessions, hash)
	return nil
}
func (s *memStore) WriteAudit(_ context.Context, r AuditRecord) error {
	s.audit = append(s.audit, r.Action)
	return nil
}
func (s *memStore) AuditEntries(context.Context, AuditFilter) ([]AuditEntry, error) { return nil, nil }
func (s *memStore) LocalAdmin(context.Context) (*User, error)                       { return nil, nil }
func (s *memStore) CreateLoginLink(context.Context, string, int64, time.Time) error {
	return nil
}
func (s *memStore) UseLoginLink(context.Context, string) (*User, error) { return nil, nil }
func (s *memStore) BindInvited(context.Context, string, string) error   { return nil }
func (s *memStore) IsAppMember(_ context.Context, appID, userID int64) (bool, error) {
	return s.members[[2]int64{appID, userID}], nil
}
func (s *memStore) SetUserAccess(_ context.Context, id int64, role string, _ bool) (*User, error) {
	for _, u := range s.users {
		if u.ID == id {
			if u.Role != role {
				u.Role, u.AdminByGroups = role, false
			}
			return u, nil
		}
	}
	return &User{ID: id, Role: role}, nil
}
func (s *memStore) GetApp(_ context.Context, id int64) (*App, error) { return &App{ID: id}, nil }
func (s *memStore) NewToken(_ context.Context, in NewToken) (string, *Token, error) {
	s.tokens = append(s.tokens, in.Name)
	return "secret", &Token{Name: in.Name, Scope: in.Scope, UserID: in.UserID}, nil
}

// Who may sign in: a verified email of an allowed domain, membership of an allowed group, or
// anyone at the issuer when the operator says so; nobody when nothing is configured. Nobody
// becomes an admin by coming first: the admin groups' members are admins, everyone else a viewer.
// A session then opens the console until it is signed out.
func TestSignInPolicy(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	l := &Logins{Store: st}
	policy := SignInPolicy{AllowedDomains: []string{"Example.com"}, AdminGroups: []string{"ops"}}
	alice := Identity{Issuer: "https://idp", Subject: "alice", Email: "alice@example.com", EmailVerified: true}
	for name, c := range map[string]struct {
		id     Identity
		policy SignInPolicy
	}{
		"unverified email":             {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.com"}, policy},
		"no email_verified claim":      {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.com", EmailVerifiedAbsent: true}, policy},
		"other domain":                 {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.org", EmailVerified: true}, policy},
		"other domain, trusted emails": {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.org", EmailVerifiedAbsent: true}, SignInPolicy{AllowedDomains: []string{"example.com"}, TrustEmails: true}},
		"unverified, trusted emails":   {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.com"}, SignInPolicy{AllowedDomains: []string{"example.com"}, TrustEmails: true}},
		"nothing configured":           {alice, SignInPolicy{}},
		"only admin groups":            {alice, SignInPolicy{AdminGroups: []string{"ops"}}},
		"outside the allowed groups":   {alice, SignInPolicy{AllowedGroups: []string{"dev"}}},
		"anyone, but outside a domain": {Identity{Issuer: "https://idp", Subject: "x", Email: "x@example.org", EmailVerified: true}, SignInPolicy{AllowAnyone: true, AllowedDomains: []string{"example.com"}}},
	} {
		if _, _, err := l.SignIn(ctx, c.id, c.policy); !errs.Is(err, errs.Forbidden) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(st.users) != 0 {
		t.Fatalf("refused sign-ins recorded %d users", len(st.users))
	}
	if _, _, err := l.SignIn(ctx, Identity{Issuer: "https://idp"}, SignInPolicy{AllowAnyone: true}); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("nobody: %v", err)
	}
	// The operator trusts the issuer's emails: a missing email_verified passes the domain check
	// (an explicit false never does, above).
	if _, dave, err := l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "dave", Email: "dave@example.com", EmailVerifiedAbsent: true},
		SignInPolicy{AllowedDomains: []string{"example.com"}, TrustEmails: true}); err != nil || dave.Role != RoleViewer {
		t.Fatalf("trusted email: %+v %v", dave, err)
	}
	if _, erin, err := l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "erin", Email: "erin@elsewhere.org"}, SignInPolicy{AllowAnyone: true}); err != nil || erin.Role != RoleViewer {
		t.Fatalf("anyone at the issuer: %+v %v", erin, err)
	}
	secret, u, err := l.SignIn(ctx, alice, policy)
	if err != nil || u.Role != RoleViewer {
		t.Fatalf("the first person of the domain is not an admin: %+v %v", u, err)
	}
	_, bob, err := l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "bob", Email: "bob@EXAMPLE.com", EmailVerified: true}, policy)
	if err != nil || bob.Role != RoleViewer {
		t.Fatalf("second person: %+v %v", bob, err)
	}
	carolID := Identity{Issuer: "https://idp", Subject: "carol", Email: "carol@example.com", EmailVerified: true, Groups: []string{"OPS"}}
	carolSession, carol, err := l.SignIn(ctx, carolID, policy)
	if err != nil || carol.Role != RoleAdmin || !carol.AdminByGroups {
		t.Fatalf("admin group member: %+v %v", carol, err)
	}
	// Out of the admin groups, the next sign-in takes the groups' admin role back, and her
	// other sessions end.
	carolID.Groups = nil
	_, carol, err = l.SignIn(ctx, carolID, policy)
	if err != nil || carol.Role != RoleViewer {
		t.Fatalf("removed from the admin group: %+v %v", carol, err)
	}
	if _, err := l.SessionUser(ctx, carolSession); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("the demoted admin's earlier session: %v", err)
	}
	// An admin made in the console stays one, in the groups or not.
	if _, err := st.SetUserAccess(ctx, bob.ID, RoleAdmin, false); err != nil {
		t.Fatal(err)
	}
	if _, bob, err = l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "bob", Email: "bob@example.com", EmailVerified: true}, policy); err != nil || bob.Role != RoleAdmin {
		t.Fatalf("an admin by hand after signing in again: %+v %v", bob, err)
	}
	// Refused at a later sign-in (no longer in an allowed domain), a user's sessions end.
	bobSession, _, err := l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "bob", Email: "bob@example.com", EmailVerified: true}, policy)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.SignIn(ctx, Identity{Issuer: "https://idp", Subject: "bob", Email: "bob@example.org", EmailVerified: true}, policy); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("bob moved to another domain: %v", err)
	}
	if _, err := l.SessionUser(ctx, bobSession); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("a refused user's session: %v", err)
	}
	if got, err := l.SessionUser(ctx, secret); err != nil || got.ID != u.ID {
		t.Fatalf("session: %+v %v", got, err)
	}
	for _, bad := range []string{"", strings.Repeat("s", 129), "not-a-session"} {
		if _, err := l.SessionUser(ctx, bad); !errs.Is(err, errs.Unauthenticated) {
			t.Errorf("session %q: %v", bad, err)
		}
	}
	if err := l.SignOut(ctx, secret, u); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SessionUser(ctx, secret); !errs.Is(err, errs.Unauthenticated) {
		t.Fatalf("after sign-out: %v", err)
	}
	if got := strings.Join(st.audit, " "); got != "sign_in sign_in sign_in sign_in sign_in sign_in sign_in sign_in sign_out" {
		t.Errorf("audit log %v", got)
	}
	if _, _, err := l.UseLoginLink(ctx, ""); !errs.Is(err, errs.Unauthenticated) {
		t.Errorf("empty login link: %v", err)
	}
}

// Admins manage every app, developers the apps they are members of (the policy, with the store's
// memberships), viewers none; nobody changes their own access.
func TestPeopleRules(t *testing.T) {
	st := &memStore{members: map[[2]int64]bool{{1, 2}: true}}
	pol := &policy.Policy{Members: st}
	p := &People{Store: st, AuditLog: &AuditLog{Store: st}, Policy: pol}
	admin, dev, viewer := &User{ID: 1, Role: RoleAdmin}, &User{ID: 2, Role: RoleDeveloper}, &User{ID: 3, Role: RoleViewer}
	for _, c := range []struct {
		u   *User
		app int64
		ok  bool
	}{{admin, 9, true}, {dev, 1, true}, {dev, 9, false}, {viewer, 1, false}} {
		if err := pol.Authorize(asUser(c.u), policy.ManageApp, policy.OnApp(c.app)); (err == nil) != c.ok {
			t.Errorf("%s on app %d: %v", c.u.Role, c.app, err)
		}
	}
	if _, err := p.SetUserAccess(asUser(admin), admin.ID, RoleViewer, false); !errs.Is(err, errs.Forbidden) {
		t.Errorf("an admin demoting themselves: %v", err)
	}
	if _, err := p.SetUserAccess(asUser(dev), 3, RoleAdmin, false); !errs.Is(err, errs.Forbidden) {
		t.Errorf("a developer promoting someone: %v", err)
	}
	if _, err := p.SetUserAccess(asUser(admin), 3, "root", false); !errs.Is(err, errs.Invalid) {
		t.Errorf("an unknown role: %v", err)
	}
	if u, err := p.SetUserAccess(asUser(admin), 3, RoleDeveloper, false); err != nil || u.Role != RoleDeveloper {
		t.Errorf("promotion: %+v %v", u, err)
	}
	if strings.Join(st.audit, " ") != "user.update" {
		t.Errorf("audit log %v", st.audit)
	}
	for in, want := range map[string]string{"member": RoleViewer, " Admin ": RoleAdmin, "developer": RoleDeveloper} {
		if got, err := userRole(in); err != nil || got != want {
			t.Errorf("role %q: %q %v", in, got, err)
		}
	}
	if got, err := collaboratorRole(""); err != nil || got != RoleViewer {
		t.Errorf("a collaborator's default role: %q %v", got, err)
	}
	if (&Collaborator{User: User{Role: RoleViewer}}).CollaboratorRole() != "member" {
		t.Error("a viewer is Zealot's member")
	}
}

// memGuard counts attempts per client and per channel, as the store does.
type memGuard struct {
	n    map[string]int
	last map[string]time.Time
}

func (g *memGuard) ReservePasswordAttempt(_ context.Context, _ int64, client string, perClient, perChannel AttemptLimit) (time.Duration, error) {
	now := time.Now()
	l1, n1 := perClient.Left(g.n[client], g.last[client], now)
	l2, n2 := perChannel.Left(g.n["*"], g.last["*"], now)
	if left := max(l1, l2); left > 0 {
		return left, nil
	}
	g.n[client], g.n["*"], g.last[client], g.last["*"] = n1, n2, now, now
	return 0, nil
}
func (g *memGuard) FailPasswordAttempt(_ context.Context, _ int64, client string) error {
	g.last[client], g.last["*"] = time.Now(), time.Now()
	return nil
}
func (g *memGuard) ForgivePasswordAttempt(_ context.Context, _ int64, client string) error {
	delete(g.n, client)
	g.n["*"] = max(g.n["*"]-1, 0)
	return nil
}

// A protected channel takes its password (wrong guesses counted per client, and slowed down past
// five), its password cookie or a release token; both are bound to the password, so changing it
// revokes them.
func TestChannelPasswords(t *testing.T) {
	ctx := context.Background()
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	hash := string(h)
	c := &Channel{ID: 1, Slug: "k", PasswordHash: &hash}
	g := &memGuard{n: map[string]int{}, last: map[string]time.Time{}}
	p := &Passwords{Guard: g, Signer: signing.New([]byte("secret-secret-secret-secret-secret-0"))}
	if err := p.Authorize(ctx, &Channel{Slug: "open"}, AccessRequest{}); err != nil {
		t.Fatalf("an open channel: %v", err)
	}
	if err := p.Authorize(ctx, c, AccessRequest{Client: "a"}); !errs.Is(err, errs.Unauthenticated) {
		t.Fatalf("no password: %v", err)
	}
	for i := 0; i < 5; i++ {
		if err := p.Authorize(ctx, c, AccessRequest{Password: "guess", Client: "a"}); !errs.Is(err, errs.Forbidden) {
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	if err := p.Authorize(ctx, c, AccessRequest{Password: "s3cret", Client: "a"}); !errs.Is(err, errs.TooManyRequests) {
		t.Fatalf("right password too soon after five wrong ones: %v", err)
	}
	if err := p.Authorize(ctx, c, AccessRequest{Password: "s3cret", Client: "b"}); err != nil {
		t.Fatalf("another client: %v", err)
	}
	cookie, _ := p.ChannelCookie(c)
	token := p.ReleaseAccessToken(c, 7)
	if err := p.Authorize(ctx, c, AccessRequest{Cookie: cookie}); err != nil {
		t.Fatalf("cookie: %v", err)
	}
	if err := p.Authorize(ctx, c, AccessRequest{Token: token, ReleaseID: 7}); err != nil {
		t.Fatalf("release token: %v", err)
	}
	if err := p.Authorize(ctx, c, AccessRequest{Token: token, ReleaseID: 8, Client: "b"}); err == nil {
		t.Fatal("a release token opened another release")
	}
	changed := "$2a$04$changedchangedchangedchangedchangedchangedchangedchange"
	c2 := &Channel{ID: 1, Slug: "k", PasswordHash: &changed}
	if err := p.Authorize(ctx, c2, AccessRequest{Cookie: cookie, Client: "b"}); err == nil {
		t.Fatal("a cookie outlived the password it was given for")
	}
	if p.ReleaseAccessToken(&Channel{Slug: "open"}, 7) != "" {
		t.Fatal("a release token for an open channel")
	}
}

// Many addresses together get ChannelPasswordLimit's free attempts at one channel, then wait; a
// right password is not counted against the channel.
func TestChannelPasswordLimitAcrossClients(t *testing.T) {
	ctx := context.Background()
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	hash := string(h)
	c := &Channel{ID: 1, Slug: "k", PasswordHash: &hash}
	p := &Passwords{Guard: &memGuard{n: map[string]int{}, last: map[string]time.Time{}}}
	if err := p.CheckChannelPassword(ctx, c, "s3cret", "tester"); err != nil {
		t.Fatalf("right password: %v", err)
	}
	for i := 0; i < ChannelPasswordLimit.Free; i++ {
		if err := p.CheckChannelPassword(ctx, c, "guess", fmt.Sprintf("10.0.%d.%d", i/200, i%200)); !errs.Is(err, errs.Forbidden) {
			t.Fatalf("guess %d from its own address: %v", i, err)
		}
	}
	err := p.CheckChannelPassword(ctx, c, "s3cret", "192.0.2.1")
	var e *errs.Error
	if !errs.Is(err, errs.TooManyRequests) || !errors.As(err, &e) || e.RetryAfter <= 0 {
		t.Fatalf("an address that never guessed, after %d guesses at the channel: %v", ChannelPasswordLimit.Free, err)
	}
}

func TestAttemptLimit(t *testing.T) {
	l := AttemptLimit{Free: 2, Window: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		n        int
		since    time.Duration
		left     time.Duration
		nextWant int
	}{{0, 0, 0, 1}, {1, 0, 0, 2}, {2, 0, time.Second, 2}, {2, time.Second, 0, 3}, {3, time.Second, time.Second, 3},
		{40, 30 * time.Second, 30 * time.Second, 40}, {40, time.Minute, 0, 1}} {
		left, next := l.Left(c.n, t0, t0.Add(c.since))
		if left != c.left || next != c.nextWant {
			t.Errorf("%d attempts, the last %v ago: left %v next %d, want %v %d", c.n, c.since, left, next, c.left, c.nextWant)
		}
	}
}

// A token belongs to whoever made it: a token made with a token to that token's owner (so it
// dies with them), a console user's to them, the command line's to nobody; an upload token makes
// none.
func TestTokenMadeWithATokenKeepsItsOwner(t *testing.T) {
	st := &memStore{}
	s := &Tokens{Store: st, Policy: &policy.Policy{}}
	upload := &Token{Name: "ci", Scope: ScopeUpload, UserID: 7}
	for _, scope := range []string{ScopeAdmin, ScopeUpload} {
		if _, _, err := s.CreateToken(as(TokenActor(upload)), "more", scope); !errs.Is(err, errs.Forbidden) || len(st.tokens) != 0 {
			t.Fatalf("an upload token made an %s token: %v %v", scope, err, st.tokens)
		}
	}
	for _, c := range []struct {
		by    Actor
		owner int64
	}{
		{TokenActor(&Token{Name: "admin", Scope: ScopeAdmin, UserID: 7}), 7},
		{TokenActor(&Token{Name: "ops", Scope: ScopeAdmin}), 0},
		{UserActor(&User{ID: 9, Role: RoleAdmin}), 9},
		{SystemActor("cli"), 0},
	} {
		_, made, err := s.CreateToken(as(c.by), "by-"+c.by.Name, ScopeUpload)
		if err != nil || made.UserID != c.owner || made.Scope != ScopeUpload {
			t.Errorf("made by %s: %+v %v", c.by.Label(), made, err)
		}
	}
}
