// Package console is what a person does in the web console beyond signing in: every function
// checks the person's role and app membership (access.People), calls the very use case the API
// calls (one door: catalog, uploads, events, devices, access), and writes the audit log.
package console

import (
	"context"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The use cases the console calls, each declared by the part that runs it (see Console's fields).

// Apps is catalog.Apps as the console uses it.
type Apps interface {
	App(ctx context.Context, id int64) (*distribution.App, error)
	CreateApp(ctx context.Context, name string) (*distribution.App, error)
	RenameApp(ctx context.Context, id int64, name string) (*distribution.App, error)
	DestroyApp(ctx context.Context, id int64) error
	Scheme(ctx context.Context, id int64) (*distribution.Scheme, error)
	UpdateScheme(ctx context.Context, id int64, ch catalog.SchemeChanges) (*distribution.Scheme, error)
	DeleteScheme(ctx context.Context, id int64) error
	Channel(ctx context.Context, key string) (*distribution.ChannelContext, error)
	ChannelByID(ctx context.Context, id int64) (*distribution.ChannelContext, error)
	UpdateChannel(ctx context.Context, id int64, ch catalog.ChannelChanges) (*distribution.Channel, error)
	DeleteChannel(ctx context.Context, id int64) error
	RotateFeedToken(ctx context.Context, id int64) (string, error)
}

// Releases is catalog.Releases as the console uses it.
type Releases interface {
	Release(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
	UpdateRelease(ctx context.Context, t *distribution.Token, id int64, ch catalog.ReleaseChanges) (*distribution.ReleaseContext, error)
	DeleteRelease(ctx context.Context, id int64) error
}

// Sessions is uploads.Sessions as the console uses it.
type Sessions interface {
	StartSession(ctx context.Context, tok *distribution.Token, in uploads.NewSession) (*distribution.UploadSession, []uploads.SessionPart, error)
	Session(ctx context.Context, tok *distribution.Token, id string) (*distribution.UploadSession, []uploads.SessionPart, error)
	OwnSession(ctx context.Context, tok *distribution.Token, id string) (*distribution.UploadSession, error)
	CompleteSession(ctx context.Context, tok *distribution.Token, id, sha256 string) (*uploads.SessionResult, error)
}

// Webhooks is events.Webhooks as the console uses it.
type Webhooks interface {
	Webhook(ctx context.Context, id int64) (*distribution.Webhook, error)
	TestWebhook(ctx context.Context, id int64) (*distribution.WebhookDelivery, error)
	DeleteWebhook(ctx context.Context, id int64) error
	UpdateWebhook(ctx context.Context, id int64, in events.WebhookInput) (*distribution.Webhook, error)
}

// Devices is devices.Devices as the console uses it.
type Devices interface {
	DeleteDevice(ctx context.Context, udid string) error
	ApproveDevice(ctx context.Context, udid string) (*distribution.Device, error)
}

// Tokens is access.Tokens as the console uses it.
type Tokens interface {
	CreateUserToken(ctx context.Context, name, scope string, userID int64) (string, *distribution.Token, error)
	RevokeTokenByID(ctx context.Context, id int64) (*distribution.Token, error)
	UserUploadToken(ctx context.Context, userID int64) (*distribution.Token, error)
}

// People is access.People as the console uses it: who may manage an app, and the audit log.
type People interface {
	CanManageApp(ctx context.Context, u *distribution.User, appID int64) error
	Audit(ctx context.Context, u *distribution.User, action, target string, detail map[string]any)
}

// asUser returns ctx acting as a console user: the use cases called with it write their audit
// rows (and a deleted release's tombstone) as the user's.
func asUser(ctx context.Context, u *distribution.User) context.Context {
	return distribution.WithActor(ctx, distribution.UserActor(u))
}

// Console runs what a console user does, on their behalf.
type Console struct {
	Apps     Apps
	Releases Releases
	Sessions Sessions
	Webhooks Webhooks
	Devices  Devices
	Tokens   Tokens
	People   People
}

// Channel returns a channel for a console user who may manage its app.
func (c *Console) Channel(ctx context.Context, u *distribution.User, channelID int64) (*distribution.ChannelContext, error) {
	cc, err := c.Apps.ChannelByID(ctx, channelID)
	if err != nil {
		return nil, err
	}
	return cc, c.People.CanManageApp(ctx, u, cc.App.ID)
}

// StartUpload starts a resumable upload session of a build into a channel for a console user who
// may manage its app. The session is the user's console upload token's, so only they can put its
// parts' URLs to use, see it or complete it; fields are the upload's form fields.
func (c *Console) StartUpload(ctx context.Context, u *distribution.User, channelID int64, filename string, size int64, fields map[string]string) (*distribution.UploadSession, []uploads.SessionPart, error) {
	cc, err := c.Channel(ctx, u, channelID)
	if err != nil {
		return nil, nil, err
	}
	tok, err := c.Tokens.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, nil, err
	}
	in := uploads.NewSession{Kind: distribution.SessionApp, Filename: filename, Size: size, Fields: map[string]string{}}
	for _, k := range []string{"changelog", "release_type", "branch", "git_commit", "ci_url"} {
		if v := strings.TrimSpace(fields[k]); v != "" {
			in.Fields[k] = v
		}
	}
	in.Fields["channel_key"] = cc.Channel.Slug
	in.Fields["source"] = "console"
	return c.Sessions.StartSession(ctx, tok, in)
}

// UploadSession returns one of the user's console upload sessions with fresh part URLs (a client
// resuming after its URLs expired).
func (c *Console) UploadSession(ctx context.Context, u *distribution.User, id string) (*distribution.UploadSession, []uploads.SessionPart, error) {
	tok, err := c.Tokens.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, nil, err
	}
	return c.Sessions.Session(ctx, tok, id)
}

// CompleteUpload completes one of the user's console upload sessions: the build is parsed and
// recorded as any upload is. The user must still be allowed to manage the channel's app.
func (c *Console) CompleteUpload(ctx context.Context, u *distribution.User, id string) (*distribution.ReleaseContext, error) {
	ctx = asUser(ctx, u)
	tok, err := c.Tokens.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	sess, err := c.Sessions.OwnSession(ctx, tok, id)
	if err != nil {
		return nil, err
	}
	cc, err := c.Apps.Channel(ctx, sess.Fields["channel_key"])
	if err != nil {
		return nil, err
	}
	if err := c.People.CanManageApp(ctx, u, cc.App.ID); err != nil {
		return nil, err
	}
	res, err := c.Sessions.CompleteSession(ctx, tok, id, "")
	if err != nil {
		return nil, err
	}
	if res.Release == nil {
		return nil, errs.New(errs.Invalid, "this upload session is not a build's")
	}
	rc := res.Release
	return rc, nil
}

// UpdateChannel renames a channel, sets or clears its password, or changes its key.
func (c *Console) UpdateChannel(ctx context.Context, u *distribution.User, channelID int64, ch catalog.ChannelChanges) (*distribution.Channel, error) {
	ctx = asUser(ctx, u)
	if _, err := c.Channel(ctx, u, channelID); err != nil {
		return nil, err
	}
	out, err := c.Apps.UpdateChannel(ctx, channelID, ch)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RotateFeedToken makes a channel's update-feed token anew (admins, as the API's) and returns it,
// to be shown once.
func (c *Console) RotateFeedToken(ctx context.Context, u *distribution.User, channelID int64) (string, error) {
	ctx = asUser(ctx, u)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return "", err
	}
	if _, err := c.Channel(ctx, u, channelID); err != nil {
		return "", err
	}
	return c.Apps.RotateFeedToken(ctx, channelID)
}

// DeleteChannel deletes a channel with its releases.
func (c *Console) DeleteChannel(ctx context.Context, u *distribution.User, channelID int64) error {
	ctx = asUser(ctx, u)
	if _, err := c.Channel(ctx, u, channelID); err != nil {
		return err
	}
	if err := c.Apps.DeleteChannel(ctx, channelID); err != nil {
		return err
	}
	return nil
}

// consoleToken stands for a console user who may manage an app, where the domain asks for a
// token's rights (release edits).
var consoleToken = &distribution.Token{Name: "console", Scope: distribution.ScopeAdmin}

// UpdateRelease edits a release for a console user who may manage its app, audited.
func (c *Console) UpdateRelease(ctx context.Context, u *distribution.User, id int64, ch catalog.ReleaseChanges) (*distribution.ReleaseContext, error) {
	ctx = asUser(ctx, u)
	rc, err := c.Releases.Release(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := c.People.CanManageApp(ctx, u, rc.App.ID); err != nil {
		return nil, err
	}
	if ch.Pinned != nil {
		if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
			return nil, err
		}
	}
	out, err := c.Releases.UpdateRelease(ctx, consoleToken, id, ch)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteRelease deletes a release (its package goes from storage after the commit).
func (c *Console) DeleteRelease(ctx context.Context, u *distribution.User, id int64) (*distribution.ReleaseContext, error) {
	ctx = asUser(ctx, u)
	rc, err := c.Releases.Release(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := c.People.CanManageApp(ctx, u, rc.App.ID); err != nil {
		return nil, err
	}
	if err := c.Releases.DeleteRelease(ctx, id); err != nil {
		return nil, err
	}
	return rc, nil
}

// CreateApp makes an empty app (admins: a new app has no members yet), audited.
func (c *Console) CreateApp(ctx context.Context, u *distribution.User, name string) (*distribution.App, error) {
	ctx = asUser(ctx, u)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return nil, err
	}
	app, err := c.Apps.CreateApp(ctx, name)
	if err != nil {
		return nil, err
	}
	return app, nil
}

// RenameApp renames an app.
func (c *Console) RenameApp(ctx context.Context, u *distribution.User, appID int64, name string) (*distribution.App, error) {
	ctx = asUser(ctx, u)
	if err := c.People.CanManageApp(ctx, u, appID); err != nil {
		return nil, err
	}
	app, err := c.Apps.RenameApp(ctx, appID, name)
	if err != nil {
		return nil, err
	}
	return app, nil
}

// DeleteApp deletes an app with everything in it (admins only).
func (c *Console) DeleteApp(ctx context.Context, u *distribution.User, appID int64) error {
	ctx = asUser(ctx, u)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	return c.Apps.DestroyApp(ctx, appID)
}

// Scheme returns a scheme for a console user who may manage its app.
func (c *Console) Scheme(ctx context.Context, u *distribution.User, id int64) (*distribution.Scheme, error) {
	sc, err := c.Apps.Scheme(ctx, id)
	if err != nil {
		return nil, err
	}
	return sc, c.People.CanManageApp(ctx, u, sc.AppID)
}

// RenameScheme renames a scheme, audited.
func (c *Console) RenameScheme(ctx context.Context, u *distribution.User, id int64, name string) (*distribution.Scheme, error) {
	ctx = asUser(ctx, u)
	if _, err := c.Scheme(ctx, u, id); err != nil {
		return nil, err
	}
	sc, err := c.Apps.UpdateScheme(ctx, id, catalog.SchemeChanges{Name: &name})
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// DeleteScheme deletes a scheme with its channels and builds, audited.
func (c *Console) DeleteScheme(ctx context.Context, u *distribution.User, id int64) (*distribution.Scheme, error) {
	ctx = asUser(ctx, u)
	sc, err := c.Scheme(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := c.Apps.DeleteScheme(ctx, id); err != nil {
		return nil, err
	}
	return sc, nil
}

// Webhook returns a webhook for an admin.
func (c *Console) Webhook(ctx context.Context, u *distribution.User, id int64) (*distribution.Webhook, error) {
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return nil, err
	}
	return c.Webhooks.Webhook(ctx, id)
}

// TestWebhook sends a test event to a webhook (admins), audited.
func (c *Console) TestWebhook(ctx context.Context, u *distribution.User, id int64) (*distribution.WebhookDelivery, error) {
	ctx = asUser(ctx, u)
	if _, err := c.Webhook(ctx, u, id); err != nil {
		return nil, err
	}
	return c.Webhooks.TestWebhook(ctx, id)
}

// DeleteWebhook deletes a webhook (admins), audited.
func (c *Console) DeleteWebhook(ctx context.Context, u *distribution.User, id int64) (*distribution.Webhook, error) {
	ctx = asUser(ctx, u)
	w, err := c.Webhook(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := c.Webhooks.DeleteWebhook(ctx, id); err != nil {
		return nil, err
	}
	return w, nil
}

// SetWebhookEnabled pauses or resumes a webhook (admins), audited. A paused webhook is sent
// nothing; its history stays.
func (c *Console) SetWebhookEnabled(ctx context.Context, u *distribution.User, id int64, enabled bool) (*distribution.Webhook, error) {
	ctx = asUser(ctx, u)
	if _, err := c.Webhook(ctx, u, id); err != nil {
		return nil, err
	}
	w, err := c.Webhooks.UpdateWebhook(ctx, id, events.WebhookInput{Enabled: &enabled})
	if err != nil {
		return nil, err
	}
	return w, nil
}

// ApproveDevice lets a device registered by an unverified profile answer into the export
// (admins), audited (by the use case, as the user).
func (c *Console) ApproveDevice(ctx context.Context, u *distribution.User, udid string) error {
	ctx = asUser(ctx, u)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	_, err := c.Devices.ApproveDevice(ctx, udid)
	return err
}

// DeleteDevice deletes a registered device (admins), audited.
func (c *Console) DeleteDevice(ctx context.Context, u *distribution.User, udid string) error {
	ctx = asUser(ctx, u)
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	return c.Devices.DeleteDevice(ctx, udid)
}

// CreateToken makes an API token on behalf of a console user (admins only), audited.
func (c *Console) CreateToken(ctx context.Context, u *distribution.User, name, scope string) (string, *distribution.Token, error) {
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return "", nil, err
	}
	// The token is the user's: it dies with them. The store writes the audit row with it.
	return c.Tokens.CreateUserToken(asUser(ctx, u), name, scope, u.ID)
}

// RevokeToken revokes an API token on behalf of a console user (admins only), audited.
func (c *Console) RevokeToken(ctx context.Context, u *distribution.User, id int64) error {
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	_, err := c.Tokens.RevokeTokenByID(asUser(ctx, u), id)
	return err
}
