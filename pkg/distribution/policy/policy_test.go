package policy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The outcomes of the table.
const (
	yes    = "allow"
	no     = "forbid"
	member = "member" // allowed when a member of the app, forbidden otherwise
	login  = "unauth" // refused as unauthenticated: no credentials at all
	hidden = "hidden" // refused as not found: another token's session
)

// members: user 7 is a member of app 1 only.
type members struct{}

func (members) IsAppMember(_ context.Context, appID, userID int64) (bool, error) {
	return appID == 1 && userID == 7, nil
}

// TestPolicyTable lists every actor × action and what the policy answers, on app 1 (the user's
// app, where the token uploaded the release and owns the session) and app 2 (neither).
func TestPolicyTable(t *testing.T) {
	const tokenID = 40
	actors := map[string]distribution.Actor{
		"system":         distribution.SystemActor("cli"),
		"anonymous":      distribution.AnonymousActor(),
		"admin token":    {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ci", Scope: distribution.ScopeAdmin},
		"upload token":   {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ci", Scope: distribution.ScopeUpload},
		"admin user":     {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Ada", Role: distribution.RoleAdmin},
		"developer user": {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Dev", Role: distribution.RoleDeveloper},
		"viewer user":    {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Vi", Role: distribution.RoleViewer},
	}
	order := []string{"system", "anonymous", "admin token", "upload token", "admin user", "developer user", "viewer user"}
	// Each row: the action, the resource on app 1, and the outcome for each actor in order.
	type row struct {
		act  policy.Action
		res  policy.Resource
		want [7]string
	}
	own := policy.Resource{AppID: 1, UploadedBy: tokenID, SessionToken: tokenID}
	inst := policy.Installation
	//                                                   system anon   admTok upTok  admUsr dev     viewer
	rows := []row{
		{policy.ReadCatalog, own, [7]string{yes, yes, yes, yes, yes, yes, yes}},
		{policy.CreateApp, inst, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ManageApp, own, [7]string{yes, login, yes, no, yes, member, no}},
		{policy.DeleteApp, own, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.Upload, own, [7]string{yes, login, yes, yes, yes, member, no}},
		{policy.EditRelease, own, [7]string{yes, login, yes, yes, yes, member, no}},
		{policy.PinRelease, own, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.DeleteRelease, own, [7]string{yes, login, yes, no, yes, member, no}},
		{policy.DeleteDebugFile, own, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.RotateFeedToken, own, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ManageWebhooks, own, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ReadDevices, inst, [7]string{yes, login, yes, yes, yes, yes, no}},
		{policy.SyncDevice, inst, [7]string{yes, login, yes, yes, yes, no, no}},
		{policy.ManageDevices, inst, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ManageTokens, inst, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ManagePeople, inst, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.ReadAudit, inst, [7]string{yes, login, yes, no, yes, no, no}},
		{policy.UseSession, own, [7]string{yes, login, yes, yes, yes, yes, yes}},
	}
	seen := map[policy.Action]bool{}
	for _, r := range rows {
		seen[r.act] = true
	}
	for _, act := range policy.Actions {
		if !seen[act] {
			t.Errorf("action %s has no row in the table", act)
		}
	}
	p := &policy.Policy{Members: members{}}
	for _, r := range rows {
		for i, name := range order {
			ctx := distribution.WithActor(context.Background(), actors[name])
			got := outcome(p.Authorize(ctx, r.act, r.res))
			want := r.want[i]
			if want == member {
				want = yes
			}
			if got != want {
				t.Errorf("%s may %s on its own app: got %s, want %s", name, r.act, got, want)
			}
			// On app 2 (not the developer's, not the token's upload or session), a member-only
			// answer becomes a refusal, and so do the upload token's own-things answers.
			other := policy.Resource{AppID: 2, UploadedBy: tokenID + 1, SessionToken: tokenID + 1}
			if r.res == inst {
				continue
			}
			want2 := r.want[i]
			switch {
			case want2 == member:
				want2 = no
			case name == "upload token" && r.act == policy.EditRelease:
				want2 = no
			case r.act == policy.UseSession && (name == "upload token" || strings.HasSuffix(name, "user") && name != "admin user"):
				want2 = hidden
			}
			if got := outcome(p.Authorize(ctx, r.act, other)); got != want2 {
				t.Errorf("%s may %s on another app: got %s, want %s", name, r.act, got, want2)
			}
		}
	}
}

// TestNoActorIsAnonymous: a context that carries no actor gets what an anonymous client gets,
// never the system's rights.
func TestNoActorIsAnonymous(t *testing.T) {
	p := &policy.Policy{Members: members{}}
	for _, act := range policy.Actions {
		got := outcome(p.Authorize(context.Background(), act, policy.OnApp(1)))
		want := outcome(p.Authorize(distribution.WithActor(context.Background(), distribution.AnonymousActor()), act, policy.OnApp(1)))
		if got != want {
			t.Errorf("%s without an actor: %s, anonymous: %s", act, got, want)
		}
		if act != policy.ReadCatalog && got == yes {
			t.Errorf("%s is allowed without an actor", act)
		}
	}
}

// TestUnknownRoleMayDoNothing: a user whose role is none of the three (a row written by an older
// release, a typo in the database) is refused everything, reads included.
func TestUnknownRoleMayDoNothing(t *testing.T) {
	p := &policy.Policy{Members: members{}}
	ctx := distribution.WithActor(context.Background(), distribution.Actor{Kind: distribution.ActorUser, UserID: 7, Role: "owner"})
	for _, act := range policy.Actions {
		if got := outcome(p.Authorize(ctx, act, policy.OnApp(1))); got != no {
			t.Errorf("%s by a user of an unknown role: %s", act, got)
		}
	}
}

// TestMembershipLookupFails: a store error is returned, never taken as a yes.
func TestMembershipLookupFails(t *testing.T) {
	p := &policy.Policy{Members: failing{}}
	dev := distribution.Actor{Kind: distribution.ActorUser, UserID: 7, Role: distribution.RoleDeveloper}
	err := p.Authorize(distribution.WithActor(context.Background(), dev), policy.ManageApp, policy.OnApp(1))
	if err == nil || errs.KindOf(err) != errs.Unavailable {
		t.Fatalf("got %v, want the store's unavailable error", err)
	}
}

type failing struct{}

func (failing) IsAppMember(context.Context, int64, int64) (bool, error) {
	return false, errs.New(errs.Unavailable, "the database is unavailable")
}

// TestRefusalsSayWhatWouldAllow: every refusal is a sentence a user can act on.
func TestRefusalsSayWhatWouldAllow(t *testing.T) {
	cases := map[string]struct {
		a    distribution.Actor
		act  policy.Action
		want string
	}{
		"upload token pins":   {distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload}, policy.PinRelease, "needs an admin token"},
		"viewer changes":      {distribution.Actor{Kind: distribution.ActorUser, Role: distribution.RoleViewer}, policy.ManageApp, "an admin can make you a developer"},
		"developer elsewhere": {distribution.Actor{Kind: distribution.ActorUser, UserID: 8, Role: distribution.RoleDeveloper}, policy.ManageApp, "not a member of this app"},
		"developer webhooks":  {distribution.Actor{Kind: distribution.ActorUser, Role: distribution.RoleDeveloper}, policy.ManageWebhooks, "needs the admin role; you are a developer"},
		"anonymous creates":   {distribution.AnonymousActor(), policy.CreateApp, "API token is required"},
		"upload token admins": {distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload}, policy.ManageTokens, "it needs admin"},
	}
	p := &policy.Policy{Members: members{}}
	for name, c := range cases {
		err := p.Authorize(distribution.WithActor(context.Background(), c.a), c.act, policy.OnApp(1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want it to say %q", name, err, c.want)
		}
	}
}

func outcome(err error) string {
	var e *errs.Error
	switch {
	case err == nil:
		return yes
	case errors.As(err, &e) && e.Kind == errs.Forbidden:
		return no
	case errors.As(err, &e) && e.Kind == errs.Unauthenticated:
		return login
	case errors.As(err, &e) && e.Kind == errs.NotFound:
		return hidden
	}
	return fmt.Sprintf("error %v", err)
}
