package web_test

// The console's sign-in: a one-time login link, and OpenID Connect against a real provider on
// loopback (the zitadel/oidc example provider, built and cached by test/with-services.sh).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// browserClient follows redirects and keeps cookies, as a browser does.
func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: time.Minute}
}

func fetch(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(formRequest(t, method, u, form))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// formRequest is a request with form as its url-encoded body (none when nil).
func formRequest(t *testing.T, method, u string, form url.Values) *http.Request {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func sessions(t *testing.T, e *apptest.Env) (active, revoked int) {
	t.Helper()
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE revoked_at IS NULL), count(*) FILTER (WHERE revoked_at IS NOT NULL) FROM user_sessions`).
		Scan(&active, &revoked); err != nil {
		t.Fatal(err)
	}
	return
}

func TestConsoleLoginLink(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	c := browserClient(t)
	// Without a session the console sends to sign-in, which explains the login link.
	resp, body := fetch(t, c, http.MethodGet, e.URL+"/console", nil)
	if resp.Request.URL.Path != "/console/login" || !strings.Contains(body, "slipway admin login-link") {
		t.Fatalf("unsigned console: %s %s", resp.Request.URL, body)
	}
	secret, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	link := e.URL + "/console/login-link?token=" + url.QueryEscape(secret)
	resp, body = fetch(t, c, http.MethodGet, link, nil)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/console" || !strings.Contains(body, `id="console-role">admin<`) {
		t.Fatalf("after the login link: %d %s %s", resp.StatusCode, resp.Request.URL, body)
	}
	for _, ck := range c.Jar.Cookies(resp.Request.URL) {
		if ck.Name == "slipway_session" && strings.Contains(e.LogText(), ck.Value) {
			t.Error("the log holds the session secret")
		}
	}
	// The link works once, even in another browser.
	if resp, _ := fetch(t, browserClient(t), http.MethodGet, link, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a used login link: %d", resp.StatusCode)
	}
	// Signing out needs the form's CSRF token.
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the console")
	}
	if resp, _ := fetch(t, c, http.MethodPost, e.URL+"/console/logout", url.Values{"csrf": {"forged"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out with a wrong CSRF token: %d", resp.StatusCode)
	}
	if a, r := sessions(t, e); a != 1 || r != 0 {
		t.Fatalf("sessions active %d revoked %d before signing out", a, r)
	}
	resp, body = fetch(t, c, http.MethodPost, e.URL+"/console/logout", url.Values{"csrf": {m[1]}})
	if resp.Request.URL.String() != e.URL+"/console/login?signed_out=1" || !strings.Contains(body, "You are signed out.") {
		t.Errorf("after signing out: %s", resp.Request.URL)
	}
	if a, r := sessions(t, e); a != 0 || r != 1 {
		t.Errorf("sessions active %d revoked %d after signing out", a, r)
	}
	// The console is closed again.
	if resp, _ := fetch(t, c, http.MethodGet, e.URL+"/console", nil); resp.Request.URL.Path != "/console/login" {
		t.Errorf("console after signing out: %s", resp.Request.URL)
	}
	if resp, _ := fetch(t, c, http.MethodGet, e.URL+"/console/login-link?token=nonsense", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unknown login link: %d", resp.StatusCode)
	}
}

// startProvider starts the example OpenID Connect provider with a client "web"/"secret" allowed
// to redirect to redirectURI; its issuer is http://localhost:<port>/. Its ID tokens say
// "amr": ["pwd"], which tests use as a groups claim.
func startProvider(t *testing.T, port int, redirectURI string) string {
	return startProviderWith(t, port, redirectURI, nil)
}

// providerUser is an account of the example provider (its users file's fields).
type providerUser struct {
	ID, Username, Password, FirstName, LastName, Email string
	// EmailVerified false: the provider sends no email_verified claim (omitempty).
	EmailVerified     bool
	PreferredLanguage string
}

// startProviderWith starts the provider with these accounts instead of its own (nil: its own,
// test-user@localhost with the verified email test-user@zitadel.ch).
func startProviderWith(t *testing.T, port int, redirectURI string, users []providerUser) string {
	bin := os.Getenv("SLIPWAY_TEST_OIDC_PROVIDER")
	if bin == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_OIDC_PROVIDER is not set; test/with-services.sh builds it")
		}
		t.Skip("SLIPWAY_TEST_OIDC_PROVIDER is not set; run the tests through test/with-services.sh")
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "REDIRECT_URI="+redirectURI)
	if users != nil {
		m := map[string]providerUser{}
		for _, u := range users {
			if u.PreferredLanguage == "" {
				u.PreferredLanguage = "en"
			}
			m[u.ID] = u
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "users.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "USERS_FILE="+file)
	}
	var out testkit.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	testkit.EventuallyOK(t, 30*time.Second, "the OpenID Connect provider to start", func() error {
		resp, err := http.Get(issuer + ".well-known/openid-configuration")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("discovery answered %s", resp.Status)
		}
		return fmt.Errorf("%v; its output:\n%s", err, out.String())
	})
	return issuer
}

var authRequestRe = regexp.MustCompile(`name="id" value="([^"]+)"`)

func TestConsoleOIDC(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups", AllowAny: true}
	}})
	startProvider(t, port, e.URL+"/console/callback")

	c := browserClient(t)
	// The console sends to sign-in, which sends to the provider's login form.
	resp, body := fetch(t, c, http.MethodGet, e.URL+"/console", nil)
	m := authRequestRe.FindStringSubmatch(body)
	if !strings.HasPrefix(resp.Request.URL.String(), issuer) || m == nil {
		t.Fatalf("not at the provider's login form: %s %.300s", resp.Request.URL, body)
	}
	// The authorization request is one of the redirects that led to the form.
	var authorize *url.URL
	for r := resp.Request; r != nil; {
		if r.URL.Query().Get("client_id") == "web" {
			authorize = r.URL
		}
		if r.Response == nil {
			break
		}
		r = r.Response.Request
	}
	if authorize == nil {
		t.Fatal("no authorization request among the redirects")
	}
	// A wrong password stays at the provider.
	resp, body = fetch(t, c, http.MethodPost, issuer+"login/username", url.Values{"id": {m[1]}, "username": {"test-user@localhost"}, "password": {"wrong"}})
	if strings.HasPrefix(resp.Request.URL.String(), e.URL) {
		t.Fatalf("a wrong password signed in: %s", resp.Request.URL)
	}
	// The right one comes back through the callback, signed in. Coming first makes nobody an
	// admin: the first admin comes from the CLI or the admin groups.
	resp, body = fetch(t, c, http.MethodPost, issuer+"login/username", url.Values{"id": {m[1]}, "username": {"test-user@localhost"}, "password": {"verysecure"}})
	if resp.StatusCode != 200 || resp.Request.URL.String() != e.URL+"/console" || !strings.Contains(body, "Test User") ||
		!strings.Contains(body, `id="console-role">viewer<`) {
		t.Fatalf("after signing in: %d %s %s", resp.StatusCode, resp.Request.URL, body[strings.Index(body, "<main"):])
	}
	var subject, email string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT subject, email FROM users WHERE subject LIKE $1`, issuer+"|%").Scan(&subject, &email); err != nil {
		t.Fatalf("the user was not recorded: %v", err)
	}
	if email != "test-user@zitadel.ch" {
		t.Errorf("user email %q", email)
	}
	// PKCE and state are checked: a callback with another state, or replayed, is refused.
	q := authorize.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" || q.Get("nonce") == "" {
		t.Errorf("the authorization request lacks PKCE, state or nonce: %s", authorize)
	}
	if resp, _ := fetch(t, c, http.MethodGet, e.URL+"/console/callback?code=x&state=forged", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged callback: %d", resp.StatusCode)
	}
	// Signing out ends the session on the server.
	mm := csrfRe.FindStringSubmatch(body)
	if mm == nil {
		t.Fatal("no CSRF token")
	}
	fetch(t, c, http.MethodPost, e.URL+"/console/logout", url.Values{"csrf": {mm[1]}})
	if a, r := sessions(t, e); a != 0 || r != 1 {
		t.Errorf("sessions active %d revoked %d after signing out", a, r)
	}
}

// signInAt signs in at the provider's login form as username and returns where it ended.
func signInAt(t *testing.T, e *apptest.Env, issuer, username string) (*http.Client, *http.Response, string) {
	t.Helper()
	c := browserClient(t)
	_, body := fetch(t, c, http.MethodGet, e.URL+"/console/login", nil)
	m := authRequestRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no login form: %.300s", body)
	}
	resp, body := fetch(t, c, http.MethodPost, issuer+"login/username", url.Values{"id": {m[1]}, "username": {username}, "password": {"verysecure"}})
	return c, resp, body
}

func countUsers(t *testing.T, e *apptest.Env) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM users`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Allowed domains refuse an account from elsewhere, and nothing is recorded.
func TestConsoleOIDCAllowedDomains(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups", AllowedDomains: []string{"example.com"}}
	}})
	startProviderWith(t, port, e.URL+"/console/callback", []providerUser{
		{ID: "id1", Username: "outsider", Password: "verysecure", FirstName: "Out", LastName: "Sider", Email: "out@zitadel.ch", EmailVerified: true},
		// The provider sends no email_verified claim for this one (as Entra ID sends none).
		{ID: "id2", Username: "unsure", Password: "verysecure", FirstName: "Un", LastName: "Sure", Email: "unsure@example.com"},
		{ID: "id3", Username: "insider", Password: "verysecure", FirstName: "In", LastName: "Sider", Email: "in@example.com", EmailVerified: true},
	})
	_, resp, body := signInAt(t, e, issuer, "outsider")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "email domain may not sign in") {
		t.Errorf("an account of another domain: %d %s", resp.StatusCode, resp.Request.URL)
	}
	_, resp, body = signInAt(t, e, issuer, "unsure")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "does not say this account") {
		t.Errorf("an email without email_verified: %d %s", resp.StatusCode, resp.Request.URL)
	}
	if n := countUsers(t, e); n != 0 {
		t.Errorf("%d users recorded", n)
	}
	// One of the domain is let in, as a viewer: coming first makes nobody an admin.
	_, resp, body = signInAt(t, e, issuer, "insider")
	if resp.StatusCode != 200 || resp.Request.URL.String() != e.URL+"/console" || !strings.Contains(body, `id="console-role">viewer<`) {
		t.Errorf("an account of the domain: %d %s", resp.StatusCode, resp.Request.URL)
	}
}

// SLIPWAY_OIDC_TRUST_EMAILS lets an email without email_verified pass the domain check.
func TestConsoleOIDCTrustEmails(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups",
			AllowedDomains: []string{"example.com"}, TrustEmails: true}
	}})
	startProviderWith(t, port, e.URL+"/console/callback", []providerUser{
		{ID: "id2", Username: "unsure", Password: "verysecure", FirstName: "Un", LastName: "Sure", Email: "unsure@example.com"},
	})
	if _, resp, _ := signInAt(t, e, issuer, "unsure"); resp.StatusCode != 200 || resp.Request.URL.String() != e.URL+"/console" {
		t.Errorf("a trusted email without email_verified: %d %s", resp.StatusCode, resp.Request.URL)
	}
}

// With an issuer but neither allowed domains, allowed groups nor SLIPWAY_OIDC_ALLOW_ANY, nobody
// signs in with the provider: the sign-in page says why instead of going there, and the sign-in
// itself (what the callback asks) is refused.
func TestConsoleOIDCClosed(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "amr", AdminGroups: []string{"pwd"}}
	}})
	startProvider(t, port, e.URL+"/console/callback")
	c := browserClient(t)
	resp, body := fetch(t, c, http.MethodGet, e.URL+"/console", nil)
	if resp.StatusCode != http.StatusForbidden || resp.Request.URL.Path != "/console/login" || strings.HasPrefix(resp.Request.URL.String(), issuer) ||
		!strings.Contains(body, `id="signin-closed"`) || !strings.Contains(body, "SLIPWAY_OIDC_ALLOW_ANY") || !strings.Contains(body, "slipway admin login-link") {
		t.Fatalf("the sign-in page of a closed provider: %d %s %.400s", resp.StatusCode, resp.Request.URL, body)
	}
	// The domain refuses a closed policy's sign-in, the admin groups notwithstanding.
	if _, _, err := e.Service.Logins.SignIn(context.Background(), access.Identity{Issuer: issuer, Subject: "id1", Email: "a@example.com",
		EmailVerified: true, Groups: []string{"pwd"}}, access.SignInPolicy{AdminGroups: []string{"pwd"}}); !errors.Is(err, access.ErrSignInClosed) {
		t.Errorf("a closed policy's sign-in: %v", err)
	}
	if n := countUsers(t, e); n != 0 {
		t.Errorf("%d users recorded", n)
	}
}

// The admin groups are read from the provider's ID token at every sign-in: its members are
// admins (here the provider's "amr" claim, which says "pwd", stands for the groups claim).
func TestConsoleOIDCAdminGroups(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "amr", AdminGroups: []string{"pwd"}, AllowAny: true}
	}})
	startProvider(t, port, e.URL+"/console/callback")
	_, resp, body := signInAt(t, e, issuer, "test-user@localhost")
	if resp.StatusCode != 200 || !strings.Contains(body, `id="console-role">admin<`) {
		t.Fatalf("a member of the admin groups: %d %s", resp.StatusCode, resp.Request.URL)
	}
	var byGroups bool
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT admin_by_groups FROM users WHERE subject LIKE $1`, issuer+"|%").Scan(&byGroups); err != nil || !byGroups {
		t.Errorf("admin_by_groups %v %v", byGroups, err)
	}
}

// An admin the identity provider's groups made is demoted at the next sign-in outside them, and
// the session they had is refused at its next request; an admin made in the console stays one.
// A user the policy refuses at a later sign-in loses their sessions too.
func TestConsoleGroupAdminDemoted(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ctx := context.Background()
	carol := access.Identity{Issuer: "https://idp.example", Subject: "carol", Email: "carol@example.com", Name: "Carol", EmailVerified: true, Groups: []string{"admins"}}
	signIn := func(id access.Identity, policy access.SignInPolicy) (*http.Client, *distribution.User, error) {
		secret, u, err := e.Service.Logins.SignIn(ctx, id, policy)
		if err != nil {
			return nil, nil, err
		}
		c := browserClient(t)
		c.Jar.SetCookies(mustParse(t, e.URL+"/console"), []*http.Cookie{{Name: "slipway_session", Value: secret, Path: "/console"}})
		return c, u, nil
	}
	admin, u, err := signIn(carol, testSignIn)
	if err != nil || u.Role != distribution.RoleAdmin {
		t.Fatalf("carol in the admin group: %+v %v", u, err)
	}
	if resp, _ := fetch(t, admin, http.MethodGet, e.URL+"/console/users", nil); resp.StatusCode != 200 || resp.Request.URL.Path != "/console/users" {
		t.Fatalf("the admin's users page: %d %s", resp.StatusCode, resp.Request.URL)
	}
	// Removed from the group at the provider, carol signs in again elsewhere: a viewer now.
	carol.Groups = nil
	viewer, u, err := signIn(carol, testSignIn)
	if err != nil || u.Role != distribution.RoleViewer || u.AdminByGroups {
		t.Fatalf("carol out of the admin group: %+v %v", u, err)
	}
	// The admin session's next request is refused: it has ended.
	if resp, _ := fetch(t, admin, http.MethodGet, e.URL+"/console/users", nil); resp.Request.URL.Path != "/console/login" {
		t.Errorf("the demoted admin's earlier session: %d %s", resp.StatusCode, resp.Request.URL)
	}
	// The new session is a viewer's.
	if resp, _ := fetch(t, viewer, http.MethodGet, e.URL+"/console/users", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the users page as a viewer: %d %s", resp.StatusCode, resp.Request.URL)
	}
	// An admin made in the console (by the CLI's admin here) stays one out of the groups.
	cli := distribution.WithActor(ctx, distribution.SystemActor("cli"))
	if _, err := e.Service.People.SetUserAccess(cli, u.ID, distribution.RoleAdmin, false); err != nil {
		t.Fatal(err)
	}
	again, u, err := signIn(carol, testSignIn)
	if err != nil || u.Role != distribution.RoleAdmin || u.AdminByGroups {
		t.Fatalf("carol, an admin by hand, signing in again: %+v %v", u, err)
	}
	// Refused at a later sign-in (the provider moved her out of the allowed groups), carol's
	// sessions end.
	if _, _, err := signIn(carol, access.SignInPolicy{AllowedGroups: []string{"engineering"}}); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("carol outside the allowed groups: %v", err)
	}
	if resp, _ := fetch(t, again, http.MethodGet, e.URL+"/console", nil); resp.Request.URL.Path != "/console/login" {
		t.Errorf("a refused user's session: %d %s", resp.StatusCode, resp.Request.URL)
	}
}

// testSignIn admits anyone of the test's identity provider; the members of its group "admins"
// are admins.
var testSignIn = access.SignInPolicy{AllowAnyone: true, AdminGroups: []string{"admins"}}

// signedIn returns a cookie client signed in as an identity: the test's first one is in the
// identity provider's admin group (an admin, also when signing in again), the others in no group
// (viewers).
func signedIn(t *testing.T, e *apptest.Env, subject string) (*http.Client, string) {
	t.Helper()
	var others int
	var groupAdmin bool
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE subject <> $1), coalesce(bool_or(subject = $1 AND admin_by_groups), false)
		FROM users WHERE subject LIKE 'https://idp.example|%'`, "https://idp.example|"+subject).Scan(&others, &groupAdmin); err != nil {
		t.Fatal(err)
	}
	id := access.Identity{Issuer: "https://idp.example", Subject: subject, Email: subject + "@example.com", Name: subject, EmailVerified: true}
	if others == 0 || groupAdmin {
		id.Groups = []string{"admins"}
	}
	secret, u, err := e.Service.Logins.SignIn(context.Background(), id, testSignIn)
	if err != nil {
		t.Fatal(err)
	}
	c := browserClient(t)
	base, _ := url.Parse(e.URL + "/console")
	c.Jar.SetCookies(base, []*http.Cookie{{Name: "slipway_session", Value: secret, Path: "/console"}})
	return c, u.Role
}

func csrfOf(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	_, body := fetch(t, c, http.MethodGet, u, nil)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token at %s: %.300s", u, body)
	}
	return m[1]
}

func TestConsoleTokensAndRoles(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, role := signedIn(t, e, "alice")
	if role != distribution.RoleAdmin {
		t.Fatalf("the first user is a %s", role)
	}
	viewer, role := signedIn(t, e, "bob")
	if role != distribution.RoleViewer {
		t.Fatalf("the second user is a %s", role)
	}
	tokens := func() int {
		var n int
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := tokens()
	csrf := csrfOf(t, admin, e.URL+"/console/tokens")
	// CSRF: a create without the token is refused, nothing made.
	if resp, _ := fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ci-web"}, "scope": {"upload"}}); resp.StatusCode != http.StatusForbidden || tokens() != before {
		t.Errorf("create without CSRF: %d, %d tokens", resp.StatusCode, tokens())
	}
	resp, body := fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ci-web"}, "scope": {"upload"}, "csrf": {csrf}})
	m := regexp.MustCompile(`id="new-token-secret">([^<]+)<`).FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("create: %d %.500s", resp.StatusCode, body)
	}
	secret := m[1]
	if strings.Contains(resp.Request.URL.String(), secret) {
		t.Error("the secret is in a URL")
	}
	me := do(t, e, http.MethodGet, "/api/users/me", nil, http.Header{"Authorization": {"Token " + secret}})
	if me.Status != 200 {
		t.Fatalf("the new token does not work: %d", me.Status)
	}
	if _, again := fetch(t, admin, http.MethodGet, e.URL+"/console/tokens", nil); strings.Contains(again, secret) {
		t.Error("the secret is shown again")
	}
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM api_tokens WHERE name = 'ci-web'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	revoke := fmt.Sprintf("%s/console/tokens/%d/revoke", e.URL, id)

	// A viewer is refused every token action (403), with nothing changed, even with its own
	// valid CSRF token.
	vcsrf := csrfOf(t, viewer, e.URL+"/console")
	for _, c := range []struct {
		method, path string
		form         url.Values
	}{
		{http.MethodGet, "/console/tokens", nil},
		{http.MethodPost, "/console/tokens", url.Values{"name": {"sneaky"}, "scope": {"admin"}, "csrf": {vcsrf}}},
		{http.MethodPost, strings.TrimPrefix(revoke, e.URL), url.Values{"csrf": {vcsrf}, "confirm": {"1"}}},
		{http.MethodGet, "/console/audit", nil},
	} {
		resp, _ := fetch(t, viewer, c.method, e.URL+c.path, c.form)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("viewer %s %s: %d", c.method, c.path, resp.StatusCode)
		}
	}
	if n := tokens(); n != before+1 {
		t.Errorf("%d active tokens after the viewer's attempts, want %d", n, before+1)
	}
	// The admin revokes it: the API refuses it at once.
	resp, _ = fetch(t, admin, http.MethodPost, revoke, url.Values{"csrf": {csrf}, "confirm": {"1"}})
	if resp.Request.URL.Path != "/console/tokens" {
		t.Errorf("after revoking: %s", resp.Request.URL)
	}
	if me := do(t, e, http.MethodGet, "/api/users/me", nil, http.Header{"Authorization": {"Token " + secret}}); me.Status != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d", me.Status)
	}
	// The audit log says who did what.
	_, audit := fetch(t, admin, http.MethodGet, e.URL+"/console/audit", nil)
	for _, want := range []string{"token.create", "token.revoke", "sign_in", "alice", "ci-web"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %q", want)
		}
	}
	if strings.Contains(e.LogText(), secret) {
		t.Error("the log holds the new token")
	}
}

// A token made in the console belongs to its maker and never exceeds the maker's rights: it
// follows the user's role and dies with a disabled user.
func TestConsoleTokenOwnerRights(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	csrf := csrfOf(t, admin, e.URL+"/console/tokens")
	_, body := fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ops"}, "scope": {"admin"}, "csrf": {csrf}})
	m := regexp.MustCompile(`id="new-token-secret">([^<]+)<`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no token made")
	}
	api := func(path string) int {
		return do(t, e, http.MethodGet, path, nil, http.Header{"Authorization": {"Token " + m[1]}}).Status
	}
	setUser := func(sql string) {
		if _, err := e.DB.Pool.Exec(context.Background(), sql+` WHERE subject = 'https://idp.example|alice'`); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		sql        string
		tokens, me int
	}{
		{"", 200, 200}, // an admin's admin token
		{"UPDATE users SET role = 'developer'", 403, 200},                  // at most upload
		{"UPDATE users SET role = 'viewer'", 401, 401},                     // nothing
		{"UPDATE users SET role = 'admin', disabled_at = now()", 401, 401}, // disabled
		{"UPDATE users SET disabled_at = NULL", 200, 200},                  // back
	} {
		if c.sql != "" {
			setUser(c.sql)
		}
		if got := api("/api/tokens"); got != c.tokens {
			t.Errorf("after %q: GET /api/tokens %d, want %d", c.sql, got, c.tokens)
		}
		if got := api("/api/users/me"); got != c.me {
			t.Errorf("after %q: GET /api/users/me %d, want %d", c.sql, got, c.me)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestConsoleLimitedToken: the tokens page makes a token limited to apps and abilities, shows
// the limits in its list, and keeps the choices when the form is refused.
func TestConsoleLimitedToken(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	ctx := apptest.AsSystem(context.Background())
	alpha, err := e.Service.Apps.CreateApp(ctx, "Alpha")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Service.Apps.CreateApp(ctx, "Bravo"); err != nil {
		t.Fatal(err)
	}
	csrf := csrfOf(t, admin, e.URL+"/console/tokens")
	_, page := fetch(t, admin, http.MethodGet, e.URL+"/console/tokens", nil)
	if !strings.Contains(page, `id="token-apps"`) || !strings.Contains(page, `value="devices"`) {
		t.Fatalf("the tokens form offers no limits: %.500s", page)
	}
	aid := strconv.FormatInt(alpha.ID, 10)
	resp, body := fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ci-alpha"}, "scope": {"upload"},
		"apps": {aid}, "abilities": {"upload", "read"}, "csrf": {csrf}})
	m := regexp.MustCompile(`id="new-token-secret">([^<]+)<`).FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("create: %d %.500s", resp.StatusCode, body)
	}
	tok, err := e.DB.Authenticate(context.Background(), m[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Apps) != 1 || tok.Apps[0] != alpha.ID || strings.Join(tok.Abilities, ",") != "read,upload" {
		t.Errorf("the console's token: apps %v abilities %v", tok.Apps, tok.Abilities)
	}
	row := regexp.MustCompile(fmt.Sprintf(`(?s)<tr id="token-%d">.*?</tr>`, tok.ID)).FindString(body)
	if !strings.Contains(row, `<td data-label="Apps">Alpha</td>`) || !strings.Contains(row, `<td data-label="Abilities">read, upload</td>`) {
		t.Errorf("the list shows the limited token as %s", row)
	}
	// Refused (an unknown ability): the choices are kept, nothing is made.
	resp, body = fetch(t, admin, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"ci-x"}, "scope": {"upload"},
		"apps": {aid}, "abilities": {"root"}, "csrf": {csrf}})
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `value="`+aid+`" selected`) || !strings.Contains(body, "unknown ability") {
		t.Errorf("a refused limited token: %d %.800s", resp.StatusCode, body)
	}
}
