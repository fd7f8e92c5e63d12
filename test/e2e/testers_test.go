package e2e_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestTestersEndToEnd is issue 33's "Done when", against the real server on S3 and on the
// filesystem with a real SMTP relay (Mailpit, STARTTLS): a group of two testers on a channel;
// an upload invites both (one mail each, whose link leads to sign-in and the build); a second
// upload sends each a new-build mail, not a second invitation; one unsubscribes with the one-click
// POST and gets nothing for the third; anonymous requests for the channel's page, install link
// and download get no build; the release's testers show installed after a download; a tester
// taken out of the group loses access at once.
func TestTestersEndToEnd(t *testing.T) {
	t.Parallel()
	for _, storage := range []string{e2e.FS, e2e.S3} {
		t.Run(storage, func(t *testing.T) {
			t.Parallel()
			relay := mailpit.Start(t, mailpit.Options{TLS: mailpit.RequireSTARTTLS})
			h := e2e.New(t, e2e.Options{Storage: storage, Env: append(relay.Env(t), "SLIPWAY_MAIL_POLL_INTERVAL=100ms")})
			s := h.Start(t)
			testersEndToEnd(t, h, s, relay)
		})
	}
}

// browser is a tester's browser: its own cookies, redirects not followed.
type browser struct {
	t      *testing.T
	s      *e2e.Server
	client *http.Client
}

func newBrowser(t *testing.T, s *e2e.Server) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, s: s, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, u string, form url.Values) (int, http.Header, string) {
	b.t.Helper()
	if !strings.HasPrefix(u, "http") {
		u = b.s.URL + u
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "text/html")
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data)
}

var (
	releaseLinkRe = regexp.MustCompile(`https?://[^\s"<>]+/channels/[^\s"<>/]+/releases/\d+`)
	signInLinkRe  = regexp.MustCompile(`https?://[^\s"<>]+/t/in/[A-Za-z0-9_-]+`)
)

// signIn follows a tester through the sign-in page: the release page sends them there, they ask
// for a link, open the mailed link and press its button; it returns the page they land on.
func (b *browser) signIn(relay *mailpit.Server, email, page string) string {
	b.t.Helper()
	status, hdr, _ := b.do("GET", page, nil)
	loc := hdr.Get("Location")
	if status != http.StatusSeeOther || !strings.Contains(loc, "/t/signin") {
		b.t.Fatalf("an anonymous visit of %s: %d to %q, want the sign-in page", page, status, loc)
	}
	next := ""
	if u, err := url.Parse(loc); err == nil {
		next = u.Query().Get("next")
	}
	before := len(relay.To(b.t, email))
	if status, _, body := b.do("POST", "/t/signin", url.Values{"email": {email}, "next": {next}}); status != http.StatusSeeOther {
		b.t.Fatalf("asking for a link: %d %.300s", status, body)
	}
	msgs := relay.WaitFor(b.t, email, before+1)
	m := relay.Message(b.t, msgs[0].ID)
	link := signInLinkRe.FindString(m.Text)
	if link == "" {
		b.t.Fatalf("no sign-in link in:\n%s", m.Text)
	}
	if status, _, body := b.do("GET", link, nil); status != http.StatusOK || !strings.Contains(body, "Sign in") {
		b.t.Fatalf("opening the link: %d %.300s", status, body)
	}
	status, hdr, body := b.do("POST", link, url.Values{"next": {next}})
	if status != http.StatusSeeOther {
		b.t.Fatalf("pressing Sign in: %d %.300s", status, body)
	}
	// The link is spent: a second press signs nobody in.
	other := newBrowser(b.t, b.s)
	if status, _, _ := other.do("POST", link, nil); status == http.StatusSeeOther {
		b.t.Errorf("a spent link signed in again")
	}
	return hdr.Get("Location")
}

func testersEndToEnd(t *testing.T, h *e2e.Harness, s *e2e.Server, relay *mailpit.Server) {
	admin := h.CreateToken(t, "admin", "admin")
	ci := h.CreateToken(t, "ci", "upload")
	api := func(method, path, body string) map[string]any {
		t.Helper()
		r := s.Do(t, method, path, strings.NewReader(body), "Authorization", "Token "+admin, "Content-Type", "application/json")
		if r.Status/100 != 2 {
			t.Fatalf("%s %s: %d %.300s", method, path, r.Status, r.Body)
		}
		if len(r.Body) > 0 && r.Body[0] == '{' {
			return r.Map(t)
		}
		return nil
	}
	api("POST", "/api/groups", `{"alias":"qa","name":"QA"}`)
	api("POST", "/api/groups/qa/testers", `{"emails":["ada@testers.example","bob@testers.example"]}`)
	app := api("POST", "/api/apps", `{"name":"Harbor"}`)
	scheme := api("POST", fmt.Sprintf("/api/apps/%v/schemes", app["id"]), `{"name":"Beta"}`)
	ch := api("POST", fmt.Sprintf("/api/schemes/%v/channels", scheme["id"]), `{"name":"iOS","slug":"harbor-beta","device_type":"ios"}`)
	api("PATCH", fmt.Sprintf("/api/channels/%v", ch["id"]), `{"tester_groups":["qa"]}`)
	upload := func(build string) map[string]any {
		t.Helper()
		ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: build})
		r := uploadTo(t, s, ci, "harbor.ipa", ipa, "channel_key", "harbor-beta", "changelog", "Build "+build+" <b>bold</b>")
		if r.Status != 201 {
			t.Fatalf("upload %s: %d %.300s", build, r.Status, r.Body)
		}
		return r.Map(t)
	}

	// The first upload invites both: one mail each, naming the app, linking the build.
	first := upload("1")
	for _, who := range []string{"ada@testers.example", "bob@testers.example"} {
		msgs := relay.WaitFor(t, who, 1)
		m := relay.Message(t, msgs[0].ID)
		if !strings.Contains(m.Subject, "Harbor") || !strings.Contains(m.Subject, "invited") {
			t.Errorf("%s's first mail: %q", who, m.Subject)
		}
		if link := releaseLinkRe.FindString(m.Text); link != first["release_url"] {
			t.Errorf("%s's invitation links %q, want %v", who, link, first["release_url"])
		}
		if strings.Contains(m.HTML, "<b>bold</b>") || !strings.Contains(m.HTML, "&lt;b&gt;bold&lt;/b&gt;") {
			t.Errorf("the changelog is not escaped in the mail's HTML:\n%s", m.HTML)
		}
		if m.Headers["List-Unsubscribe-Post"] == nil || m.Headers["List-Unsubscribe"] == nil {
			t.Errorf("%s's invitation has no one-click unsubscribe: %v", who, m.Headers)
		}
	}

	// Nobody anonymous gets a build: the channel's page, the release page, the install
	// manifest, the download.
	anon := newBrowser(t, s)
	rid := int64(first["id"].(float64))
	for _, path := range []string{"/channels/harbor-beta", fmt.Sprintf("/channels/harbor-beta/releases/%d", rid),
		fmt.Sprintf("/channels/harbor-beta/releases/%d/install", rid), fmt.Sprintf("/download/releases/%d", rid)} {
		status, hdr, body := anon.do("GET", path, nil)
		if status == http.StatusOK && strings.Contains(body, "harbor.ipa") || status == http.StatusFound || strings.Contains(hdr.Get("Location"), "packages/") {
			t.Errorf("anonymous GET %s: %d %s", path, status, hdr.Get("Location"))
		}
	}

	// Ada follows her mail: sign-in, then the build; she downloads it.
	ada := newBrowser(t, s)
	landed := ada.signIn(relay, "ada@testers.example", first["release_url"].(string))
	if !strings.HasSuffix(landed, fmt.Sprintf("/channels/harbor-beta/releases/%d", rid)) {
		t.Errorf("after signing in ada lands on %q", landed)
	}
	if status, _, body := ada.do("GET", first["release_url"].(string), nil); status != http.StatusOK || !strings.Contains(body, "1.0") {
		t.Fatalf("ada's release page: %d %.300s", status, body)
	}
	if status, hdr, _ := ada.do("GET", fmt.Sprintf("/download/releases/%d", rid), nil); status != http.StatusFound || hdr.Get("Location") == "" {
		t.Fatalf("ada's download: %d", status)
	}
	var testers []map[string]any
	s.Do(t, "GET", fmt.Sprintf("/api/releases/%d/testers", rid), nil, "Authorization", "Token "+admin).JSON(t, &testers)
	state := map[string]any{}
	for _, x := range testers {
		state[x["email"].(string)] = x["state"]
	}
	if state["ada@testers.example"] != "installed" || state["bob@testers.example"] != "invited" {
		t.Errorf("the release's testers: %v", testers)
	}

	// The second upload: a new-build mail each, not a second invitation.
	upload("2")
	// Ada has had her invitation and her sign-in link, bob his invitation.
	// Counted, not read in order: mails that arrive within the same moment may be listed by the
	// relay in either order (CI once listed ada's sign-in link, sent 136 ms before her new-build
	// mail, as the newest).
	for who, n := range map[string]int{"ada@testers.example": 3, "bob@testers.example": 2} {
		invited, ready := 0, 0
		var subjects []string
		for _, m := range relay.WaitFor(t, who, n) {
			subjects = append(subjects, m.Subject)
			if strings.Contains(m.Subject, "invited") {
				invited++
			}
			if strings.Contains(m.Subject, "ready to install") {
				ready++
			}
		}
		if invited != 1 || ready != 1 {
			t.Errorf("%s's mails after the second upload (want one invitation and one new-build mail): %q", who, subjects)
		}
	}
	// Bob unsubscribes with the one-click POST his mail names (no cookies, RFC 8058's body).
	bobMail := relay.Message(t, relay.To(t, "bob@testers.example")[0].ID)
	unsub := strings.Trim(strings.Join(bobMail.Headers["List-Unsubscribe"], ""), "<>")
	resp, err := http.Post(unsub, "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("one-click unsubscribe: %d", resp.StatusCode)
	}
	upload("3")
	relay.WaitFor(t, "ada@testers.example", 4) // the sign-in link, the invitation, two new builds
	testkit.Eventually(t, e2e.WaitTimeout, "the third build's mails sent", func() bool {
		return h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state <> 'sent'`) == 0 &&
			h.QueryInt(t, `SELECT count(*) FROM release_distributions`) == 0
	})
	if n := len(relay.To(t, "bob@testers.example")); n != 2 {
		t.Errorf("bob got %d mails, want 2 (the invitation and the first new build; he unsubscribed)", n)
	}
	// Every mail arrived once.
	seen := map[string]int{}
	for _, m := range relay.Messages(t) {
		if seen[m.MessageID]++; seen[m.MessageID] > 1 {
			t.Errorf("mail %s arrived twice", m.MessageID)
		}
	}

	// What the testers did is in the audit trail, as theirs (the constraint on actor kinds once
	// refused every tester's row, which only a log line said).
	if n := h.QueryInt(t, `SELECT count(*) FROM audit_log WHERE actor_kind = 'tester' AND action IN ('tester.sign_in', 'tester.unsubscribe')`); n != 2 {
		t.Errorf("%d tester rows in the audit log, want ada's sign-in and bob's unsubscribe", n)
	}
	if strings.Contains(s.Logs(), "writing the audit log failed") {
		t.Errorf("an audit row was refused:\n%s", s.Logs())
	}
	// Ada out of the group: her session no longer opens the channel.
	api("DELETE", "/api/groups/qa/testers/ada@testers.example", "")
	if status, hdr, _ := ada.do("GET", fmt.Sprintf("/download/releases/%d", rid), nil); status == http.StatusFound {
		t.Errorf("ada's download after she left the group: %d %s", status, hdr.Get("Location"))
	}
	if status, _, body := ada.do("GET", first["release_url"].(string), nil); status == http.StatusOK && strings.Contains(body, "harbor.ipa") {
		t.Errorf("ada's release page after she left the group: %d", status)
	}
}
