package web_test

// The audit trail every actor writes (issue 21, point 6), read where admins read it, and the
// removal page a deleted build leaves (point 7).

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/test/apptest"
)

// auditRow is a row of /console/audit as shown.
type auditRow struct{ kind, actor, action, target, link string }

var (
	auditRowRe = regexp.MustCompile(`<tr id="audit-\d+" class="actor-(\w+)"><td[^>]*>[^<]*</td><td[^>]* class="audit-actor">([^<]*)</td><td[^>]* class="mono audit-action">([^<]*)</td><td[^>]* class="audit-target">(.*?)</td></tr>`)
	tagRe      = regexp.MustCompile(`<[^>]+>`)
	hrefRe     = regexp.MustCompile(`href="([^"]+)"`)
)

// auditPage fetches /console/audit with the query as the signed-in admin and returns its rows
// and the link to the older rows ("" when none).
func auditPage(t *testing.T, c *http.Client, e *apptest.Env, query string) ([]auditRow, string) {
	t.Helper()
	resp, body := fetch(t, c, http.MethodGet, e.URL+"/console/audit?"+query, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("audit page ?%s: %d %.300s", query, resp.StatusCode, body)
	}
	var rows []auditRow
	for _, m := range auditRowRe.FindAllStringSubmatch(body, -1) {
		r := auditRow{kind: m[1], actor: html.UnescapeString(m[2]), action: m[3], target: html.UnescapeString(strings.TrimSpace(tagRe.ReplaceAllString(m[4], "")))}
		if l := hrefRe.FindStringSubmatch(m[4]); l != nil {
			r.link = html.UnescapeString(l[1])
		}
		rows = append(rows, r)
	}
	older := ""
	if m := regexp.MustCompile(`<a href="([^"]+)" id="audit-older">`).FindStringSubmatch(body); m != nil {
		older = html.UnescapeString(m[1])
	}
	return rows, older
}

// find returns the rows of an action.
func find(rows []auditRow, action string) []auditRow {
	var out []auditRow
	for _, r := range rows {
		if r.action == action {
			out = append(out, r)
		}
	}
	return out
}

// An upload and a delete through the API, and a retention run, each leave a row naming the
// actor (the token by name, the system's retention), the action and the build by name, linked
// to its page (which, for a deleted build, is its removal page). The page filters by app, actor
// and action on the server, and pages.
func TestAuditTrailOfEveryActor(t *testing.T) {
	ctx := context.Background()
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	admin, _ := signedIn(t, e, "alice")

	var ids []int64
	var slug string
	var appID int64
	for i, v := range []string{"1.0", "1.1", "1.2"} {
		rel := e.UploadApp(t, "droid.apk", apk("Droid", v, i+1), apptest.Field("changelog", "build "+v))
		ids = append(ids, int64(rel["id"].(float64)))
		slug = rel["channel"].(map[string]any)["slug"].(string)
		appID = int64(rel["app"].(map[string]any)["id"].(float64))
	}
	// A second app, for the app filter.
	other := e.UploadApp(t, "other.apk", apk("Other", "9.0", 1), apptest.Field("name", "Other"))
	adminToken := http.Header{"Authorization": {"Token " + e.AdminToken}}
	if r := e.Do(t, http.MethodDelete, fmt.Sprintf("/api/releases/%d", ids[0]), nil, adminToken); r.Status != http.StatusOK {
		t.Fatalf("API delete: %d %s", r.Status, r.Body)
	}
	rename := http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}}
	if r := e.Do(t, http.MethodPut, fmt.Sprintf("/api/apps/%d", appID), strings.NewReader(`{"name":"Droid Beta"}`), rename); r.Status != http.StatusOK {
		t.Fatalf("API rename: %d %s", r.Status, r.Body)
	}
	if r := e.Do(t, http.MethodPatch, fmt.Sprintf("/api/releases/%d", ids[2]), strings.NewReader(`{"release_version":"1.2.1"}`), rename); r.Status != http.StatusOK {
		t.Fatalf("API release edit: %d %s", r.Status, r.Body)
	}
	var chID int64
	if err := e.DB.Pool.QueryRow(ctx, `SELECT id FROM channels WHERE slug = $1`, slug).Scan(&chID); err != nil {
		t.Fatal(err)
	}
	if r := e.Do(t, http.MethodPut, fmt.Sprintf("/api/channels/%d/retention", chID), strings.NewReader(`{"keep_builds":1}`), rename); r.Status != http.StatusOK {
		t.Fatalf("API retention: %d %s", r.Status, r.Body)
	}
	if n, err := e.Service.Retention.EnforceRetention(ctx); err != nil || n != 1 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	hook := e.Do(t, http.MethodPost, fmt.Sprintf("/api/channels/%d/webhooks", chID), strings.NewReader(`{"url":"http://127.0.0.1:9/hook?key=s3cret","format":"slack"}`), rename)
	if hook.Status != http.StatusCreated {
		t.Fatalf("API webhook: %d %s", hook.Status, hook.Body)
	}

	const udid = "00008030-001A2B3C4D5E6F70"
	if r := e.Do(t, http.MethodPut, "/api/devices/"+udid, strings.NewReader(`{"name":"Ann's phone"}`), rename); r.Status/100 != 2 {
		t.Fatalf("API device sync: %d %s", r.Status, r.Body)
	}
	if r := e.Do(t, http.MethodDelete, "/api/devices/"+udid, nil, adminToken); r.Status != http.StatusOK {
		t.Fatalf("API device delete: %d %s", r.Status, r.Body)
	}

	rows, _ := auditPage(t, admin, e, "")
	if r := find(rows, "device.delete"); len(r) != 1 || r[0].actor != "token admin" || r[0].target != udid {
		t.Errorf("API device deletion row %+v", r)
	}
	if r := find(rows, "webhook.create"); len(r) != 1 || r[0].actor != "token admin" || r[0].target != "Droid Beta · "+channelName(t, e, chID)+" webhook (slack)" ||
		r[0].link != fmt.Sprintf("%s/console/webhooks/%d", e.URL, int64(hook.Map(t)["id"].(float64))) {
		t.Errorf("API webhook row %+v", r)
	}
	for _, r := range rows {
		if strings.Contains(r.target, "s3cret") || strings.Contains(r.target, "127.0.0.1") {
			t.Errorf("a row shows a webhook's URL: %+v", r)
		}
	}
	uploads := find(rows, "release.upload")
	if len(uploads) != 4 {
		t.Fatalf("upload rows %+v", uploads)
	}
	// Newest first: the last upload of Droid is the third-newest upload row (Other's came after).
	if u := uploads[1]; u.kind != "token" || u.actor != "token ci" || u.target != "Droid 1.2 (3)" ||
		u.link != fmt.Sprintf("%s/channels/%s/releases/%d", e.URL, slug, ids[2]) {
		t.Errorf("API upload row %+v", u)
	}
	deletes := find(rows, "release.delete")
	if len(deletes) != 2 {
		t.Fatalf("delete rows %+v", deletes)
	}
	if d := deletes[0]; d.kind != "system" || d.actor != "system (retention)" || !strings.HasPrefix(d.target, "Droid Beta 1.1 (2)") ||
		!strings.Contains(d.target, "rule: keep_builds") || d.link != fmt.Sprintf("%s/channels/%s/releases/%d", e.URL, slug, ids[1]) {
		t.Errorf("retention deletion row %+v", d)
	}
	if d := deletes[1]; d.kind != "token" || d.actor != "token admin" || d.target != "Droid 1.0 (1)" ||
		d.link != fmt.Sprintf("%s/channels/%s/releases/%d", e.URL, slug, ids[0]) {
		t.Errorf("API deletion row %+v", d)
	}
	if r := find(rows, "app.rename"); len(r) != 1 || r[0].actor != "token admin" || !strings.HasPrefix(r[0].target, "Droid Beta") ||
		!strings.Contains(r[0].target, "was Droid") || r[0].link != fmt.Sprintf("%s/console/apps/%d", e.URL, appID) {
		t.Errorf("API rename row %+v", r)
	}
	if r := find(rows, "release.update"); len(r) != 1 || r[0].actor != "token admin" || r[0].target != "Droid Beta 1.2.1 (3) (was Droid Beta 1.2 (3))" ||
		r[0].link != fmt.Sprintf("%s/channels/%s/releases/%d", e.URL, slug, ids[2]) {
		t.Errorf("API release edit row %+v", r)
	}
	if r := find(rows, "retention.set"); len(r) != 1 || r[0].actor != "token admin" || r[0].target != "Droid Beta · "+channelName(t, e, chID) {
		t.Errorf("retention policy row %+v", r)
	}

	// Filters, applied by the server.
	if r, _ := auditPage(t, admin, e, "action=release.delete"); len(r) != 2 || len(find(r, "release.delete")) != 2 {
		t.Errorf("action filter: %+v", r)
	}
	if r, _ := auditPage(t, admin, e, "action=release."); len(r) != 7 {
		t.Errorf("action prefix filter: %d rows %+v", len(r), r)
	}
	if r, _ := auditPage(t, admin, e, "actor=retention"); len(r) != 1 || r[0].action != "release.delete" {
		t.Errorf("actor filter: %+v", r)
	}
	if r, _ := auditPage(t, admin, e, "actor=ci&action=release.upload"); len(r) != 4 {
		t.Errorf("actor and action filter: %+v", r)
	}
	if r, _ := auditPage(t, admin, e, "actor=alice"); len(r) != 1 || r[0].action != "sign_in" {
		t.Errorf("a person's rows: %+v", r)
	}
	otherID := int64(other["app"].(map[string]any)["id"].(float64))
	if r, _ := auditPage(t, admin, e, fmt.Sprintf("app=%d", otherID)); len(r) != 1 || r[0].target != "Other 9.0 (1)" {
		t.Errorf("app filter (Other): %+v", r)
	}
	if r, _ := auditPage(t, admin, e, fmt.Sprintf("app=%d&action=release.", appID)); len(r) != 6 {
		t.Errorf("app filter (Droid): %d rows %+v", len(r), r)
	}
	if resp, _ := fetch(t, admin, http.MethodGet, e.URL+"/console/audit?app=x", nil); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a bad app filter: %d", resp.StatusCode)
	}

	// Pages of 50, newest first, each row once.
	for i := range 60 {
		e.Service.Audit.RecordAs(ctx, distribution.SystemActor("test"), "test.row", distribution.AuditTarget{Name: fmt.Sprint("row ", i)}, nil)
	}
	first, older := auditPage(t, admin, e, "action=test.row")
	if len(first) != 50 || first[0].target != "row 59" || older == "" {
		t.Fatalf("first page: %d rows, older %q", len(first), older)
	}
	u, _ := url.Parse(older)
	second, more := auditPage(t, admin, e, u.RawQuery)
	if len(second) != 10 || second[0].target != "row 9" || second[9].target != "row 0" || more != "" {
		t.Fatalf("second page: %d rows %+v, older %q", len(second), second, more)
	}

	// Only admins read it.
	viewer, _ := signedIn(t, e, "bob")
	if resp, _ := fetch(t, viewer, http.MethodGet, e.URL+"/console/audit", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer reading the audit log: %d", resp.StatusCode)
	}
}

func channelName(t *testing.T, e *apptest.Env, id int64) string {
	t.Helper()
	var name string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT name FROM channels WHERE id = $1`, id).Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// A tester's old link to a deleted build answers 410 with a page that says the build was removed,
// when and why (retention, or a team member: never who), and links to the channel's newest
// build; its install link does the same for a browser. Programs still get the API's 404.
func TestDeletedBuildLeavesRemovalPage(t *testing.T) {
	ctx := context.Background()
	e := apptest.New(t, apptest.Options{})
	var ids []int64
	var slug string
	for i, v := range []string{"2.0", "2.1", "2.2"} {
		rel := e.UploadApp(t, "droid.apk", apk("Droid", v, i+1))
		ids = append(ids, int64(rel["id"].(float64)))
		slug = rel["channel"].(map[string]any)["slug"].(string)
	}
	// Before: the page is there.
	if r := get(t, e, fmt.Sprintf("/channels/%s/releases/%d", slug, ids[0])); r.Status != http.StatusOK {
		t.Fatalf("release page: %d", r.Status)
	}
	if r := e.Do(t, http.MethodDelete, fmt.Sprintf("/api/releases/%d", ids[0]), nil, http.Header{"Authorization": {"Token " + e.AdminToken}}); r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	var chID int64
	if err := e.DB.Pool.QueryRow(ctx, `SELECT id FROM channels WHERE slug = $1`, slug).Scan(&chID); err != nil {
		t.Fatal(err)
	}
	keep := 1
	if err := e.Service.Retention.SetChannelRetention(apptest.AsSystem(ctx), chID, &distribution.RetentionPolicy{KeepBuilds: &keep}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Service.Retention.EnforceRetention(ctx); err != nil || n != 1 {
		t.Fatalf("retention deleted %d: %v", n, err)
	}
	newest := fmt.Sprintf(`href="%s/channels/%s/releases/%d"`, e.URL, slug, ids[2])

	r := get(t, e, fmt.Sprintf("/channels/%s/releases/%d", slug, ids[0]))
	body := string(r.Body)
	if r.Status != http.StatusGone || !strings.Contains(body, "This build was removed") || !strings.Contains(body, "Droid 2.0 (1)") ||
		!strings.Contains(body, "by a team member") || strings.Contains(body, "token admin") || !strings.Contains(body, newest) ||
		!strings.Contains(body, "Open the newest build, 2.2 (3)") {
		t.Errorf("deleted by a token: %d %s", r.Status, body)
	}
	r = get(t, e, fmt.Sprintf("/channels/%s/releases/%d", slug, ids[1]))
	body = string(r.Body)
	if r.Status != http.StatusGone || !strings.Contains(body, "Droid 2.1 (2)") || !strings.Contains(body, "retention policy (it keeps only the newest builds)") ||
		!strings.Contains(body, newest) {
		t.Errorf("deleted by retention: %d %s", r.Status, body)
	}
	// The install link: a browser gets the page, a program the API's 404.
	r = do(t, e, http.MethodGet, fmt.Sprintf("/download/releases/%d", ids[1]), nil, http.Header{"Accept": {"text/html,application/xhtml+xml"}})
	if r.Status != http.StatusGone || !strings.Contains(string(r.Body), newest) {
		t.Errorf("install link in a browser: %d %.200s", r.Status, r.Body)
	}
	r = do(t, e, http.MethodGet, fmt.Sprintf("/download/releases/%d", ids[1]), nil, nil)
	if r.Status != http.StatusNotFound || r.Error(t) == "" {
		t.Errorf("install link for a program: %d %s", r.Status, r.Body)
	}
	if r := e.Do(t, http.MethodGet, fmt.Sprintf("/api/releases/%d", ids[1]), nil, http.Header{"Authorization": {"Token " + e.AdminToken}}); r.Status != http.StatusNotFound || r.Error(t) == "" {
		t.Errorf("API read of a deleted release: %d %s", r.Status, r.Body)
	}
	// Through another channel's key, or never deleted: 404 as before.
	if r := get(t, e, fmt.Sprintf("/channels/%s/releases/%d", "nope", ids[0])); r.Status != http.StatusNotFound {
		t.Errorf("another channel's key: %d", r.Status)
	}
	if r := get(t, e, fmt.Sprintf("/channels/%s/releases/%d", slug, 999999)); r.Status != http.StatusNotFound {
		t.Errorf("never a release: %d", r.Status)
	}
	// The channel's last build gone too: the page says so and links to the channel.
	if r := e.Do(t, http.MethodDelete, fmt.Sprintf("/api/releases/%d", ids[2]), nil, http.Header{"Authorization": {"Token " + e.AdminToken}}); r.Status != http.StatusOK {
		t.Fatalf("delete the last: %d %s", r.Status, r.Body)
	}
	r = get(t, e, fmt.Sprintf("/channels/%s/releases/%d", slug, ids[0]))
	if body := string(r.Body); r.Status != http.StatusGone || !strings.Contains(body, "The channel has no builds now") ||
		!strings.Contains(body, fmt.Sprintf(`href="%s/channels/%s"`, e.URL, slug)) {
		t.Errorf("no build left: %d %s", r.Status, body)
	}
}
