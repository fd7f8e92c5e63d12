package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// The console's app page: schemes and channels with their newest releases, and the forms that
// change them. Every form is a POST with the CSRF token, authorised on the server
// (distribution.CanManageApp), audited, and answered with the app page again.

type consoleChannelView struct {
	ID, SchemeID int64
	// FirstOfScheme marks the scheme's first channel, where the scheme's own forms go.
	FirstOfScheme                      bool
	Name, Scheme, Key, DeviceType, URL string
	HasPassword                        bool
	Releases                           []consoleReleaseView
	Retention                          distribution.RetentionRules
	// Own is the channel's own policy, as its form shows it ("" inherits).
	Own struct{ KeepBuilds, MaxAgeDays, MaxBytes, ExpiredProfileDays string }
	// OlderURL and NewerURL page through the channel's builds.
	OlderURL, NewerURL string
	// Doomed is what retention deletes at its next run, with the reason ("retention plan").
	Doomed   []string
	Webhooks []distribution.Webhook
}

type consoleReleaseView struct {
	ID                                 int64
	Version, Uploaded, Changelog, Edit string
	Downloads                          int64
	Pinned                             bool
}

type consoleAppView struct {
	App       *distribution.App
	User      *distribution.User
	CSRF      string
	Base      string
	CanManage bool
	Channels  []consoleChannelView
	Members   []distribution.User
	// AppWebhooks are the app's own webhooks (every channel); Events those one may choose.
	AppWebhooks []distribution.Webhook
	Events      []string
	// EmptySchemes are schemes without channels (made with the API), shown so they can be
	// renamed or deleted.
	EmptySchemes []distribution.Scheme
	// Notice is a message from the last form; Secret a webhook secret shown once.
	Notice, Secret string
}

// schemeForm is what the rename and delete forms of a scheme need.
type schemeForm struct {
	ID               int64
	Name, CSRF, Base string
}

// SchemeForm gives the app page's scheme forms (template "scheme-forms") their data.
func (v consoleAppView) SchemeForm(id int64, name string) schemeForm {
	return schemeForm{ID: id, Name: name, CSRF: v.CSRF, Base: v.Base}
}

func (h *Handler) appIDParam(c *gin.Context) (int64, error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.New(errs.NotFound, "there is no such app")
	}
	return id, nil
}

// buildsPerPage is how many builds a channel shows at once in the console.
const buildsPerPage = 10

// renderApp renders an app's console page.
func (h *Handler) renderApp(c *gin.Context, session string, u *distribution.User, appID int64, notice, secret string) error {
	ctx := reqCtx(c)
	app, err := h.svc.Apps.App(ctx, appID)
	if err != nil {
		return err
	}
	v := consoleAppView{App: app, User: u, CSRF: h.csrfToken(session), Base: h.links.Base, CanManage: h.svc.People.CanManageApp(ctx, u, appID) == nil,
		Notice: notice, Secret: secret}
	for _, sc := range app.Schemes {
		if len(sc.Channels) == 0 {
			v.EmptySchemes = append(v.EmptySchemes, sc)
		}
		for _, ch := range sc.Channels {
			cv := consoleChannelView{ID: ch.ID, SchemeID: sc.ID, FirstOfScheme: len(v.Channels) == 0 || v.Channels[len(v.Channels)-1].SchemeID != sc.ID, Name: ch.Name, Scheme: sc.Name, Key: ch.Slug, DeviceType: ch.DeviceType,
				URL: h.links.Channel(ch.Slug), HasPassword: ch.HasPassword()}
			// Ten builds a channel; the channel named by ?channel= shows its page ?page=.
			pg := 1
			if c.Query("channel") == strconv.FormatInt(ch.ID, 10) {
				if n, err := strconv.Atoi(c.Query("page")); err == nil && n > 1 && n <= 100_000 {
					pg = n
				}
			}
			rels, err := h.svc.Releases.ChannelReleases(ctx, ch.ID, distribution.Page{Page: pg, PerPage: buildsPerPage})
			if err != nil {
				return err
			}
			if len(rels) == buildsPerPage { // (a full page: there may be older builds)
				cv.OlderURL = fmt.Sprintf("%s/console/apps/%d?channel=%d&page=%d#channel-%d", h.links.Base, appID, ch.ID, pg+1, ch.ID)
			}
			if pg > 1 {
				cv.NewerURL = fmt.Sprintf("%s/console/apps/%d?channel=%d&page=%d#channel-%d", h.links.Base, appID, ch.ID, pg-1, ch.ID)
			}
			for _, r := range rels {
				cv.Releases = append(cv.Releases, consoleReleaseView{ID: r.ID, Version: versionText(&r), Uploaded: h.when(r.CreatedAt),
					Changelog: distribution.TextChangelog(r.Changelog), Edit: h.links.Base + "/console/releases/" + strconv.FormatInt(r.ID, 10),
					Downloads: r.Downloads, Pinned: r.Pinned})
			}
			// One read of the channel's retention state gives its policy, rules and plan.
			if plan, err := h.svc.Retention.PlanChannelRetention(ctx, ch.ID, nil); err == nil {
				own := plan.Policy
				cv.Retention = plan.Rules
				cv.Own.KeepBuilds, cv.Own.MaxAgeDays = optNumber(own.KeepBuilds), optNumber(own.MaxAgeDays)
				cv.Own.ExpiredProfileDays = optNumber(own.ExpiredProfileDays)
				if own.MaxBytes != nil {
					cv.Own.MaxBytes = strconv.FormatInt(*own.MaxBytes, 10)
				}
				for _, v := range plan.Victims {
					cv.Doomed = append(cv.Doomed, fmt.Sprintf("build %d (%s, %s, uploaded %s): %s", v.ID, v.Platform, humanSize(v.Size), h.when(v.CreatedAt), strings.ReplaceAll(v.Reason, "_", " ")))
				}
			}
			if v.CanManage && u.Role == distribution.RoleAdmin {
				if cv.Webhooks, err = h.svc.Webhooks.ListWebhooks(ctx, 0, ch.ID); err != nil {
					return err
				}
			}
			v.Channels = append(v.Channels, cv)
		}
	}
	v.Events = webhook.Events
	if v.CanManage && u.Role == distribution.RoleAdmin {
		if v.AppWebhooks, err = h.svc.Webhooks.ListWebhooks(ctx, appID, 0); err != nil {
			return err
		}
	}
	if v.Members, err = h.svc.People.AppMembers(ctx, appID); err != nil {
		return err
	}
	p := page{Title: app.Name + " · Console · Slipway", Body: v}
	if v.CanManage {
		p.Script = h.links.Static("console.js")
	}
	h.render(c, http.StatusOK, "app", p, true)
	return nil
}

// consoleApp: GET /console/apps/:id.
func (h *Handler) consoleApp(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	id, err := h.appIDParam(c)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, id, "", "")
}

// appForm checks the session, the CSRF token and that the user may manage the app.
func (h *Handler) appForm(c *gin.Context, appID int64) (string, *distribution.User, error) {
	ctx := reqCtx(c)
	session, u, err := h.consoleForm(c)
	if err != nil {
		return "", nil, err
	}
	return session, u, h.svc.People.CanManageApp(ctx, u, appID)
}

func optionalForm(c *gin.Context, name string) *string {
	if v, ok := c.GetPostForm(name); ok {
		return &v
	}
	return nil
}

// consoleCreateChannel: POST /console/apps/:id/channels makes a channel (and its scheme when new).
func (h *Handler) consoleCreateChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return err
	}
	session, u, err := h.appForm(c, appID)
	if err != nil {
		return err
	}
	ctx = actingAs(c, u)
	schemeName := strings.TrimSpace(c.PostForm("scheme"))
	schemeID, err := h.schemeNamed(c, appID, schemeName)
	if err != nil {
		return err
	}
	ch := catalog.ChannelChanges{Name: optionalForm(c, "name"), DeviceType: optionalForm(c, "device_type")}
	if pw := c.PostForm("password"); pw != "" {
		ch.Password = &pw
	}
	made, err := h.svc.Apps.CreateChannel(ctx, schemeID, ch)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, "Channel "+made.Name+" made; its key is "+made.Slug+".", "")
}

// schemeNamed returns the app's scheme of that name, making it when missing.
func (h *Handler) schemeNamed(c *gin.Context, appID int64, name string) (int64, error) {
	ctx := reqCtx(c)
	schemes, err := h.svc.Apps.Schemes(ctx, appID)
	if err != nil {
		return 0, err
	}
	for _, s := range schemes {
		if strings.EqualFold(s.Name, name) {
			return s.ID, nil
		}
	}
	s, err := h.svc.Apps.CreateScheme(ctx, appID, catalog.SchemeChanges{Name: &name})
	if err != nil {
		return 0, err
	}
	return s.ID, nil
}

// channelApp returns the app a channel belongs to.
func (h *Handler) channelApp(c *gin.Context) (int64, int64, error) {
	ctx := reqCtx(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, 0, errs.New(errs.NotFound, "there is no such channel")
	}
	cc, err := h.svc.Apps.ChannelByID(ctx, id)
	if err != nil {
		return 0, 0, err
	}
	return id, cc.App.ID, nil
}

// consoleSetRetention: POST /console/channels/:id/retention (empty fields inherit).
func (h *Handler) consoleSetRetention(c *gin.Context) error {
	ctx := reqCtx(c)
	chID, appID, err := h.channelApp(c)
	if err != nil {
		return err
	}
	session, u, err := h.appForm(c, appID)
	if err != nil {
		return err
	}
	ctx = actingAs(c, u)
	var p distribution.RetentionPolicy
	for field, dst := range map[string]**int{"keep_builds": &p.KeepBuilds, "max_age_days": &p.MaxAgeDays, "expired_profile_days": &p.ExpiredProfileDays} {
		if v := strings.TrimSpace(c.PostForm(field)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return errs.Field(field, "must be a whole number, or empty to inherit")
			}
			*dst = &n
		}
	}
	if v := strings.TrimSpace(c.PostForm("max_bytes")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errs.Field("max_bytes", "must be a whole number, or empty to inherit")
		}
		p.MaxBytes = &n
	}
	if c.PostForm("preview") != "" {
		// Show what this policy would delete, without saving it.
		plan, err := h.svc.Retention.PlanChannelRetention(ctx, chID, &p)
		if err != nil {
			return err
		}
		notice := "With this policy, the next run would delete nothing. Nothing was saved."
		if n := len(plan.Victims); n > 0 {
			ids := make([]string, n)
			for i, v := range plan.Victims {
				ids[i] = strconv.FormatInt(v.ID, 10)
			}
			notice = fmt.Sprintf("With this policy, the next run would delete %d builds (ids %s). Nothing was saved.", n, strings.Join(ids, ", "))
		}
		return h.renderApp(c, session, u, appID, notice, "")
	}
	if err := h.svc.Retention.SetChannelRetention(ctx, chID, &p); err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, "Retention saved. It applies at the next enforcement run.", "")
}

// consoleCreateWebhook: POST /console/channels/:id/webhooks (admins); the secret is shown once.
func (h *Handler) consoleCreateWebhook(c *gin.Context) error {
	chID, appID, err := h.channelApp(c)
	if err != nil {
		return err
	}
	return h.createWebhook(c, appID, 0, chID)
}

// consoleCreateAppWebhook: POST /console/apps/:id/webhooks (admins): a webhook of every channel
// of the app (and of its debug files).
func (h *Handler) consoleCreateAppWebhook(c *gin.Context) error {
	appID, err := h.appIDParam(c)
	if err != nil {
		return err
	}
	return h.createWebhook(c, appID, appID, 0)
}

// createWebhook makes an app's (hookApp) or a channel's webhook from the form: url, format and
// the events ticked (none ticked: every event).
func (h *Handler) createWebhook(c *gin.Context, appID, hookApp, hookChannel int64) error {
	ctx := reqCtx(c)
	session, u, err := h.appForm(c, appID)
	if err != nil {
		return err
	}
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	ctx = actingAs(c, u)
	in := events.WebhookInput{URL: optionalForm(c, "url"), Format: optionalForm(c, "format")}
	if evs := c.PostFormArray("events"); len(evs) > 0 {
		in.Events = evs
	}
	if rs := strings.TrimSpace(c.PostForm("robot_secret")); rs != "" {
		in.RobotSecret = &rs
	}
	w, err := h.svc.Webhooks.CreateWebhook(ctx, hookApp, hookChannel, in)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, "Webhook added. Its signing secret is shown once:", w.Secret)
}

// consoleUpdateRelease: POST /console/releases/:id edits a release's changelog.
func (h *Handler) consoleUpdateRelease(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errs.New(errs.NotFound, "there is no such release")
	}
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	rc, err := h.svc.Console.UpdateRelease(ctx, u, id, catalog.ReleaseChanges{Changelog: optionalForm(c, "changelog")})
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, rc.App.ID, "Release "+versionText(&rc.Release)+" saved.", "")
}

// consoleAddMember: POST /console/apps/:id/members (admins) makes someone a developer of the app.
func (h *Handler) consoleAddMember(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, session, u, err := h.idForm(c, "app")
	if err != nil {
		return err
	}
	email := c.PostForm("email")
	if err := h.svc.People.AddAppMember(ctx, u, appID, email); err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, email+" is now a developer of this app.", "")
}

// optNumber shows an optional number in a form field ("" when unset).
func optNumber(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}
