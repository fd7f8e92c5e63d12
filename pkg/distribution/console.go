package distribution

import (
	"context"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// What the console does beyond sign-in (users.go): every function here checks the console user's
// role and membership, then calls the same service function the API calls (one door), and audits.

// ConsoleChannel returns a channel for a console user who may manage its app.
func (s *Service) ConsoleChannel(ctx context.Context, u *User, channelID int64) (*ChannelContext, error) {
	cc, err := s.ChannelByID(ctx, channelID)
	if err != nil {
		return nil, err
	}
	return cc, s.CanManageApp(ctx, u, cc.App.ID)
}

// ConsoleStartUpload starts a resumable upload session of a build into a channel for a console
// user who may manage its app. The session is the user's console upload token's, so only they
// can put its parts' URLs to use, see it or complete it; fields are the upload's form fields.
func (s *Service) ConsoleStartUpload(ctx context.Context, u *User, channelID int64, filename string, size int64, fields map[string]string) (*UploadSession, []SessionPart, error) {
	cc, err := s.ConsoleChannel(ctx, u, channelID)
	if err != nil {
		return nil, nil, err
	}
	tok, err := s.Store.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, nil, err
	}
	in := NewSession{Kind: SessionApp, Filename: filename, Size: size, Fields: map[string]string{}}
	for _, k := range []string{"changelog", "release_type", "branch", "git_commit", "ci_url"} {
		if v := strings.TrimSpace(fields[k]); v != "" {
			in.Fields[k] = v
		}
	}
	in.Fields["channel_key"] = cc.Channel.Slug
	in.Fields["source"] = "console"
	return s.StartSession(ctx, tok, in)
}

// ConsoleUploadSession returns one of the user's console upload sessions with fresh part URLs
// (a client resuming after its URLs expired).
func (s *Service) ConsoleUploadSession(ctx context.Context, u *User, id string) (*UploadSession, []SessionPart, error) {
	tok, err := s.Store.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, nil, err
	}
	return s.Session(ctx, tok, id)
}

// ConsoleCompleteUpload completes one of the user's console upload sessions: the build is parsed
// and recorded as any upload is. The user must still be allowed to manage the channel's app.
func (s *Service) ConsoleCompleteUpload(ctx context.Context, u *User, id string) (*ReleaseContext, error) {
	tok, err := s.Store.UserUploadToken(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	sess, err := s.ownSession(ctx, tok, id)
	if err != nil {
		return nil, err
	}
	cc, err := s.Channel(ctx, sess.Fields["channel_key"])
	if err != nil {
		return nil, err
	}
	if err := s.CanManageApp(ctx, u, cc.App.ID); err != nil {
		return nil, err
	}
	res, err := s.CompleteSession(ctx, tok, id, "")
	if err != nil {
		return nil, err
	}
	if res.Release == nil {
		return nil, errs.New(errs.Invalid, "this upload session is not a build's")
	}
	rc := res.Release
	s.Audit(ctx, u, "release.upload", rc.App.Name+" "+rc.ReleaseVersion+" ("+rc.BuildVersion+")", map[string]any{"release_id": rc.ID, "channel_id": rc.Channel.ID})
	return rc, nil
}

// ConsoleUpdateChannel renames a channel, sets or clears its password, or changes its key.
func (s *Service) ConsoleUpdateChannel(ctx context.Context, u *User, channelID int64, ch ChannelChanges) (*Channel, error) {
	if _, err := s.ConsoleChannel(ctx, u, channelID); err != nil {
		return nil, err
	}
	out, err := s.UpdateChannel(ctx, channelID, ch)
	if err != nil {
		return nil, err
	}
	detail := map[string]any{"channel_id": channelID}
	if ch.Password != nil {
		detail["password"] = map[bool]string{true: "cleared", false: "set"}[*ch.Password == ""]
	}
	if ch.Slug != nil {
		detail["key_changed"] = true
	}
	s.Audit(ctx, u, "channel.update", out.Name, detail)
	return out, nil
}

// ConsoleDeleteChannel deletes a channel with its releases.
func (s *Service) ConsoleDeleteChannel(ctx context.Context, u *User, channelID int64) error {
	cc, err := s.ConsoleChannel(ctx, u, channelID)
	if err != nil {
		return err
	}
	if err := s.DeleteChannel(ctx, channelID); err != nil {
		return err
	}
	s.Audit(ctx, u, "channel.delete", cc.Channel.Name, map[string]any{"channel_id": channelID, "app_id": cc.App.ID})
	return nil
}

// ConsoleDeleteRelease deletes a release (its package goes from storage after the commit).
func (s *Service) ConsoleDeleteRelease(ctx context.Context, u *User, id int64) (*ReleaseContext, error) {
	rc, err := s.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.CanManageApp(ctx, u, rc.App.ID); err != nil {
		return nil, err
	}
	if err := s.DeleteRelease(ctx, id); err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "release.delete", rc.App.Name+" "+rc.ReleaseVersion+" ("+rc.BuildVersion+")", map[string]any{"release_id": id})
	return rc, nil
}

// ConsoleRenameApp renames an app.
func (s *Service) ConsoleRenameApp(ctx context.Context, u *User, appID int64, name string) (*App, error) {
	if err := s.CanManageApp(ctx, u, appID); err != nil {
		return nil, err
	}
	app, err := s.RenameApp(ctx, appID, name)
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "app.rename", app.Name, map[string]any{"app_id": appID})
	return app, nil
}

// ConsoleDeleteApp deletes an app with everything in it (admins only).
func (s *Service) ConsoleDeleteApp(ctx context.Context, u *User, appID int64) error {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return err
	}
	app, err := s.App(ctx, appID)
	if err != nil {
		return err
	}
	if err := s.DestroyApp(ctx, appID); err != nil {
		return err
	}
	s.Audit(ctx, u, "app.delete", app.Name, map[string]any{"app_id": appID})
	return nil
}

// ConsoleWebhook returns a webhook for an admin.
func (s *Service) ConsoleWebhook(ctx context.Context, u *User, id int64) (*Webhook, error) {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return nil, err
	}
	return s.Webhook(ctx, id)
}

// ConsoleTestWebhook queues a test event to a webhook (admins), audited.
func (s *Service) ConsoleTestWebhook(ctx context.Context, u *User, id int64) (*WebhookDelivery, error) {
	w, err := s.ConsoleWebhook(ctx, u, id)
	if err != nil {
		return nil, err
	}
	d, err := s.TestWebhook(ctx, id)
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "webhook.test", w.Format, map[string]any{"webhook_id": id})
	return d, nil
}

// ConsoleDeleteWebhook deletes a webhook (admins), audited.
func (s *Service) ConsoleDeleteWebhook(ctx context.Context, u *User, id int64) (*Webhook, error) {
	w, err := s.ConsoleWebhook(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := s.DeleteWebhook(ctx, id); err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "webhook.delete", w.Format, map[string]any{"webhook_id": id})
	return w, nil
}

// ConsoleDeleteDevice deletes a registered device (admins), audited.
func (s *Service) ConsoleDeleteDevice(ctx context.Context, u *User, udid string) error {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return err
	}
	if err := s.DeleteDevice(ctx, udid); err != nil {
		return err
	}
	s.Audit(ctx, u, "device.delete", udid, nil)
	return nil
}

// Users lists every console user (admins).
func (s *Service) Users(ctx context.Context, by *User) ([]User, error) {
	if err := RequireRole(by, RoleAdmin); err != nil {
		return nil, err
	}
	return s.Store.ListUsers(ctx)
}

// SetUserAccess changes a user's role and disables or enables them (admins). Disabling ends the
// user's sessions on every replica and stops their API tokens at once. An admin cannot change
// their own access, so an installation is never left without one.
func (s *Service) SetUserAccess(ctx context.Context, by *User, id int64, role string, disabled bool) (*User, error) {
	if err := RequireRole(by, RoleAdmin); err != nil {
		return nil, err
	}
	switch role {
	case RoleAdmin, RoleDeveloper, RoleViewer:
	default:
		return nil, errs.Field("role", "must be admin, developer or viewer")
	}
	if id == by.ID {
		return nil, errs.New(errs.Forbidden, "you cannot change your own role or disable yourself; ask another admin")
	}
	u, err := s.Store.SetUserAccess(ctx, id, role, disabled)
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, by, "user.update", u.Email, map[string]any{"user_id": id, "role": role, "disabled": disabled})
	return u, nil
}

// AppMembers lists an app's members (anyone signed in may see who manages an app).
func (s *Service) AppMembers(ctx context.Context, appID int64) ([]User, error) {
	return s.Store.AppMembers(ctx, appID)
}

// RemoveAppMember removes a user from an app (admins), audited. Their role is left as it is.
func (s *Service) RemoveAppMember(ctx context.Context, by *User, appID, userID int64) error {
	if err := RequireRole(by, RoleAdmin); err != nil {
		return err
	}
	if err := s.Store.RemoveAppMember(ctx, appID, userID); err != nil {
		return err
	}
	s.Audit(ctx, by, "member.remove", "", map[string]any{"app_id": appID, "user_id": userID})
	return nil
}

// RecentUploads returns the newest releases across every app, with their install counts.
func (s *Service) RecentUploads(ctx context.Context, limit int) ([]ReleaseContext, error) {
	return s.Store.RecentUploads(ctx, limit)
}

// ConsoleCreateApp makes an empty app (admins: a new app has no members yet), audited.
func (s *Service) ConsoleCreateApp(ctx context.Context, u *User, name string) (*App, error) {
	if err := RequireRole(u, RoleAdmin); err != nil {
		return nil, err
	}
	app, err := s.CreateApp(ctx, name)
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "app.create", app.Name, map[string]any{"app_id": app.ID})
	return app, nil
}

// ConsoleScheme returns a scheme for a console user who may manage its app.
func (s *Service) ConsoleScheme(ctx context.Context, u *User, id int64) (*Scheme, error) {
	sc, err := s.Scheme(ctx, id)
	if err != nil {
		return nil, err
	}
	return sc, s.CanManageApp(ctx, u, sc.AppID)
}

// ConsoleRenameScheme renames a scheme, audited.
func (s *Service) ConsoleRenameScheme(ctx context.Context, u *User, id int64, name string) (*Scheme, error) {
	if _, err := s.ConsoleScheme(ctx, u, id); err != nil {
		return nil, err
	}
	sc, err := s.UpdateScheme(ctx, id, SchemeChanges{Name: &name})
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "scheme.rename", sc.Name, map[string]any{"scheme_id": id})
	return sc, nil
}

// ConsoleDeleteScheme deletes a scheme with its channels and builds, audited.
func (s *Service) ConsoleDeleteScheme(ctx context.Context, u *User, id int64) (*Scheme, error) {
	sc, err := s.ConsoleScheme(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if err := s.DeleteScheme(ctx, id); err != nil {
		return nil, err
	}
	s.Audit(ctx, u, "scheme.delete", sc.Name, map[string]any{"scheme_id": id, "app_id": sc.AppID})
	return sc, nil
}

// ConsoleSetWebhookEnabled pauses or resumes a webhook (admins), audited. A paused webhook is
// sent nothing; its history stays.
func (s *Service) ConsoleSetWebhookEnabled(ctx context.Context, u *User, id int64, enabled bool) (*Webhook, error) {
	if _, err := s.ConsoleWebhook(ctx, u, id); err != nil {
		return nil, err
	}
	w, err := s.UpdateWebhook(ctx, id, WebhookInput{Enabled: &enabled})
	if err != nil {
		return nil, err
	}
	s.Audit(ctx, u, map[bool]string{true: "webhook.enable", false: "webhook.disable"}[enabled], w.Format, map[string]any{"webhook_id": id})
	return w, nil
}
