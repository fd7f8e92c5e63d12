package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// consoleState is every row a console form may change.
func consoleState(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT coalesce(string_agg(concat_ws('|', id, scheme_id, name, slug, device_type, password_hash IS NOT NULL), ',' ORDER BY id), '') FROM channels`,
		`SELECT coalesce(string_agg(concat_ws('|', id, name), ',' ORDER BY id), '') FROM schemes`,
		`SELECT coalesce(string_agg(concat_ws('|', id, changelog::text), ',' ORDER BY id), '') FROM releases`,
		`SELECT coalesce(string_agg(concat_ws('|', channel_id, keep_builds, max_age_days, max_bytes), ',' ORDER BY id), '') FROM retention_policies`,
		`SELECT coalesce(string_agg(concat_ws('|', id, url), ',' ORDER BY id), '') FROM webhooks`,
		`SELECT coalesce(string_agg(concat_ws('|', app_id, user_id), ',' ORDER BY app_id, user_id), '') FROM app_members`,
		`SELECT coalesce(string_agg(concat_ws('|', id, role), ',' ORDER BY id), '') FROM users`,
	} {
		var s string
		if err := e.DB.Pool.QueryRow(context.Background(), q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

func TestConsoleAppAuthorization(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol") // will be a developer of Harbor
	dave, _ := signedIn(t, e, "dave")   // a developer of another app
	bob, _ := signedIn(t, e, "bob")     // a viewer
	harbor := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	other := e.UploadApp(t, "o.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Other", BundleID: "com.example.other", Version: "1.0", Build: "1"}))
	appID := int64(harbor["app"].(map[string]any)["id"].(float64))
	otherID := int64(other["app"].(map[string]any)["id"].(float64))
	chID := int64(harbor["channel"].(map[string]any)["id"].(float64))
	relID := int64(harbor["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)

	acsrf := csrfOf(t, admin, appURL)
	post := func(c *http.Client, path string, form url.Values) int {
		resp, _ := fetch(t, c, http.MethodPost, e.URL+path, form)
		return resp.StatusCode
	}
	// The admin makes carol a developer of Harbor and dave of Other.
	if s := post(admin, fmt.Sprintf("/console/apps/%d/members", appID), url.Values{"email": {"carol@example.com"}, "csrf": {acsrf}}); s != 200 {
		t.Fatalf("add carol: %d", s)
	}
	if s := post(admin, fmt.Sprintf("/console/apps/%d/members", otherID), url.Values{"email": {"dave@example.com"}, "csrf": {acsrf}}); s != 200 {
		t.Fatalf("add dave: %d", s)
	}
	// Someone who never signed in is invited (mail is off here: the link is shown to pass on);
	// a bad address is said beside the field (422), the email kept.
	if resp, body := fetch(t, admin, http.MethodPost, e.URL+fmt.Sprintf("/console/apps/%d/members", appID), url.Values{"email": {"nobody@example.com"}, "csrf": {acsrf}}); resp.StatusCode != 200 ||
		!strings.Contains(body, "Invitation made for nobody@example.com") {
		t.Errorf("add someone who never signed in: %d %.300s", resp.StatusCode, body)
	}
	if resp, body := fetch(t, admin, http.MethodPost, e.URL+fmt.Sprintf("/console/apps/%d/members", appID), url.Values{"email": {"nobody at example"}, "csrf": {acsrf}}); resp.StatusCode != 422 ||
		!strings.Contains(body, `class="field-error" role="alert">Email must be an email address`) || !strings.Contains(body, `value="nobody at example"`) {
		t.Errorf("add a bad address: %d %.300s", resp.StatusCode, body)
	}

	forms := func(csrf string) []struct {
		what, path string
		form       url.Values
	} {
		return []struct {
			what, path string
			form       url.Values
		}{
			{"create channel", fmt.Sprintf("/console/apps/%d/channels", appID), url.Values{"scheme": {"Beta"}, "name": {"QA"}, "device_type": {"ios"}, "password": {"pw"}, "csrf": {csrf}}},
			{"set retention", fmt.Sprintf("/console/channels/%d/retention", chID), url.Values{"keep_builds": {"3"}, "csrf": {csrf}}},
			{"edit changelog", fmt.Sprintf("/console/releases/%d", relID), url.Values{"changelog": {"Edited in the console"}, "csrf": {csrf}}},
			{"add webhook", fmt.Sprintf("/console/channels/%d/webhooks", chID), url.Values{"url": {"http://127.0.0.1:9/hook"}, "format": {"slack"}, "csrf": {csrf}}},
			{"add member", fmt.Sprintf("/console/apps/%d/members", appID), url.Values{"email": {"bob@example.com"}, "csrf": {csrf}}},
		}
	}
	// A viewer and a developer of another app are refused every change, nothing changed.
	for name, c := range map[string]*http.Client{"viewer": bob, "developer of another app": dave} {
		csrf := csrfOf(t, c, e.URL+"/console")
		before := consoleState(t, e)
		for _, f := range forms(csrf) {
			if s := post(c, f.path, f.form); s != http.StatusForbidden {
				t.Errorf("%s, %s: %d, want 403", name, f.what, s)
			}
		}
		if after := consoleState(t, e); after != before {
			t.Errorf("%s's refused forms changed something:\n%s\n%s", name, before, after)
		}
	}
	// Without the CSRF token even the admin is refused.
	before := consoleState(t, e)
	for _, f := range forms("") {
		if s := post(admin, f.path, f.form); s != http.StatusForbidden {
			t.Errorf("admin without CSRF, %s: %d, want 403", f.what, s)
		}
	}
	if after := consoleState(t, e); after != before {
		t.Errorf("forms without CSRF changed something")
	}
	// A developer of Harbor manages its channels and releases, and brings colleagues in (bob, who
	// has an account, becomes a member at once), but not webhooks.
	ccsrf := csrfOf(t, carol, appURL)
	for _, f := range forms(ccsrf) {
		want := 200
		if f.what == "add webhook" {
			want = http.StatusForbidden
		}
		if s := post(carol, f.path, f.form); s != want {
			t.Errorf("developer, %s: %d, want %d", f.what, s, want)
		}
	}
	var changelog string
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT changelog::text FROM releases WHERE id = $1`, relID).Scan(&changelog)
	if !strings.Contains(changelog, "Edited in the console") {
		t.Errorf("changelog %s", changelog)
	}
	// The retention form shows the channel's own policy, so saving it again keeps what was set.
	if _, page := fetch(t, carol, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, chID), nil); !strings.Contains(page, fmt.Sprintf(`id="keep-builds-%d" inputmode="numeric" size="4" value="3"`, chID)) {
		t.Error("the retention form does not show the channel's keep_builds")
	}
	var pw bool
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT password_hash IS NOT NULL FROM channels WHERE name = 'QA'`).Scan(&pw); err != nil || !pw {
		t.Errorf("the new channel has no password (%v)", err)
	}
	// The admin adds a webhook; its secret is shown once.
	resp, body := fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/channels/%d/webhooks", e.URL, chID), url.Values{"url": {"http://127.0.0.1:9/hook"}, "format": {"slack"}, "csrf": {acsrf}})
	if resp.StatusCode != 200 || !strings.Contains(body, `id="secret">whsec_`) {
		t.Errorf("admin adds a webhook: %d", resp.StatusCode)
	}
	if crumbs := between(body, `id="breadcrumbs"`, "</nav>"); !strings.Contains(crumbs, fmt.Sprintf(`/console/channels/%d"`, chID)) {
		t.Errorf("the webhook page's breadcrumbs lack its channel: %s", crumbs)
	}
	if _, again := fetch(t, admin, http.MethodGet, appURL, nil); strings.Contains(again, "whsec_") {
		t.Error("the webhook secret is shown again")
	}
	_, audit := fetch(t, admin, http.MethodGet, e.URL+"/console/audit", nil)
	for _, want := range []string{"channel.create", "retention.set", "release.update", "webhook.create", "member.add"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s", want)
		}
	}
}

// Making a channel with its scheme is one unit of work: eight forms making channel "QA" in a new
// scheme at once make one scheme and one channel, the others are told the name is taken; a
// channel refused after its scheme was found missing leaves no scheme behind.
func TestConsoleCreateChannelIsOneTransaction(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	app := e.Do(t, http.MethodPost, "/api/apps", strings.NewReader(`{"name":"Team"}`),
		http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}}).Map(t)
	appID := int64(app["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	count := func(sql string) int {
		var n int
		if err := e.DB.Pool.QueryRow(context.Background(), sql, appID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const n = 8
	csrfs := make([]string, n)
	for i := range csrfs {
		csrfs[i] = csrfOf(t, admin, appURL)
	}
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := fetch(t, admin, http.MethodPost, appURL+"/channels", url.Values{"scheme": {"Nightly"}, "name": {"QA"},
				"device_type": {"android"}, "csrf": {csrfs[i]}})
			statuses[i] = resp.StatusCode
		}()
	}
	wg.Wait()
	slices.Sort(statuses)
	want := append([]int{200}, slices.Repeat([]int{422}, n-1)...)
	if !slices.Equal(statuses, want) {
		t.Errorf("eight forms at once: %v, want one 200 and seven 422", statuses)
	}
	if s, c := count(`SELECT count(*) FROM schemes WHERE app_id = $1 AND name = 'Nightly'`),
		count(`SELECT count(*) FROM channels c JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1 AND c.name = 'QA'`); s != 1 || c != 1 {
		t.Errorf("%d schemes and %d channels, want one of each", s, c)
	}
	// The same name in another letter case, in the scheme named in another letter case: taken.
	if resp, body := fetch(t, admin, http.MethodPost, appURL+"/channels", url.Values{"scheme": {"nightly"}, "name": {"qa"},
		"device_type": {"android"}, "csrf": {csrfOf(t, admin, appURL)}}); resp.StatusCode != 422 || !strings.Contains(body, "is already the name of a channel") {
		t.Errorf("the same name in other letters: %d", resp.StatusCode)
	}
	// A refused channel (an unknown device type) in a scheme that did not exist leaves none.
	if resp, _ := fetch(t, admin, http.MethodPost, appURL+"/channels", url.Values{"scheme": {"Weekly"}, "name": {"QA"},
		"device_type": {"toaster"}, "csrf": {csrfOf(t, admin, appURL)}}); resp.StatusCode != 422 {
		t.Errorf("an unknown device type: %d", resp.StatusCode)
	}
	if s := count(`SELECT count(*) FROM schemes WHERE app_id = $1 AND name = 'Weekly'`); s != 0 {
		t.Errorf("a refused channel left %d schemes behind", s)
	}
}

// The console's apps list says what each app is at a glance: its icon, platforms and newest
// build (issue 34: it was bare names).
func TestConsoleAppsList(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	m := e.UploadApp(t, "harbor.ipa", ipa("Harbor", "1.0", "1"))
	appID := int64(m["app"].(map[string]any)["id"].(float64))
	r := upload(t, e, "harbor.ipa", ipa("Harbor", "1.1", "2"), apptest.Field("channel_key", m["channel"].(map[string]any)["slug"].(string)))
	empty, err := e.Service.Apps.CreateApp(apptest.AsSystem(context.Background()), "Empty")
	if err != nil {
		t.Fatal(err)
	}
	_, page := fetch(t, admin, http.MethodGet, e.URL+"/console", nil)
	row := between(page, fmt.Sprintf(`id="app-%d"`, appID), "</li>")
	for _, want := range []string{fmt.Sprintf("/releases/%d/icon", r.ID), `<span class="tag">iOS</span>`, "newest 1.1 (2)"} {
		if !strings.Contains(row, want) {
			t.Errorf("Harbor's row lacks %q: %s", want, row)
		}
	}
	if row := between(page, fmt.Sprintf(`id="app-%d"`, empty.ID), "</li>"); !strings.Contains(row, "no builds yet") {
		t.Errorf("the empty app's row: %s", row)
	}
}
