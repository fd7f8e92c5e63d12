package httpapi_test

// Integration tests of Zealot's users and collaborators API on Postgres.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/test/apptest"
)

// peopleState is every row the users and collaborators API may change.
func peopleState(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var s string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT
		coalesce((SELECT string_agg(concat_ws('|', id, email, role, disabled_at IS NOT NULL), ',' ORDER BY id) FROM users), '') || ';' ||
		coalesce((SELECT string_agg(concat_ws('|', app_id, user_id), ',' ORDER BY app_id, user_id) FROM app_members), '') || ';' ||
		coalesce((SELECT string_agg(concat_ws('|', id, revoked_at IS NOT NULL), ',' ORDER BY id) FROM user_sessions), '') || ';' ||
		(SELECT count(*) FROM api_tokens)::text`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestUsersAndCollaborators(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	e := m.e
	ctx := context.Background()
	signIn := func(subject string) (string, *distribution.User) {
		var groups []string
		if subject == "alice" {
			groups = []string{"admins"}
		}
		secret, u, err := e.Service.Logins.SignIn(ctx, access.Identity{Issuer: "https://idp.example", Subject: subject,
			Email: subject + "@Example.com", Name: subject, EmailVerified: true, Groups: groups}, access.SignInPolicy{AllowAnyone: true, AdminGroups: []string{"admins"}})
		if err != nil {
			t.Fatal(err)
		}
		return secret, u
	}
	signIn("alice") // in the admin group: an admin
	carolSession, carol := signIn("carol")
	rel := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	carolToken, _, err := e.Service.Tokens.CreateToken(distribution.WithActor(ctx, distribution.UserActor(&distribution.User{ID: carol.ID, Role: distribution.RoleAdmin})), "carol-ci", distribution.ScopeUpload)
	if err != nil {
		t.Fatal(err)
	}
	admin := e.AdminToken
	users := fmt.Sprintf("/api/users/%d", carol.ID)
	collab := fmt.Sprintf("/api/apps/%d/collaborators", appID)

	// Upload tokens and no token are refused everything, nothing changed.
	before := peopleState(t, e)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/users", ""}, {"GET", "/api/users/search?email=carol@example.com", ""}, {"GET", users, ""},
		{"PUT", users, `{"role":"admin"}`}, {"PATCH", users, `{"role":"admin"}`}, {"POST", users + "/lock", ""},
		{"DELETE", users + "/unlock", ""}, {"DELETE", users, ""}, {"POST", collab, fmt.Sprintf(`{"user_id":%d}`, carol.ID)},
		{"GET", fmt.Sprintf("%s/%d", collab, carol.ID), ""}, {"PUT", fmt.Sprintf("%s/%d", collab, carol.ID), `{"role":"developer"}`},
		{"DELETE", fmt.Sprintf("%s/%d", collab, carol.ID), ""},
	} {
		m.want(m.call(r.method, r.path, e.UploadToken, r.body), 403, "upload token: "+r.method+" "+r.path)
		m.want(m.call(r.method, r.path, "", r.body), 401, "no token: "+r.method+" "+r.path)
	}
	if after := peopleState(t, e); after != before {
		t.Errorf("refused calls changed something:\n%s\n%s", before, after)
	}

	// Reading.
	list := m.call("GET", "/api/users", admin, "")
	var all []map[string]any
	list.JSON(t, &all)
	if list.Status != 200 || len(all) != 2 {
		t.Fatalf("users: %d %s", list.Status, list.Body)
	}
	found := m.want(m.call("GET", "/api/users/search?email=CAROL@example.COM", admin, ""), 200, "search")
	if found["id"].(float64) != float64(carol.ID) || found["role"] != "viewer" || found["username"] != "carol" || found["locked"] != false {
		t.Errorf("search: %v", found)
	}
	m.want(m.call("GET", "/api/users/search", admin, ""), 404, "search without an email")
	m.want(m.call("GET", "/api/users/999999", admin, ""), 404, "unknown user")
	m.want(m.call("GET", "/api/users/abc", admin, ""), 422, "bad id")
	m.want(m.call("POST", "/api/users", admin, `{"email":"new@example.com","password":"secret"}`), 422, "create")

	// Collaborators: add as developer (carol, a viewer, becomes a developer), 409 again.
	m.want(m.call("GET", fmt.Sprintf("%s/%d", collab, carol.ID), admin, ""), 404, "not yet a collaborator")
	m.want(m.call("POST", collab, admin, `{"user_id":999999}`), 404, "unknown user")
	m.want(m.call("POST", "/api/apps/999999/collaborators", admin, fmt.Sprintf(`{"user_id":%d}`, carol.ID)), 404, "unknown app")
	m.want(m.call("POST", collab, admin, `{}`), 422, "no user_id")
	m.want(m.call("POST", collab, admin, fmt.Sprintf(`{"user_id":%d,"role":"owner"}`, carol.ID)), 422, "bad role")
	added := m.want(m.call("POST", collab, admin, fmt.Sprintf(`{"user_id":"%d","role":"developer"}`, carol.ID)), 201, "add")
	if added["role"] != "developer" || added["email"] != "carol@Example.com" {
		t.Errorf("added: %v", added)
	}
	m.want(m.call("POST", collab, admin, fmt.Sprintf(`{"user_id":%d}`, carol.ID)), 409, "add again")
	if err := e.Service.Policy.Authorize(distribution.WithActor(ctx, distribution.UserActor(mustUser(t, e, carol.ID))), policy.ManageApp, policy.OnApp(appID)); err != nil {
		t.Errorf("a developer collaborator may not manage the app: %v", err)
	}
	// The role, then "member" as Zealot says viewer.
	got := m.want(m.call("PUT", users, admin, `{"role":"member"}`), 200, "role member")
	if got["role"] != "viewer" {
		t.Errorf("role member: %v", got)
	}
	if c := m.want(m.call("GET", fmt.Sprintf("%s/%d", collab, carol.ID), admin, ""), 200, "collaborator"); c["role"] != "member" {
		t.Errorf("a viewer collaborator: %v", c)
	}
	if c := m.want(m.call("PATCH", fmt.Sprintf("%s/%d", collab, carol.ID), admin, `{"role":"admin"}`), 200, "collaborator admin"); c["role"] != "developer" {
		t.Errorf("a collaborator given admin becomes a developer, not an installation admin: %v", c)
	}

	// Lock: carol's session and token stop at once; unlock: the token works, the session stays ended.
	me := func() int { return m.call("GET", "/api/users/me", carolToken, "").Status }
	if me() != 200 {
		t.Fatal("carol's token before the lock")
	}
	m.want(m.call("POST", users+"/lock", admin, ""), 202, "lock")
	if _, err := e.Service.Logins.SessionUser(ctx, carolSession); err == nil {
		t.Error("a locked user's session still works")
	}
	if s := me(); s != 401 {
		t.Errorf("a locked user's token: %d", s)
	}
	if u := m.want(m.call("GET", users, admin, ""), 200, "locked user"); u["locked"] != true {
		t.Errorf("locked: %v", u)
	}
	m.want(m.call("DELETE", users+"/unlock", admin, ""), 202, "unlock")
	if s := me(); s != 200 {
		t.Errorf("an unlocked user's token: %d", s)
	}
	if _, err := e.Service.Logins.SessionUser(ctx, carolSession); err == nil {
		t.Error("the session ended by the lock came back")
	}

	// Remove, then delete: memberships, sessions and tokens go with the user.
	m.want(m.call("DELETE", fmt.Sprintf("%s/%d", collab, carol.ID), admin, ""), 200, "remove")
	m.want(m.call("DELETE", fmt.Sprintf("%s/%d", collab, carol.ID), admin, ""), 404, "remove again")
	m.want(m.call("POST", collab, admin, fmt.Sprintf(`{"user_id":%d}`, carol.ID)), 201, "add back")
	m.want(m.call("DELETE", users, admin, ""), 200, "delete")
	m.want(m.call("GET", users, admin, ""), 404, "deleted user")
	if s := me(); s != 401 {
		t.Errorf("a deleted user's token: %d", s)
	}
	var members int
	_ = e.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM app_members`).Scan(&members)
	if members != 0 {
		t.Errorf("%d memberships left", members)
	}
	var audit string
	_ = e.DB.Pool.QueryRow(ctx, `SELECT string_agg(action, ',' ORDER BY id) FROM audit_log WHERE detail ? 'user_id'`).Scan(&audit)
	for _, want := range []string{"user.update", "member.add", "member.update", "member.remove", "user.delete"} {
		if !slices.Contains(strings.Split(audit, ","), want) {
			t.Errorf("the audit log lacks %s: %s", want, audit)
		}
	}
}

func mustUser(t *testing.T, e *apptest.Env, id int64) *distribution.User {
	t.Helper()
	u, err := e.Service.People.User(apptest.AsSystem(context.Background()), id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
