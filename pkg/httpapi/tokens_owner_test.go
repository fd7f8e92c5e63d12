package httpapi_test

// Issue 20, finding 4: a console user's API token could POST /api/tokens an admin token owned by
// nobody, which kept working (and minting) after the user was locked or deleted; API token
// creation and revocation were not audited.

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/test/apptest"
)

// auditRow is one audit entry as stored.
type auditRow struct {
	UserID               int64
	ActorKind, ActorName string
	Detail               map[string]any
}

// auditRows returns the audit entries of an action on a target, oldest first.
func auditRows(t *testing.T, e *apptest.Env, action, target string) []auditRow {
	t.Helper()
	rows, err := e.DB.Pool.Query(context.Background(), `SELECT coalesce(user_id, 0), actor_kind, actor_name, detail FROM audit_log
		WHERE action = $1 AND target = $2 ORDER BY id`, action, target)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		var b []byte
		if err := rows.Scan(&r.UserID, &r.ActorKind, &r.ActorName, &b); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r.Detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func TestTokenMintedByAUserTokenDiesWithTheUser(t *testing.T) {
	m := newMgmt(t, apptest.Options{})
	e := m.e
	ctx := context.Background()
	signIn := func(subject string) *distribution.User {
		var groups []string
		if subject == "alice" {
			groups = []string{"admins"}
		}
		_, u, err := e.Service.Logins.SignIn(ctx, access.Identity{Issuer: "https://idp.example", Subject: subject,
			Email: subject + "@example.com", Name: subject, EmailVerified: true, Groups: groups}, access.SignInPolicy{AllowAnyone: true, AdminGroups: []string{"admins"}})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	alice := signIn("alice") // in the admin group: an admin
	promote := func(u *distribution.User, role string, disabled bool) {
		t.Helper()
		if _, err := e.Service.People.SetUserAccess(distribution.WithActor(ctx, distribution.UserActor(alice)), u.ID, role, disabled); err != nil {
			t.Fatal(err)
		}
	}
	bob, carol := signIn("bob"), signIn("carol")
	promote(bob, distribution.RoleAdmin, false)
	promote(carol, distribution.RoleAdmin, false)
	bobToken, _, err := e.Service.Tokens.CreateToken(distribution.WithActor(ctx, distribution.UserActor(mustUser(t, e, bob.ID))), "bob-admin", distribution.ScopeAdmin)
	if err != nil {
		t.Fatal(err)
	}
	carolToken, _, err := e.Service.Tokens.CreateToken(distribution.WithActor(ctx, distribution.UserActor(mustUser(t, e, carol.ID))), "carol-admin", distribution.ScopeAdmin)
	if err != nil {
		t.Fatal(err)
	}

	// The attack: bob's token mints an admin token, which mints another.
	minted := m.want(m.call("POST", "/api/tokens", bobToken, `{"name":"minted","scope":"admin"}`), 201, "mint with bob's token")
	if minted["user_id"] != float64(bob.ID) {
		t.Errorf("a token made with bob's token belongs to %v, want bob (%d)", minted["user_id"], bob.ID)
	}
	mintedSecret := minted["token"].(string)
	again := m.want(m.call("POST", "/api/tokens", mintedSecret, `{"name":"minted-2","scope":"admin"}`), 201, "mint with the minted token")
	if again["user_id"] != float64(bob.ID) {
		t.Errorf("a token made with a token made with bob's token belongs to %v, want bob", again["user_id"])
	}
	minted2 := again["token"].(string)
	carolMinted := m.want(m.call("POST", "/api/tokens", carolToken, `{"name":"carol-minted","scope":"admin"}`), 201, "mint with carol's")["token"].(string)
	// An ownerless (command line) token still makes ownerless tokens.
	if v := m.want(m.call("POST", "/api/tokens", e.AdminToken, `{"name":"ops"}`), 201, "command line token"); v["user_id"] != nil {
		t.Errorf("a token made with an ownerless token has an owner: %v", v["user_id"])
	}
	for _, tok := range []string{mintedSecret, minted2, carolMinted} {
		m.want(m.call("GET", "/api/tokens", tok, ""), 200, "a minted token before its owner is locked")
	}

	// Never more than its owner may: bob made a developer, his tokens are upload tokens, and
	// cannot mint (not even an upload token through the admin-only endpoint).
	promote(bob, distribution.RoleDeveloper, false)
	m.want(m.call("POST", "/api/tokens", mintedSecret, `{"name":"while-developer","scope":"admin"}`), 403, "a developer's minted token mints admin")
	if me := m.want(m.call("GET", "/api/users/me", minted2, ""), 200, "me as a developer"); me["scope"] != "upload" {
		t.Errorf("bob, a developer: his minted token's scope is %v", me["scope"])
	}
	promote(bob, distribution.RoleAdmin, false)

	// Locked: every token bob's token made is refused at once, whatever path made it.
	promote(bob, distribution.RoleAdmin, true)
	for name, tok := range map[string]string{"bob's": bobToken, "minted": mintedSecret, "minted from minted": minted2} {
		m.want(m.call("GET", "/api/users/me", tok, ""), 401, name+" token after bob is locked")
		m.want(m.call("POST", "/api/tokens", tok, `{"name":"after-lock","scope":"admin"}`), 401, name+" token mints after bob is locked")
	}
	// Deleted (through the API, by another admin): carol's minted token is gone with her.
	m.want(m.call("DELETE", fmt.Sprintf("/api/users/%d", carol.ID), e.AdminToken, ""), 200, "delete carol")
	m.want(m.call("GET", "/api/tokens", carolMinted, ""), 401, "carol's minted token after she is deleted")

	// Audited: who made each token (the user, and the token when made with one) and who revoked it.
	rows := auditRows(t, e, "token.create", "minted")
	if len(rows) != 1 || rows[0].UserID != bob.ID || rows[0].ActorKind != "token" || rows[0].ActorName != "bob-admin" || rows[0].Detail["scope"] != "admin" {
		t.Errorf("token.create of minted: %+v", rows)
	}
	if rows := auditRows(t, e, "token.create", "bob-admin"); len(rows) != 1 || rows[0].UserID != bob.ID || rows[0].ActorKind != "user" {
		t.Errorf("token.create in the console: %+v", rows)
	}
	if rows := auditRows(t, e, "token.create", "ops"); len(rows) != 1 || rows[0].UserID != 0 || rows[0].ActorKind != "token" || rows[0].ActorName != "admin" {
		t.Errorf("token.create with an ownerless token: %+v", rows)
	}
	cli := distribution.WithActor(ctx, distribution.SystemActor("cli"))
	if _, _, err := e.DB.CreateToken(cli, "deploy", distribution.ScopeUpload); err != nil {
		t.Fatal(err)
	}
	if rows := auditRows(t, e, "token.create", "deploy"); len(rows) != 1 || rows[0].ActorKind != "system" || rows[0].ActorName != "cli" {
		t.Errorf("token.create on the command line: %+v", rows)
	}
	opsID := int64(0)
	if err := e.DB.Pool.QueryRow(ctx, `SELECT id FROM api_tokens WHERE name = 'ops'`).Scan(&opsID); err != nil {
		t.Fatal(err)
	}
	m.want(m.call("DELETE", fmt.Sprintf("/api/tokens/%d", opsID), e.AdminToken, ""), 200, "revoke ops")
	if rows := auditRows(t, e, "token.revoke", "ops"); len(rows) != 1 || rows[0].ActorKind != "token" || rows[0].ActorName != "admin" {
		t.Errorf("token.revoke over the API: %+v", rows)
	}
	if err := e.DB.RevokeToken(cli, "deploy"); err != nil {
		t.Fatal(err)
	}
	if rows := auditRows(t, e, "token.revoke", "deploy"); len(rows) != 1 || rows[0].ActorKind != "system" || rows[0].ActorName != "cli" {
		t.Errorf("token.revoke on the command line: %+v", rows)
	}
	entries, err := e.Service.People.AuditEntries(distribution.WithActor(ctx, distribution.UserActor(alice)), distribution.AuditFilter{Action: "token.create", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, en := range entries {
		shown = shown || (en.Target.Name == "minted" && en.Actor.Label() == "token bob-admin" && en.Actor.UserID == bob.ID)
	}
	if !shown {
		t.Errorf("the console's audit log does not show who made the minted token: %+v", entries)
	}
}
