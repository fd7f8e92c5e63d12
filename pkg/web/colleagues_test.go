package web_test

// Colleagues (issue "Testers are people", "Colleagues too"): an admin, or an app's developer,
// invites someone by email; the mailed link (read from a real SMTP server) shows a button, and
// accepting signs them in with the invited role; they sign in again with a mailed link; the
// identity provider's first sign-in under the same verified email takes the invitation.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/mailpit"
)

var (
	invitationLinkRe = regexp.MustCompile(`https?://[^\s"<>]+/console/invitations/[A-Za-z0-9_%-]+`)
	consoleLinkRe    = regexp.MustCompile(`https?://[^\s"<>]+/console/signin/[A-Za-z0-9_%-]+`)
)

var sameOrigin = http.Header{"Sec-Fetch-Site": {"same-origin"}}

// mailedTo waits for n mails to address and returns the newest one whose text has a link re
// finds, with the link. (Mailpit's list is not reliably newest first for mails of the same
// moment, so each is read.)
func mailedTo(t *testing.T, relay *mailpit.Server, address string, n int, re *regexp.Regexp) (mailpit.Message, string) {
	t.Helper()
	var found mailpit.Message
	var at time.Time
	link := ""
	for _, s := range relay.WaitFor(t, address, n) {
		m := relay.Message(t, s.ID)
		if l := re.FindString(m.Text); l != "" && (link == "" || s.Created.After(at)) {
			found, at, link = m, s.Created, l
		}
	}
	if link == "" {
		t.Fatalf("no mail to %s has a link like %s", address, re)
	}
	return found, link
}

func userOf(t *testing.T, e *apptest.Env, email string) (id int64, subject, role string) {
	t.Helper()
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id, coalesce(subject, ''), role FROM users WHERE lower(email) = $1`, email).
		Scan(&id, &subject, &role); err != nil {
		t.Fatalf("the user %s: %v", email, err)
	}
	return id, subject, role
}

func TestColleagueInvitations(t *testing.T) {
	relay := mailpit.Start(t, mailpit.Options{})
	e := newMailingEnv(t, relay)
	admin, _ := signedIn(t, e, "alice")
	bob, _ := signedIn(t, e, "bob") // a viewer, who has an account
	_ = bob
	m := e.UploadApp(t, "harbor.ipa", ipa("Harbor", "1.0", "1"))
	appID := int64(m["app"].(map[string]any)["id"].(float64))
	appPage := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)

	// An admin invites a colleague to the app: a mail goes, the app shows the invitation.
	_, body := fetch(t, admin, http.MethodGet, appPage, nil)
	resp, body := fetch(t, admin, http.MethodPost, appPage+"/members", with(formOf(t, body, "add-member-form"), "email", " Ann@Example.com "))
	if resp.StatusCode != 200 || !strings.Contains(body, "Invitation mailed to ann@example.com") {
		t.Fatalf("inviting ann: %d %.400s", resp.StatusCode, body)
	}
	mustContain(t, []byte(body), `id="app-invitations"`, "ann@example.com")
	mail, link := mailedTo(t, relay, "ann@example.com", 1, invitationLinkRe)
	if !strings.Contains(mail.Subject, "Harbor") || !strings.Contains(mail.Text, "alice") || !strings.Contains(mail.Text, e.URL+"/console/login/email") {
		t.Errorf("the invitation names neither the app nor who invited: %q %s", mail.Subject, mail.Text)
	}
	if strings.Contains(e.LogText(), link[strings.LastIndex(link, "/")+1:]) {
		t.Error("the log holds the invitation's secret")
	}

	// Opening the link spends nothing (a mail scanner fetches links); a POST from elsewhere is refused.
	ann := plain(t)
	for range 2 {
		resp, body = send(t, ann, http.MethodGet, link, nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, "Harbor") || !strings.Contains(body, `id="link-submit"`) {
			t.Fatalf("the invitation's page: %d %.300s", resp.StatusCode, body)
		}
	}
	if resp, _ = send(t, ann, http.MethodPost, link, url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site accept: %d", resp.StatusCode)
	}
	resp, _ = send(t, ann, http.MethodPost, link, url.Values{}, sameOrigin)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != e.URL+"/console" {
		t.Fatalf("accepting: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	annID, subject, role := userOf(t, e, "ann@example.com")
	if subject != distribution.InvitedSubject("ann@example.com") || role != distribution.RoleDeveloper {
		t.Errorf("ann after accepting: subject %q role %q", subject, role)
	}
	if n := count(t, e, `SELECT count(*) FROM app_members WHERE app_id = $1 AND user_id = $2`, appID, annID); n != 1 {
		t.Errorf("ann is no member of the app (%d)", n)
	}
	resp, body = send(t, ann, http.MethodGet, appPage, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="add-member-form"`) {
		t.Errorf("ann on the app's page: %d (a member may invite: %v)", resp.StatusCode, strings.Contains(body, "add-member-form"))
	}
	// The link works once.
	if resp, body = send(t, plain(t), http.MethodPost, link, url.Values{}, sameOrigin); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(body, "does not work any more") {
		t.Errorf("a spent invitation: %d %.200s", resp.StatusCode, body)
	}

	// A developer member invites to their app, not to the console.
	annFollows := *ann
	annFollows.CheckRedirect = nil
	_, body = fetch(t, &annFollows, http.MethodGet, appPage, nil)
	resp, body = fetch(t, &annFollows, http.MethodPost, appPage+"/members", with(formOf(t, body, "add-member-form"), "email", "dan@example.com"))
	if resp.StatusCode != 200 || !strings.Contains(body, "Invitation mailed to dan@example.com") {
		t.Errorf("ann inviting dan: %d %.300s", resp.StatusCode, body)
	}
	csrf := csrfOf(t, &annFollows, appPage)
	if resp, _ = fetch(t, &annFollows, http.MethodPost, e.URL+"/console/users/invitations", url.Values{"csrf": {csrf}, "email": {"eve@example.com"},
		"role": {"admin"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a developer inviting to the console: %d", resp.StatusCode)
	}
	if n := count(t, e, `SELECT count(*) FROM user_invitations WHERE email = 'eve@example.com'`); n != 0 {
		t.Errorf("a refused invitation left %d rows", n)
	}

	// Someone with an account is added at once, mailed nothing; a bad address is said in place.
	_, body = fetch(t, admin, http.MethodGet, appPage, nil)
	resp, body = fetch(t, admin, http.MethodPost, appPage+"/members", with(formOf(t, body, "add-member-form"), "email", "bob@example.com"))
	if resp.StatusCode != 200 || !strings.Contains(body, "bob@example.com is now a developer of this app") {
		t.Errorf("adding bob: %d %.300s", resp.StatusCode, body)
	}
	resp, body = fetch(t, admin, http.MethodPost, appPage+"/members", with(formOf(t, body, "add-member-form"), "email", "not an address"))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "Email must be an email address") || !strings.Contains(body, `value="not an address"`) {
		t.Errorf("a bad address: %d %.300s", resp.StatusCode, body)
	}

	// Ann signs in again with a mailed link; the page answers the same for anyone.
	c := plain(t)
	answers := map[string]string{}
	for _, email := range []string{"ann@example.com", "nobody@example.com", "alice@example.com"} {
		resp, _ := send(t, c, http.MethodPost, e.URL+"/console/login/email", url.Values{"email": {email}}, sameOrigin)
		answers[email] = fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Location"))
	}
	if answers["ann@example.com"] != answers["nobody@example.com"] || answers["ann@example.com"] != answers["alice@example.com"] ||
		!strings.HasPrefix(answers["ann@example.com"], "303 ") {
		t.Errorf("the answers tell colleagues apart: %v", answers)
	}
	// Only ann's address gets a link: nobody is no colleague; alice signs in with the provider.
	if n := count(t, e, `SELECT count(*) FROM mail_outbox WHERE kind = 'colleague_sign_in' AND recipient <> 'ann@example.com'`); n != 0 {
		t.Errorf("%d login links mailed to others than ann", n)
	}
	_, signin := mailedTo(t, relay, "ann@example.com", 2, consoleLinkRe)
	if resp, body = send(t, c, http.MethodGet, signin, nil, nil); resp.StatusCode != 200 || !strings.Contains(body, `id="link-submit"`) {
		t.Fatalf("the login link's page: %d %.300s", resp.StatusCode, body)
	}
	resp, _ = send(t, c, http.MethodPost, signin, url.Values{}, sameOrigin)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != e.URL+"/console" {
		t.Fatalf("the login link: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ = send(t, c, http.MethodGet, e.URL+"/console", nil, nil); resp.StatusCode != 200 {
		t.Errorf("the console after the login link: %d", resp.StatusCode)
	}
	if resp, _ = send(t, plain(t), http.MethodPost, signin, url.Values{}, sameOrigin); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a spent login link: %d", resp.StatusCode)
	}

	// To the console, with a role; withdrawn, the link stops.
	usersPage := e.URL + "/console/users"
	_, body = fetch(t, admin, http.MethodGet, usersPage, nil)
	resp, body = fetch(t, admin, http.MethodPost, usersPage+"/invitations", with(formOf(t, body, "invite-form"), "email", "vic@example.com", "role", "viewer"))
	if resp.StatusCode != 200 || !strings.Contains(body, "Invitation mailed to vic@example.com") {
		t.Fatalf("inviting vic: %d %.300s", resp.StatusCode, body)
	}
	_, vicLink := mailedTo(t, relay, "vic@example.com", 1, invitationLinkRe)
	var vicInv int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM user_invitations WHERE email = 'vic@example.com'`).Scan(&vicInv); err != nil {
		t.Fatal(err)
	}
	resp, body = fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/invitations/%d/withdraw", usersPage, vicInv), formOf(t, body, fmt.Sprintf("withdraw-invitation-%d", vicInv)))
	if resp.StatusCode != 200 || !strings.Contains(body, "withdrawn") {
		t.Errorf("withdrawing: %d %.300s", resp.StatusCode, body)
	}
	if resp, _ = send(t, plain(t), http.MethodGet, vicLink, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a withdrawn invitation's page: %d", resp.StatusCode)
	}
	// Inviting someone who has an account to the console says where their role is changed.
	resp, body = fetch(t, admin, http.MethodPost, usersPage+"/invitations", with(formOf(t, body, "invite-form"), "email", "ann@example.com", "role", "admin"))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "has an account here already") {
		t.Errorf("inviting ann to the console: %d %.300s", resp.StatusCode, body)
	}
	for _, action := range []string{"user.invite", "user.accept_invitation", "user.invitation_withdraw", "member.add"} {
		if n := count(t, e, `SELECT count(*) FROM audit_log WHERE action = $1`, action); n == 0 {
			t.Errorf("no audit row %s", action)
		}
	}
}

// Where the identity provider is configured, its first sign-in under the invited, verified email
// takes the invitation; an unverified email takes nothing. With mail off, the inviter is shown
// the link to pass on.
func TestColleagueInvitationBindsIdentity(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	ctx := context.Background()
	admin, _ := signedIn(t, e, "alice")
	usersPage := e.URL + "/console/users"
	invite := func(email, role string) string {
		t.Helper()
		_, body := fetch(t, admin, http.MethodGet, usersPage, nil)
		resp, body := fetch(t, admin, http.MethodPost, usersPage+"/invitations", with(formOf(t, body, "invite-form"), "email", email, "role", role))
		link := invitationLinkRe.FindString(body)
		if resp.StatusCode != 200 || !strings.Contains(body, "Mail is off here") || link == "" {
			t.Fatalf("inviting %s with mail off: %d %.400s\n%s", email, resp.StatusCode, body, e.LogText())
		}
		return link
	}
	carolLink := invite("carol@example.com", "developer")
	idp := func(sub, email string, verified bool) *distribution.User {
		t.Helper()
		_, u, err := e.Service.Logins.SignIn(ctx, access.Identity{Issuer: "https://idp.example", Subject: sub, Email: email, Name: sub,
			EmailVerified: verified}, testSignIn)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := idp("carol", "Carol@Example.com", true); u.Role != distribution.RoleDeveloper {
		t.Errorf("carol's first sign-in with the provider: %s, want the invited developer", u.Role)
	}
	if resp, _ := send(t, plain(t), http.MethodGet, carolLink, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the invitation the provider's sign-in took still opens: %d", resp.StatusCode)
	}

	// Dave accepts by mail first, then signs in with the provider: one user, the provider's now,
	// and mailed login links stop.
	daveLink := invite("dave@example.com", "admin")
	if resp, _ := send(t, plain(t), http.MethodPost, daveLink, url.Values{}, sameOrigin); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("dave accepting: %d", resp.StatusCode)
	}
	daveID, _, _ := userOf(t, e, "dave@example.com")
	if u := idp("dave", "dave@example.com", true); u.ID != daveID || u.Role != distribution.RoleAdmin {
		t.Errorf("dave with the provider: user %d (%s), want %d (admin)", u.ID, u.Role, daveID)
	}
	if _, subject, _ := userOf(t, e, "dave@example.com"); subject != "https://idp.example|dave" {
		t.Errorf("dave's subject: %q", subject)
	}
	before := count(t, e, `SELECT count(*) FROM login_links`)
	if err := e.Service.Colleagues.RequestLink(ctx, "dave@example.com", "192.0.2.1"); err != nil || count(t, e, `SELECT count(*) FROM login_links`) != before {
		t.Errorf("a mailed login link for a colleague who signs in with the provider: %v", err)
	}

	// Where mail is off, the command line makes a colleague's login link (slipway admin login-link --email).
	if _, err := e.Service.Colleagues.LoginLinkFor(ctx, "nobody@example.com"); !errs.Is(err, errs.NotFound) {
		t.Errorf("a login link for nobody: %v", err)
	}
	secret, err := e.Service.Colleagues.LoginLinkFor(ctx, "Dave@example.com")
	if err != nil {
		t.Fatal(err)
	}
	dave := browserClient(t)
	if resp, body := fetch(t, dave, http.MethodGet, e.URL+"/console/login-link?token="+url.QueryEscape(secret), nil); resp.StatusCode != 200 ||
		!strings.Contains(body, `id="console-role">admin<`) {
		t.Errorf("dave's command-line login link: %d %.300s", resp.StatusCode, body)
	}

	// An email the provider does not vouch for takes nothing.
	invite("erin@example.com", "admin")
	if u := idp("erin", "erin@example.com", false); u.Role != distribution.RoleViewer {
		t.Errorf("an unverified email took the invitation: %s", u.Role)
	}
	if n := count(t, e, `SELECT count(*) FROM user_invitations WHERE email = 'erin@example.com' AND accepted_at IS NULL`); n != 1 {
		t.Errorf("erin's invitation: %d open", n)
	}
}
