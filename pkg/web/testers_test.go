package web_test

// Testers on the web (issue "Testers are people"): a channel open to its testers only shows
// nobody else a build; a tester signs in with the link mailed to them (read from the outbox, as
// the mail would carry it), opens the build, installs it, and the team sees it; removing them
// from the group shuts them out at once; links work once; next cannot leave the site; the
// one-click unsubscribe needs no cookie.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/background"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// testerSite is an app whose channel is open to group qa (ada and bob) only, with one build.
type testerSite struct {
	e            *apptest.Env
	slug         string
	chID, appID  int64
	relID        int64
	releasePath  string
	manifestPath string
}

// api calls the API with the admin token and decodes the JSON answer into out (nil: none).
func api(t *testing.T, e *apptest.Env, method, path string, body any, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, e.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Token "+e.AdminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// newTesterSite starts the site; with a relay, its mail goes out through it.
func newTesterSite(t *testing.T, relay ...*mailpit.Server) *testerSite {
	t.Helper()
	var e *apptest.Env
	if len(relay) > 0 {
		e = newMailingEnv(t, relay[0])
	} else {
		e = apptest.New(t, apptest.Options{})
	}
	m := e.UploadApp(t, "harbor.ipa", ipa("Harbor", "1.0", "1"))
	s := &testerSite{e: e}
	ch := m["channel"].(map[string]any)
	s.slug, s.chID = ch["slug"].(string), int64(ch["id"].(float64))
	s.appID = int64(m["app"].(map[string]any)["id"].(float64))
	if st := api(t, e, http.MethodPost, "/api/groups", map[string]any{"alias": "qa", "name": "QA"}, nil); st != http.StatusCreated {
		t.Fatalf("making the group: %d", st)
	}
	if st := api(t, e, http.MethodPost, "/api/groups/qa/testers", map[string]any{"emails": []string{"ada@example.com", "bob@example.com"}}, nil); st != 200 {
		t.Fatalf("adding testers: %d", st)
	}
	if st := api(t, e, http.MethodPatch, fmt.Sprintf("/api/channels/%d", s.chID), map[string]any{"tester_groups": []string{"qa"}}, nil); st != 200 {
		t.Fatalf("setting the channel's groups: %d", st)
	}
	r := upload(t, e, "harbor.ipa", ipa("Harbor", "1.1", "2"), apptest.Field("channel_key", s.slug))
	s.relID = r.ID
	s.releasePath = fmt.Sprintf("/channels/%s/releases/%d", s.slug, r.ID)
	s.manifestPath = s.releasePath + "/install"
	return s
}

// newMailingEnv starts a server whose mail goes out through the relay (the mail sender serve
// runs, on the relay's settings: apptest runs none).
func newMailingEnv(t *testing.T, relay *mailpit.Server) *apptest.Env {
	t.Helper()
	env := map[string]string{"SLIPWAY_STORAGE_URL": "file://" + t.TempDir(), "SLIPWAY_SECRET": "test-secret-test-secret-test-secret-0123"}
	for _, kv := range relay.Env(t) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	mc, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.Mail = mc.Mail }})
	bg := background.Start(context.Background(), slog.New(slog.DiscardHandler), background.Stage{{Name: "mail", Component: e.Service.Mailer}})
	t.Cleanup(bg.Stop)
	return e
}

// plain is a client with a cookie jar that shows redirects instead of following them.
func plain(t *testing.T) *http.Client { return noRedirects(browserClient(t)) }

func send(t *testing.T, c *http.Client, method, u string, form url.Values, header http.Header) (*http.Response, string) {
	t.Helper()
	req := formRequest(t, method, u, form)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var linkRe = regexp.MustCompile(`https?://[^\s"<>]+/t/in/[A-Za-z0-9_%-]+`)

// mailedLink is the sign-in link in the newest sign-in mail to email, as the mail's text says it.
func mailedLink(t *testing.T, e *apptest.Env, email string) string {
	t.Helper()
	var body string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT text_body FROM mail_outbox WHERE recipient = $1 AND kind = 'sign_in'
		ORDER BY created_at DESC, id DESC LIMIT 1`, email).Scan(&body); err != nil {
		t.Fatalf("no sign-in mail to %s: %v", email, err)
	}
	l := linkRe.FindString(body)
	if l == "" {
		t.Fatalf("no sign-in link in the mail to %s: %s", email, body)
	}
	return l
}

// signInTester asks for a link for email and follows it as the tester would, in c.
func signInTester(t *testing.T, s *testerSite, c *http.Client, email string) {
	t.Helper()
	resp, _ := send(t, c, http.MethodPost, s.e.URL+"/t/signin", url.Values{"email": {email}}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("asking for a link: %d", resp.StatusCode)
	}
	link := mailedLink(t, s.e, email)
	resp, _ = send(t, c, http.MethodPost, link, url.Values{}, http.Header{"Sec-Fetch-Site": {"same-origin"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("using the link: %d", resp.StatusCode)
	}
}

// noBuild checks that an answer hands out nothing of the build: no package, no object URL.
func noBuild(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	loc := resp.Header.Get("Location")
	for _, bad := range []string{"/objects/", "packages/", "itms-services", "/download/releases/"} {
		if strings.Contains(loc, bad) || strings.Contains(body, bad) {
			t.Errorf("%s: the answer (%d, Location %q) hands out %q", what, resp.StatusCode, loc, bad)
		}
	}
}

func TestTesterOnlyChannelAnonymous(t *testing.T) {
	s := newTesterSite(t)
	e, c := s.e, plain(t)
	for _, path := range []string{"/channels/" + s.slug, s.releasePath} {
		resp, body := send(t, c, http.MethodGet, e.URL+path, nil, nil)
		noBuild(t, path, resp, body)
		want := e.URL + "/t/signin?next=" + url.QueryEscape(path)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("GET %s anonymously: %d to %q, want 303 to %q", path, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	for _, path := range []string{s.releasePath + "/qrcode", s.manifestPath, fmt.Sprintf("/download/releases/%d", s.relID),
		fmt.Sprintf("/releases/%d/icon", s.relID), s.manifestPath + "?access=t1.forged", fmt.Sprintf("/download/releases/%d?access=u1.x.y", s.relID)} {
		resp, body := send(t, c, http.MethodGet, e.URL+path, nil, nil)
		noBuild(t, path, resp, body)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s anonymously: %d, want 401: %.200s", path, resp.StatusCode, body)
		}
	}
	// A password or a forged cookie opens nothing either.
	resp, body := send(t, c, http.MethodGet, e.URL+s.releasePath, nil, http.Header{"Cookie": {"slipway_tester=forged; slipway_session=forged"}})
	noBuild(t, "forged cookies", resp, body)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("forged cookies: %d", resp.StatusCode)
	}
}

func TestTesterMailLinkFlow(t *testing.T) {
	s := newTesterSite(t)
	e, c := s.e, plain(t)
	// The sign-in form keeps where the tester was going.
	resp, body := send(t, c, http.MethodGet, e.URL+"/t/signin?next="+url.QueryEscape(s.releasePath), nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `name="next" value="`+s.releasePath+`"`) {
		t.Fatalf("sign-in form: %d %s", resp.StatusCode, body)
	}
	// A malformed address: the form again, 422, with what was typed.
	resp, body = send(t, c, http.MethodPost, e.URL+"/t/signin", url.Values{"email": {"ada at example"}, "next": {s.releasePath}}, nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `value="ada at example"`) || !strings.Contains(body, "signin-error") {
		t.Fatalf("a malformed address: %d %s", resp.StatusCode, body)
	}
	// The same answer for a tester and for a stranger.
	answers := map[string]string{}
	for _, email := range []string{"nobody@example.com", "ADA@example.com"} {
		resp, _ := send(t, c, http.MethodPost, e.URL+"/t/signin", url.Values{"email": {email}, "next": {s.releasePath}}, nil)
		answers[email] = fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Location"))
	}
	if answers["nobody@example.com"] != answers["ADA@example.com"] || !strings.HasSuffix(answers["ADA@example.com"], "/t/signin?sent=1") {
		t.Fatalf("answers differ or are not 'check your mail': %v", answers)
	}
	if n := count(t, e, `SELECT count(*) FROM mail_outbox WHERE kind = 'sign_in' AND recipient = 'nobody@example.com'`); n != 0 {
		t.Errorf("a stranger was mailed %d links", n)
	}
	_, body = send(t, c, http.MethodGet, e.URL+"/t/signin?sent=1", nil, nil)
	mustContain(t, []byte(body), "Check your mail")

	link := mailedLink(t, e, "ada@example.com")
	// Opening the link (as a mail scanner would, twice) shows the button and spends nothing.
	for range 2 {
		resp, body = send(t, plain(t), http.MethodGet, link, nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `id="link-submit"`) || !strings.Contains(body, `method="post"`) {
			t.Fatalf("GET of the link: %d %s", resp.StatusCode, body)
		}
	}
	// A POST from another site is refused (it would sign this browser in as whoever's link it is).
	resp, _ = send(t, c, http.MethodPost, link, url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST of the link: %d", resp.StatusCode)
	}
	resp, _ = send(t, c, http.MethodPost, link, url.Values{}, http.Header{"Origin": {"https://evil.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a POST of the link from another origin: %d", resp.StatusCode)
	}
	// The button signs in and goes where the tester was going (kept in this browser).
	resp, _ = send(t, c, http.MethodPost, link, url.Values{}, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {"null"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != e.URL+s.releasePath {
		t.Fatalf("POST of the link: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "slipway_tester" && ck.Value != "" {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" {
		t.Fatalf("the tester cookie: %+v", cookie)
	}
	if strings.Contains(e.LogText(), cookie.Value) || strings.Contains(e.LogText(), strings.TrimPrefix(link, e.URL+"/t/in/")) {
		t.Error("the log holds the session or the link's secret")
	}
	// The link works once.
	resp, body = send(t, plain(t), http.MethodPost, link, url.Values{}, nil)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Ask for a new sign-in link") || !strings.Contains(body, "/t/signin") {
		t.Errorf("a spent link: %d %s", resp.StatusCode, body)
	}
	resp, _ = send(t, plain(t), http.MethodPost, e.URL+"/t/in/forged-secret", url.Values{}, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged link: %d", resp.StatusCode)
	}

	// The release page opens, says the tester's state, and records "opened".
	resp, body = send(t, c, http.MethodGet, e.URL+s.releasePath, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="tester-state"`) || !strings.Contains(body, `id="install"`) {
		t.Fatalf("the release page for the tester: %d %.500s", resp.StatusCode, body)
	}
	if st := testerState(t, e, s.relID, "ada@example.com"); st != "opened" {
		t.Errorf("after opening the page, ada is %q", st)
	}
	// The install link carries a token made for ada: iOS fetches the manifest without cookies.
	m := regexp.MustCompile(`id="install" href="itms-services://\?action=download-manifest&amp;url=([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no itms-services install link: %.2000s", body)
	}
	manifestURL, err := url.QueryUnescape(strings.ReplaceAll(m[1], "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(manifestURL, "access=t") {
		t.Fatalf("the manifest URL carries no tester token: %s", manifestURL)
	}
	resp, body = send(t, plain(t), http.MethodGet, manifestURL, nil, nil) // no cookies, as iOS
	if resp.StatusCode != 200 || !strings.Contains(body, "<plist") {
		t.Fatalf("the manifest by the tester's link: %d %.300s", resp.StatusCode, body)
	}
	var rts []struct {
		Email, State string
		InstalledAt  *string `json:"installed_at"`
	}
	if st := api(t, e, http.MethodGet, fmt.Sprintf("/api/releases/%d/testers", s.relID), nil, &rts); st != 200 {
		t.Fatalf("GET testers: %d", st)
	}
	states := map[string]string{}
	for _, rt := range rts {
		states[rt.Email] = rt.State
		if rt.State == "installed" && rt.InstalledAt == nil {
			t.Errorf("%s installed with no time", rt.Email)
		}
	}
	if states["ada@example.com"] != "installed" || states["bob@example.com"] != "invited" {
		t.Errorf("release testers after ada's install: %v", states)
	}
	// The page now says so; the home lists the build with its state.
	_, body = send(t, c, http.MethodGet, e.URL+s.releasePath, nil, nil)
	mustContain(t, []byte(body), `data-state="installed"`, "You installed this build on")
	resp, body = send(t, c, http.MethodGet, e.URL+"/t", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, fmt.Sprintf(`id="install-%d"`, s.relID)) || !strings.Contains(body, "Harbor") ||
		!strings.Contains(body, `id="tester-email">ada@example.com<`) {
		t.Fatalf("the tester's home: %d %.1500s", resp.StatusCode, body)
	}
	// The older build (uploaded before the channel was given to qa) is one tap away.
	mustContain(t, []byte(body), "Older builds (1)")
	// A download with the session marks the build installed too (bob, on the other build).
	bob := plain(t)
	signInTester(t, s, bob, "bob@example.com")
	resp, _ = send(t, bob, http.MethodGet, fmt.Sprintf("%s/download/releases/%d", e.URL, s.relID), nil, nil)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("bob's download: %d", resp.StatusCode)
	}
	if st := testerState(t, e, s.relID, "bob@example.com"); st != "installed" {
		t.Errorf("after bob's download, bob is %q", st)
	}

	// Taken out of the group, ada is shut out at once, with the same cookie.
	if st := api(t, e, http.MethodDelete, "/api/groups/qa/testers/ada@example.com", nil, nil); st != 200 {
		t.Fatalf("removing ada: %d", st)
	}
	resp, body = send(t, c, http.MethodGet, e.URL+s.releasePath, nil, nil)
	noBuild(t, "removed tester's page", resp, body)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "ada@example.com") {
		t.Errorf("the release page after ada left the group: %d %.300s", resp.StatusCode, body)
	}
	for _, path := range []string{fmt.Sprintf("/download/releases/%d", s.relID), s.manifestPath, s.releasePath + "/qrcode"} {
		resp, body := send(t, c, http.MethodGet, e.URL+path, nil, nil)
		noBuild(t, path, resp, body)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s after ada left the group: %d", path, resp.StatusCode)
		}
	}
	// Her install link too (made for her while she was in the group).
	resp, body = send(t, plain(t), http.MethodGet, manifestURL, nil, nil)
	noBuild(t, "removed tester's install link", resp, body)
	if resp.StatusCode < 400 {
		t.Errorf("ada's old install link after she left the group: %d", resp.StatusCode)
	}

	// Signing out ends the session.
	resp, _ = send(t, bob, http.MethodPost, e.URL+"/t/signout", url.Values{}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	if resp, _ := send(t, bob, http.MethodGet, e.URL+"/t", nil, nil); resp.StatusCode != http.StatusSeeOther ||
		!strings.Contains(resp.Header.Get("Location"), "/t/signin") {
		t.Errorf("home after signing out: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// testerState is a tester's state on a release, from the database.
func testerState(t *testing.T, e *apptest.Env, releaseID int64, email string) string {
	t.Helper()
	var st string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT CASE WHEN rt.installed_at IS NOT NULL THEN 'installed'
		WHEN rt.opened_at IS NOT NULL THEN 'opened' ELSE 'invited' END FROM release_testers rt JOIN testers t ON t.id = rt.tester_id
		WHERE rt.release_id = $1 AND t.email = $2`, releaseID, email).Scan(&st); err != nil {
		return "none"
	}
	return st
}

func TestTesterNextStaysOnSite(t *testing.T) {
	s := newTesterSite(t)
	e := s.e
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)",
		"http:evil.example", "/t\r\nLocation: https://evil.example", "evil.example", "/%2F/evil.example"} {
		c := plain(t)
		// The form drops it.
		_, body := send(t, c, http.MethodGet, e.URL+"/t/signin?next="+url.QueryEscape(next), nil, nil)
		if strings.Contains(body, `name="next"`) {
			t.Errorf("next %q kept in the form", next)
		}
		send(t, c, http.MethodPost, e.URL+"/t/signin", url.Values{"email": {"ada@example.com"}, "next": {next}}, nil)
		link := mailedLink(t, e, "ada@example.com")
		resp, _ := send(t, c, http.MethodPost, link, url.Values{"next": {next}}, nil)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || (loc != e.URL+"/t" && !strings.HasPrefix(loc, e.URL+"/")) {
			t.Errorf("next %q: %d to %q", next, resp.StatusCode, loc)
		}
		if u, err := url.Parse(loc); err != nil || u.Host != strings.TrimPrefix(e.URL, "http://") {
			t.Errorf("next %q sent the browser to %q", next, loc)
		}
		// (Each address gets five links a quarter hour; the next rounds use other testers' links.)
		send(t, c, http.MethodPost, e.URL+"/t/signout", url.Values{}, nil)
		e.DB.Pool.Exec(context.Background(), `DELETE FROM tester_links`)
	}
	// A path on the site is kept.
	c := plain(t)
	send(t, c, http.MethodPost, e.URL+"/t/signin", url.Values{"email": {"ada@example.com"}}, nil)
	resp, _ := send(t, c, http.MethodPost, mailedLink(t, e, "ada@example.com"), url.Values{"next": {s.releasePath + "?x=1"}}, nil)
	if loc := resp.Header.Get("Location"); loc != e.URL+s.releasePath+"?x=1" {
		t.Errorf("a path on the site: %q", loc)
	}
}

func TestTesterUnsubscribeAndMailChoice(t *testing.T) {
	s := newTesterSite(t)
	e := s.e
	// A second build: a new-build mail, with its one-click unsubscribe headers.
	upload(t, e, "harbor.ipa", ipa("Harbor", "1.2", "3"), apptest.Field("channel_key", s.slug))
	// (The mailing component writes it to the outbox just after the upload's commit.)
	var raw []byte
	testkit.Eventually(t, time.Minute, "a new-build mail to ada", func() bool {
		return e.DB.Pool.QueryRow(context.Background(), `SELECT headers FROM mail_outbox WHERE recipient = 'ada@example.com'
			AND kind = 'new_build' ORDER BY created_at DESC LIMIT 1`).Scan(&raw) == nil
	})
	var headers map[string]string
	if err := json.Unmarshal(raw, &headers); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<(https?://[^>]+/t/unsubscribe/[^>]+)>`).FindStringSubmatch(headers["List-Unsubscribe"])
	if m == nil || headers["List-Unsubscribe-Post"] != "List-Unsubscribe=One-Click" {
		t.Fatalf("the mail's unsubscribe headers: %v", headers)
	}
	unsub := m[1]
	// Opening it in a browser changes nothing: a page with a button.
	resp, body := send(t, plain(t), http.MethodGet, unsub, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="unsubscribe-submit"`) {
		t.Fatalf("GET unsubscribe: %d %s", resp.StatusCode, body)
	}
	if mail := testerMail(t, e, "ada@example.com", s.appID); mail != "every" {
		t.Fatalf("after the GET, ada's mail is %q", mail)
	}
	// RFC 8058: a POST with no cookies, from anywhere.
	resp, body = send(t, &http.Client{}, http.MethodPost, unsub, url.Values{"List-Unsubscribe": {"One-Click"}},
		http.Header{"Origin": {"https://mail.example"}, "Sec-Fetch-Site": {"cross-site"}})
	if resp.StatusCode != 200 || !strings.Contains(body, `id="unsubscribed"`) {
		t.Fatalf("one-click unsubscribe: %d %s", resp.StatusCode, body)
	}
	if mail := testerMail(t, e, "ada@example.com", s.appID); mail != "none" {
		t.Errorf("after unsubscribing, ada's mail is %q", mail)
	}
	// Some mail clients send the one-click POST as multipart/form-data.
	mp, ctype := apptest.Multipart(apptest.Field("List-Unsubscribe", "One-Click"))
	req, err := http.NewRequest(http.MethodPost, unsub, mp)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("a multipart one-click unsubscribe: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	if resp, _ := send(t, &http.Client{}, http.MethodPost, unsub+"x", url.Values{}, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a forged unsubscribe token: %d", resp.StatusCode)
	}

	// The home shows the choice; the form changes it (from this site only).
	c := plain(t)
	signInTester(t, s, c, "ada@example.com")
	_, body = send(t, c, http.MethodGet, e.URL+"/t", nil, nil)
	mustContain(t, []byte(body), fmt.Sprintf(`id="mail-%d-none" checked`, s.appID))
	action := fmt.Sprintf("%s/t/apps/%d/mail", e.URL, s.appID)
	if resp, _ := send(t, c, http.MethodPost, action, url.Values{"mail": {"daily"}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site mail choice: %d", resp.StatusCode)
	}
	resp, _ = send(t, c, http.MethodPost, action, url.Values{"mail": {"daily"}}, http.Header{"Sec-Fetch-Site": {"same-origin"}})
	if resp.StatusCode != http.StatusSeeOther || testerMail(t, e, "ada@example.com", s.appID) != "daily" {
		t.Fatalf("the mail choice: %d, now %q", resp.StatusCode, testerMail(t, e, "ada@example.com", s.appID))
	}
	_, body = send(t, c, http.MethodGet, resp.Header.Get("Location"), nil, nil)
	mustContain(t, []byte(body), "Mail choice saved for Harbor", fmt.Sprintf(`id="mail-%d-daily" checked`, s.appID))
	if resp, _ := send(t, c, http.MethodPost, action, url.Values{"mail": {"weekly"}}, nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an unknown mail choice: %d", resp.StatusCode)
	}
	if resp, _ := send(t, c, http.MethodPost, fmt.Sprintf("%s/t/apps/%d/mail", e.URL, s.appID+1000), url.Values{"mail": {"daily"}}, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the mail choice of an app not given to the tester: %d", resp.StatusCode)
	}
	if resp, _ := send(t, plain(t), http.MethodPost, action, url.Values{"mail": {"none"}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a mail choice without a session: %d", resp.StatusCode)
	}
}

func testerMail(t *testing.T, e *apptest.Env, email string, appID int64) string {
	t.Helper()
	var mail string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT ta.mail FROM tester_apps ta JOIN testers t ON t.id = ta.tester_id
		WHERE t.email = $1 AND ta.app_id = $2`, email, appID).Scan(&mail); err != nil {
		return "no row"
	}
	return mail
}

func TestRootRedirects(t *testing.T) {
	s := newTesterSite(t)
	e := s.e
	where := func(c *http.Client) string {
		resp, _ := send(t, c, http.MethodGet, e.URL+"/", nil, nil)
		if resp.StatusCode != http.StatusFound {
			t.Errorf("GET /: %d", resp.StatusCode)
		}
		return strings.TrimPrefix(resp.Header.Get("Location"), e.URL)
	}
	if got := where(plain(t)); got != "/t/signin" {
		t.Errorf("anonymous: / goes to %q", got)
	}
	tc := plain(t)
	signInTester(t, s, tc, "ada@example.com")
	if got := where(tc); got != "/t" {
		t.Errorf("a tester: / goes to %q", got)
	}
	// The console's cookie covers the whole site since this change; sign in as a browser does.
	secret, _, err := e.Service.Logins.UseLoginLink(context.Background(), mustLoginLink(t, e))
	if err != nil {
		t.Fatal(err)
	}
	admin := plain(t)
	admin.Jar.SetCookies(mustParse(t, e.URL+"/"), []*http.Cookie{{Name: "slipway_session", Value: secret, Path: "/"}})
	if got := where(admin); got != "/console" {
		t.Errorf("a console user: / goes to %q", got)
	}
	// A console admin opens the tester-only channel (as the app's admin) without a tester session.
	if resp, body := send(t, admin, http.MethodGet, e.URL+s.releasePath, nil, nil); resp.StatusCode != 200 {
		t.Errorf("an admin's console session on the release page: %d %.200s", resp.StatusCode, body)
	}
	// A viewer in the console whose email is a tester's opens it as that tester, who is recorded.
	signedIn(t, e, "alice") // (the first to sign in is an admin)
	viewer, role := signedIn(t, e, "bob")
	if role != "viewer" {
		t.Fatalf("bob is %s", role)
	}
	for _, ck := range viewer.Jar.Cookies(mustParse(t, e.URL+"/console")) {
		if ck.Name == "slipway_session" {
			viewer = plain(t)
			viewer.Jar.SetCookies(mustParse(t, e.URL+"/"), []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/"}})
		}
	}
	resp, body := send(t, viewer, http.MethodGet, e.URL+s.releasePath, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="tester-state"`) {
		t.Fatalf("bob's console session on the release page: %d %.300s", resp.StatusCode, body)
	}
	if st := testerState(t, e, s.relID, "bob@example.com"); st != "opened" {
		t.Errorf("bob (through the console) is %q", st)
	}
	if resp, _ := send(t, viewer, http.MethodGet, e.URL+"/t", nil, nil); resp.StatusCode != 200 {
		t.Errorf("bob's home through the console: %d", resp.StatusCode)
	}
	// A viewer who is no tester is refused.
	carol, _ := signedIn(t, e, "carol")
	for _, ck := range carol.Jar.Cookies(mustParse(t, e.URL+"/console")) {
		if ck.Name == "slipway_session" {
			carol = plain(t)
			carol.Jar.SetCookies(mustParse(t, e.URL+"/"), []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/"}})
		}
	}
	if resp, body := send(t, carol, http.MethodGet, e.URL+s.releasePath, nil, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer who is no tester on the release page: %d %.200s", resp.StatusCode, body)
	}
}

func mustLoginLink(t *testing.T, e *apptest.Env) string {
	t.Helper()
	l, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConsoleTesters(t *testing.T) {
	s := newTesterSite(t)
	e := s.e
	admin, _ := signedIn(t, e, "alice")
	page := e.URL + "/console/testers"
	_, body := fetch(t, admin, http.MethodGet, page, nil)
	mustContain(t, []byte(body), `id="group-qa"`, "ada@example.com", "bob@example.com", `id="nav-testers"`, `id="mail-off"`)
	// A new group, and testers pasted into it (one a line, and CSV with names).
	resp, body := fetch(t, admin, http.MethodPost, page+"/groups", with(formOf(t, body, "create-group"), "alias", "beta", "name", "Beta"))
	if resp.StatusCode != 200 || !strings.Contains(body, "Group beta made") {
		t.Fatalf("making a group: %d %.300s", resp.StatusCode, body)
	}
	resp, body = fetch(t, admin, http.MethodPost, page+"/groups/beta/testers", with(formOf(t, body, "add-testers-beta"),
		"emails", "email,name\ncy@example.com,Cy Young\n\"dee@example.com\",\"Dee, D.\"\nEVE@example.com\n"))
	if resp.StatusCode != 200 || !strings.Contains(body, "3 testers in group beta") {
		t.Fatalf("pasting testers: %d %.300s", resp.StatusCode, body)
	}
	mustContain(t, []byte(body), "cy@example.com", "Cy Young", "Dee, D.", "eve@example.com")
	// A bad address refuses the whole list, in place, with what was typed.
	resp, body = fetch(t, admin, http.MethodPost, page+"/groups/beta/testers", with(formOf(t, body, "add-testers-beta"),
		"emails", "fay@example.com\nnot-an-address"))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "not-an-address") {
		t.Fatalf("a bad address: %d %.300s", resp.StatusCode, body)
	}
	if n := count(t, e, `SELECT count(*) FROM testers WHERE email = 'fay@example.com'`); n != 0 {
		t.Error("a refused list added a tester")
	}
	// Remove one.
	resp, body = fetch(t, admin, http.MethodPost, page+"/groups/beta/remove", with(formOf(t, body, "add-testers-beta"), "email", "cy@example.com"))
	if resp.StatusCode != 200 || !strings.Contains(body, "cy@example.com is out of group beta") {
		t.Fatalf("removing a tester: %d %.300s", resp.StatusCode, body)
	}

	// The build's page lists who it went to.
	_, body = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, s.relID), nil)
	mustContain(t, []byte(body), `id="release-testers"`, "ada@example.com", `data-state="invited"`)

	// The channel page: its groups, and the form that sets them.
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, s.chID)
	_, body = fetch(t, admin, http.MethodGet, chURL, nil)
	fid := fmt.Sprintf("channel-testers-%d", s.chID)
	mustContain(t, []byte(body), `id="testers"`, fmt.Sprintf(`id="tester-group-%d-qa" checked`, s.chID), `id="newest-testers"`,
		"0 installed, 0 opened, 2 invited", `id="channel-testers-list"`, "bob@example.com")
	resp, body = fetch(t, admin, http.MethodPost, chURL+"/testers", with(formOf(t, body, fid), "tester_groups", "qa", "tester_groups", "beta"))
	if resp.StatusCode != 200 || !strings.Contains(body, "open to the testers of") {
		t.Fatalf("setting the channel's groups: %d %.300s", resp.StatusCode, body)
	}
	var ch struct {
		TesterGroups []string `json:"tester_groups"`
	}
	api(t, e, http.MethodGet, fmt.Sprintf("/api/channels/%d", s.chID), nil, &ch)
	if strings.Join(ch.TesterGroups, ",") != "beta,qa" && strings.Join(ch.TesterGroups, ",") != "qa,beta" {
		t.Errorf("the channel's groups after the form: %v", ch.TesterGroups)
	}
	// None: open to its link again.
	resp, body = fetch(t, admin, http.MethodPost, chURL+"/testers", formOf(t, body, fid))
	if resp.StatusCode != 200 || !strings.Contains(body, "open to anyone with its link") {
		t.Fatalf("clearing the channel's groups: %d %.300s", resp.StatusCode, body)
	}
	if resp, _ := send(t, plain(t), http.MethodGet, e.URL+s.releasePath, nil, nil); resp.StatusCode != 200 {
		t.Errorf("the release page of a channel opened again: %d", resp.StatusCode)
	}

	// A viewer reads no testers and sees no forms.
	viewer, role := signedIn(t, e, "victor")
	if role != "viewer" {
		t.Fatalf("victor is %s", role)
	}
	resp, body = fetch(t, viewer, http.MethodGet, page, nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's Testers page: %d", resp.StatusCode)
	}
	_, body = fetch(t, viewer, http.MethodGet, chURL, nil)
	mustNotContain(t, []byte(body), `id="`+fid+`"`, `id="nav-testers"`)
}

// The tester forms face the internet: a large body is refused (413) before anything is done, a
// body that cannot be read is a 422, and neither sends mail.
func TestTesterFormLimits(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	c := plain(t)
	big := url.Values{"email": {"ada@example.com"}, "pad": {strings.Repeat("x", 200<<10)}}
	for _, path := range []string{"/t/signin", "/t/in/whatever", "/t/unsubscribe/whatever"} {
		if resp, _ := send(t, c, http.MethodPost, e.URL+path, big, nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with a 200 KiB form: %d", path, resp.StatusCode)
		}
	}
	req := formRequest(t, http.MethodPost, e.URL+"/t/signin", nil)
	req.Body, req.ContentLength = io.NopCloser(strings.NewReader("email=%zz")), 9
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("an unreadable form: %d", resp.StatusCode)
	}
	if n := count(t, e, `SELECT count(*) FROM mail_outbox`); n != 0 {
		t.Errorf("%d mails from refused forms", n)
	}
}
