package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/devices"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/test/apptest"
)

// manageState is every row the console's management forms may change.
func manageState(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(consoleState(t, e))
	for _, q := range []string{
		`SELECT coalesce(string_agg(concat_ws('|', id, name), ',' ORDER BY id), '') FROM apps`,
		`SELECT coalesce(string_agg(concat_ws('|', id, pinned), ',' ORDER BY id), '') FROM releases`,
		`SELECT coalesce(string_agg(concat_ws('|', id, disabled_at IS NOT NULL), ',' ORDER BY id), '') FROM users`,
		`SELECT coalesce(string_agg(udid, ',' ORDER BY udid), '') FROM devices`,
		`SELECT count(*)::text FROM webhook_deliveries`,
		`SELECT count(*)::text FROM upload_sessions`,
		`SELECT count(*) FILTER (WHERE revoked_at IS NOT NULL)::text FROM user_sessions`,
	} {
		var s string
		if err := e.DB.Pool.QueryRow(context.Background(), q).Scan(&s); err != nil {
			t.Fatal(err)
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}

func userID(t *testing.T, e *apptest.Env, email string) int64 {
	t.Helper()
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM users WHERE email = $1`, email).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// script sends one of the upload script's calls: the CSRF token in its header, JSON back.
func script(t *testing.T, c *http.Client, method, u, csrf string, form url.Values) (int, map[string]any) {
	t.Helper()
	req := formRequest(t, method, u, form)
	if csrf != "" {
		req.Header.Set("X-CSRF-Token", csrf)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v", method, u, resp.StatusCode, err)
	}
	if resp.StatusCode >= 400 && out["error"] == nil {
		t.Errorf("%s %s: %d without an error message", method, u, resp.StatusCode)
	}
	return resp.StatusCode, out
}

// TestConsoleManageAuthorization: every management form is refused (403, nothing changed) to a
// viewer and to a developer of another app, and to anyone without the CSRF token; a developer of
// the app may do what developers may; the rest is for admins. Each change shows in the audit log.
func TestConsoleManageAuthorization(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	ctx := context.Background()
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol")
	dave, _ := signedIn(t, e, "dave")
	bob, _ := signedIn(t, e, "bob")
	harbor := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	second := e.UploadApp(t, "h2.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}))
	other := e.UploadApp(t, "o.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Other", BundleID: "com.example.other", Version: "1.0", Build: "1"}))
	appID := int64(harbor["app"].(map[string]any)["id"].(float64))
	otherID := int64(other["app"].(map[string]any)["id"].(float64))
	chID := int64(harbor["channel"].(map[string]any)["id"].(float64))
	schemeID := int64(harbor["scheme"].(map[string]any)["id"].(float64))
	relID := int64(harbor["id"].(float64))
	rel2ID := int64(second["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	hookURL := "http://127.0.0.1:9/hook"
	hook, err := e.Service.Webhooks.CreateWebhook(apptest.AsSystem(ctx), 0, chID, events.WebhookInput{URL: &hookURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Service.Devices.SyncDevice(apptest.AsSystem(ctx), "00008030-001A2B3C4D5E6F70", devices.DeviceChanges{Name: "QA iPhone"}); err != nil {
		t.Fatal(err)
	}
	acsrf := csrfOf(t, admin, appURL)
	post := func(c *http.Client, path string, form url.Values) int {
		resp, _ := fetch(t, c, http.MethodPost, e.URL+path, form)
		return resp.StatusCode
	}
	for email, app := range map[string]int64{"carol@example.com": appID, "dave@example.com": otherID} {
		if s := post(admin, fmt.Sprintf("/console/apps/%d/members", app), url.Values{"email": {email}, "csrf": {acsrf}}); s != 200 {
			t.Fatalf("add %s: %d", email, s)
		}
	}
	carolID := userID(t, e, "carol@example.com")

	type form struct {
		what, path string
		form       url.Values
	}
	forms := func(csrf string) []form {
		v := func(kv ...string) url.Values {
			out := url.Values{"csrf": {csrf}, "confirm": {"1"}}
			for i := 0; i < len(kv); i += 2 {
				out.Set(kv[i], kv[i+1])
			}
			return out
		}
		return []form{
			{"rename app", fmt.Sprintf("/console/apps/%d", appID), v("name", "Renamed")},
			{"create app", "/console/apps", v("name", "Brand new")},
			{"add app webhook", fmt.Sprintf("/console/apps/%d/webhooks", appID), v("url", "http://127.0.0.1:9/app", "events", "release.deleted")},
			{"rename scheme", fmt.Sprintf("/console/schemes/%d", schemeID), v("name", "Nightly")},
			{"delete scheme", fmt.Sprintf("/console/schemes/%d/delete", schemeID), v()},
			{"channel settings", fmt.Sprintf("/console/channels/%d", chID), v("name", "Renamed", "password", "secret-pw")},
			{"pin release", fmt.Sprintf("/console/releases/%d/pin", relID), v("pinned", "true")},
			{"test webhook", fmt.Sprintf("/console/webhooks/%d/test", hook.ID), v()},
			{"pause webhook", fmt.Sprintf("/console/webhooks/%d/enabled", hook.ID), v("enabled", "false")},
			{"delete webhook", fmt.Sprintf("/console/webhooks/%d/delete", hook.ID), v()},
			{"approve device", "/console/devices/00008030-001A2B3C4D5E6F70/approve", v()},
			{"delete device", "/console/devices/00008030-001A2B3C4D5E6F70/delete", v()},
			{"disable user", fmt.Sprintf("/console/users/%d", carolID), v("role", "viewer", "disabled", "1")},
			{"remove member", fmt.Sprintf("/console/apps/%d/members/%d/remove", appID, carolID), v()},
			{"delete release", fmt.Sprintf("/console/releases/%d/delete", rel2ID), v()},
			{"delete channel", fmt.Sprintf("/console/channels/%d/delete", chID), v()},
			{"delete app", fmt.Sprintf("/console/apps/%d/delete", appID), v()},
		}
	}
	startUpload := func(c *http.Client, csrf string) int {
		s, _ := script(t, c, http.MethodPost, fmt.Sprintf("%s/console/channels/%d/uploads", e.URL, chID), csrf, url.Values{"filename": {"x.ipa"}, "size": {"100"}})
		return s
	}
	for name, c := range map[string]*http.Client{"viewer": bob, "developer of another app": dave} {
		csrf := csrfOf(t, c, e.URL+"/console")
		before := manageState(t, e)
		for _, f := range forms(csrf) {
			if s := post(c, f.path, f.form); s != http.StatusForbidden {
				t.Errorf("%s, %s: %d, want 403", name, f.what, s)
			}
		}
		if s := startUpload(c, csrf); s != http.StatusForbidden {
			t.Errorf("%s, start a web upload: %d, want 403", name, s)
		}
		if after := manageState(t, e); after != before {
			t.Errorf("%s's refused forms changed something:\n%s\n%s", name, before, after)
		}
	}
	before := manageState(t, e)
	for _, f := range forms("") {
		if s := post(admin, f.path, f.form); s != http.StatusForbidden {
			t.Errorf("admin without CSRF, %s: %d, want 403", f.what, s)
		}
	}
	if s := startUpload(admin, ""); s != http.StatusForbidden {
		t.Errorf("admin without CSRF, start a web upload: %d", s)
	}
	if after := manageState(t, e); after != before {
		t.Errorf("forms without CSRF changed something:\n%s\n%s", before, after)
	}

	// Carol, a developer of Harbor: she renames it, sets the channel's name and password, deletes
	// a build; pins, webhooks, devices, people and deleting the app are for admins.
	ccsrf := csrfOf(t, carol, appURL)
	// A retention preview says what would go and saves nothing.
	before = manageState(t, e)
	if resp, page := fetch(t, carol, http.MethodPost, fmt.Sprintf("%s/console/channels/%d/retention", e.URL, chID), url.Values{"csrf": {ccsrf}, "keep_builds": {"1"}, "preview": {"1"}}); resp.StatusCode != 200 ||
		!strings.Contains(page, "would delete 1 build:") || !strings.Contains(page, "1.0 (1) · uploaded ") || strings.Contains(page, "ids ") ||
		!strings.Contains(page, `name="keep_builds" id="keep-builds-`) || !strings.Contains(page, `size="4" value="1"`) {
		t.Errorf("retention preview: %d (want the build named as testers see it, and the typed policy kept): %.3000s", resp.StatusCode, page)
	}
	if after := manageState(t, e); after != before {
		t.Errorf("a retention preview changed something")
	}
	allowed := map[string]bool{"rename app": true, "channel settings": true, "delete release": true, "rename scheme": true}
	for _, f := range forms(ccsrf) {
		if f.what == "delete channel" || f.what == "remove member" || f.what == "delete scheme" {
			continue // below, by the admin
		}
		want := http.StatusForbidden
		if allowed[f.what] {
			want = http.StatusOK
		}
		if s := post(carol, f.path, f.form); s != want {
			t.Errorf("developer, %s: %d, want %d", f.what, s, want)
		}
	}
	var appName, chName string
	var hasPassword bool
	var releases int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT a.name, c.name, c.password_hash IS NOT NULL, (SELECT count(*) FROM releases WHERE channel_id = c.id)
		FROM channels c JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id WHERE c.id = $1`, chID).Scan(&appName, &chName, &hasPassword, &releases); err != nil {
		t.Fatal(err)
	}
	if appName != "Renamed" || chName != "Renamed" || !hasPassword || releases != 1 {
		t.Errorf("after the developer's forms: app %q, channel %q, password %v, %d releases", appName, chName, hasPassword, releases)
	}
	var schemeName string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT name FROM schemes WHERE id = $1`, schemeID).Scan(&schemeName); err != nil || schemeName != "Nightly" {
		t.Errorf("the developer's scheme rename: %q (%v)", schemeName, err)
	}
	// A delete without the confirm box is refused, nothing deleted.
	if s := post(carol, fmt.Sprintf("/console/releases/%d/delete", relID), url.Values{"csrf": {ccsrf}}); s != http.StatusUnprocessableEntity {
		t.Errorf("delete without confirm: %d", s)
	}

	// The admin: pin, clear the password, webhook test and history, device, then people.
	if s := post(admin, fmt.Sprintf("/console/releases/%d/pin", relID), url.Values{"csrf": {acsrf}, "pinned": {"true"}}); s != 200 {
		t.Errorf("pin: %d", s)
	}
	if s := post(admin, fmt.Sprintf("/console/channels/%d", chID), url.Values{"csrf": {acsrf}, "name": {"Debug"}, "clear_password": {"1"}}); s != 200 {
		t.Errorf("clear password: %d", s)
	}
	if s := post(admin, fmt.Sprintf("/console/apps/%d/webhooks", appID), url.Values{"csrf": {acsrf}, "url": {"http://127.0.0.1:9/app"},
		"format": {"slack"}, "events": {"release.deleted", "debug_file.created"}}); s != 200 {
		t.Errorf("add app webhook: %d", s)
	}
	var appHookEvents string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT array_to_string(events, ',') FROM webhooks WHERE app_id = $1`, appID).Scan(&appHookEvents); err != nil ||
		appHookEvents != "release.deleted,debug_file.created" {
		t.Errorf("the app webhook's events: %q (%v)", appHookEvents, err)
	}
	if s := post(admin, fmt.Sprintf("/console/apps/%d/webhooks", appID), url.Values{"csrf": {acsrf}, "url": {"http://127.0.0.1:9/app"}, "events": {"release.exploded"}}); s != 422 {
		t.Errorf("an app webhook with an unknown event: %d", s)
	}
	if s := post(admin, fmt.Sprintf("/console/channels/%d/webhooks", chID), url.Values{"csrf": {acsrf}, "url": {"http://127.0.0.1:9/ding"},
		"format": {"dingtalk"}, "robot_secret": {"SECrobot"}}); s != 200 {
		t.Errorf("add a DingTalk webhook with its robot secret: %d", s)
	}
	var robotSecret string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT robot_secret FROM webhooks WHERE url = 'http://127.0.0.1:9/ding'`).Scan(&robotSecret); err != nil || robotSecret != "SECrobot" {
		t.Errorf("the DingTalk webhook's robot secret: %q (%v)", robotSecret, err)
	}
	if _, page := fetch(t, admin, http.MethodGet, appURL, nil); strings.Contains(page, "SECrobot") {
		t.Error("the app page shows a robot secret")
	}
	if s := post(admin, fmt.Sprintf("/console/webhooks/%d/test", hook.ID), url.Values{"csrf": {acsrf}}); s != 200 {
		t.Errorf("test webhook: %d", s)
	}
	if _, page := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/webhooks/%d", e.URL, hook.ID), nil); !strings.Contains(page, `<td data-label="Event" class="mono">ping</td>`) || strings.Contains(page, hook.Secret) {
		t.Errorf("the webhook page shows no test delivery, or shows the secret: %.2000s", page)
	}
	if s := post(admin, fmt.Sprintf("/console/webhooks/%d/enabled", hook.ID), url.Values{"csrf": {acsrf}, "enabled": {"false"}}); s != 200 {
		t.Errorf("pause webhook: %d", s)
	}
	if w, err := e.Service.Webhooks.Webhook(apptest.AsSystem(ctx), hook.ID); err != nil || w.Enabled {
		t.Errorf("the paused webhook is still enabled (%v)", err)
	}
	if s := post(admin, fmt.Sprintf("/console/webhooks/%d/enabled", hook.ID), url.Values{"csrf": {acsrf}, "enabled": {"true"}}); s != 200 {
		t.Errorf("resume webhook: %d", s)
	}
	if _, page := fetch(t, admin, http.MethodGet, e.URL+"/console/devices", nil); !strings.Contains(page, "QA iPhone") {
		t.Error("the devices page lacks the device")
	}
	if resp, file := fetch(t, carol, http.MethodGet, e.URL+"/console/devices/export", nil); resp.StatusCode != 200 ||
		file != "Device ID\tDevice Name\tDevice Platform\n00008030-001A2B3C4D5E6F70\tQA iPhone\tios\n" {
		t.Errorf("a developer exports the devices: %d %q", resp.StatusCode, file)
	}
	if resp, _ := fetch(t, bob, http.MethodGet, e.URL+"/console/devices/export", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer exports the devices: %d", resp.StatusCode)
	}
	// A device awaiting approval (issue 20, finding 8): the admin's button lets it into the export.
	if _, err := e.DB.Pool.Exec(ctx, `UPDATE devices SET unverified = true`); err != nil {
		t.Fatal(err)
	}
	if _, page := fetch(t, admin, http.MethodGet, e.URL+"/console/devices", nil); !strings.Contains(page, `id="approve-00008030-001A2B3C4D5E6F70"`) {
		t.Error("the devices page offers no approval for an unverified device")
	}
	if _, file := fetch(t, carol, http.MethodGet, e.URL+"/console/devices/export", nil); strings.Contains(file, "QA iPhone") {
		t.Errorf("an unverified device is exported: %q", file)
	}
	if s := post(admin, "/console/devices/00008030-001A2B3C4D5E6F70/approve", url.Values{"csrf": {acsrf}}); s != 200 {
		t.Errorf("approve device: %d", s)
	}
	if _, file := fetch(t, carol, http.MethodGet, e.URL+"/console/devices/export", nil); !strings.Contains(file, "QA iPhone") {
		t.Errorf("the approved device is not exported: %q", file)
	}
	if s := post(admin, "/console/devices/00008030-001A2B3C4D5E6F70/delete", url.Values{"csrf": {acsrf}, "confirm": {"1"}}); s != 200 {
		t.Errorf("delete device: %d", s)
	}
	var pinned, pw bool
	var devices int
	if err := e.DB.Pool.QueryRow(ctx, `SELECT r.pinned, c.password_hash IS NOT NULL, (SELECT count(*) FROM devices) FROM releases r
		JOIN channels c ON c.id = r.channel_id WHERE r.id = $1`, relID).Scan(&pinned, &pw, &devices); err != nil {
		t.Fatal(err)
	}
	if !pinned || pw || devices != 0 {
		t.Errorf("after the admin's forms: pinned %v, password %v, %d devices", pinned, pw, devices)
	}
	if _, page := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, relID), nil); !strings.Contains(page, `id="build-pinned"`) {
		t.Error("the build page shows no pin")
	}
	if _, page := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, chID), nil); !strings.Contains(page, fmt.Sprintf(`id="pinned-%d"`, relID)) {
		t.Error("the channel page shows no pin")
	}
	if _, page := fetch(t, admin, http.MethodGet, appURL, nil); !strings.Contains(page, "carol@example.com") {
		t.Error("the app page shows not its member")
	}
	if s := post(admin, fmt.Sprintf("/console/apps/%d/members/%d/remove", appID, carolID), url.Values{"csrf": {acsrf}}); s != 200 {
		t.Errorf("remove member: %d", s)
	}
	if s := post(carol, fmt.Sprintf("/console/apps/%d", appID), url.Values{"csrf": {ccsrf}, "name": {"Again"}}); s != http.StatusForbidden {
		t.Errorf("a removed member renames the app: %d", s)
	}
	_, home := fetch(t, admin, http.MethodGet, e.URL+"/console", nil)
	if !strings.Contains(home, "Recent uploads") || !strings.Contains(home, "1.0 (1)") || !strings.Contains(home, "Other") {
		t.Errorf("the console's home lacks the recent uploads: %.3000s", home)
	}
	if s := post(admin, fmt.Sprintf("/console/channels/%d/delete", chID), url.Values{"csrf": {acsrf}, "confirm": {"1"}}); s != 200 {
		t.Errorf("delete channel: %d", s)
	}
	if s := post(admin, "/console/apps", url.Values{"csrf": {acsrf}, "name": {"Brand new"}}); s != 200 {
		t.Errorf("create app: %d", s)
	}
	// A scheme without channels (made with the API) shows on the app's page, to be renamed or deleted.
	empty, err := e.Service.Apps.CreateScheme(apptest.AsSystem(ctx), appID, catalog.SchemeChanges{Name: ptr("Empty")})
	if err != nil {
		t.Fatal(err)
	}
	if _, page := fetch(t, admin, http.MethodGet, appURL, nil); !strings.Contains(page, fmt.Sprintf(`id="delete-scheme-%d"`, empty.ID)) {
		t.Error("the app page does not show the scheme without channels")
	}
	if s := post(admin, fmt.Sprintf("/console/schemes/%d/delete", schemeID), url.Values{"csrf": {acsrf}, "confirm": {"1"}}); s != 200 {
		t.Errorf("delete scheme: %d", s)
	}
	if s := post(admin, fmt.Sprintf("/console/apps/%d/delete", appID), url.Values{"csrf": {acsrf}, "confirm": {"1"}}); s != 200 {
		t.Errorf("delete app (303 to the console, followed): %d", s)
	}
	var apps int
	_ = e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM apps WHERE id = $1`, appID).Scan(&apps)
	if apps != 0 {
		t.Error("the app was not deleted")
	}
	_, audit := fetch(t, admin, http.MethodGet, e.URL+"/console/audit", nil)
	for _, want := range []string{"app.create", "scheme.rename", "scheme.delete", "app.rename", "channel.update", "release.delete", "release.update", "webhook.test", "webhook.disable", "webhook.enable", "device.delete", "member.remove", "channel.delete", "app.delete"} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s", want)
		}
	}
	if strings.Contains(audit, "secret-pw") {
		t.Error("the audit log shows a channel password")
	}
}

// TestConsoleUsers: an admin makes someone a developer, disables them (their session and tokens
// stop at once, on every replica since both live in the database) and enables them again; an
// admin cannot change their own access.
func TestConsoleUsers(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol")
	acsrf := csrfOf(t, admin, e.URL+"/console/users")
	carolID, aliceID := userID(t, e, "carol@example.com"), userID(t, e, "alice@example.com")
	post := func(c *http.Client, path string, form url.Values) (int, string) {
		resp, body := fetch(t, c, http.MethodPost, e.URL+path, form)
		return resp.StatusCode, body
	}
	if s, _ := post(admin, fmt.Sprintf("/console/users/%d", carolID), url.Values{"csrf": {acsrf}, "role": {"developer"}}); s != 200 {
		t.Fatalf("make carol a developer: %d", s)
	}
	ccsrf := csrfOf(t, carol, e.URL+"/console")
	if s, _ := post(carol, "/console/users/"+fmt.Sprint(aliceID), url.Values{"csrf": {ccsrf}, "role": {"viewer"}}); s != http.StatusForbidden {
		t.Errorf("a developer changes an admin: %d", s)
	}
	if s, _ := post(admin, fmt.Sprintf("/console/users/%d", aliceID), url.Values{"csrf": {acsrf}, "role": {"viewer"}}); s != http.StatusForbidden {
		t.Errorf("an admin demotes themself: %d", s)
	}
	if s, _ := post(admin, fmt.Sprintf("/console/users/%d", carolID), url.Values{"csrf": {acsrf}, "role": {"owner"}}); s != http.StatusUnprocessableEntity {
		t.Errorf("an unknown role: %d", s)
	}
	secret, _, err := e.Service.Tokens.CreateToken(distribution.WithActor(context.Background(), distribution.UserActor(&distribution.User{ID: carolID, Role: distribution.RoleAdmin})), "carol-ci", distribution.ScopeUpload)
	if err != nil {
		t.Fatal(err)
	}
	me := func() int {
		return e.Do(t, "GET", "/api/users/me", nil, http.Header{"Authorization": {"Token " + secret}}).Status
	}
	if s := me(); s != 200 {
		t.Fatalf("carol's token before: %d", s)
	}
	if s, body := post(admin, fmt.Sprintf("/console/users/%d", carolID), url.Values{"csrf": {acsrf}, "role": {"developer"}, "disabled": {"1"}}); s != 200 || !strings.Contains(body, "disabled") {
		t.Errorf("disable carol: %d", s)
	}
	noRedirect := *carol
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if resp, _ := fetch(t, &noRedirect, http.MethodGet, e.URL+"/console", nil); resp.StatusCode != http.StatusFound {
		t.Errorf("a disabled user's session still works: %d", resp.StatusCode)
	}
	if s := me(); s != http.StatusUnauthorized {
		t.Errorf("a disabled user's token still works: %d", s)
	}
	if _, page := fetch(t, admin, http.MethodGet, e.URL+"/console/users", nil); !strings.Contains(page, fmt.Sprintf(`id="disabled-%d" checked`, carolID)) {
		t.Error("the people page does not show carol disabled")
	}
	if s, _ := post(admin, fmt.Sprintf("/console/users/%d", carolID), url.Values{"csrf": {acsrf}, "role": {"developer"}}); s != 200 {
		t.Errorf("enable carol: %d", s)
	}
	if s := me(); s != 200 {
		t.Errorf("carol's token after she is enabled: %d", s)
	}
	// Her old session stays ended (disabling revoked it); she signs in again.
	if resp, _ := fetch(t, &noRedirect, http.MethodGet, e.URL+"/console", nil); resp.StatusCode != http.StatusFound {
		t.Errorf("a session ended by disabling came back: %d", resp.StatusCode)
	}
	again, role := signedIn(t, e, "carol")
	if role != distribution.RoleDeveloper {
		t.Errorf("carol signs in again as %s", role)
	}
	if resp, _ := fetch(t, again, http.MethodGet, e.URL+"/console", nil); resp.StatusCode != 200 {
		t.Errorf("carol's new session: %d", resp.StatusCode)
	}
}

// TestConsoleWebUpload walks the upload script's calls over HTTP on the filesystem backend: start a
// session for a channel, PUT the parts to the URLs it gives, complete; the release is recorded as
// the user's. Another app's developer can neither start one nor see or complete this one; a
// member removed before completing cannot complete.
func TestConsoleWebUpload(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol")
	dave, _ := signedIn(t, e, "dave")
	harbor := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	appID := int64(harbor["app"].(map[string]any)["id"].(float64))
	chID := int64(harbor["channel"].(map[string]any)["id"].(float64))
	acsrf := csrfOf(t, admin, e.URL+"/console")
	if resp, _ := fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/apps/%d/members", e.URL, appID), url.Values{"email": {"carol@example.com"}, "csrf": {acsrf}}); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	ccsrf := csrfOf(t, carol, fmt.Sprintf("%s/console/apps/%d", e.URL, appID))
	dcsrf := csrfOf(t, dave, e.URL+"/console")
	file := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "7", FillerBytes: 11 << 20})
	start := func(c *http.Client, csrf string, form url.Values) (int, map[string]any) {
		return script(t, c, http.MethodPost, fmt.Sprintf("%s/console/channels/%d/uploads", e.URL, chID), csrf, form)
	}
	if s, _ := start(dave, dcsrf, url.Values{"filename": {"h.ipa"}, "size": {fmt.Sprint(len(file))}}); s != http.StatusForbidden {
		t.Errorf("another app's developer starts an upload: %d", s)
	}
	if s, _ := start(carol, ccsrf, url.Values{"filename": {"h.ipa"}}); s != http.StatusUnprocessableEntity {
		t.Errorf("no size: %d", s)
	}
	if s, _ := start(carol, ccsrf, url.Values{"filename": {"h.ipa"}, "size": {"999999999999999"}}); s != http.StatusRequestEntityTooLarge {
		t.Errorf("too large: %d", s)
	}
	s, sess := start(carol, ccsrf, url.Values{"filename": {"Harbor 2.0.ipa"}, "size": {fmt.Sprint(len(file))}, "changelog": {"From the web"}})
	if s != http.StatusCreated {
		t.Fatalf("start: %d %v", s, sess)
	}
	id := sess["id"].(string)
	sessURL := e.URL + "/console/uploads/" + id
	if s, _ := script(t, dave, http.MethodGet, sessURL, dcsrf, nil); s != http.StatusNotFound {
		t.Errorf("another user reads the session: %d", s)
	}
	partSize := int64(sess["part_size"].(float64))
	parts := sess["parts"].([]any)
	if len(parts) != 3 {
		t.Fatalf("%d parts of %d bytes for %d bytes", len(parts), partSize, len(file))
	}
	// Put every part but the last, ask the session (as the script does after a failure), then
	// the last one.
	put := func(p map[string]any) {
		n := int64(p["number"].(float64))
		from := (n - 1) * partSize
		req, _ := http.NewRequest(http.MethodPut, p["url"].(string), bytes.NewReader(file[from:min(from+partSize, int64(len(file)))]))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("put part %d: %d", n, resp.StatusCode)
		}
	}
	for _, p := range parts[:2] {
		put(p.(map[string]any))
	}
	if s, _ := script(t, carol, http.MethodPost, sessURL+"/complete", ccsrf, nil); s != http.StatusUnprocessableEntity {
		t.Errorf("complete with a part missing: %d", s)
	}
	s, now := script(t, carol, http.MethodGet, sessURL, ccsrf, nil)
	if s != 200 {
		t.Fatalf("session: %d", s)
	}
	left := now["parts"].([]any)
	if !left[0].(map[string]any)["done"].(bool) || left[2].(map[string]any)["done"].(bool) || left[2].(map[string]any)["url"] == nil {
		t.Fatalf("the session's parts: %v", left)
	}
	put(left[2].(map[string]any))
	if s, _ := script(t, dave, http.MethodPost, sessURL+"/complete", dcsrf, nil); s != http.StatusNotFound {
		t.Errorf("another user completes the session: %d", s)
	}
	s, done := script(t, carol, http.MethodPost, sessURL+"/complete", ccsrf, nil)
	if s != http.StatusCreated || done["version"] != "2.0 (7)" {
		t.Fatalf("complete: %d %v", s, done)
	}
	var changelog, source string
	var size, owner int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT r.changelog::text, r.source, r.size, t.user_id FROM releases r
		JOIN api_tokens t ON t.id = r.uploaded_by WHERE r.id = $1`, int64(done["release_id"].(float64))).Scan(&changelog, &source, &size, &owner); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(changelog, "From the web") || source != "console" || size != int64(len(file)) || owner != userID(t, e, "carol@example.com") {
		t.Errorf("the release: changelog %s, source %s, size %d, owner %d", changelog, source, size, owner)
	}
	// A member removed before completing cannot complete; the session's object is not recorded.
	s, sess = start(carol, ccsrf, url.Values{"filename": {"h.ipa"}, "size": {fmt.Sprint(len(file))}})
	if s != http.StatusCreated {
		t.Fatal(s)
	}
	for _, p := range sess["parts"].([]any) {
		put(p.(map[string]any))
	}
	if resp, _ := fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/apps/%d/members/%d/remove", e.URL, appID, userID(t, e, "carol@example.com")), url.Values{"csrf": {acsrf}}); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	if s, _ := script(t, carol, http.MethodPost, e.URL+"/console/uploads/"+sess["id"].(string)+"/complete", ccsrf, nil); s != http.StatusForbidden {
		t.Errorf("a removed member completes: %d", s)
	}
	var n int
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM releases WHERE channel_id = $1`, chID).Scan(&n)
	if n != 2 {
		t.Errorf("%d releases, want 2", n)
	}
	_, audit := fetch(t, admin, http.MethodGet, e.URL+"/console/audit", nil)
	if !strings.Contains(audit, "release.upload") {
		t.Error("the audit log lacks the upload")
	}
}

func ptr[T any](v T) *T { return &v }

// TestConsoleBuildPages: a channel shows its ten newest builds, and links to older ones.
func TestConsoleBuildPages(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	var appID, chID int64
	for n := range 12 {
		rel := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor",
			Version: fmt.Sprintf("1.%d", n), Build: fmt.Sprint(n + 1)}))
		appID = int64(rel["app"].(map[string]any)["id"].(float64))
		chID = int64(rel["channel"].(map[string]any)["id"].(float64))
	}
	// The app page lists the channel compactly, with its newest build, and links to its page.
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	_, app := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/apps/%d", e.URL, appID), nil)
	if !strings.Contains(app, `href="`+chURL+`"`) || !strings.Contains(app, "12 builds") || !strings.Contains(app, "1.11 (12)") || strings.Contains(app, "1.10 (11)") {
		t.Errorf("the app page does not show the channel compactly: %.3000s", app)
	}
	_, first := fetch(t, admin, http.MethodGet, chURL, nil)
	older := fmt.Sprintf("/console/channels/%d?page=2#builds", chID)
	if !strings.Contains(first, "1.11 (12)") || strings.Contains(first, "<strong>1.1 (2)</strong>") || !strings.Contains(first, older) {
		t.Errorf("the first page: newest build, not the oldest, and a link to older ones")
	}
	// Each row tells the builds apart: its size and who uploaded it, and links to its page.
	if !strings.Contains(first, `data-label="Size">`) || !strings.Contains(first, `data-label="By">token `) || !strings.Contains(first, fmt.Sprintf(`href="%s/console/releases/`, e.URL)) {
		t.Errorf("the build rows lack their facts: %.3000s", first)
	}
	if crumbs := between(first, `id="breadcrumbs"`, "</nav>"); !strings.Contains(crumbs, "Harbor") || !strings.Contains(crumbs, "Apps") {
		t.Errorf("the channel page's breadcrumbs: %s", crumbs)
	}
	_, second := fetch(t, admin, http.MethodGet, chURL+"?page=2", nil)
	if !strings.Contains(second, "<strong>1.1 (2)</strong>") || !strings.Contains(second, "<strong>1.0 (1)</strong>") || strings.Contains(second, "<strong>1.11 (12)</strong>") ||
		!strings.Contains(second, "Newer builds") || strings.Contains(second, "Older builds") {
		t.Errorf("the second page: the two oldest builds, a link to newer ones and none to older ones")
	}
}

// between is the part of s after the first from, up to the next to ("" when from is absent).
func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		return s[:j]
	}
	return s
}

// TestConsoleBuildPage: a build's console page (issue 21, point 4) shows what tells it apart
// (version and build, size, bundle id, platform, branch, commit and CI link, uploader, installs),
// its tester page, install link and QR code, and its changelog, pin and delete forms, which
// answer on the build's page (or, for a delete, the channel's).
func TestConsoleBuildPage(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.4", Build: "31"}),
		apptest.Field("branch", "feature/login"), apptest.Field("git_commit", "0123456789abcdef0123456789abcdef01234567"),
		apptest.Field("ci_url", "https://ci.example.com/jobs/31"), apptest.Field("changelog", "Faster sign-in"))
	relID := int64(rel["id"].(float64))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	slug := rel["channel"].(map[string]any)["slug"].(string)
	buildURL := fmt.Sprintf("%s/console/releases/%d", e.URL, relID)
	resp, page := fetch(t, admin, http.MethodGet, buildURL, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("the build page: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`Harbor 2.4 <span class="muted">(31)</span>`, `id="build-bundle-id">com.example.harbor`, `id="build-branch">feature/login`,
		`title="0123456789abcdef0123456789abcdef01234567">01234567`, `href="https://ci.example.com/jobs/31"`, `id="build-uploader">token `,
		`id="build-installs">0 installs`, "Faster sign-in", fmt.Sprintf(`id="tester-url" value="%s/channels/%s/releases/%d"`, e.URL, slug, relID),
		`id="install-url" value="itms-services://`, fmt.Sprintf(`src="%s/channels/%s/releases/%d/qrcode?size=medium"`, e.URL, slug, relID),
		fmt.Sprintf(`id="save-changelog-%d"`, relID), fmt.Sprintf(`id="pin-%d"`, relID), fmt.Sprintf(`id="delete-%d"`, relID), "iOS",
		`<dt>Format</dt><dd id="fact-format">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the build page lacks %q", want)
		}
	}
	crumbs := between(page, `id="breadcrumbs"`, "</nav>")
	for _, want := range []string{"Apps", "Harbor", fmt.Sprintf(`href="%s/console/channels/%d"`, e.URL, chID), "2.4 (31)"} {
		if !strings.Contains(crumbs, want) {
			t.Errorf("the breadcrumbs lack %q: %s", want, crumbs)
		}
	}
	// The QR code the page shows is the tester page's.
	if r := e.Get(t, fmt.Sprintf("/channels/%s/releases/%d/qrcode?size=medium", slug, relID)); r.Status != 200 {
		t.Errorf("the QR code: %d", r.Status)
	}

	// What changed: nothing to compare the channel's first build with; the next build names it
	// and says what grew (issue 24).
	if !strings.Contains(page, `id="changes-first"`) {
		t.Error("the first build's page does not say there is nothing to compare it with")
	}
	next := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.5", Build: "32",
		Extra: []appletest.Entry{{Name: "Payload/Harbor.app/Frameworks/Maps.framework/Maps", Data: bytes.Repeat([]byte("maps"), 64<<10), Store: true}}}),
		apptest.Field("channel_key", slug))
	_, nextPage := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, int64(next["id"].(float64))), nil)
	if since := between(nextPage, `id="changes-since"`, "</a>"); !strings.Contains(since, "2.4 (31)") ||
		!strings.Contains(nextPage, fmt.Sprintf(`href="%s/console/releases/%d" id="changes-since"`, e.URL, relID)) {
		t.Errorf("the next build's page does not compare it with 2.4 (31): %q", since)
	}
	if strings.Contains(nextPage, `id="over-budget"`) {
		t.Error("a channel without a size budget shows a build over it")
	}
	if _, err := e.DB.Pool.Exec(context.Background(), `UPDATE channels SET max_growth_percent = 10 WHERE id = $1`, chID); err != nil {
		t.Fatal(err)
	}
	_, nextPage = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, int64(next["id"].(float64))), nil)
	if warn := between(nextPage, `id="over-budget"`, "</p>"); !strings.Contains(warn, "over the channel&#39;s maximum growth of 10%") {
		t.Errorf("the build page does not say the build grew past the channel's budget: %q", warn)
	}
	if list := between(nextPage, `id="changes-list"`, "</ul>"); !strings.Contains(list, "new framework: Frameworks/Maps.framework") ||
		!strings.Contains(list, "<h3>Size and files</h3>") {
		t.Errorf("the next build's page does not say what grew, in its group: %q", list)
	}
	// Compared with another build of the channel, as the API's ?against= does; a build that is
	// not one to compare with is said so.
	third := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.3", Build: "30"}),
		apptest.Field("channel_key", slug))
	thirdURL := fmt.Sprintf("%s/console/releases/%d", e.URL, int64(third["id"].(float64)))
	_, thirdPage := fetch(t, admin, http.MethodGet, thirdURL, nil)
	if form := between(thirdPage, `id="compare-form"`, "</form>"); !strings.Contains(form, fmt.Sprintf(`<option value="%d"`, relID)) {
		t.Errorf("the compare form does not offer 2.4 (31): %s", form)
	}
	_, thirdPage = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s?against=%d", thirdURL, relID), nil)
	if since := between(thirdPage, `id="changes-since"`, "</a>"); !strings.Contains(since, "2.4 (31)") ||
		!strings.Contains(between(thirdPage, `id="changes-list"`, "</div>"), "<h3>Identity and version</h3><ul><li>version went backwards: 2.4 → 2.3") {
		t.Errorf("compared with 2.4 (31): %q %s", since, between(thirdPage, `id="changes-list"`, "</div>"))
	}
	if _, bad := fetch(t, admin, http.MethodGet, thirdURL+"?against=999999", nil); !strings.Contains(bad, `id="compare-error"`) {
		t.Error("comparing with a build that does not exist says nothing")
	}

	// A viewer reads the build's and the channel's pages, without their forms.
	viewer, role := signedIn(t, e, "bob")
	if role != "viewer" {
		t.Fatalf("the second person is %s", role)
	}
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	for _, u := range []string{buildURL, chURL} {
		resp, vp := fetch(t, viewer, http.MethodGet, u, nil)
		if resp.StatusCode != 200 || !strings.Contains(vp, "2.4 (31)") {
			t.Errorf("a viewer at %s: %d", u, resp.StatusCode)
		}
		for _, form := range []string{`name="form_token"`, "upload-file-", "keep-builds-", "delete-"} {
			if strings.Contains(between(vp, "<main", "</main>"), form) {
				t.Errorf("a viewer at %s is shown %q", u, form)
			}
		}
	}

	// Its forms answer on its own page.
	resp, page = fetch(t, admin, http.MethodPost, buildURL, with(formOf(t, page, fmt.Sprintf("release-form-%d", relID)), "changelog", "Faster sign-in\nNew icon"))
	if resp.StatusCode != 200 || resp.Request.URL.String() != buildURL || !strings.Contains(page, "Release 2.4 (31) saved.") || !strings.Contains(page, "New icon") {
		t.Errorf("saving the changelog: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, page = fetch(t, admin, http.MethodPost, buildURL+"/pin", with(formOf(t, page, "pin-form"), "pinned", "true"))
	if resp.StatusCode != 200 || resp.Request.URL.String() != buildURL || !strings.Contains(page, `id="build-pinned"`) {
		t.Errorf("pinning: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, page = fetch(t, admin, http.MethodPost, buildURL+"/delete", formOf(t, page, fmt.Sprintf("delete-release-%d", relID)))
	if resp.StatusCode != 422 || !strings.Contains(page, "Confirm must be ticked") || !strings.Contains(page, `id="build-bundle-id"`) {
		t.Errorf("deleting unconfirmed: %d, want 422 on the build's page", resp.StatusCode)
	}
	resp, page = fetch(t, admin, http.MethodPost, buildURL+"/delete", with(formOf(t, page, fmt.Sprintf("delete-release-%d", relID)), "confirm", "1"))
	if resp.StatusCode != 200 || resp.Request.URL.Path != fmt.Sprintf("/console/channels/%d", chID) || !strings.Contains(page, "Release 2.4 (31) deleted.") {
		t.Errorf("deleting: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if n := count(t, e, `SELECT count(*) FROM releases WHERE id = $1`, relID); n != 0 {
		t.Errorf("the build is still there (%d)", n)
	}
	// Its page is gone, with a way back.
	if resp, page := fetch(t, admin, http.MethodGet, buildURL, nil); resp.StatusCode != 404 || !strings.Contains(page, "Back to the console") {
		t.Errorf("a deleted build's console page: %d", resp.StatusCode)
	}
}
