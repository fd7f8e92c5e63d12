package web_test

// The console's sign-in: a one-time login link, and OpenID Connect against a real provider on
// loopback (the zitadel/oidc example provider, built and cached by test/with-services.sh).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
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
// to redirect to redirectURI; its issuer is http://localhost:<port>/.
func startProvider(t *testing.T, port int, redirectURI string) string {
	bin := os.Getenv("SLIPWAY_TEST_OIDC_PROVIDER")
	if bin == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_OIDC_PROVIDER is not set; test/with-services.sh builds it")
		}
		t.Skip("SLIPWAY_TEST_OIDC_PROVIDER is not set; run the tests through test/with-services.sh")
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port), "REDIRECT_URI="+redirectURI)
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
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups"}
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
	// The right one comes back through the callback, signed in: the first user is an admin.
	resp, body = fetch(t, c, http.MethodPost, issuer+"login/username", url.Values{"id": {m[1]}, "username": {"test-user@localhost"}, "password": {"verysecure"}})
	if resp.StatusCode != 200 || resp.Request.URL.String() != e.URL+"/console" || !strings.Contains(body, "Test User") ||
		!strings.Contains(body, `id="console-role">admin<`) {
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

// Allowed domains refuse an account from elsewhere, and nothing is recorded.
func TestConsoleOIDCAllowedDomains(t *testing.T) {
	port := freePort(t)
	issuer := fmt.Sprintf("http://localhost:%d/", port)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.OIDC = config.OIDCConfig{Issuer: issuer, ClientID: "web", ClientSecret: "secret", GroupsClaim: "groups", AllowedDomains: []string{"example.com"}}
	}})
	startProvider(t, port, e.URL+"/console/callback")
	c := browserClient(t)
	_, body := fetch(t, c, http.MethodGet, e.URL+"/console/login", nil)
	m := authRequestRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no login form")
	}
	resp, _ := fetch(t, c, http.MethodPost, issuer+"login/username", url.Values{"id": {m[1]}, "username": {"test-user@localhost"}, "password": {"verysecure"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an account of another domain: %d %s", resp.StatusCode, resp.Request.URL)
	}
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM users`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d users recorded", n)
	}
}

// signedIn returns a cookie client signed in as a new identity (the first one is an admin).
func signedIn(t *testing.T, e *apptest.Env, subject string) (*http.Client, string) {
	t.Helper()
	secret, u, err := e.Service.Logins.SignIn(context.Background(), access.Identity{Issuer: "https://idp.example", Subject: subject,
		Email: subject + "@example.com", Name: subject, EmailVerified: true}, access.SignInPolicy{})
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
