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

// grants: tester 9 may install what channel 5 holds.
type grants struct{}

func (grants) MayInstall(_ context.Context, testerID, channelID, _ int64) (bool, error) {
	return testerID == 9 && channelID == 5, nil
}

// TestPolicyTable lists every actor × action and what the policy answers, on app 1 (the user's
// app, where the token uploaded the release and owns the session) and app 2 (neither). The
// limited tokens: "app token" is an upload token limited to app 1, "app admin token" an admin
// token limited to app 1, "upload-only token" an admin token limited to the upload ability;
// "developer's token" is a token owned by user 7, now a developer (a member of app 1), so of
// scope upload at most: it never does more than its owner may either.
func TestPolicyTable(t *testing.T) {
	const tokenID = 40
	actors := map[string]distribution.Actor{
		"system":            distribution.SystemActor("cli"),
		"anonymous":         distribution.AnonymousActor(),
		"admin token":       {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ci", Scope: distribution.ScopeAdmin},
		"upload token":      {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ci", Scope: distribution.ScopeUpload},
		"admin user":        {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Ada", Role: distribution.RoleAdmin},
		"developer user":    {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Dev", Role: distribution.RoleDeveloper},
		"viewer user":       {Kind: distribution.ActorUser, UserID: 7, TokenID: tokenID, Name: "Vi", Role: distribution.RoleViewer},
		"app token":         {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ci-app", Scope: distribution.ScopeUpload, Apps: []int64{1}},
		"app admin token":   {Kind: distribution.ActorToken, TokenID: tokenID, Name: "ops-app", Scope: distribution.ScopeAdmin, Apps: []int64{1, 3}},
		"upload-only token": {Kind: distribution.ActorToken, TokenID: tokenID, Name: "up", Scope: distribution.ScopeAdmin, Abilities: []string{distribution.AbilityUpload}},
		"developer's token": {Kind: distribution.ActorToken, TokenID: tokenID, UserID: 7, Name: "dev-laptop", Scope: distribution.ScopeUpload, Role: distribution.RoleDeveloper},
		"tester":            {Kind: distribution.ActorTester, TesterID: 9, Name: "t@example.com"},
	}
	order := []string{"system", "anonymous", "admin token", "upload token", "admin user", "developer user", "viewer user",
		"app token", "app admin token", "upload-only token", "developer's token", "tester"}
	const n = 12
	// Each row: the action, the resource on app 1, and the outcome for each actor in order.
	type row struct {
		act  policy.Action
		res  policy.Resource
		want [n]string
	}
	// Channel 5 of app 1 is given to tester 9 (grants); the other app's channel is not.
	own := policy.Resource{AppID: 1, UploadedBy: tokenID, SessionToken: tokenID, ChannelID: 5}
	inst := policy.Installation
	list := policy.AppListing
	//                                                      system anon   admTok upTok  admUsr dev     viewer appTok appAdm upOnly
	rows := []row{
		{policy.ReadCatalog, own, [n]string{yes, login, yes, yes, yes, yes, yes, yes, yes, no, yes, no}},
		{policy.ReadCatalog, list, [n]string{yes, login, yes, yes, yes, yes, yes, yes, yes, no, yes, no}},
		{policy.ReadCatalog, inst, [n]string{yes, login, yes, yes, yes, yes, yes, no, no, no, yes, no}},
		{policy.CreateApp, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.ManageApp, own, [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, no}},
		{policy.DeleteApp, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		{policy.Upload, own, [n]string{yes, login, yes, yes, yes, member, no, yes, yes, yes, member, no}},
		// An upload without a channel key finds or creates its app by name: not for app tokens.
		{policy.Upload, inst, [n]string{yes, login, yes, yes, yes, no, no, no, no, yes, no, no}},
		{policy.EditRelease, own, [n]string{yes, login, yes, yes, yes, member, no, yes, yes, yes, member, no}},
		{policy.PinRelease, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		{policy.DeleteRelease, own, [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, no}},
		{policy.DeleteDebugFile, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		{policy.RotateFeedToken, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		{policy.ManageWebhooks, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		{policy.ManageWebhooks, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.ReadDevices, inst, [n]string{yes, login, yes, yes, yes, yes, no, no, no, no, yes, no}},
		{policy.SyncDevice, inst, [n]string{yes, login, yes, yes, yes, no, no, no, no, no, no, no}},
		{policy.ManageDevices, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.ManageTokens, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.ManagePeople, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.InvitePeople, own, [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, no}},
		{policy.ReadAudit, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.UseSession, own, [n]string{yes, login, yes, yes, yes, yes, yes, yes, yes, yes, yes, no}},
		{policy.UseSession, policy.OwnSession(tokenID), [n]string{yes, login, yes, yes, yes, yes, yes, yes, yes, yes, yes, no}},
		// Another token's session: a token limited to apps uses only its own, whatever its scope.
		{policy.UseSession, policy.OwnSession(tokenID + 1), [n]string{yes, login, yes, hidden, yes, hidden, hidden, hidden, hidden, yes, hidden, no}},
		{policy.ConfigureSigning, own, [n]string{yes, login, yes, no, yes, no, no, no, yes, no, no, no}},
		// Signing reaches every app that trusts the key: never for a token that reaches every app
		// but an unlimited admin token's.
		{policy.SignRelease, own, [n]string{yes, login, yes, no, yes, member, no, yes, yes, no, no, no}},
		{policy.ManageTesters, inst, [n]string{yes, login, yes, no, yes, no, no, no, no, no, no, no}},
		{policy.ReadTesters, inst, [n]string{yes, login, yes, no, yes, yes, no, no, no, no, no, no}},
		{policy.ReadTesters, own, [n]string{yes, login, yes, yes, yes, member, no, yes, yes, no, member, no}},
		{policy.Distribute, own, [n]string{yes, login, yes, yes, yes, member, no, yes, yes, yes, member, no}},
		// A tester-only channel: the app's members (any role), tokens that read the app, and the
		// testers it was given to (tester 9 has channel 5 of app 1, nothing of app 2).
		{policy.Install, own, [n]string{yes, login, yes, yes, yes, member, member, yes, yes, no, member, member}},
		// Feedback: on a channel open to anyone, anyone reports; on a tester-only one, whoever
		// may install. The app's members read it; developers and admins set its state and delete
		// it, and so does the tester who wrote it (tester 9).
		{policy.SendFeedback, policy.OnFeedback(1, 5, 0, true), [n]string{yes, yes, yes, yes, yes, yes, yes, yes, yes, no, yes, yes}},
		{policy.SendFeedback, own, [n]string{yes, login, yes, yes, yes, member, member, yes, yes, no, member, member}},
		{policy.ReadFeedback, own, [n]string{yes, login, yes, yes, yes, member, member, yes, yes, no, member, no}},
		{policy.ReadFeedback, policy.OnReport(1, 9), [n]string{yes, login, yes, yes, yes, member, member, yes, yes, no, member, yes}},
		{policy.ManageFeedback, own, [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, no}},
		{policy.DeleteFeedback, own, [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, no}},
		{policy.DeleteFeedback, policy.OnReport(1, 9), [n]string{yes, login, yes, no, yes, member, no, no, yes, no, no, yes}},
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
	p := &policy.Policy{Members: members{}, Testers: grants{}}
	for _, r := range rows {
		for i, name := range order {
			ctx := distribution.WithActor(context.Background(), actors[name])
			got := outcome(p.Authorize(ctx, r.act, r.res))
			want := r.want[i]
			if want == member {
				want = yes
			}
			if got != want {
				t.Errorf("%s may %s on %+v: got %s, want %s", name, r.act, r.res, got, want)
			}
			// On app 2 (not the developer's, not the token's upload or session, not among the
			// limited tokens' apps), a member-only answer becomes a refusal, and so do the upload
			// token's own-things answers and everything a token limited to other apps would do.
			other := policy.Resource{AppID: 2, UploadedBy: tokenID + 1, SessionToken: tokenID + 1, Open: r.res.Open, Author: r.res.Author}
			if r.res.AppID == 0 {
				continue
			}
			want2 := r.want[i]
			switch {
			case r.act == policy.SendFeedback && r.res.Open && name != "app token" && name != "app admin token",
				r.res.Author != 0 && name == "tester":
				// Open to anyone, whichever app (but to tokens limited to others); the tester's own
				// report, whichever app.
			case want2 == member:
				want2 = no
			case name == "app token" || name == "app admin token":
				want2 = no
			case name == "upload token" && r.act == policy.EditRelease:
				want2 = no
			case name == "developer's token" && r.act == policy.EditRelease:
				want2 = no
			case r.act == policy.UseSession && (name == "upload token" || name == "developer's token" || strings.HasSuffix(name, "user") && name != "admin user"):
				want2 = hidden
			}
			if got := outcome(p.Authorize(ctx, r.act, other)); got != want2 {
				t.Errorf("%s may %s on another app: got %s, want %s", name, r.act, got, want2)
			}
		}
	}
}

// TestAppTokenWithDevices: a token limited to apps reaches devices (which belong to no app) only
// when its abilities name devices, and then still only its apps.
func TestAppTokenWithDevices(t *testing.T) {
	p := &policy.Policy{Members: members{}}
	tok := distribution.Actor{Kind: distribution.ActorToken, TokenID: 5, Scope: distribution.ScopeUpload, Apps: []int64{1},
		Abilities: []string{distribution.AbilityDevices, distribution.AbilityUpload}}
	ctx := distribution.WithActor(context.Background(), tok)
	for act, want := range map[policy.Action]string{policy.ReadDevices: yes, policy.SyncDevice: yes, policy.ManageDevices: no} {
		if got := outcome(p.Authorize(ctx, act, policy.Installation)); got != want {
			t.Errorf("%s: %s, want %s", act, got, want)
		}
	}
	if got := outcome(p.Authorize(ctx, policy.Upload, policy.OnApp(2))); got != no {
		t.Errorf("upload into app 2: %s", got)
	}
	if got := outcome(p.Authorize(ctx, policy.ReadCatalog, policy.AppListing)); got != no {
		t.Errorf("list apps without the read ability: %s", got)
	}
}

// TestListedApps: a listing shows a token limited to apps only those apps, and everyone else
// every app.
func TestListedApps(t *testing.T) {
	p := &policy.Policy{Members: members{}}
	ctx := distribution.WithActor(context.Background(), distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload, Apps: []int64{3, 1}})
	if apps, limited := p.ListedApps(ctx); !limited || len(apps) != 2 {
		t.Errorf("an app token lists %v (limited %v)", apps, limited)
	}
	for _, a := range []distribution.Actor{distribution.SystemActor("cli"), {Kind: distribution.ActorToken, Scope: distribution.ScopeUpload},
		{Kind: distribution.ActorUser, Role: distribution.RoleViewer}} {
		if apps, limited := p.ListedApps(distribution.WithActor(context.Background(), a)); limited || apps != nil {
			t.Errorf("%s lists only %v", a.Label(), apps)
		}
	}
}

// TestMint: a token never makes a token that may do more than itself: no admin scope from an
// upload token, no app or ability outside its own limits, and no unlimited token from a limited
// one.
func TestMint(t *testing.T) {
	up := distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload}
	appAdmin := distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeAdmin, Apps: []int64{1, 2}}
	reader := distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeAdmin, Abilities: []string{"read", "upload"}}
	admin := distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeAdmin}
	cases := []struct {
		name      string
		by        distribution.Actor
		scope     string
		apps      []int64
		abilities []string
		ok        bool
	}{
		{"admin token, anything", admin, "admin", nil, nil, true},
		{"admin token, limited", admin, "upload", []int64{9}, []string{"upload"}, true},
		{"system, anything", distribution.SystemActor("cli"), "admin", nil, nil, true},
		{"upload token, admin scope", up, "admin", nil, nil, false},
		{"upload token, upload scope", up, "upload", []int64{1}, nil, true},
		{"app admin, unlimited", appAdmin, "upload", nil, nil, false},
		{"app admin, another app", appAdmin, "upload", []int64{1, 3}, nil, false},
		{"app admin, its apps", appAdmin, "admin", []int64{2}, nil, true},
		{"reader, unlimited abilities", reader, "upload", nil, nil, false},
		{"reader, devices", reader, "upload", nil, []string{"devices"}, false},
		{"reader, its abilities", reader, "upload", []int64{4}, []string{"read"}, true},
	}
	for _, c := range cases {
		err := policy.Mint(c.by, c.scope, c.apps, c.abilities)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want allowed %v", c.name, err, c.ok)
		}
		if err != nil && errs.KindOf(err) != errs.Forbidden {
			t.Errorf("%s: %v, want forbidden", c.name, err)
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
		"app token elsewhere": {distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload, Apps: []int64{2}}, policy.Upload, "limited to other apps"},
		"upload-only reads":   {distribution.Actor{Kind: distribution.ActorToken, Scope: distribution.ScopeUpload, Abilities: []string{"upload"}}, policy.ReadCatalog, "may only upload"},
		"anonymous lists":     {distribution.AnonymousActor(), policy.ReadCatalog, "API token is required"},
	}
	p := &policy.Policy{Members: members{}}
	for name, c := range cases {
		err := p.Authorize(distribution.WithActor(context.Background(), c.a), c.act, policy.OnApp(1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want it to say %q", name, err, c.want)
		}
	}
}

// A developer uploading a build that would make an app (the console's home, or the API without a
// channel_key) is told where an upload of theirs goes: an app's page, or an admin.
func TestDeveloperMakingAnAppByUpload(t *testing.T) {
	p := &policy.Policy{Members: members{}}
	dev := distribution.WithActor(context.Background(), distribution.Actor{Kind: distribution.ActorUser, UserID: 8, Role: distribution.RoleDeveloper})
	err := p.Authorize(dev, policy.Upload, policy.Installation)
	if errs.KindOf(err) != errs.Forbidden || !strings.Contains(err.Error(), "upload it on the page of an app you are a member of") {
		t.Errorf("a developer's upload that makes an app: %v", err)
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
