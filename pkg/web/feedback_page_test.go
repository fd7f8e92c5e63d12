package web_test

// Feedback from the release page (docs/feedback.md): anonymous on a channel open to anyone, with
// screenshots that come out with no metadata; a tester on a tester-only channel, who sees it on
// their home and deletes it; a channel's password applies to the form as to the page; a refused
// report shows the page again with the text kept and stores nothing.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image/jpeg"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
)

func screenshotPart(filename, contentType string, data []byte) apptest.Part {
	return apptest.Part{Name: "screenshot", Filename: filename, Data: data, ContentType: contentType}
}

// feedbackState is what a refused report must leave as it was: its rows and the bucket.
func feedbackState(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var rows, shots, pending int
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM feedback), (SELECT count(*) FROM feedback_screenshots),
		(SELECT count(*) FROM storage_objects WHERE state = 'pending')`).Scan(&rows, &shots, &pending); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("feedback %d, screenshots %d, pending %d, objects %d", rows, shots, pending, len(e.Objects(t)))
}

// postFeedback sends the release page's form as a browser does (multipart, same-origin) through
// c (nil: e.Client, which checks the exchange against docs/openapi.yaml), with extra headers.
func postFeedback(t *testing.T, e *apptest.Env, c *http.Client, releaseURL string, header http.Header, parts ...apptest.Part) *apptest.Response {
	t.Helper()
	body, ct := apptest.Multipart(parts...)
	req, err := http.NewRequest(http.MethodPost, releaseURL+"/feedback", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range header {
		req.Header[k] = v
	}
	if c == nil {
		c = e.Client
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// feedbackJSON is the part of the API's view of a report the tests read.
type feedbackJSON struct {
	ID     int64  `json:"id"`
	Text   string `json:"text"`
	Device string `json:"device"`
	OS     string `json:"os_version"`
	Source string `json:"source"`
	Author struct {
		Kind     string `json:"kind"`
		Email    string `json:"email"`
		TesterID int64  `json:"tester_id"`
	} `json:"author"`
	Screenshots []struct {
		ContentType string `json:"content_type"`
		URL         string `json:"url"`
	} `json:"screenshots"`
}

// releaseFeedbackJSON is a build's feedback as the API gives it to the admin token.
func releaseFeedbackJSON(t *testing.T, e *apptest.Env, releaseID int64) []feedbackJSON {
	t.Helper()
	var out []feedbackJSON
	if st := api(t, e, http.MethodGet, fmt.Sprintf("/api/releases/%d/feedback", releaseID), nil, &out); st != 200 {
		t.Fatalf("the build's feedback: %d", st)
	}
	return out
}

// screenshotBytes fetches a screenshot's URL with the admin token, then where it redirects to
// (a presigned S3 URL takes no Authorization header) without it.
func screenshotBytes(t *testing.T, e *apptest.Env, u string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Token "+e.AdminToken)
	resp, err := noRedirects(http.DefaultClient).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("the screenshot %s: %d", u, resp.StatusCode)
	}
	resp, err = http.Get(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("the screenshot's object: %d %.200s", resp.StatusCode, b)
	}
	return b
}

func TestFeedbackFromReleasePage(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	pub := upload(t, e, "listed.ipa", ipa("Listed", "1.0", "1"))
	other := upload(t, e, "other.ipa", ipa("Other", "1.0", "1"))
	locked := upload(t, e, "secret.ipa", ipa("Secret", "1.0", "1"), apptest.Field("name", "Secret"), apptest.Field("password", "open sesame"))

	// Every release page has the form; a visitor without a session may leave an email.
	page := get(t, e, strings.TrimPrefix(pub.ReleaseURL, e.URL))
	if page.Status != 200 {
		t.Fatalf("the release page: %d", page.Status)
	}
	mustContain(t, page.Body, `id="feedback"`, `<form method="post" action="`+pub.ReleaseURL+`/feedback" enctype="multipart/form-data" id="feedback-form"`,
		`<textarea name="text" id="feedback-text"`, `required`, `type="file" name="screenshot" id="feedback-screenshots" multiple accept="image/png,image/jpeg,image/webp"`,
		`name="device"`, `name="os_version"`, `name="email"`, `<label for="feedback-text">`, `/static/feedback.js`)
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "connect-src") {
		t.Errorf("the release page's policy: %s", csp)
	}
	if js := get(t, e, "/static/feedback.js"); js.Status != 200 || !bytes.Contains(js.Body, []byte("feedback-form")) {
		t.Errorf("feedback.js: %d", js.Status)
	}

	// An anonymous report with two screenshots (and the empty part of an unused file input).
	shotPNG, shotJPEG := imagetest.PNG(t, 300, 600), imagetest.GPSJPEG(t, 640, 480)
	r := postFeedback(t, e, nil, pub.ReleaseURL, nil, apptest.Field("text", "The login button does nothing"), apptest.Field("email", "Ann@Example.com"),
		apptest.Field("device", "iPhone"), apptest.Field("os_version", "iOS 18.1"),
		screenshotPart("a.png", "image/png", shotPNG), screenshotPart("b.jpg", "image/jpeg", shotJPEG), screenshotPart("", "", []byte{}))
	if want := pub.ReleaseURL + "?feedback=sent#feedback"; r.Status != http.StatusSeeOther || r.Header.Get("Location") != want {
		t.Fatalf("sending the form: %d to %q, want 303 to %q: %.300s", r.Status, r.Header.Get("Location"), want, r.Body)
	}
	thanks := get(t, e, strings.TrimPrefix(pub.ReleaseURL, e.URL)+"?feedback=sent")
	mustContain(t, thanks.Body, `id="feedback-sent"`, "Thanks: your feedback was sent")
	mustNotContain(t, page.Body, "Thanks: your feedback was sent")
	list := releaseFeedbackJSON(t, e, pub.ID)
	if len(list) != 1 {
		t.Fatalf("the build's feedback: %+v", list)
	}
	f := list[0]
	if f.Source != "page" || f.Author.Kind != "anonymous" || f.Author.Email != "ann@example.com" || f.Device != "iPhone" || f.OS != "iOS 18.1" ||
		f.Text != "The login button does nothing" || len(f.Screenshots) != 2 {
		t.Fatalf("the report: %+v", f)
	}
	if src := count(t, e, `SELECT count(*) FROM feedback WHERE id = $1 AND source = 'page'`, f.ID); src != 1 {
		t.Errorf("the row's source is not page")
	}
	jpg := screenshotBytes(t, e, f.Screenshots[1].URL)
	if f.Screenshots[1].ContentType != "image/jpeg" || bytes.Contains(jpg, []byte("Exif")) || bytes.Contains(jpg, []byte("GPSMarker")) {
		t.Errorf("the stored JPEG (%s, %d bytes) keeps its metadata", f.Screenshots[1].ContentType, len(jpg))
	}
	if _, err := jpeg.Decode(bytes.NewReader(jpg)); err != nil {
		t.Errorf("the stored JPEG: %v", err)
	}

	// A refused report (a zip named .png): the page again, 4xx, with the error beside the form
	// and what was typed kept; nothing stored.
	before := feedbackState(t, e)
	zip := append([]byte("PK\x03\x04"), bytes.Repeat([]byte{0}, 200)...)
	typed := `It froze <after> "login" & more`
	r = postFeedback(t, e, nil, pub.ReleaseURL, nil, apptest.Field("text", typed), apptest.Field("email", "ann@example.com"),
		apptest.Field("device", "Pixel 8"), apptest.Field("os_version", "Android 15"), screenshotPart("a.png", "image/png", zip))
	if r.Status < 400 || r.Status >= 500 {
		t.Fatalf("a zip as a screenshot: %d", r.Status)
	}
	mustContain(t, r.Body, `id="feedback-error"`, `id="feedback-form"`, ">"+html.EscapeString(typed)+"</textarea>", `value="Pixel 8"`, `value="ann@example.com"`, `id="install"`)
	if after := feedbackState(t, e); after != before {
		t.Errorf("a refused report stored something: %s, then %s", before, after)
	}
	// An empty text: 422, the field marked.
	r = postFeedback(t, e, nil, pub.ReleaseURL, nil, apptest.Field("text", "  "), screenshotPart("a.png", "image/png", imagetest.PNG(t, 10, 10)))
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("an empty text: %d", r.Status)
	}
	mustContain(t, r.Body, `aria-invalid="true"`, "Text is required")
	// From another site: refused.
	r = postFeedback(t, e, nil, pub.ReleaseURL, http.Header{"Sec-Fetch-Site": {"cross-site"}}, apptest.Field("text", "forged"))
	if r.Status != http.StatusForbidden {
		t.Errorf("a cross-site report: %d", r.Status)
	}
	// Too many reports from one client without a session: 429, said beside the form (the refused
	// reports above counted too). Its body is never read: who may send is decided first.
	var limited *apptest.Response
	for range 10 {
		r = postFeedback(t, e, nil, pub.ReleaseURL, nil, apptest.Field("text", "Again and again"))
		if r.Status != http.StatusSeeOther {
			limited = r
			break
		}
	}
	if limited == nil || limited.Status != http.StatusTooManyRequests || limited.Header.Get("Retry-After") == "" {
		t.Fatalf("many reports from one client: %+v", limited)
	}
	mustContain(t, limited.Body, `id="feedback-error"`, "Too much feedback from here", `id="feedback-form"`)
	mustNotContain(t, limited.Body, "Again and again")
	before = feedbackState(t, e)
	// A release of another channel is not this page's.
	r = postFeedback(t, e, nil, fmt.Sprintf("%s/channels/%s/releases/%d", e.URL, pub.Channel.Slug, other.ID), nil, apptest.Field("text", "wrong channel"))
	if r.Status != http.StatusNotFound {
		t.Errorf("a release of another channel: %d", r.Status)
	}
	if after := feedbackState(t, e); after != before {
		t.Errorf("refused reports stored something: %s, then %s", before, after)
	}

	// A channel with a password: the form only once the password was given; without its
	// cookie, the password form (as the page answers) and nothing stored.
	r = postFeedback(t, e, nil, locked.ReleaseURL, nil, apptest.Field("text", "Behind a password"), screenshotPart("a.png", "image/png", imagetest.PNG(t, 10, 10)))
	if r.Status != http.StatusForbidden || !bytes.Contains(r.Body, []byte(`name="password"`)) {
		t.Fatalf("feedback without the password: %d %.300s", r.Status, r.Body)
	}
	if pw := get(t, e, strings.TrimPrefix(locked.ReleaseURL, e.URL)); bytes.Contains(pw.Body, []byte("feedback-form")) {
		t.Error("the password form shows the feedback form")
	}
	if after := feedbackState(t, e); after != before {
		t.Errorf("feedback without the password stored something: %s, then %s", before, after)
	}
	right := postPassword(t, e, strings.TrimPrefix(locked.ReleaseURL, e.URL), "open sesame")
	ck := cookieOf(t, right)
	r = postFeedback(t, e, nil, locked.ReleaseURL, http.Header{"Cookie": {ck.Name + "=" + ck.Value}}, apptest.Field("text", "Behind a password"))
	if r.Status != http.StatusSeeOther {
		t.Fatalf("feedback with the password's cookie: %d %.300s", r.Status, r.Body)
	}
	if l := releaseFeedbackJSON(t, e, locked.ID); len(l) != 1 || l[0].Source != "page" {
		t.Errorf("the protected build's feedback: %+v", l)
	}
}

func TestFeedbackFromTesterPages(t *testing.T) {
	s := newTesterSite(t)
	e := s.e
	releaseURL := e.URL + s.releasePath

	// Anonymous: the page sends them to sign in, and the form's POST is refused, nothing stored.
	before := feedbackState(t, e)
	r := postFeedback(t, e, nil, releaseURL, nil, apptest.Field("text", "anonymous"), screenshotPart("a.png", "image/png", imagetest.PNG(t, 20, 20)))
	if r.Status != http.StatusUnauthorized {
		t.Fatalf("anonymous feedback on a tester-only channel: %d", r.Status)
	}
	if after := feedbackState(t, e); after != before {
		t.Errorf("a refused report stored something: %s, then %s", before, after)
	}

	// Ada, signed in: the form without an email, sent with a screenshot.
	ada := plain(t)
	signInTester(t, s, ada, "ada@example.com")
	resp, body := send(t, ada, http.MethodGet, releaseURL, nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="feedback-form"`) || strings.Contains(body, `name="email"`) {
		t.Fatalf("ada's release page: %d, form %v, email %v", resp.StatusCode, strings.Contains(body, `id="feedback-form"`), strings.Contains(body, `name="email"`))
	}
	r = postFeedback(t, e, ada, releaseURL, nil, apptest.Field("text", "Crashes when I rotate\nSecond line\nThird line\nFourth line"),
		apptest.Field("device", "iPad"), screenshotPart("a.png", "image/png", imagetest.PNG(t, 40, 40)))
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != releaseURL+"?feedback=sent#feedback" {
		t.Fatalf("ada's report: %d %q %.300s", r.Status, r.Header.Get("Location"), r.Body)
	}
	list := releaseFeedbackJSON(t, e, s.relID)
	if len(list) != 1 || list[0].Author.Kind != "tester" || list[0].Author.TesterID == 0 || list[0].Source != "page" {
		t.Fatalf("ada's report: %+v", list)
	}
	fid := list[0].ID

	// Her home links each build to its form and lists her report, with its thumbnail, which
	// her session may fetch.
	resp, body = send(t, ada, http.MethodGet, e.URL+"/t", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("ada's home: %d", resp.StatusCode)
	}
	thumb := fmt.Sprintf(`src="%s/api/feedback/%d/screenshots/1?size=thumb"`, e.URL, fid)
	mustContain(t, []byte(body), `id="your-feedback"`, fmt.Sprintf(`id="feedback-%d"`, fid), "Crashes when I rotate\nSecond line\nThird line…", thumb,
		`alt="Screenshot 1 of your feedback on Harbor 1.1 (2)"`, fmt.Sprintf(`href="%s#feedback" id="feedback-link-%d"`, releaseURL, s.relID),
		fmt.Sprintf(`action="%s/t/feedback/%d/delete"`, e.URL, fid), ">open</span>")
	mustNotContain(t, []byte(body), "Fourth line")
	resp, _ = send(t, ada, http.MethodGet, fmt.Sprintf("%s/api/feedback/%d/screenshots/1?size=thumb", e.URL, fid), nil, nil)
	if resp.StatusCode != http.StatusFound {
		t.Errorf("ada's thumbnail: %d", resp.StatusCode)
	}

	// Bob may not delete it (it is not his: 404), nor may anyone without a session.
	bob := plain(t)
	signInTester(t, s, bob, "bob@example.com")
	del := fmt.Sprintf("%s/t/feedback/%d/delete", e.URL, fid)
	if resp, _ := send(t, bob, http.MethodPost, del, url.Values{}, http.Header{"Sec-Fetch-Site": {"same-origin"}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob deletes ada's report: %d", resp.StatusCode)
	}
	if resp, _ := send(t, plain(t), http.MethodPost, del, url.Values{}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("deleting without a session: %d", resp.StatusCode)
	}
	if resp, _ := send(t, ada, http.MethodPost, del, url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site delete: %d", resp.StatusCode)
	}
	_, body = send(t, bob, http.MethodGet, e.URL+"/t", nil, nil)
	mustContain(t, []byte(body), `id="no-feedback"`)

	// Ada deletes it: 303 to her home, which says so; its objects go to the collector.
	resp, _ = send(t, ada, http.MethodPost, del, url.Values{}, http.Header{"Sec-Fetch-Site": {"same-origin"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != e.URL+"/t?feedback=deleted#your-feedback" {
		t.Fatalf("ada deletes her report: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, body = send(t, ada, http.MethodGet, resp.Header.Get("Location"), nil, nil)
	mustContain(t, []byte(body), `id="feedback-notice"`, "Your feedback was deleted", `id="no-feedback"`)
	mustNotContain(t, []byte(body), fmt.Sprintf(`id="feedback-%d"`, fid))
	if n := count(t, e, `SELECT count(*) FROM storage_objects WHERE key LIKE 'feedback/%' AND state = 'deleted'`); n != 2 {
		t.Errorf("the deleted report's objects handed to the collector: %d, want 2 (the screenshot and its thumbnail)", n)
	}
	if n := count(t, e, `SELECT count(*) FROM feedback`); n != 0 {
		t.Errorf("%d reports left", n)
	}
	var kept []json.RawMessage
	if st := api(t, e, http.MethodGet, fmt.Sprintf("/api/releases/%d/feedback", s.relID), nil, &kept); st != 200 || len(kept) != 0 {
		t.Errorf("the build's feedback after the delete: %d %s", st, kept)
	}
}
