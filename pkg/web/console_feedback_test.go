package web_test

// Testers' feedback in the console (docs/feedback.md, "Reading it"): the app's inbox and its
// filters, a build's reports on its page, resolving, reopening and deleting a report by its forms
// (Post/Redirect/Get, refused to viewers), and the app page's "Mail me feedback".

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/feedback"
	"github.com/slipwayhq/slipway/test/apptest"
)

// screenshotPNG is a w×h PNG of two colours (a screenshot as a phone sends it).
func screenshotPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{R: 30, G: 90, B: 200, A: 255}
			if y > h/3 {
				c = color.RGBA{R: 240, G: 240, B: 235, A: 255}
			}
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// makeTester records a tester and returns them as an actor.
func makeTester(t *testing.T, e *apptest.Env, email, name string) distribution.Actor {
	t.Helper()
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `INSERT INTO testers (email, name) VALUES ($1, $2) RETURNING id`, email, name).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return distribution.TesterActor(&distribution.Tester{ID: id, Email: email, Name: name})
}

// sendReport makes a report on a build through the use case, as the actor, with shots
// screenshots.
func sendReport(t *testing.T, e *apptest.Env, as distribution.Actor, releaseID int64, rep feedback.Report, shots int) int64 {
	t.Helper()
	ctx := distribution.WithActor(context.Background(), as)
	d, err := e.Service.Feedback.Begin(ctx, feedback.BeginInput{ReleaseID: releaseID, Client: "192.0.2.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abandon(ctx)
	for i := 0; i < shots; i++ {
		if err := d.AddScreenshot(ctx, bytes.NewReader(screenshotPNG(t, 390, 844))); err != nil {
			t.Fatal(err)
		}
	}
	if rep.Source == "" {
		rep.Source = distribution.FeedbackFromAPI
	}
	f, err := d.Submit(ctx, rep)
	if err != nil {
		t.Fatal(err)
	}
	return f.ID
}

var reportIDRe = regexp.MustCompile(`<li class="feedback-report" id="feedback-(\d+)"`)

// reportIDs are the reports a page lists, in its order.
func reportIDs(page string) []int64 {
	var out []int64
	for _, m := range reportIDRe.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		out = append(out, n)
	}
	return out
}

func reportState(t *testing.T, e *apptest.Env, id int64) string {
	t.Helper()
	var s string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT coalesce((SELECT state FROM feedback WHERE id = $1), 'gone')`, id).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// feedbackFixture is an app with two builds and reports on them by two testers and an anonymous
// sender, and its people: an admin, a developer member, a viewer member.
type feedbackFixture struct {
	e                  *apptest.Env
	admin, dev, viewer *http.Client
	appID, relA, relB  int64
	// r1 (ada on A, two screenshots), r2 (ben on B, app state), r3 (anonymous on B), oldest first.
	r1, r2, r3 int64
	adaID      int64
	benID      int64
	inbox      string
}

func newFeedbackFixture(t *testing.T, opts apptest.Options) *feedbackFixture {
	e := apptest.New(t, opts)
	fx := &feedbackFixture{e: e}
	fx.admin, _ = signedIn(t, e, "alice")
	fx.dev, _ = signedIn(t, e, "carol")
	fx.viewer, _ = signedIn(t, e, "bob")
	a := e.UploadApp(t, "a.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	b := e.UploadApp(t, "b.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}))
	fx.appID = int64(a["app"].(map[string]any)["id"].(float64))
	fx.relA, fx.relB = int64(a["id"].(float64)), int64(b["id"].(float64))
	fx.inbox = fmt.Sprintf("%s/console/apps/%d/feedback", e.URL, fx.appID)
	// carol is a developer of the app (by the members form), bob a viewer member.
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, fx.appID)
	if resp, _ := fetch(t, fx.admin, http.MethodPost, appURL+"/members", url.Values{"email": {"carol@example.com"}, "csrf": {csrfOf(t, fx.admin, appURL)}}); resp.StatusCode != 200 {
		t.Fatalf("carol made a member: %d", resp.StatusCode)
	}
	if _, err := e.DB.Pool.Exec(context.Background(), `INSERT INTO app_members (app_id, user_id) SELECT $1, id FROM users WHERE email = 'bob@example.com'`, fx.appID); err != nil {
		t.Fatal(err)
	}
	ada, ben := makeTester(t, e, "ada@example.com", "Ada"), makeTester(t, e, "ben@example.com", "")
	fx.adaID, fx.benID = ada.TesterID, ben.TesterID
	fx.r1 = sendReport(t, e, ada, fx.relA, feedback.Report{Text: "Crashes when I rotate the map", Device: "iPhone15,2", OSVersion: "iOS 17.4", Locale: "en_GB",
		Source: distribution.FeedbackFromPage}, 2)
	fx.r2 = sendReport(t, e, ben, fx.relB, feedback.Report{Text: "The Save button is misaligned", Device: "Pixel 8", OSVersion: "Android 14",
		AppState: `{"screen":"settings","dark":true}`}, 0)
	fx.r3 = sendReport(t, e, distribution.AnonymousActor(), fx.relB, feedback.Report{Text: "Typo <b>on</b> the login screen", Email: "zed@example.com"}, 0)
	return fx
}

func TestConsoleFeedbackInbox(t *testing.T) {
	fx := newFeedbackFixture(t, apptest.Options{})
	e, dev, viewer := fx.e, fx.dev, fx.viewer
	ctx := context.Background()

	// The inbox lists every report, newest first, each with its build, author, device and when.
	resp, page := fetch(t, dev, http.MethodGet, fx.inbox, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("inbox: %d %.300s", resp.StatusCode, page)
	}
	if got, want := reportIDs(page), []int64{fx.r3, fx.r2, fx.r1}; !slices.Equal(got, want) {
		t.Fatalf("inbox lists %v, want %v newest first", got, want)
	}
	r1 := reportHTML(page, fx.r1)
	mustContain(t, []byte(r1), "Ada", "Crashes when I rotate the map", "iPhone15,2", "iOS 17.4", "en_GB", "from the release page", "1.0 (1)",
		fmt.Sprintf(`href="%s/console/releases/%d"`, e.URL, fx.relA),
		fmt.Sprintf(`<a href="%s/api/feedback/%d/screenshots/1" title="Screenshot 1, 390×844"><img src="%s/api/feedback/%d/screenshots/1?size=thumb" alt="Screenshot 1"`, e.URL, fx.r1, e.URL, fx.r1),
		fmt.Sprintf(`alt="Screenshot 2"`), fmt.Sprintf(`id="feedback-resolve-%d"`, fx.r1), fmt.Sprintf(`id="feedback-delete-%d"`, fx.r1))
	r2 := reportHTML(page, fx.r2)
	mustContain(t, []byte(r2), "ben@example.com", "from the app", "Pixel 8", "<summary>App state</summary>", "\n  &#34;screen&#34;: &#34;settings&#34;", "\n  &#34;dark&#34;: true")
	r3 := reportHTML(page, fx.r3)
	mustContain(t, []byte(r3), "anonymous", `href="mailto:zed@example.com"`, "Typo &lt;b&gt;on&lt;/b&gt; the login screen")
	// The build select offers the builds with reports; the tester select the testers.
	mustContain(t, []byte(page), fmt.Sprintf(`<option value="%d">1.1 (2) · #2`, fx.relB), "1 report</option>", "2 reports</option>",
		fmt.Sprintf(`<option value="%d">Ada · ada@example.com — 1 report</option>`, fx.adaID))

	// Each filter narrows it.
	for _, c := range []struct {
		query string
		want  []int64
	}{
		{fmt.Sprintf("release_id=%d", fx.relA), []int64{fx.r1}},
		{fmt.Sprintf("release_id=%d", fx.relB), []int64{fx.r3, fx.r2}},
		{fmt.Sprintf("tester_id=%d", fx.benID), []int64{fx.r2}},
		{"state=open", []int64{fx.r3, fx.r2, fx.r1}},
		{"state=resolved", nil},
		{"q=misaligned", []int64{fx.r2}},
		{"q=zed%40example", []int64{fx.r3}},
		{fmt.Sprintf("release_id=%d&q=typo", fx.relB), []int64{fx.r3}},
	} {
		resp, page := fetch(t, dev, http.MethodGet, fx.inbox+"?"+c.query, nil)
		if got := reportIDs(page); resp.StatusCode != 200 || !slices.Equal(got, c.want) {
			t.Errorf("inbox?%s: %d lists %v, want %v", c.query, resp.StatusCode, got, c.want)
		}
	}
	if resp, _ := fetch(t, dev, http.MethodGet, fx.inbox+"?state=sideways", nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a bad state filter: %d", resp.StatusCode)
	}

	// A developer resolves r1 from the inbox filtered by build A: 303 back to it at the report,
	// with the flash once; the state and the audit change.
	filtered := fmt.Sprintf("%s?release_id=%d", fx.inbox, fx.relA)
	_, page = fetch(t, dev, http.MethodGet, filtered, nil)
	resp, _ = fetch(t, noRedirects(dev), http.MethodPost, fmt.Sprintf("%s/console/feedback/%d/state", e.URL, fx.r1), formOf(t, page, fmt.Sprintf("feedback-state-%d", fx.r1)))
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != fmt.Sprintf("%s#feedback-%d", filtered, fx.r1) {
		t.Fatalf("resolve answered %d to %q", resp.StatusCode, loc)
	}
	_, page = fetch(t, dev, http.MethodGet, resp.Header.Get("Location"), nil)
	mustContain(t, []byte(page), fmt.Sprintf("Report %d marked resolved.", fx.r1), fmt.Sprintf(`id="feedback-reopen-%d"`, fx.r1), "resolved by carol")
	if s := reportState(t, e, fx.r1); s != "resolved" {
		t.Errorf("r1 is %s after Resolve", s)
	}
	if n := count(t, e, `SELECT count(*) FROM audit_log WHERE action = 'feedback.resolved' AND target_id = $1 AND actor_kind = 'user'`, fx.r1); n != 1 {
		t.Errorf("%d audit rows of the resolution", n)
	}
	if got := reportIDs(fetchBody(t, dev, fx.inbox+"?state=resolved")); !slices.Equal(got, []int64{fx.r1}) {
		t.Errorf("resolved filter after Resolve: %v", got)
	}
	// … and reopens it.
	resp, page = fetch(t, dev, http.MethodPost, fmt.Sprintf("%s/console/feedback/%d/state", e.URL, fx.r1), formOf(t, page, fmt.Sprintf("feedback-state-%d", fx.r1)))
	if resp.StatusCode != 200 || !strings.Contains(page, fmt.Sprintf("Report %d is open again.", fx.r1)) || reportState(t, e, fx.r1) != "open" {
		t.Errorf("reopen: %d, state %s", resp.StatusCode, reportState(t, e, fx.r1))
	}
	if n := count(t, e, `SELECT count(*) FROM audit_log WHERE action = 'feedback.open' AND target_id = $1`, fx.r1); n != 1 {
		t.Errorf("%d audit rows of the reopening", n)
	}

	// A viewer reads the inbox but sees no forms; forged forms are refused (403) and change
	// nothing.
	resp, vpage := fetch(t, viewer, http.MethodGet, fx.inbox, nil)
	if resp.StatusCode != 200 || len(reportIDs(vpage)) != 3 || strings.Contains(vpage, "feedback-resolve-") || strings.Contains(vpage, "feedback-delete-") {
		t.Errorf("the viewer's inbox: %d, %d reports, forms shown: %v", resp.StatusCode, len(reportIDs(vpage)), strings.Contains(vpage, "feedback-resolve-"))
	}
	vcsrf := csrfRe.FindStringSubmatch(vpage)[1]
	before := count(t, e, `SELECT count(*) FROM audit_log`)
	for _, path := range []string{fmt.Sprintf("/console/feedback/%d/state", fx.r2), fmt.Sprintf("/console/feedback/%d/delete", fx.r2)} {
		resp, body := fetch(t, viewer, http.MethodPost, e.URL+path, url.Values{"csrf": {vcsrf}, "state": {"resolved"}})
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "viewers cannot change anything") {
			t.Errorf("viewer's forged %s: %d %.200s", path, resp.StatusCode, between(body, "<main", "</main>"))
		}
	}
	if s := reportState(t, e, fx.r2); s != "open" || count(t, e, `SELECT count(*) FROM audit_log`) != before {
		t.Errorf("the viewer's refused forms changed something: r2 %s", s)
	}

	// The build's page lists its own reports only, with a link to the inbox filtered by it.
	_, bpage := fetch(t, dev, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, fx.relB), nil)
	if got := reportIDs(bpage); !slices.Equal(got, []int64{fx.r3, fx.r2}) {
		t.Errorf("build B's page lists %v", got)
	}
	mustContain(t, []byte(bpage), fmt.Sprintf(`href="%s?release_id=%d" id="feedback-inbox-link"`, fx.inbox, fx.relB), "(2 reports)")

	// Delete from the build's page: back to it; the report goes, its screenshots' objects to
	// the collector.
	_, apage := fetch(t, dev, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, fx.relA), nil)
	resp, apage = fetch(t, dev, http.MethodPost, fmt.Sprintf("%s/console/feedback/%d/delete", e.URL, fx.r1), formOf(t, apage, fmt.Sprintf("feedback-delete-form-%d", fx.r1)))
	if resp.StatusCode != 200 || resp.Request.URL.Path != fmt.Sprintf("/console/releases/%d", fx.relA) || !strings.Contains(apage, fmt.Sprintf("Report %d deleted, with its 2 screenshots.", fx.r1)) {
		t.Errorf("delete: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if s := reportState(t, e, fx.r1); s != "gone" {
		t.Errorf("r1 is %s after Delete", s)
	}
	var deleted int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM storage_objects WHERE key LIKE 'feedback/%' AND state = 'deleted'`).Scan(&deleted); err != nil || deleted != 4 {
		t.Errorf("the deleted report's screenshots and thumbnails handed to the collector: %d (%v)", deleted, err)
	}
	if n := count(t, e, `SELECT count(*) FROM audit_log WHERE action = 'feedback.delete' AND target_id = $1`, fx.r1); n != 1 {
		t.Errorf("%d audit rows of the deletion", n)
	}
	if strings.Contains(apage, `class="feedback-report"`) || !strings.Contains(apage, `id="feedback-none"`) {
		t.Error("build A's page still lists a report")
	}
}

func TestConsoleFeedbackMail(t *testing.T) {
	fx := newFeedbackFixture(t, apptest.Options{})
	e, dev := fx.e, fx.dev
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, fx.appID)
	mailOn := func() bool {
		var on bool
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT m.feedback_mail FROM app_members m JOIN users u ON u.id = m.user_id
			WHERE m.app_id = $1 AND u.email = 'carol@example.com'`, fx.appID).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	// The app page links the inbox with the count of open reports, and offers the mail choice,
	// off; mail is off on this server, and it says so.
	_, page := fetch(t, dev, http.MethodGet, appURL, nil)
	mustContain(t, []byte(page), fmt.Sprintf(`<a href="%s" id="feedback-link">Feedback</a> <span class="muted" id="feedback-open">3 open</span>`, fx.inbox),
		`id="feedback-mail">`, "Reports are not mailed to you.", "Mail is off on this server")
	resp, _ := fetch(t, noRedirects(dev), http.MethodPost, appURL+"/feedback-mail", with(formOf(t, page, "feedback-mail-form"), "mail", "1"))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != appURL+"#feedback" || !mailOn() {
		t.Fatalf("mail me feedback: %d to %q, on %v", resp.StatusCode, resp.Header.Get("Location"), mailOn())
	}
	_, page = fetch(t, dev, http.MethodGet, appURL, nil)
	mustContain(t, []byte(page), `id="feedback-mail" checked>`, "Each new report is mailed to you", "will be mailed to you once this server can send mail")
	// The next report is mailed to her.
	id := sendReport(t, e, distribution.AnonymousActor(), fx.relB, feedback.Report{Text: "Another one"}, 0)
	if n := count(t, e, `SELECT count(*) FROM mail_outbox WHERE kind = 'feedback' AND recipient = 'carol@example.com' AND text_body LIKE $1`,
		fmt.Sprintf("%%/console/apps/%d/feedback#feedback-%d%%", fx.appID, id)); n != 1 {
		t.Errorf("%d feedback mails to carol linking the report", n)
	}
	// Unticked, she gets no more.
	_, page = fetch(t, dev, http.MethodGet, appURL, nil)
	if resp, body := fetch(t, dev, http.MethodPost, appURL+"/feedback-mail", formOf(t, page, "feedback-mail-form")); resp.StatusCode != 200 ||
		!strings.Contains(body, "no longer mailed to you") || mailOn() {
		t.Errorf("mail choice off: %d, on %v", resp.StatusCode, mailOn())
	}
	sendReport(t, e, distribution.AnonymousActor(), fx.relB, feedback.Report{Text: "And another"}, 0)
	if n := count(t, e, `SELECT count(*) FROM mail_outbox WHERE kind = 'feedback'`); n != 1 {
		t.Errorf("%d feedback mails after unticking", n)
	}
}

// reportHTML is the part of a page that shows report id.
func reportHTML(page string, id int64) string {
	i := strings.Index(page, fmt.Sprintf(`<li class="feedback-report" id="feedback-%d"`, id))
	if i < 0 {
		return ""
	}
	rest := page[i+1:]
	if j := strings.Index(rest, `<li class="feedback-report"`); j >= 0 {
		return rest[:j]
	}
	if j := strings.Index(rest, "</ol>"); j >= 0 {
		return rest[:j]
	}
	return rest
}

func fetchBody(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	_, body := fetch(t, c, http.MethodGet, u, nil)
	return body
}
