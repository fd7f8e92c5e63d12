package httpapi_test

// Tokens limited to apps and abilities, and the catalogue that needs a token: one CI runner's
// token limited to app A reaches nothing of app B, and an anonymous client lists no channel keys.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/test/apptest"
)

// scopedIPA is a small iOS package of bundle id com.example.<name>.
func scopedIPA(name, build string) []byte {
	return appletest.BuildIPA(appletest.IPAOptions{AppName: name, BundleID: "com.example." + strings.ToLower(name), Version: "1.0", Build: build})
}

// scopedApp makes an app with a scheme and an iOS channel of that key through the API.
func (m *mgmt) scopedApp(name, key string) (app, scheme, channel map[string]any) {
	m.t.Helper()
	app = m.want(m.call("POST", "/api/apps", m.e.AdminToken, fmt.Sprintf(`{"name":%q}`, name)), 201, "create app "+name)
	scheme = m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), m.e.AdminToken, `{"name":"Adhoc"}`), 201, "create scheme")
	channel = m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), m.e.AdminToken,
		fmt.Sprintf(`{"name":"iOS","slug":%q,"device_type":"ios","bundle_id":"*"}`, key)), 201, "create channel")
	return
}

// scopedWrite is one write (a request that is not a GET) to app B, or to the installation.
type scopedWrite struct {
	method, route, path, body string
	// multipart, when set, sends these parts (with the token in the header) instead of body.
	multipart []apptest.Part
	// status is what both tokens limited to app A get (403 unless said).
	status int
}

// TestAppScopedTokenMatrix: every write route of the API, sent with an upload token and with
// an admin token both limited to app A, against app B (or the installation as a whole), is
// refused and changes nothing; the same tokens work on app A; the API makes such tokens and lists
// their limits. A route added to the router without a row here fails the test.
func TestAppScopedTokenMatrix(t *testing.T) {
	m := newMgmt(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	appA, _, _ := m.scopedApp("Alpha", "alpha-ios")
	appB, schemeB, channelB := m.scopedApp("Bravo", "bravo-ios")
	a, b, sb, cb := id(appA), id(appB), id(schemeB), id(channelB)
	relB := m.want(m.e.Upload(t, "/api/apps/upload", m.e.UploadToken, apptest.Field("channel_key", "bravo-ios"),
		apptest.File("b.ipa", scopedIPA("Bravo", "1"))), 201, "upload into B")
	dsym := func(uuid string) []byte {
		return debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Bravo.app.dSYM", Identifier: "com.example.bravo",
			ReleaseVersion: "1.0", BuildVersion: "1", Archs: []debuginfotest.Arch{{Name: "arm64", UUID: uuid}}})
	}
	dfB := m.want(m.e.Upload(t, "/api/debug_files/upload", m.e.UploadToken, apptest.Field("channel_key", "bravo-ios"),
		apptest.File("d.zip", dsym("A1A1A1A1-0000-0000-0000-000000000001"))), 201, "debug file into B")
	fbB := m.want(m.call("POST", fmt.Sprintf("/api/releases/%d/feedback", id(relB)), m.e.AdminToken, `{"text":"on B"}`), 201, "feedback on B")
	hookB := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", b), m.e.AdminToken, `{"url":"`+receiver.URL+`/b","format":"slipway"}`), 201, "webhook of B")
	sessB := m.want(m.call("POST", "/api/uploads", m.e.UploadToken, `{"filename":"s.ipa","size":1000,"channel_key":"bravo-ios"}`), 201, "session into B")
	m.want(m.call("POST", "/api/groups", m.e.AdminToken, `{"alias":"qa","name":"QA"}`), 201, "a tester group")
	m.want(m.call("POST", "/api/groups/qa/testers", m.e.AdminToken, `{"emails":["tess@example.com"]}`), 200, "a tester")
	udid := "00008030-001A2B3C4D5E6F70"
	m.want(m.call("PUT", "/api/devices/"+udid, m.e.AdminToken, `{"name":"Phone"}`), 201, "a device")

	// The API makes the limited tokens, by app name and by id, and shows their limits.
	ciA := m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"ci-alpha","apps":["Alpha"],"abilities":"upload,read"}`), 201, "make an app token")
	if fmt.Sprint(ciA["app_ids"]) != fmt.Sprintf("[%d]", a) || fmt.Sprint(ciA["abilities"]) != "[read upload]" {
		t.Errorf("the app token's limits: app_ids %v, abilities %v", ciA["app_ids"], ciA["abilities"])
	}
	opsA := m.want(m.call("POST", "/api/tokens", m.e.AdminToken, fmt.Sprintf(`{"name":"ops-alpha","scope":"admin","apps":[%d]}`, a)), 201, "make an app admin token")
	m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"x","apps":["Nope"]}`), 422, "a token for an unknown app")
	m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"x","abilities":["root"]}`), 422, "an unknown ability")
	tokens := map[string]string{"upload token limited to A": ciA["token"].(string), "admin token limited to A": opsA["token"].(string)}

	writes := []scopedWrite{
		{"POST", "/api/apps", "/api/apps", `{"name":"Intruder"}`, nil, 403},
		{"PUT", "/api/apps/:id", fmt.Sprintf("/api/apps/%d", b), `{"name":"Renamed"}`, nil, 403},
		{"DELETE", "/api/apps/:id", fmt.Sprintf("/api/apps/%d", b), "", nil, 403},
		{"POST", "/api/apps/upload", "/api/apps/upload", "", []apptest.Part{apptest.Field("channel_key", "bravo-ios"), apptest.File("b.ipa", scopedIPA("Bravo", "2"))}, 403},
		{"POST", "/api/debug_files/upload", "/api/debug_files/upload", "", []apptest.Part{apptest.Field("channel_key", "bravo-ios"), apptest.File("d.zip", dsym("B2B2B2B2-0000-0000-0000-000000000002"))}, 403},
		{"PUT", "/api/debug_files/:id", fmt.Sprintf("/api/debug_files/%d", id(dfB)), "", []apptest.Part{apptest.Field("channel_key", "bravo-ios"),
			apptest.Field("release_version", "1.0"), apptest.Field("build_version", "1"), apptest.File("d.zip", dsym("C3C3C3C3-0000-0000-0000-000000000003"))}, 403},
		{"DELETE", "/api/debug_files/:id", fmt.Sprintf("/api/debug_files/%d?channel_key=bravo-ios", id(dfB)), "", nil, 403},
		{"POST", "/api/apps/:id/schemes", fmt.Sprintf("/api/apps/%d/schemes", b), `{"name":"Beta"}`, nil, 403},
		{"PUT", "/api/schemes/:id", fmt.Sprintf("/api/schemes/%d", sb), `{"name":"X"}`, nil, 403},
		{"PATCH", "/api/schemes/:id", fmt.Sprintf("/api/schemes/%d", sb), `{"name":"X"}`, nil, 403},
		{"DELETE", "/api/schemes/:id", fmt.Sprintf("/api/schemes/%d", sb), "", nil, 403},
		{"POST", "/api/schemes/:id/channels", fmt.Sprintf("/api/schemes/%d/channels", sb), `{"name":"X","device_type":"android"}`, nil, 403},
		{"PUT", "/api/channels/:id", fmt.Sprintf("/api/channels/%d", cb), `{"password":"x"}`, nil, 403},
		{"PATCH", "/api/channels/:id", fmt.Sprintf("/api/channels/%d", cb), `{"name":"X"}`, nil, 403},
		{"DELETE", "/api/channels/:id", fmt.Sprintf("/api/channels/%d", cb), "", nil, 403},
		{"POST", "/api/channels/:id/feed_token", fmt.Sprintf("/api/channels/%d/feed_token", cb), "", nil, 403},
		{"PUT", "/api/releases/:id", fmt.Sprintf("/api/releases/%d", id(relB)), `{"changelog":"x"}`, nil, 403},
		{"PATCH", "/api/releases/:id", fmt.Sprintf("/api/releases/%d", id(relB)), `{"pinned":true}`, nil, 403},
		{"DELETE", "/api/releases/:id", fmt.Sprintf("/api/releases/%d", id(relB)), "", nil, 403},
		{"DELETE", "/api/devices/:udid", "/api/devices/" + udid, "", nil, 403},
		{"POST", "/api/devices/:udid/approve", "/api/devices/" + udid + "/approve", "", nil, 403},
		{"PUT", "/api/devices/:udid", "/api/devices/" + udid, `{"name":"Mine"}`, nil, 403},
		{"PATCH", "/api/devices/:udid", "/api/devices/" + udid, `{"name":"Mine"}`, nil, 403},
		{"POST", "/api/tokens", "/api/tokens", `{"name":"minted","scope":"admin"}`, nil, 403},
		{"DELETE", "/api/tokens/:id", fmt.Sprintf("/api/tokens/%d", id(ciA)), "", nil, 403},
		// Users are made only by signing in to the console: refused to every token alike.
		{"POST", "/api/users", "/api/users", `{"email":"eve@example.com","role":"admin"}`, nil, 422},
		{"PUT", "/api/users/:id", "/api/users/1", `{"role":"admin"}`, nil, 403},
		{"PATCH", "/api/users/:id", "/api/users/1", `{"role":"admin"}`, nil, 403},
		{"DELETE", "/api/users/:id", "/api/users/1", "", nil, 403},
		{"POST", "/api/users/:id/lock", "/api/users/1/lock", "", nil, 403},
		{"DELETE", "/api/users/:id/unlock", "/api/users/1/unlock", "", nil, 403},
		{"POST", "/api/apps/:id/collaborators", fmt.Sprintf("/api/apps/%d/collaborators", b), `{"user_id":1,"role":"admin"}`, nil, 403},
		{"PUT", "/api/apps/:id/collaborators/:user_id", fmt.Sprintf("/api/apps/%d/collaborators/1", b), `{"role":"admin"}`, nil, 403},
		{"PATCH", "/api/apps/:id/collaborators/:user_id", fmt.Sprintf("/api/apps/%d/collaborators/1", b), `{"role":"admin"}`, nil, 403},
		{"DELETE", "/api/apps/:id/collaborators/:user_id", fmt.Sprintf("/api/apps/%d/collaborators/1", b), "", nil, 403},
		{"PUT", "/api/schemes/:id/retention", fmt.Sprintf("/api/schemes/%d/retention", sb), `{"keep_builds":1}`, nil, 403},
		{"PUT", "/api/channels/:id/retention", fmt.Sprintf("/api/channels/%d/retention", cb), `{"keep_builds":1}`, nil, 403},
		{"POST", "/api/channels/:id/retention/plan", fmt.Sprintf("/api/channels/%d/retention/plan", cb), `{"keep_builds":1}`, nil, 403},
		{"POST", "/api/apps/:id/webhooks", fmt.Sprintf("/api/apps/%d/webhooks", b), `{"url":"https://evil.example.com/","format":"slipway"}`, nil, 403},
		{"POST", "/api/channels/:id/webhooks", fmt.Sprintf("/api/channels/%d/webhooks", cb), `{"url":"https://evil.example.com/","format":"slipway"}`, nil, 403},
		{"PUT", "/api/webhooks/:id", fmt.Sprintf("/api/webhooks/%d", id(hookB)), `{"url":"https://evil.example.com/"}`, nil, 403},
		{"PATCH", "/api/webhooks/:id", fmt.Sprintf("/api/webhooks/%d", id(hookB)), `{"url":"https://evil.example.com/"}`, nil, 403},
		{"DELETE", "/api/webhooks/:id", fmt.Sprintf("/api/webhooks/%d", id(hookB)), "", nil, 403},
		{"POST", "/api/webhooks/:id/test", fmt.Sprintf("/api/webhooks/%d/test", id(hookB)), "", nil, 403},
		{"POST", "/api/uploads", "/api/uploads", `{"filename":"s.ipa","size":1000,"channel_key":"bravo-ios"}`, nil, 403},
		// Testers and groups belong to the installation; a release of B is B's.
		{"POST", "/api/groups", "/api/groups", `{"alias":"intruders"}`, nil, 403},
		{"DELETE", "/api/groups/:alias", "/api/groups/qa", "", nil, 403},
		{"POST", "/api/groups/:alias/testers", "/api/groups/qa/testers", `{"emails":["eve@example.com"]}`, nil, 403},
		{"DELETE", "/api/groups/:alias/testers/:email", "/api/groups/qa/testers/tess@example.com", "", nil, 403},
		{"POST", "/api/releases/:id/distribute", fmt.Sprintf("/api/releases/%d/distribute", id(relB)), `{"testers":["eve@example.com"]}`, nil, 403},
		// Feedback on B: even on a channel open to anyone, a token acts within its limits.
		{"POST", "/api/releases/:id/feedback", fmt.Sprintf("/api/releases/%d/feedback", id(relB)), `{"text":"from A"}`, nil, 403},
		{"POST", "/api/feedback", "/api/feedback?channel_key=bravo-ios&release_version=1.0&build_version=1", `{"text":"from A"}`, nil, 403},
		{"PATCH", "/api/feedback/:id", fmt.Sprintf("/api/feedback/%d", id(fbB)), `{"state":"resolved"}`, nil, 403},
		{"DELETE", "/api/feedback/:id", fmt.Sprintf("/api/feedback/%d", id(fbB)), "", nil, 403},
		// Another token's session is not found, as for any token that may not use it.
		{"POST", "/api/uploads/:session/complete", fmt.Sprintf("/api/uploads/%s/complete", sessB["id"]), "", nil, 404},
		{"DELETE", "/api/uploads/:session", fmt.Sprintf("/api/uploads/%s", sessB["id"]), "", nil, 404},
	}
	// Routes that take no token: a session's part is PUT to the URL the session handed out,
	// which is its own credential.
	noToken := map[string]bool{"PUT /api/uploads/:session/parts/:part": true}
	covered := map[string]bool{}
	for _, w := range writes {
		covered[w.method+" "+w.route] = true
	}
	for _, r := range newServer(t).Routes() {
		key := r.Method + " " + r.Path
		if r.Method == http.MethodGet || r.Method == http.MethodHead || !strings.HasPrefix(r.Path, "/api/") || noToken[key] || covered[key] {
			continue
		}
		t.Errorf("write route %s has no row in the matrix of tokens limited to another app", key)
	}

	before := m.state()
	refusals := 0
	for name, tok := range tokens {
		for _, w := range writes {
			var r *apptest.Response
			if w.multipart != nil {
				body, ct := apptest.Multipart(w.multipart...)
				r = m.e.Do(t, w.method, w.path, body, http.Header{"Content-Type": {ct}, "Authorization": {"Token " + tok}})
			} else {
				r = m.call(w.method, w.path, tok, w.body)
			}
			if r.Status != w.status {
				t.Errorf("%s: %s %s: %d, want %d: %.300s", name, w.method, w.path, r.Status, w.status, r.Body)
			}
			refusals++
		}
		// Reads of B, and reads across every app, are refused too.
		for _, path := range []string{fmt.Sprintf("/api/apps/%d", b), fmt.Sprintf("/api/releases/%d", id(relB)),
			fmt.Sprintf("/api/apps/%d/schemes", b), fmt.Sprintf("/api/channels/%d", cb), fmt.Sprintf("/api/debug_files/%d?channel_key=bravo-ios", id(dfB)),
			"/api/retention/plan", "/api/webhooks", "/api/devices", "/api/tokens", "/api/users", "/api/groups", "/api/testers",
			fmt.Sprintf("/api/releases/%d/testers", id(relB))} {
			if r := m.call("GET", path, tok, ""); r.Status != 403 {
				t.Errorf("%s: GET %s: %d, want 403: %.300s", name, path, r.Status, r.Body)
			}
			refusals++
		}
		// An upload without a channel key would find or create its app by name: refused.
		if r := m.e.Upload(t, "/api/apps/upload", tok, apptest.File("a.ipa", scopedIPA("Alpha", "9"))); r.Status != 403 {
			t.Errorf("%s: upload without channel_key: %d, want 403: %.300s", name, r.Status, r.Body)
		}
	}
	if after := m.state(); after != before {
		t.Errorf("refused requests changed something:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	t.Logf("%d refusals of tokens limited to app A on app B and the installation", refusals)

	// On app A they work, within their scope; the catalogue shows them only A.
	for name, tok := range tokens {
		listed := m.call("GET", "/api/apps", tok, "")
		if listed.Status != 200 {
			t.Fatalf("%s lists apps: %d %s", name, listed.Status, listed.Body)
		}
		var apps []struct {
			ID int64 `json:"id"`
		}
		listed.JSON(t, &apps)
		if len(apps) != 1 || apps[0].ID != a {
			t.Errorf("%s lists %+v, want only app A (%d)", name, apps, a)
		}
		m.want(m.call("GET", fmt.Sprintf("/api/apps/%d", a), tok, ""), 200, name+" reads app A")
	}
	m.want(m.e.Upload(t, "/api/apps/upload", tokens["upload token limited to A"], apptest.Field("channel_key", "alpha-ios"),
		apptest.File("a.ipa", scopedIPA("Alpha", "1"))), 201, "the app token uploads into A")
	m.want(m.call("PUT", fmt.Sprintf("/api/apps/%d", a), tokens["upload token limited to A"], `{"name":"Alpha 2"}`), 403, "the app upload token renames A")
	m.want(m.call("PUT", fmt.Sprintf("/api/apps/%d", a), tokens["admin token limited to A"], `{"name":"Alpha 2"}`), 200, "the app admin token renames A")

	// Limited to the upload ability: no reads, no devices.
	upOnly := m.want(m.call("POST", "/api/tokens", m.e.AdminToken, `{"name":"upload-only","abilities":["upload"]}`), 201, "an upload-only token")["token"].(string)
	m.want(m.call("GET", "/api/apps", upOnly, ""), 403, "an upload-only token lists apps")
	m.want(m.call("PUT", "/api/devices/"+udid, upOnly, `{"name":"x"}`), 403, "an upload-only token syncs a device")
	m.want(m.call("GET", "/api/devices", upOnly, ""), 403, "an upload-only token lists devices")
	m.want(m.e.Upload(t, "/api/apps/upload", upOnly, apptest.Field("channel_key", "bravo-ios"), apptest.File("b.ipa", scopedIPA("Bravo", "3"))), 201, "an upload-only token uploads")

	// The list shows every token's limits.
	var toks []struct {
		Name      string   `json:"name"`
		AppIDs    []int64  `json:"app_ids"`
		Abilities []string `json:"abilities"`
	}
	m.call("GET", "/api/tokens", m.e.AdminToken, "").JSON(t, &toks)
	i := slices.IndexFunc(toks, func(x struct {
		Name      string   `json:"name"`
		AppIDs    []int64  `json:"app_ids"`
		Abilities []string `json:"abilities"`
	}) bool {
		return x.Name == "ops-alpha"
	})
	if i < 0 || !slices.Equal(toks[i].AppIDs, []int64{a}) || toks[i].Abilities != nil {
		t.Errorf("token list: %+v", toks)
	}
}

// TestCatalogueNeedsAToken: listing and reading apps without a token is 401 (they hand out
// channel keys); the reads by channel key stay public.
func TestCatalogueNeedsAToken(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	app, _, _ := m.scopedApp("Quiet", "quiet-ios")
	m.want(m.e.Upload(t, "/api/apps/upload", m.e.UploadToken, apptest.Field("channel_key", "quiet-ios"),
		apptest.File("q.ipa", scopedIPA("Quiet", "1"))), 201, "upload")
	for _, path := range []string{"/api/apps", "/api/apps?page=1", fmt.Sprintf("/api/apps/%d", id(app))} {
		r := m.call("GET", path, "", "")
		if r.Status != 401 || r.Header.Get("WWW-Authenticate") == "" || strings.Contains(string(r.Body), "quiet-ios") {
			t.Errorf("GET %s without a token: %d %s %s", path, r.Status, r.Header.Get("WWW-Authenticate"), r.Body)
		}
		m.want(m.call("GET", path, "slw_wrong", ""), 401, "GET "+path+" with a wrong token")
		m.want(m.call("GET", path, m.e.UploadToken, ""), 200, "GET "+path+" with a token")
	}
	for _, path := range []string{"/api/apps/versions?channel_key=quiet-ios", "/api/apps/latest?channel_key=quiet-ios&release_version=0.1&build_version=0",
		"/api/apps/version_exist?channel_key=quiet-ios&bundle_id=com.example.quiet&release_version=1.0&build_version=1",
		"/api/debug_files?channel_key=quiet-ios"} {
		m.want(m.call("GET", path, "", ""), 200, "GET "+path+" without a token")
	}
}

// TestDevelopersTokenStaysWithinTheirApps: a token made by an admin who is now a developer does
// only what the developer may: upload into the apps they are a member of, not into others, not
// create an app by uploading without a channel key, not register devices.
func TestDevelopersTokenStaysWithinTheirApps(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	e := m.e
	ctx := context.Background()
	signIn := func(subject string, groups ...string) *distribution.User {
		_, u, err := e.Service.Logins.SignIn(ctx, access.Identity{Issuer: "https://idp.example", Subject: subject,
			Email: subject + "@example.com", Name: subject, EmailVerified: true, Groups: groups}, access.SignInPolicy{AllowAnyone: true, AdminGroups: []string{"admins"}})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	alice := signIn("alice", "admins")
	asAlice := distribution.WithActor(ctx, distribution.UserActor(alice))
	bob := signIn("bob")
	if _, err := e.Service.People.SetUserAccess(asAlice, bob.ID, distribution.RoleAdmin, false); err != nil {
		t.Fatal(err)
	}
	bobToken, _, err := e.Service.Tokens.CreateToken(distribution.WithActor(ctx, distribution.UserActor(mustUser(t, e, bob.ID))), "bob-laptop", distribution.ScopeAdmin)
	if err != nil {
		t.Fatal(err)
	}
	m.scopedApp("Mine", "mine-ios")
	m.scopedApp("Theirs", "theirs-ios")
	var apps []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	m.call("GET", "/api/apps", m.e.AdminToken, "").JSON(t, &apps)
	if _, err := e.Service.Colleagues.Invite(asAlice, access.InviteInput{Email: "bob@example.com", AppID: apps[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Service.People.SetUserAccess(asAlice, bob.ID, distribution.RoleDeveloper, false); err != nil {
		t.Fatal(err)
	}
	m.want(m.e.Upload(t, "/api/apps/upload", bobToken, apptest.Field("channel_key", "mine-ios"), apptest.File("m.ipa", scopedIPA("Mine", "1"))), 201,
		"the developer's token uploads into their app")
	m.want(m.e.Upload(t, "/api/apps/upload", bobToken, apptest.Field("channel_key", "theirs-ios"), apptest.File("t.ipa", scopedIPA("Theirs", "1"))), 403,
		"the developer's token uploads into another app")
	m.want(m.e.Upload(t, "/api/apps/upload", bobToken, apptest.File("n.ipa", scopedIPA("New", "1"))), 403,
		"the developer's token creates an app by uploading")
	m.want(m.call("PUT", "/api/devices/00008030-001A2B3C4D5E6F70", bobToken, `{"name":"x"}`), 403, "the developer's token registers a device")
	m.want(m.call("GET", "/api/apps", bobToken, ""), 200, "the developer's token lists apps")
}
