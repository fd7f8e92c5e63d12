package httpapi_test

// Testers and groups through the API: groups shared across apps, testers by email, a channel
// open to its groups' testers only, distribution on upload and afterwards, the mails it writes
// to the outbox, and who installed what.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// outbox lists the mails in the outbox as "kind to" lines, in order, once the mailing component
// (woken by each distribution) has written every mail distributions recorded.
func (m *mgmt) outbox() []string {
	m.t.Helper()
	testkit.Eventually(m.t, time.Minute, "the distributions' mails written", func() bool {
		var n int
		if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM release_testers WHERE mail = 'pending')
			+ (SELECT count(*) FROM release_distributions)`).Scan(&n); err != nil {
			m.t.Fatal(err)
		}
		return n == 0
	})
	rows, err := m.e.DB.Pool.Query(context.Background(), `SELECT kind || ' ' || recipient FROM mail_outbox ORDER BY created_at, recipient`)
	if err != nil {
		m.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			m.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func testerIPA(build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: build})
}

func TestGroupsAndTesters(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	admin := m.e.AdminToken
	g := m.want(m.call("POST", "/api/groups", admin, `{"alias":"qa","name":"QA"}`), 201, "make a group")
	if g["alias"] != "qa" || g["name"] != "QA" {
		t.Errorf("group: %v", g)
	}
	m.want(m.call("POST", "/api/groups", admin, `{"alias":"qa"}`), 409, "the same alias again")
	m.want(m.call("POST", "/api/groups", admin, `{"alias":"Q A"}`), 422, "a bad alias")
	m.want(m.call("POST", "/api/groups", m.e.UploadToken, `{"alias":"ci"}`), 403, "an upload token makes a group")

	add := func(body string, status int, what string) *apptest.Response {
		t.Helper()
		r := m.call("POST", "/api/groups/qa/testers", admin, body)
		if r.Status != status {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
		return r
	}
	var ts []struct {
		Email  string   `json:"email"`
		Groups []string `json:"groups"`
	}
	add(`{"emails":[" Ada@Example.COM ","bob@example.com","ada@example.com"]}`, 200, "add two testers").JSON(t, &ts)
	if len(ts) != 2 || ts[0].Email != "ada@example.com" || ts[1].Email != "bob@example.com" || fmt.Sprint(ts[0].Groups) != "[qa]" {
		t.Errorf("the group holds %+v", ts)
	}
	add(`{"emails":["bob@example.com"]}`, 200, "again: idempotent").JSON(t, &ts)
	if len(ts) != 2 {
		t.Errorf("after adding bob again: %+v", ts)
	}
	before := m.state()
	r := add(`{"emails":["carol@example.com","not-an-email","eve@@x","<x@y.z>"]}`, 422, "invalid emails")
	for _, bad := range []string{"not-an-email", "eve@@x", "x@y.z"} {
		if !strings.Contains(r.Error(t), bad) {
			t.Errorf("the error does not name %q: %s", bad, r.Error(t))
		}
	}
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf(`"t%d@example.com"`, i)
	}
	add(`{"emails":[`+strings.Join(many, ",")+`]}`, 422, "1,000 emails at once")
	m.want(m.call("POST", "/api/groups/nope/testers", admin, `{"emails":["carol@example.com"]}`), 404, "an unknown group")
	if after := m.state(); after != before {
		t.Errorf("refused batches changed something:\n%s\n%s", before, after)
	}
	add(`{"emails":[`+strings.Join(many[:999], ",")+`]}`, 200, "999 emails at once")

	var listed []map[string]any
	m.call("GET", "/api/testers?group=qa", admin, "").JSON(t, &listed)
	if len(listed) != 1001 {
		t.Errorf("GET /api/testers?group=qa lists %d testers, want 1001", len(listed))
	}
	m.want(m.call("DELETE", "/api/groups/qa/testers/bob@example.com", admin, ""), 200, "remove bob")
	m.want(m.call("DELETE", "/api/groups/qa/testers/bob@example.com", admin, ""), 404, "remove bob again")
	var groups []map[string]any
	m.call("GET", "/api/groups", admin, "").JSON(t, &groups)
	if len(groups) != 1 || groups[0]["testers"] != float64(1000) {
		t.Errorf("groups: %v", groups)
	}
	m.want(m.call("DELETE", "/api/groups/qa", admin, ""), 200, "delete the group")
	m.want(m.call("DELETE", "/api/groups/qa", admin, ""), 404, "delete it again")
}

// TestDistributionToTesters: a channel behind a group of two testers. An upload invites both
// (one mail each), a second sends each a new-build mail, one unsubscribes and gets nothing for the
// third; anonymous requests get no build; a tester's link installs and shows as installed; a
// tester taken out of the group loses access at once.
func TestDistributionToTesters(t *testing.T) {
	m := newMgmt(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	admin := m.e.AdminToken
	ctx := context.Background()
	app, _, channel, first := m.fixture()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", id(app)), admin,
		`{"url":"`+receiver.URL+`","format":"slack","events":["tester.invited","tester.installed"]}`), 201, "a webhook of tester events")
	m.want(m.call("POST", "/api/groups", admin, `{"alias":"qa"}`), 201, "group")
	m.want(m.call("POST", "/api/groups/qa/testers", admin, `{"emails":["ada@example.com","bob@example.com"]}`), 200, "testers")
	cid := id(channel)
	m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", cid), admin, `{"tester_groups":["nope"]}`), 422, "an unknown group")
	ch := m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", cid), admin, `{"tester_groups":["qa"]}`), 200, "behind qa")
	if ch["tester_only"] != true || fmt.Sprint(ch["tester_groups"]) != "[qa]" {
		t.Fatalf("the channel: %v", ch)
	}

	// The fixture's first build was uploaded before: nobody was invited to it. The next one is.
	up := func(build string, fields ...apptest.Part) map[string]any {
		t.Helper()
		return m.e.UploadApp(t, "h.ipa", testerIPA(build), append([]apptest.Part{apptest.Field("channel_key", "harbor-ios")}, fields...)...)
	}
	second := up("2")
	if fmt.Sprint(second["testers"]) != "map[notified:2 testers:2]" {
		t.Errorf("the upload's answer: testers %v", second["testers"])
	}
	if got := strings.Join(m.outbox(), ", "); got != "invitation ada@example.com, invitation bob@example.com" {
		t.Errorf("outbox after the first distribution: %s", got)
	}
	third := up("3")
	if got := strings.Join(m.outbox()[2:], ", "); got != "new_build ada@example.com, new_build bob@example.com" {
		t.Errorf("outbox after the second: %s", got)
	}
	// Bob's one-click unsubscribe (the token his mail's List-Unsubscribe names).
	bob, err := m.e.DB.TesterByEmail(ctx, "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	appID := int64(third["app"].(map[string]any)["id"].(float64))
	if _, err := m.e.Service.Testers.Unsubscribe(ctx, m.e.Service.Testers.UnsubscribeToken(bob.ID, appID)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.e.Service.Testers.Unsubscribe(ctx, m.e.Service.Testers.UnsubscribeToken(bob.ID, appID)+"x"); err == nil {
		t.Error("a forged unsubscribe token was taken")
	}
	fourth := up("4", apptest.Field("testers", "carol@example.com"))
	if got := strings.Join(m.outbox()[4:], ", "); got != "new_build ada@example.com, invitation carol@example.com" {
		t.Errorf("outbox after bob unsubscribed: %s", got)
	}
	if fmt.Sprint(fourth["testers"]) != "map[notified:2 testers:3]" {
		t.Errorf("the fourth upload's answer: testers %v", fourth["testers"])
	}
	up("5", apptest.Field("notify", "false"))
	if n := len(m.outbox()); n != 6 {
		t.Errorf("notify=false wrote mail: %d mails", n)
	}
	before := m.state()
	r := m.e.Upload(t, "/api/apps/upload", m.e.UploadToken, apptest.Field("channel_key", "harbor-ios"),
		apptest.Field("testers", "dave@example.com,not an email"), apptest.File("h.ipa", testerIPA("6")))
	if r.Status != 422 || !strings.Contains(r.Error(t), "not an email") {
		t.Errorf("an upload naming a bad email: %d %s", r.Status, r.Body)
	}
	r = m.e.Upload(t, "/api/apps/upload", m.e.UploadToken, apptest.Field("channel_key", "harbor-ios"),
		apptest.Field("groups", "nope"), apptest.File("h.ipa", testerIPA("6")))
	if r.Status != 422 {
		t.Errorf("an upload naming an unknown group: %d %s", r.Status, r.Body)
	}
	if after := m.state(); after != before {
		t.Errorf("refused uploads changed something:\n%s\n%s", before, after)
	}

	// Distribution afterwards: the first build to dave; again: nobody anew.
	d := m.want(m.call("POST", fmt.Sprintf("/api/releases/%d/distribute", id(first)), m.e.UploadToken, `{"testers":["dave@example.com"]}`), 200, "distribute")
	// Ada and bob (the channel's group) had not had the first build: ada gets a new-build mail,
	// bob chose none, dave (new) an invitation.
	if fmt.Sprint(d) != "map[notified:2 testers:3]" {
		t.Errorf("distribute: %v", d)
	}
	m.outbox() // the first distribution expanded
	d = m.want(m.call("POST", fmt.Sprintf("/api/releases/%d/distribute", id(first)), m.e.UploadToken, `{"testers":["dave@example.com"]}`), 200, "distribute again")
	if fmt.Sprint(d) != "map[notified:0 testers:0]" {
		t.Errorf("a second distribution: %v", d)
	}

	m.outbox()
	// Nobody anonymous gets a build: the download, the manifest.
	rid := id(second)
	for _, path := range []string{fmt.Sprintf("/download/releases/%d", rid), fmt.Sprintf("/channels/harbor-ios/releases/%d/install", rid)} {
		if r := m.e.Get(t, path); r.Status != 401 {
			t.Errorf("anonymous GET %s: %d %s", path, r.Status, r.Header.Get("Location"))
		}
	}
	// Ada's install link (made for her, as her release page makes it) installs.
	ada, err := m.e.DB.TesterByEmail(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	cc, err := m.e.Service.Apps.ChannelByID(apptest.AsSystem(ctx), cid)
	if err != nil {
		t.Fatal(err)
	}
	asAda := distribution.WithActor(ctx, distribution.TesterActor(ada))
	tok := m.e.Service.Passwords.ReleaseAccessTokenAs(asAda, &cc.Channel, rid)
	r = m.e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", rid, tok))
	if r.Status != http.StatusFound {
		t.Fatalf("ada's link: %d %s", r.Status, r.Body)
	}
	var rts []map[string]any
	m.call("GET", fmt.Sprintf("/api/releases/%d/testers", rid), admin, "").JSON(t, &rts)
	states := map[string]string{}
	for _, x := range rts {
		states[x["email"].(string)] = x["state"].(string)
	}
	if states["ada@example.com"] != "installed" || states["bob@example.com"] != "invited" || len(states) != 2 {
		t.Errorf("release testers: %v", rts)
	}
	// Out of the group, her link stops at once.
	m.want(m.call("DELETE", "/api/groups/qa/testers/ada@example.com", admin, ""), 200, "remove ada")
	if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", rid, tok)); r.Status == http.StatusFound {
		t.Errorf("ada's link after she left the group: %d", r.Status)
	}
	// Carol was named for the fourth build only: she has it, not the third.
	carol, _ := m.e.DB.TesterByEmail(ctx, "carol@example.com")
	asCarol := distribution.WithActor(ctx, distribution.TesterActor(carol))
	if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", id(fourth), m.e.Service.Passwords.ReleaseAccessTokenAs(asCarol, &cc.Channel, id(fourth)))); r.Status != http.StatusFound {
		t.Errorf("carol's build: %d", r.Status)
	}
	if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d?access=%s", id(third), m.e.Service.Passwords.ReleaseAccessTokenAs(asCarol, &cc.Channel, id(third)))); r.Status == http.StatusFound {
		t.Errorf("carol got a build not given to her: %d", r.Status)
	}
	// The events: one tester.invited per distribution that reached someone new (uploads 2 and 4,
	// the distribution to dave), one tester.installed per first install (ada, carol).
	var events string
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT string_agg(event || ':' || n, ' ' ORDER BY event) FROM
		(SELECT event, count(*) AS n FROM webhook_deliveries GROUP BY event) e`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != "tester.installed:2 tester.invited:3" {
		t.Errorf("webhook deliveries: %s", events)
	}
	// Deleting the last group leaves the channel closed, not open.
	m.want(m.call("DELETE", "/api/groups/qa", admin, ""), 200, "delete the group")
	if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d", rid)); r.Status == http.StatusFound {
		t.Errorf("after its group went, the channel opened: %d", r.Status)
	}
	ch = m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", cid), admin, `{"tester_groups":[]}`), 200, "open it again")
	if ch["tester_only"] != false {
		t.Errorf("tester_only after tester_groups []: %v", ch["tester_only"])
	}
	if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d", rid)); r.Status != http.StatusFound {
		t.Errorf("the opened channel's download: %d", r.Status)
	}
}

// TestDailyDigest: a tester who chose a daily digest gets no new-build mail, then one digest
// listing every build given to them since, and nothing again until the next day.
func TestDailyDigest(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	admin := m.e.AdminToken
	ctx := context.Background()
	_, _, channel, _ := m.fixture()
	m.want(m.call("POST", "/api/groups", admin, `{"alias":"qa"}`), 201, "group")
	m.want(m.call("POST", "/api/groups/qa/testers", admin, `{"emails":["ada@example.com"]}`), 200, "tester")
	m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", id(channel)), admin, `{"tester_groups":["qa"]}`), 200, "behind qa")
	first := m.e.UploadApp(t, "h.ipa", testerIPA("2"), apptest.Field("channel_key", "harbor-ios"))
	// The invitation is written (the distribution expanded) before ada chooses the digest: a
	// choice made before would take this build into the digest too.
	m.outbox()
	ada, err := m.e.DB.TesterByEmail(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	appID := int64(first["app"].(map[string]any)["id"].(float64))
	if err := m.e.Service.Testers.SetMail(ctx, ada, appID, distribution.MailDaily); err != nil {
		t.Fatal(err)
	}
	m.e.UploadApp(t, "h.ipa", testerIPA("3"), apptest.Field("channel_key", "harbor-ios"))
	m.e.UploadApp(t, "h.ipa", testerIPA("4"), apptest.Field("channel_key", "harbor-ios"))
	if got := strings.Join(m.outbox(), ", "); got != "invitation ada@example.com" {
		t.Errorf("before the digest: %s", got)
	}
	d := *m.e.Service.Mailings
	d.DigestEvery = time.Millisecond // the day has passed
	time.Sleep(5 * time.Millisecond)
	n, err := d.SendDue(ctx)
	if err != nil || n != 1 {
		t.Fatalf("SendDue: %d, %v", n, err)
	}
	var text, unsub string
	if err := m.e.DB.Pool.QueryRow(ctx, `SELECT text_body, headers->>'List-Unsubscribe' FROM mail_outbox WHERE kind = 'digest'`).Scan(&text, &unsub); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "1.0 (3)") || !strings.Contains(text, "1.0 (4)") || strings.Contains(text, "1.0 (2)") || unsub == "" {
		t.Errorf("the digest lists:\n%s\n(List-Unsubscribe %q)", text, unsub)
	}
	d.DigestEvery = time.Hour
	if n, err := d.SendDue(ctx); err != nil || n != 0 {
		t.Errorf("a second run within the day: %d, %v", n, err)
	}
}
