package httpapi_test

// Feedback through the API as an app sends it: on a channel open to anyone and on a tester-only
// one, with screenshots that come out with no metadata; the team reads, resolves and deletes it;
// webhooks and mail hear of it; hostile images and forms store nothing.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/lifecycle"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// shot is a screenshot part of a report's form.
func shot(filename string, data []byte) apptest.Part {
	return apptest.Part{Name: "screenshot", Filename: filename, Data: data}
}

func (m *mgmt) sendFeedback(path, token string, header http.Header, parts ...apptest.Part) *apptest.Response {
	m.t.Helper()
	body, ct := apptest.Multipart(parts...)
	h := http.Header{"Content-Type": {ct}}
	for k, v := range header {
		h[k] = v
	}
	if token != "" {
		h.Set("Authorization", "Token "+token)
	}
	return m.e.Do(m.t, "POST", path, body, h)
}

// feedbackState is what a refused report must leave as it was: its rows and the bucket.
func (m *mgmt) feedbackState() string {
	m.t.Helper()
	var rows, shots, pending int
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM feedback), (SELECT count(*) FROM feedback_screenshots),
		(SELECT count(*) FROM storage_objects WHERE state = 'pending')`).Scan(&rows, &shots, &pending); err != nil {
		m.t.Fatal(err)
	}
	return fmt.Sprintf("feedback %d, screenshots %d, pending %d, objects %d", rows, shots, pending, len(m.e.Objects(m.t)))
}

func TestFeedbackFromApps(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) { testFeedbackFromApps(t, storage) })
	}
}

func testFeedbackFromApps(t *testing.T, storage string) {
	m := newMgmt(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) {
		c.WebhookAllowPrivate = true
		c.WebhookPoll = 50 * time.Millisecond
	}})
	admin, upload := m.e.AdminToken, m.e.UploadToken
	ctx := context.Background()
	app, _, _, first := m.fixture()
	rcv := newReceiver(t)
	hook := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", id(app)), admin,
		`{"url":"`+rcv.URL+`","events":["feedback.created"]}`), 201, "a webhook of feedback")
	rcv.secret.Store(hook["secret"].(string))
	// A member who chose feedback mail.
	var userID int64
	if err := m.e.DB.Pool.QueryRow(ctx, `INSERT INTO users (subject, email, name, role) VALUES ('email|dev@example.com', 'dev@example.com', 'Dev', 'developer')
		RETURNING id`).Scan(&userID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.e.DB.Pool.Exec(ctx, `INSERT INTO app_members (app_id, user_id, feedback_mail) VALUES ($1, $2, true)`, id(app), userID); err != nil {
		t.Fatal(err)
	}

	// An anonymous report with two screenshots on a channel open to anyone, as an app sends it.
	path := fmt.Sprintf("/api/releases/%d/feedback", id(first))
	shotPNG, shotJPEG := imagetest.PNG(t, 300, 600), imagetest.GPSJPEG(t, 640, 480)
	before := m.feedbackState()
	r := m.sendFeedback(path, "", nil, apptest.Field("text", "The login button does nothing"), apptest.Field("device", "iPhone15,2"),
		apptest.Field("os_version", "iOS 18.1"), apptest.Field("locale", "en-GB"), apptest.Field("app_state", `{"screen":"login"}`),
		apptest.Field("email", "Ann@Example.com"), shot("a.png", shotPNG), shot("b.jpg", shotJPEG))
	f := m.want(r, 201, "anonymous feedback with two screenshots")
	author := f["author"].(map[string]any)
	if author["kind"] != "anonymous" || author["email"] != "ann@example.com" || f["device"] != "iPhone15,2" || f["state"] != "open" ||
		fmt.Sprint(f["app_state"]) != "map[screen:login]" || f["source"] != "api" {
		t.Errorf("the report: %v", f)
	}
	shots := f["screenshots"].([]any)
	if len(shots) != 2 {
		t.Fatalf("screenshots: %v", shots)
	}
	for i, want := range []struct {
		ct   string
		w, h int
	}{{"image/png", 300, 600}, {"image/jpeg", 640, 480}} {
		s := shots[i].(map[string]any)
		if s["content_type"] != want.ct || s["width"] != float64(want.w) || s["height"] != float64(want.h) {
			t.Errorf("screenshot %d: %v", i+1, s)
		}
	}
	// The screenshots need a reader of the app's feedback; they come out without metadata.
	shotURL := strings.TrimPrefix(shots[1].(map[string]any)["url"].(string), m.e.URL)
	m.want(m.e.Do(t, "GET", shotURL, nil, nil), 401, "a screenshot without credentials")
	got := m.e.Do(t, "GET", shotURL, nil, http.Header{"Authorization": {"Token " + upload}})
	if got.Status != 302 {
		t.Fatalf("screenshot: %d %s", got.Status, got.Body)
	}
	img := m.e.Follow(t, got.Header.Get("Location"))
	if img.Status != 200 || bytes.Contains(img.Body, []byte("Exif")) || bytes.Contains(img.Body, []byte("GPSMarker")) ||
		bytes.Contains(img.Body, []byte{0xFF, 0xE1}) {
		t.Errorf("the stored JPEG keeps metadata (status %d, %d bytes)", img.Status, len(img.Body))
	}
	if _, format, err := image.Decode(bytes.NewReader(img.Body)); err != nil || format != "jpeg" {
		t.Errorf("the stored screenshot does not decode: %v %s", err, format)
	}
	thumb := m.e.Do(t, "GET", shotURL+"?size=thumb", nil, http.Header{"Authorization": {"Token " + upload}})
	if th := m.e.Follow(t, thumb.Header.Get("Location")); th.Status != 200 || len(th.Body) >= len(img.Body) {
		t.Errorf("thumbnail: %d, %d bytes (full %d)", th.Status, len(th.Body), len(img.Body))
	}

	// Reconciliation with the bucket knows the screenshots: a screenshot object no row names is
	// an orphan and goes; the report's own are neither orphans nor missing.
	if _, err := m.e.Storage.Put(ctx, fmt.Sprintf("feedback/%d/2026/12/03/stray.png", id(first)), bytes.NewReader(shotPNG), blob.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	rec, err := m.e.Service.Reconciler.Reconcile(ctx, lifecycle.ReconcileOptions{})
	if err != nil || rec.Orphans != 1 || rec.Missing != 0 || rec.Foreign != 0 {
		t.Errorf("reconciliation: %+v (%v), want the one stray screenshot as an orphan", rec, err)
	}
	if again := m.e.Do(t, "GET", shotURL, nil, http.Header{"Authorization": {"Token " + upload}}); m.e.Follow(t, again.Header.Get("Location")).Status != 200 {
		t.Error("reconciliation took a screenshot its report still names")
	}

	// The webhook hears of it, the member's mail is in the outbox.
	ev := rcv.waitEvents(1)[0]
	if ev.event != "feedback.created" || ev.env.Feedback == nil || ev.env.Feedback.Text != "The login button does nothing" ||
		ev.env.Feedback.Screenshots != 2 || ev.env.Release == nil || ev.env.Release.ID != id(first) {
		t.Errorf("the event: %s %+v", ev.event, ev.env.Feedback)
	}
	var mails int
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM mail_outbox WHERE kind = 'feedback' AND recipient = 'dev@example.com'
		AND text_body LIKE '%The login button does nothing%'`).Scan(&mails); err != nil || mails != 1 {
		t.Errorf("feedback mails to the member: %d (%v)", mails, err)
	}
	if strings.Contains(m.e.LogText(), "login button") {
		t.Error("the logs hold the feedback's text")
	}

	// The team reads it: the build's list and the app's inbox with its filters.
	m.want(m.call("GET", path, "", ""), 401, "the build's feedback without a token")
	list := m.e.Do(t, "GET", path, nil, http.Header{"Authorization": {"Token " + upload}})
	if list.Status != 200 || list.Header.Get("X-Total-Count") != "1" {
		t.Fatalf("the build's feedback: %d %s", list.Status, list.Header.Get("X-Total-Count"))
	}
	inbox := func(query string) int {
		t.Helper()
		r := m.call("GET", fmt.Sprintf("/api/apps/%d/feedback%s", id(app), query), upload, "")
		if r.Status != 200 {
			t.Fatalf("inbox %s: %d %s", query, r.Status, r.Body)
		}
		var l []map[string]any
		r.JSON(t, &l)
		return len(l)
	}
	if n := inbox("?q=LOGIN"); n != 1 {
		t.Errorf("search: %d", n)
	}
	if n := inbox("?q=nothing-like-this"); n != 0 {
		t.Errorf("search for another text: %d", n)
	}
	m.want(m.call("GET", fmt.Sprintf("/api/apps/%d/feedback?state=sideways", id(app)), upload, ""), 422, "a bad state")
	fid := id(f)
	m.want(m.call("PATCH", fmt.Sprintf("/api/feedback/%d", fid), upload, `{"state":"resolved"}`), 403, "an upload token resolves")
	res := m.want(m.call("PATCH", fmt.Sprintf("/api/feedback/%d", fid), admin, `{"state":"resolved"}`), 200, "resolve")
	if res["state"] != "resolved" || res["state_by"] == "" {
		t.Errorf("resolved: %v", res)
	}
	if inbox("?state=open") != 0 || inbox("?state=resolved") != 1 {
		t.Error("the state filter")
	}

	// As Zealot's SDKs name a build: channel key and versions.
	r = m.sendFeedback("/api/feedback?channel_key=harbor-ios&release_version=1.0&build_version=1", "", nil, apptest.Field("text", "By version"))
	if byVersion := m.want(r, 201, "feedback by version"); byVersion["release_id"] != float64(id(first)) {
		t.Errorf("by version, the build: %v", byVersion["release_id"])
	}
	m.want(m.sendFeedback("/api/feedback?channel_key=harbor-ios&release_version=9&build_version=9", "", nil, apptest.Field("text", "x")), 404, "an unknown version")

	// Bad forms and hostile images: a clear 4xx, nothing stored.
	before = m.feedbackState()
	many := []apptest.Part{apptest.Field("text", "twenty screenshots")}
	for range 20 {
		many = append(many, shot("s.png", imagetest.PNG(t, 8, 8)))
	}
	for _, c := range []struct {
		what   string
		parts  []apptest.Part
		status int
	}{
		{"no text", []apptest.Part{apptest.Field("device", "x")}, 422},
		{"app_state not an object", []apptest.Part{apptest.Field("text", "x"), apptest.Field("app_state", `[1,2]`)}, 422},
		{"a bad email", []apptest.Part{apptest.Field("text", "x"), apptest.Field("email", "not an email")}, 422},
		{"20 screenshots", many, 422},
		{"a PNG declaring 100,000 × 100,000", []apptest.Part{apptest.Field("text", "x"), shot("huge.png", imagetest.DeclaredPNG(100_000, 100_000))}, 422},
		{"a zip renamed .png", []apptest.Part{apptest.Field("text", "x"), shot("z.png", append([]byte("PK\x03\x04"), make([]byte, 64)...))}, 415},
		{"HEIC", []apptest.Part{apptest.Field("text", "x"), shot("i.heic", append([]byte("\x00\x00\x00\x18ftypheic"), make([]byte, 64)...))}, 415},
		{"a truncated PNG", []apptest.Part{apptest.Field("text", "x"), shot("t.png", shotPNG[:len(shotPNG)/2])}, 422},
	} {
		r := m.sendFeedback(path, "", nil, c.parts...)
		m.want(r, c.status, c.what)
	}
	testkit.EventuallyOK(t, 30*time.Second, "refused reports leave nothing", func() error {
		if after := m.feedbackState(); after != before {
			return fmt.Errorf("before: %s; after: %s", before, after)
		}
		return nil
	})

	// Deleting the build deletes its feedback and, once collected, the screenshots' objects.
	objects := len(m.e.Objects(t))
	m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(first)), admin, ""), 200, "delete the build")
	if _, err := m.e.Service.Collector.CollectGarbage(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// The build's package and icon, and two screenshots with their thumbnails.
	if left := len(m.e.Objects(t)); left != objects-6 {
		t.Errorf("objects after the build went: %d, before %d", left, objects)
	}
	m.want(m.call("GET", fmt.Sprintf("/api/feedback/%d", fid), admin, ""), 404, "the feedback of a deleted build")
}

// On a tester-only channel a report needs the tester's session: without one, 401 and nothing
// stored; with it, the tester is its author, reads it back and deletes it.
func TestFeedbackOnTesterOnlyChannel(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	admin := m.e.AdminToken
	ctx := context.Background()
	app, _, channel, first := m.fixture()
	m.want(m.call("POST", "/api/groups", admin, `{"alias":"qa"}`), 201, "group")
	m.want(m.call("POST", "/api/groups/qa/testers", admin, `{"emails":["ada@example.com"]}`), 200, "tester")
	m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(channel)), admin, `{"tester_groups":["qa"]}`), 200, "behind qa")
	path := fmt.Sprintf("/api/releases/%d/feedback", id(first))

	before := m.feedbackState()
	m.want(m.sendFeedback(path, "", nil, apptest.Field("text", "x"), shot("a.png", imagetest.PNG(t, 20, 20))), 401, "no session")
	if after := m.feedbackState(); after != before {
		t.Errorf("a refused report stored something: %s, then %s", before, after)
	}

	ada, err := m.e.DB.TesterByEmail(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.e.DB.CreateTesterSession(ctx, hash, ada.ID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cookie := http.Header{"Cookie": {"slipway_tester=" + secret}}
	f := m.want(m.sendFeedback(path, "", cookie, apptest.Field("text", "Crashes when I rotate"), shot("a.png", imagetest.PNG(t, 20, 20))), 201, "with a session")
	if a := f["author"].(map[string]any); a["kind"] != "tester" || a["tester_id"] != float64(ada.ID) {
		t.Errorf("the author: %v", a)
	}
	fid := id(f)
	get := m.e.Do(t, "GET", fmt.Sprintf("/api/feedback/%d", fid), nil, cookie)
	if get.Status != 200 {
		t.Errorf("the tester reads their report: %d %s", get.Status, get.Body)
	}
	if r := m.e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/feedback", id(app)), nil, cookie); r.Status != 403 {
		t.Errorf("the tester reads the app's inbox: %d", r.Status)
	}
	if r := m.e.Do(t, "DELETE", fmt.Sprintf("/api/feedback/%d", fid), nil, cookie); r.Status != 200 {
		t.Fatalf("the tester deletes their report: %d %s", r.Status, r.Body)
	}
	var n int
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM storage_objects WHERE key LIKE 'feedback/%' AND state = 'deleted'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("the deleted report's objects handed to the collector: %d (%v)", n, err)
	}
	var audit int
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE target_kind = 'feedback' AND actor_kind = 'tester'`).Scan(&audit); err != nil || audit != 2 {
		t.Errorf("audit rows of the tester's report and deletion: %d (%v)", audit, err)
	}
}

// TestFeedbackLimits: a client without credentials sends at most 10 reports a quarter hour, a
// tester 30 on a channel; then 429 with Retry-After, nothing stored; a token is not limited.
func TestFeedbackLimits(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	ctx := context.Background()
	_, _, _, first := m.fixture()
	path := fmt.Sprintf("/api/releases/%d/feedback", id(first))
	post := func(header http.Header) *apptest.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		for k, v := range header {
			h[k] = v
		}
		return m.e.Do(t, "POST", path, strings.NewReader(`{"text":"again"}`), h)
	}
	for i := range 10 {
		m.want(post(nil), 201, fmt.Sprintf("anonymous report %d", i+1))
	}
	r := post(nil)
	m.want(r, 429, "the 11th anonymous report")
	if r.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	m.want(post(http.Header{"Authorization": {"Token " + m.e.UploadToken}}), 201, "a token past the anonymous limit")

	var testerID int64
	if err := m.e.DB.Pool.QueryRow(ctx, `INSERT INTO testers (email) VALUES ('ada@example.com') ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email
		RETURNING id`).Scan(&testerID); err != nil {
		t.Fatal(err)
	}
	secret, hash, err := distribution.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.e.DB.CreateTesterSession(ctx, hash, testerID, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	cookie := http.Header{"Cookie": {"slipway_tester=" + secret}}
	for i := range 30 {
		m.want(post(cookie), 201, fmt.Sprintf("the tester's report %d", i+1))
	}
	m.want(post(cookie), 429, "the tester's 31st report")
	var n int
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM feedback`).Scan(&n); err != nil || n != 41 {
		t.Errorf("%d reports kept, want 41 (%v)", n, err)
	}
}

// slowBody sends b in pieces of size bytes with a pause before each, as a phone on a slow link
// sends a report with screenshots: it never stalls for the idle timeout, but takes longer in all.
type slowBody struct {
	b     []byte
	size  int
	pause time.Duration
}

func (s *slowBody) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.pause)
	n := copy(p[:min(len(p), s.size)], s.b)
	s.b = s.b[n:]
	return n, nil
}

// A report whose body takes longer than SLIPWAY_UPLOAD_IDLE_TIMEOUT in all, but never stalls for
// it, is accepted, from an app (the API) and from the release page's form: the timeout bounds a
// stall, as for an upload. (A report with five screenshots read while the parse budget was busy
// with others took over the 60 s default in all, and was refused as "could not be read".)
func TestFeedbackBodyLongerThanTheIdleTimeout(t *testing.T) {
	m := newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.UploadIdleTimeout = time.Second }})
	_, _, _, first := m.fixture()
	body, ct := apptest.Multipart(apptest.Field("text", "Slow link"), shot("a.png", imagetest.PNG(t, 200, 400)))
	// About 2.5 s in all, a piece every 250 ms.
	pieces := 10
	size := body.Len()/pieces + 1
	r := m.e.Do(t, "POST", fmt.Sprintf("/api/releases/%d/feedback", id(first)), &slowBody{b: body.Bytes(), size: size, pause: 250 * time.Millisecond},
		http.Header{"Content-Type": {ct}})
	m.want(r, 201, "a slow report through the API")
	page, pct := apptest.Multipart(apptest.Field("text", "Slow link, from the page"), shot("a.png", imagetest.PNG(t, 200, 400)))
	slug := first["channel"].(map[string]any)["slug"].(string)
	r = m.e.Do(t, "POST", fmt.Sprintf("/channels/%s/releases/%d/feedback", slug, id(first)), &slowBody{b: page.Bytes(), size: page.Len()/pieces + 1, pause: 250 * time.Millisecond},
		http.Header{"Content-Type": {pct}, "Accept": {"text/html"}, "Origin": {m.e.URL}, "Sec-Fetch-Site": {"same-origin"}})
	if r.Status != http.StatusSeeOther && r.Status != http.StatusOK {
		t.Fatalf("a slow report from the page: %d %.300s", r.Status, r.Body)
	}
	var n int
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM feedback WHERE body LIKE 'Slow link%'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("reports kept: %d (%v)", n, err)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestRefusedReportIsReadToItsEnd: apps write the whole report before they read the answer, as
// most HTTP clients do. A report refused at its first screenshot, whose body goes on past the
// report limit, is still read on (bounded, as drainBody reads an upload's) so that the app can
// write it all and read the refusal. It used to be read on through the limit's reader, which
// stops at maxFeedbackBody: the connection was then closed with the rest unread and reset, and an
// app sending 20 screenshots (270 MB) got "connection reset by peer" instead of its 422 (in CI,
// TestHostileScreenshotsShareTheParseBudget). The client here is raw TCP that reads only once
// it has written everything, so the reset cannot be missed.
func TestRefusedReportIsReadToItsEnd(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	_, _, _, first := m.fixture()
	const boundary = "slipway-refused-report"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"screenshot\"; filename=\"z.png\"\r\n" +
		"Content-Type: image/png\r\n\r\nPK\x03\x04"
	tail := "\r\n--" + boundary + "--\r\n"
	filler := int64(distribution.MaxScreenshots*(15<<20) + 65<<20) // 64 MiB past the report limit
	u, err := url.Parse(m.e.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
	if _, err := fmt.Fprintf(conn, "POST /api/releases/%d/feedback HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
		id(first), u.Host, boundary, int64(len(head))+filler+int64(len(tail)), head); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(conn, io.MultiReader(io.LimitReader(zeros{}, filler), strings.NewReader(tail))); err != nil {
		t.Fatalf("writing the report: %v (the server stopped reading it before its end)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Fatalf("a refused report: %d %s", resp.StatusCode, b)
	}
	t.Logf("answer after %d MiB: %d %s", filler>>20, resp.StatusCode, b)
}
