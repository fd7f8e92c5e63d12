package console

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// parts stands for every use case the console calls, and for who manages which app. It records
// the use cases called and the audit log.
type parts struct {
	members map[int64]int64 // user id → the app they are a member of
	calls   []string
	audit   []string
	token   *distribution.Token // the token a release edit was made with
}

func (p *parts) call(name string) { p.calls = append(p.calls, name) }

// callAs records a call of a use case that writes its own audit row, and the actor it would
// write it as: "as user N".
func (p *parts) callAs(ctx context.Context, name string) {
	p.call(name)
	a := distribution.ActorOf(ctx)
	p.audit = append(p.audit, fmt.Sprintf("as %s %d", a.Kind, a.UserID))
}

func (p *parts) CanManageApp(_ context.Context, u *distribution.User, appID int64) error {
	if u.Role == distribution.RoleAdmin || (u.Role == distribution.RoleDeveloper && p.members[u.ID] == appID) {
		return nil
	}
	return errs.New(errs.Forbidden, "no")
}
func (p *parts) Audit(_ context.Context, _ *distribution.User, action, _ string, _ map[string]any) {
	p.audit = append(p.audit, action)
}

func (p *parts) App(_ context.Context, id int64) (*distribution.App, error) {
	return &distribution.App{ID: id, Name: "App"}, nil
}
func (p *parts) CreateApp(ctx context.Context, name string) (*distribution.App, error) {
	p.callAs(ctx, "CreateApp")
	return &distribution.App{ID: 9, Name: name}, nil
}
func (p *parts) RenameApp(ctx context.Context, id int64, name string) (*distribution.App, error) {
	p.callAs(ctx, "RenameApp")
	return &distribution.App{ID: id, Name: name}, nil
}
func (p *parts) DestroyApp(ctx context.Context, _ int64) error {
	p.callAs(ctx, "DestroyApp")
	return nil
}
func (p *parts) Scheme(_ context.Context, id int64) (*distribution.Scheme, error) {
	return &distribution.Scheme{ID: id, AppID: 1, Name: "Adhoc"}, nil
}
func (p *parts) UpdateScheme(ctx context.Context, id int64, ch catalog.SchemeChanges) (*distribution.Scheme, error) {
	p.callAs(ctx, "UpdateScheme")
	return &distribution.Scheme{ID: id, AppID: 1, Name: *ch.Name}, nil
}
func (p *parts) DeleteScheme(ctx context.Context, _ int64) error {
	p.callAs(ctx, "DeleteScheme")
	return nil
}
func (p *parts) Channel(_ context.Context, key string) (*distribution.ChannelContext, error) {
	return &distribution.ChannelContext{Channel: distribution.Channel{ID: 5, Slug: key}, App: distribution.App{ID: 1}}, nil
}
func (p *parts) ChannelByID(_ context.Context, id int64) (*distribution.ChannelContext, error) {
	return &distribution.ChannelContext{Channel: distribution.Channel{ID: id, Slug: "k"}, App: distribution.App{ID: 1}}, nil
}
func (p *parts) UpdateChannel(ctx context.Context, id int64, _ catalog.ChannelChanges) (*distribution.Channel, error) {
	p.callAs(ctx, "UpdateChannel")
	return &distribution.Channel{ID: id}, nil
}
func (p *parts) DeleteChannel(ctx context.Context, _ int64) error {
	p.callAs(ctx, "DeleteChannel")
	return nil
}
func (p *parts) RotateFeedToken(ctx context.Context, _ int64) (string, error) {
	p.callAs(ctx, "RotateFeedToken")
	return "token", nil
}
func (p *parts) Release(_ context.Context, id int64) (*distribution.ReleaseContext, error) {
	return &distribution.ReleaseContext{Release: distribution.Release{ID: id}, App: distribution.App{ID: 1}}, nil
}
func (p *parts) UpdateRelease(ctx context.Context, t *distribution.Token, id int64, _ catalog.ReleaseChanges) (*distribution.ReleaseContext, error) {
	p.callAs(ctx, "UpdateRelease")
	p.token = t
	return p.Release(context.Background(), id)
}
func (p *parts) DeleteRelease(ctx context.Context, _ int64) error {
	p.callAs(ctx, "DeleteRelease")
	return nil
}
func (p *parts) StartSession(_ context.Context, tok *distribution.Token, in uploads.NewSession) (*distribution.UploadSession, []uploads.SessionPart, error) {
	p.call("StartSession " + in.Fields["channel_key"] + " " + in.Fields["source"])
	return &distribution.UploadSession{TokenID: tok.ID}, nil, nil
}
func (p *parts) Session(context.Context, *distribution.Token, string) (*distribution.UploadSession, []uploads.SessionPart, error) {
	return &distribution.UploadSession{}, nil, nil
}
func (p *parts) OwnSession(context.Context, *distribution.Token, string) (*distribution.UploadSession, error) {
	return &distribution.UploadSession{Fields: map[string]string{"channel_key": "k"}}, nil
}
func (p *parts) CompleteSession(ctx context.Context, _ *distribution.Token, _, _ string) (*uploads.SessionResult, error) {
	p.callAs(ctx, "CompleteSession")
	return &uploads.SessionResult{Release: &distribution.ReleaseContext{}}, nil
}
func (p *parts) Webhook(_ context.Context, id int64) (*distribution.Webhook, error) {
	return &distribution.Webhook{ID: id, Format: "slipway"}, nil
}
func (p *parts) TestWebhook(ctx context.Context, _ int64) (*distribution.WebhookDelivery, error) {
	p.callAs(ctx, "TestWebhook")
	return &distribution.WebhookDelivery{}, nil
}
func (p *parts) DeleteWebhook(ctx context.Context, _ int64) error {
	p.callAs(ctx, "DeleteWebhook")
	return nil
}
func (p *parts) UpdateWebhook(ctx context.Context, id int64, in events.WebhookInput) (*distribution.Webhook, error) {
	p.callAs(ctx, "UpdateWebhook")
	return &distribution.Webhook{ID: id, Enabled: *in.Enabled}, nil
}
func (p *parts) DeleteDevice(ctx context.Context, _ string) error {
	p.callAs(ctx, "DeleteDevice")
	return nil
}
func (p *parts) ApproveDevice(ctx context.Context, udid string) (*distribution.Device, error) {
	p.callAs(ctx, "ApproveDevice")
	return &distribution.Device{UDID: udid}, nil
}

// Token use cases write their audit row themselves (in the store's transaction), as the
// context's actor.
func (p *parts) CreateUserToken(ctx context.Context, name, _ string, userID int64) (string, *distribution.Token, error) {
	p.callAs(ctx, "CreateUserToken")
	return "secret", &distribution.Token{Name: name, UserID: userID}, nil
}
func (p *parts) RevokeTokenByID(ctx context.Context, id int64) (*distribution.Token, error) {
	p.callAs(ctx, "RevokeTokenByID")
	return &distribution.Token{ID: id}, nil
}
func (p *parts) UserUploadToken(_ context.Context, userID int64) (*distribution.Token, error) {
	return &distribution.Token{ID: 100 + userID, Scope: distribution.ScopeUpload}, nil
}

func newConsole() (*Console, *parts) {
	p := &parts{members: map[int64]int64{2: 1}}
	return &Console{Apps: p, Releases: p, Sessions: p, Webhooks: p, Devices: p, Tokens: p, People: p}, p
}

var (
	admin  = &distribution.User{ID: 1, Role: distribution.RoleAdmin}
	member = &distribution.User{ID: 2, Role: distribution.RoleDeveloper} // of app 1
	other  = &distribution.User{ID: 3, Role: distribution.RoleDeveloper} // of no app
	viewer = &distribution.User{ID: 4, Role: distribution.RoleViewer}
)

// Every console function first asks whether the person may do it, and only then calls the use
// case (the same the API calls) as the user, so that it audits as theirs (or audits it itself); a
// refusal calls nothing and audits nothing.
func TestConsoleAuthorisesThenCallsTheUseCase(t *testing.T) {
	ctx := context.Background()
	actions := []struct {
		name        string
		do          func(c *Console, u *distribution.User) error
		allowed     []*distribution.User
		call, audit string
	}{
		{"rename app", func(c *Console, u *distribution.User) error { _, err := c.RenameApp(ctx, u, 1, "New"); return err },
			[]*distribution.User{admin, member}, "RenameApp", "as user"},
		{"create app", func(c *Console, u *distribution.User) error { _, err := c.CreateApp(ctx, u, "New"); return err },
			[]*distribution.User{admin}, "CreateApp", "as user"},
		{"delete app", func(c *Console, u *distribution.User) error { return c.DeleteApp(ctx, u, 1) },
			[]*distribution.User{admin}, "DestroyApp", "as user"},
		{"rename scheme", func(c *Console, u *distribution.User) error { _, err := c.RenameScheme(ctx, u, 3, "Beta"); return err },
			[]*distribution.User{admin, member}, "UpdateScheme", "as user"},
		{"delete scheme", func(c *Console, u *distribution.User) error { _, err := c.DeleteScheme(ctx, u, 3); return err },
			[]*distribution.User{admin, member}, "DeleteScheme", "as user"},
		{"update channel", func(c *Console, u *distribution.User) error {
			_, err := c.UpdateChannel(ctx, u, 5, catalog.ChannelChanges{})
			return err
		}, []*distribution.User{admin, member}, "UpdateChannel", "as user"},
		{"delete channel", func(c *Console, u *distribution.User) error { return c.DeleteChannel(ctx, u, 5) },
			[]*distribution.User{admin, member}, "DeleteChannel", "as user"},
		{"rotate feed token", func(c *Console, u *distribution.User) error { _, err := c.RotateFeedToken(ctx, u, 5); return err },
			[]*distribution.User{admin}, "RotateFeedToken", "as user"},
		{"edit release", func(c *Console, u *distribution.User) error {
			_, err := c.UpdateRelease(ctx, u, 7, catalog.ReleaseChanges{})
			return err
		}, []*distribution.User{admin, member}, "UpdateRelease", "as user"},
		{"pin release", func(c *Console, u *distribution.User) error {
			pin := true
			_, err := c.UpdateRelease(ctx, u, 7, catalog.ReleaseChanges{Pinned: &pin})
			return err
		}, []*distribution.User{admin}, "UpdateRelease", "as user"},
		{"delete release", func(c *Console, u *distribution.User) error { _, err := c.DeleteRelease(ctx, u, 7); return err },
			[]*distribution.User{admin, member}, "DeleteRelease", "as user"},
		{"complete upload", func(c *Console, u *distribution.User) error { _, err := c.CompleteUpload(ctx, u, "ups_1"); return err },
			[]*distribution.User{admin, member}, "CompleteSession", "as user"},
		{"test webhook", func(c *Console, u *distribution.User) error { _, err := c.TestWebhook(ctx, u, 4); return err },
			[]*distribution.User{admin}, "TestWebhook", "as user"},
		{"pause webhook", func(c *Console, u *distribution.User) error {
			_, err := c.SetWebhookEnabled(ctx, u, 4, false)
			return err
		},
			[]*distribution.User{admin}, "UpdateWebhook", "as user"},
		{"delete webhook", func(c *Console, u *distribution.User) error { _, err := c.DeleteWebhook(ctx, u, 4); return err },
			[]*distribution.User{admin}, "DeleteWebhook", "as user"},
		{"delete device", func(c *Console, u *distribution.User) error { return c.DeleteDevice(ctx, u, "udid") },
			[]*distribution.User{admin}, "DeleteDevice", "as user"},
		{"approve device", func(c *Console, u *distribution.User) error { return c.ApproveDevice(ctx, u, "udid") },
			[]*distribution.User{admin}, "ApproveDevice", "as user"},
		{"create token", func(c *Console, u *distribution.User) error {
			_, _, err := c.CreateToken(ctx, u, "ci", "upload")
			return err
		},
			[]*distribution.User{admin}, "CreateUserToken", "as user"},
		{"revoke token", func(c *Console, u *distribution.User) error { return c.RevokeToken(ctx, u, 8) },
			[]*distribution.User{admin}, "RevokeTokenByID", "as user"},
	}
	for _, a := range actions {
		for _, u := range []*distribution.User{admin, member, other, viewer} {
			c, p := newConsole()
			err := a.do(c, u)
			allowed := false
			for _, ok := range a.allowed {
				allowed = allowed || ok == u
			}
			// A use case that audits itself is called as the user; the console audits the rest.
			audit := strings.ReplaceAll(a.audit, "as user", fmt.Sprintf("as user %d", u.ID))
			switch {
			case allowed && (err != nil || strings.Join(p.calls, ",") != a.call || strings.Join(p.audit, ",") != audit):
				t.Errorf("%s by a %s (user %d): %v, calls %v, audit %v", a.name, u.Role, u.ID, err, p.calls, p.audit)
			case !allowed && (!errs.Is(err, errs.Forbidden) || len(p.calls)+len(p.audit) != 0):
				t.Errorf("%s by a %s (user %d) not refused: %v, calls %v, audit %v", a.name, u.Role, u.ID, err, p.calls, p.audit)
			}
		}
	}
}

// A console user's upload is a session of their own upload token, into the channel they chose,
// marked as coming from the console; a release edit is made with the console's admin-scoped token
// once the person is known to manage the app.
func TestConsoleActsWithItsOwnTokens(t *testing.T) {
	ctx := context.Background()
	c, p := newConsole()
	sess, _, err := c.StartUpload(ctx, member, 5, "a.ipa", 10, map[string]string{"channel_key": "elsewhere", "changelog": " fix "})
	if err != nil || sess.TokenID != 102 || p.calls[0] != "StartSession k console" {
		t.Fatalf("upload: %+v %v %v", sess, err, p.calls)
	}
	if _, _, err := c.StartUpload(ctx, other, 5, "a.ipa", 10, nil); !errs.Is(err, errs.Forbidden) {
		t.Fatalf("upload into another's app: %v", err)
	}
	if _, err := c.UpdateRelease(ctx, member, 7, catalog.ReleaseChanges{}); err != nil || p.token == nil || p.token.Scope != distribution.ScopeAdmin {
		t.Fatalf("release edit token: %+v %v", p.token, err)
	}
}
