package web

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The console's other management forms: channel settings and deletion, release pin and delete,
// app rename and deletion, member removal, webhook delivery history and test, devices and users.
// As everywhere in the console, each form is a POST with the CSRF token, authorised on the server
// by the distribution.Console* function it calls, and audited there.

// idParam reads a positive numeric path parameter.
func idParam(c *gin.Context, name, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.New(errs.NotFound, "there is no such %s", what)
	}
	return id, nil
}

// idForm reads a console form's path id (what names it in errors) and checks the signed-in user
// and the form's CSRF token.
func (h *Handler) idForm(c *gin.Context, what string) (int64, string, *distribution.User, error) {
	id, err := idParam(c, "id", what)
	if err != nil {
		return 0, "", nil, err
	}
	session, u, err := h.consoleForm(c)
	return id, session, u, err
}

// confirmed refuses a destructive form whose "confirm" box is not ticked.
func confirmed(c *gin.Context) error {
	if c.PostForm("confirm") == "" {
		return errs.Field("confirm", "must be ticked: this cannot be undone")
	}
	return nil
}

// consoleUpdateChannel: POST /console/channels/:id renames a channel, changes its key, and sets
// or clears its password (an empty password field leaves it as it is).
func (h *Handler) consoleUpdateChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "channel")
	if err != nil {
		return err
	}
	ch := catalog.ChannelChanges{Name: optionalForm(c, "name")}
	if key := strings.TrimSpace(c.PostForm("key")); key != "" {
		ch.Slug = &key
	}
	if pw := c.PostForm("password"); pw != "" {
		ch.Password = &pw
	} else if c.PostForm("clear_password") != "" {
		empty := ""
		ch.Password = &empty
	}
	cc, err := h.svc.Console.Channel(ctx, u, id)
	if err != nil {
		return err
	}
	out, err := h.svc.Console.UpdateChannel(ctx, u, id, ch)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, cc.App.ID, "Channel "+out.Name+" saved.", "")
}

// consoleDeleteChannel: POST /console/channels/:id/delete (with "confirm") deletes a channel and
// its builds.
func (h *Handler) consoleDeleteChannel(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "channel")
	if err != nil {
		return err
	}
	cc, err := h.svc.Console.Channel(ctx, u, id)
	if err != nil {
		return err
	}
	if err := confirmed(c); err != nil {
		return err
	}
	if err := h.svc.Console.DeleteChannel(ctx, u, id); err != nil {
		return err
	}
	return h.renderApp(c, session, u, cc.App.ID, "Channel "+cc.Channel.Name+" deleted with its builds.", "")
}

// consolePinRelease: POST /console/releases/:id/pin (pinned=true|false; admins) keeps a build from
// retention, or lets retention take it again.
func (h *Handler) consolePinRelease(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "release")
	if err != nil {
		return err
	}
	pinned := c.PostForm("pinned") == "true"
	rc, err := h.svc.Console.UpdateRelease(ctx, u, id, catalog.ReleaseChanges{Pinned: &pinned})
	if err != nil {
		return err
	}
	word := "unpinned: retention may delete it"
	if pinned {
		word = "pinned: retention keeps it"
	}
	return h.renderApp(c, session, u, rc.App.ID, "Release "+versionText(&rc.Release)+" "+word+".", "")
}

// consoleDeleteRelease: POST /console/releases/:id/delete (with "confirm").
func (h *Handler) consoleDeleteRelease(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "release")
	if err != nil {
		return err
	}
	if err := confirmed(c); err != nil {
		return err
	}
	rc, err := h.svc.Console.DeleteRelease(ctx, u, id)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, rc.App.ID, "Release "+versionText(&rc.Release)+" deleted.", "")
}

// consoleRenameApp: POST /console/apps/:id (name).
func (h *Handler) consoleRenameApp(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, session, u, err := h.idForm(c, "app")
	if err != nil {
		return err
	}
	app, err := h.svc.Console.RenameApp(ctx, u, appID, c.PostForm("name"))
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, "Renamed to "+app.Name+".", "")
}

// consoleDeleteApp: POST /console/apps/:id/delete (with "confirm"; admins) deletes an app with
// everything in it, then shows the console's home.
func (h *Handler) consoleDeleteApp(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, _, u, err := h.idForm(c, "app")
	if err != nil {
		return err
	}
	if err := distribution.RequireRole(u, distribution.RoleAdmin); err != nil {
		return err
	}
	if err := confirmed(c); err != nil {
		return err
	}
	if err := h.svc.Console.DeleteApp(ctx, u, appID); err != nil {
		return err
	}
	c.Redirect(http.StatusSeeOther, h.links.Base+"/console")
	return nil
}

// consoleRemoveMember: POST /console/apps/:id/members/:user/remove (admins).
func (h *Handler) consoleRemoveMember(c *gin.Context) error {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return err
	}
	userID, err := idParam(c, "user", "member")
	if err != nil {
		return err
	}
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	if err := h.svc.People.RemoveAppMember(ctx, u, appID, userID); err != nil {
		return err
	}
	return h.renderApp(c, session, u, appID, "Member removed from this app.", "")
}

type deliveryView struct {
	ID                    int64
	Event, State, Created string
	Attempts              int
	Last                  string
}

type webhookView struct {
	User       *distribution.User
	CSRF, Base string
	Webhook    *distribution.Webhook
	AppURL     string
	Deliveries []deliveryView
	Notice     string
}

// renderWebhook renders a webhook's page: its newest deliveries and their attempts.
func (h *Handler) renderWebhook(c *gin.Context, session string, u *distribution.User, id int64, notice string) error {
	ctx := reqCtx(c)
	w, err := h.svc.Console.Webhook(ctx, u, id)
	if err != nil {
		return err
	}
	ds, err := h.svc.Webhooks.WebhookDeliveries(ctx, id, 50)
	if err != nil {
		return err
	}
	v := webhookView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Webhook: w, Notice: notice}
	if appID := h.webhookApp(c, w); appID != 0 {
		v.AppURL = h.links.Base + "/console/apps/" + strconv.FormatInt(appID, 10)
	}
	for _, d := range ds {
		dv := deliveryView{ID: d.ID, Event: d.Event, State: d.State, Attempts: d.Attempts, Created: h.when(d.CreatedAt)}
		if n := len(d.History); n > 0 {
			a := d.History[n-1]
			dv.Last = "HTTP " + strconv.Itoa(a.StatusCode) + " in " + a.Latency.Round(time.Millisecond).String()
			if a.StatusCode == 0 {
				dv.Last = "no answer"
			}
			if a.Error != "" {
				dv.Last += ": " + truncateText(a.Error, 200)
			}
		}
		v.Deliveries = append(v.Deliveries, dv)
	}
	h.render(c, http.StatusOK, "webhook", page{Title: "Webhook · Console · Slipway", Body: v}, true)
	return nil
}

// webhookApp is the app a webhook belongs to (directly, or through its channel); 0 if unknown.
func (h *Handler) webhookApp(c *gin.Context, w *distribution.Webhook) int64 {
	ctx := reqCtx(c)
	if w.AppID != 0 {
		return w.AppID
	}
	if cc, err := h.svc.Apps.ChannelByID(ctx, w.ChannelID); err == nil {
		return cc.App.ID
	}
	return 0
}

// consoleWebhook: GET /console/webhooks/:id (admins).
func (h *Handler) consoleWebhook(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	id, err := idParam(c, "id", "webhook")
	if err != nil {
		return err
	}
	return h.renderWebhook(c, session, u, id, "")
}

// consoleTestWebhook: POST /console/webhooks/:id/test queues a test event (admins).
func (h *Handler) consoleTestWebhook(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "webhook")
	if err != nil {
		return err
	}
	if _, err := h.svc.Console.TestWebhook(ctx, u, id); err != nil {
		return err
	}
	return h.renderWebhook(c, session, u, id, "Test event queued; reload to see how it went.")
}

// consoleDeleteWebhook: POST /console/webhooks/:id/delete (admins), then the app's page.
func (h *Handler) consoleDeleteWebhook(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "webhook")
	if err != nil {
		return err
	}
	w, err := h.svc.Console.Webhook(ctx, u, id)
	if err != nil {
		return err
	}
	appID := h.webhookApp(c, w)
	if _, err := h.svc.Console.DeleteWebhook(ctx, u, id); err != nil {
		return err
	}
	if appID == 0 {
		c.Redirect(http.StatusSeeOther, h.links.Base+"/console")
		return nil
	}
	return h.renderApp(c, session, u, appID, "Webhook deleted.", "")
}

type devicesView struct {
	User       *distribution.User
	CSRF, Base string
	Devices    []distribution.Device
	Notice     string
	When       func(t time.Time) string
}

// renderDevices renders the registered devices (developers and admins; admins may delete).
func (h *Handler) renderDevices(c *gin.Context, session string, u *distribution.User, notice string) error {
	ctx := reqCtx(c)
	if err := distribution.RequireRole(u, distribution.RoleDeveloper); err != nil {
		return err
	}
	ds, err := h.svc.Devices.Devices(ctx, distribution.Page{Page: 1, PerPage: 500})
	if err != nil {
		return err
	}
	h.render(c, http.StatusOK, "devices", page{Title: "Devices · Console · Slipway",
		Body: devicesView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Devices: ds, Notice: notice, When: h.when}}, true)
	return nil
}

// consoleDevices: GET /console/devices.
func (h *Handler) consoleDevices(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderDevices(c, session, u, "")
}

// consoleDeleteDevice: POST /console/devices/:udid/delete (admins).
func (h *Handler) consoleDeleteDevice(c *gin.Context) error {
	ctx := reqCtx(c)
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	if err := h.svc.Console.DeleteDevice(ctx, u, c.Param("udid")); err != nil {
		return err
	}
	return h.renderDevices(c, session, u, "Device "+c.Param("udid")+" deleted.")
}

type usersView struct {
	User       *distribution.User
	CSRF, Base string
	Users      []distribution.User
	Roles      []string
	Notice     string
	When       func(t *time.Time) string
}

func (h *Handler) renderUsers(c *gin.Context, session string, u *distribution.User, notice string) error {
	ctx := reqCtx(c)
	users, err := h.svc.People.Users(ctx, u)
	if err != nil {
		return err
	}
	h.render(c, http.StatusOK, "users", page{Title: "People · Console · Slipway",
		Body: usersView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Users: users, Notice: notice, When: func(t *time.Time) string { return h.when(*t) },
			Roles: []string{distribution.RoleAdmin, distribution.RoleDeveloper, distribution.RoleViewer}}}, true)
	return nil
}

// consoleUsers: GET /console/users (admins).
func (h *Handler) consoleUsers(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderUsers(c, session, u, "")
}

// consoleUpdateUser: POST /console/users/:id (role, disabled; admins). Disabling ends the user's
// sessions and stops their tokens at once.
func (h *Handler) consoleUpdateUser(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "user")
	if err != nil {
		return err
	}
	out, err := h.svc.People.SetUserAccess(ctx, u, id, c.PostForm("role"), c.PostForm("disabled") != "")
	if err != nil {
		return err
	}
	state := "enabled"
	if out.DisabledAt != nil {
		state = "disabled"
	}
	return h.renderUsers(c, session, u, out.Email+" is now a "+out.Role+", "+state+".")
}

// consoleCreateApp: POST /console/apps (name; admins) makes an empty app and shows its page.
func (h *Handler) consoleCreateApp(c *gin.Context) error {
	ctx := reqCtx(c)
	session, u, err := h.consoleForm(c)
	if err != nil {
		return err
	}
	app, err := h.svc.Console.CreateApp(ctx, u, c.PostForm("name"))
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, app.ID, "App "+app.Name+" made. Add a channel, then upload a build.", "")
}

// consoleRenameScheme: POST /console/schemes/:id (name).
func (h *Handler) consoleRenameScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "scheme")
	if err != nil {
		return err
	}
	sc, err := h.svc.Console.RenameScheme(ctx, u, id, c.PostForm("name"))
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, sc.AppID, "Scheme renamed to "+sc.Name+".", "")
}

// consoleDeleteScheme: POST /console/schemes/:id/delete (with "confirm") deletes a scheme with
// its channels and builds.
func (h *Handler) consoleDeleteScheme(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "scheme")
	if err != nil {
		return err
	}
	if _, err := h.svc.Console.Scheme(ctx, u, id); err != nil {
		return err
	}
	if err := confirmed(c); err != nil {
		return err
	}
	sc, err := h.svc.Console.DeleteScheme(ctx, u, id)
	if err != nil {
		return err
	}
	return h.renderApp(c, session, u, sc.AppID, "Scheme "+sc.Name+" deleted with its channels and builds.", "")
}

// consoleEnableWebhook: POST /console/webhooks/:id/enabled (enabled=true|false; admins).
func (h *Handler) consoleEnableWebhook(c *gin.Context) error {
	ctx := reqCtx(c)
	id, session, u, err := h.idForm(c, "webhook")
	if err != nil {
		return err
	}
	w, err := h.svc.Console.SetWebhookEnabled(ctx, u, id, c.PostForm("enabled") == "true")
	if err != nil {
		return err
	}
	notice := "Webhook paused: nothing is sent to it until it is resumed."
	if w.Enabled {
		notice = "Webhook resumed."
	}
	return h.renderWebhook(c, session, u, id, notice)
}

// consoleExportDevices: GET /console/devices/export, the devices in the Apple developer portal's
// "register multiple devices" file (developers and admins).
func (h *Handler) consoleExportDevices(c *gin.Context) error {
	ctx := reqCtx(c)
	_, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	if err := distribution.RequireRole(u, distribution.RoleDeveloper); err != nil {
		return err
	}
	body, err := h.svc.Devices.ExportDevices(ctx)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "private, no-store")
	c.Header("Content-Disposition", `attachment; filename="devices.txt"`)
	c.Data(http.StatusOK, "text/plain; charset=utf-8", body)
	return nil
}
