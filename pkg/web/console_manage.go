package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
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

// confirmed refuses a destructive form whose "confirm" box is not ticked.
func confirmed(c *gin.Context) error {
	if c.PostForm("confirm") == "" {
		return errs.Field("confirm", "must be ticked: this cannot be undone")
	}
	return nil
}

// manageChannel reads a channel the request's actor may manage (its app's ManageApp).
func (h *Handler) manageChannel(c *gin.Context, id int64) (*distribution.ChannelContext, error) {
	cc, err := h.svc.Apps.ChannelByID(reqCtx(c), id)
	if err != nil {
		return nil, err
	}
	return cc, h.may(c, policy.ManageApp, policy.OnApp(cc.App.ID))
}

// manageScheme reads a scheme the request's actor may manage (its app's ManageApp).
func (h *Handler) manageScheme(c *gin.Context, id int64) (*distribution.Scheme, error) {
	sc, err := h.svc.Apps.Scheme(reqCtx(c), id)
	if err != nil {
		return nil, err
	}
	return sc, h.may(c, policy.ManageApp, policy.OnApp(sc.AppID))
}

// consoleUpdateChannel: POST /console/channels/:id renames a channel, changes its key, and sets
// or clears its password (an empty password field leaves it as it is).
func (h *Handler) consoleUpdateChannel(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	cc, err := h.manageChannel(c, id)
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "channel-settings-"+strconv.FormatInt(id, 10), channelLabels)
	ch := catalog.ChannelChanges{Name: optionalForm(c, "name")}
	if ch.Name != nil {
		name := strings.TrimSpace(*ch.Name)
		if err := h.channelNameFree(c, cc.App.ID, cc.Scheme.Name, name, id); err != nil {
			return "", err
		}
	}
	if key := strings.TrimSpace(c.PostForm("key")); key != "" {
		ch.Slug = &key
	}
	if pw := c.PostForm("password"); pw != "" {
		ch.Password = &pw
	} else if c.PostForm("clear_password") != "" {
		empty := ""
		ch.Password = &empty
	}
	out, err := h.svc.Apps.UpdateChannel(ctx, id, ch)
	if err != nil {
		return "", err
	}
	f.ok("Channel %s saved.", out.Name)
	return h.channelURL(id), nil
}

// consoleDeleteChannel: POST /console/channels/:id/delete (with "confirm") deletes a channel and
// its builds.
func (h *Handler) consoleDeleteChannel(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	cc, err := h.manageChannel(c, id)
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "delete-channel-"+strconv.FormatInt(id, 10), nil)
	if err := confirmed(c); err != nil {
		return "", err
	}
	if err := h.svc.Apps.DeleteChannel(ctx, id); err != nil {
		return "", err
	}
	f.ok("Channel %s deleted with its builds.", cc.Channel.Name)
	return h.appURL(cc.App.ID), nil
}

// consolePinRelease: POST /console/releases/:id/pin (pinned=true|false; admins) keeps a build from
// retention, or lets retention take it again.
func (h *Handler) consolePinRelease(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "release")
	if err != nil {
		return "", err
	}
	pinned := c.PostForm("pinned") == "true"
	rc, err := h.svc.Releases.UpdateRelease(ctx, id, catalog.ReleaseChanges{Pinned: &pinned})
	if err != nil {
		return "", err
	}
	word := "unpinned: retention may delete it"
	if pinned {
		word = "pinned: retention keeps it"
	}
	f.ok("Release %s %s.", versionText(&rc.Release), word)
	return h.buildURL(id), nil
}

// consoleDeleteRelease: POST /console/releases/:id/delete (with "confirm").
func (h *Handler) consoleDeleteRelease(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "release")
	if err != nil {
		return "", err
	}
	h.onBuild(c, f, id, "delete-release-"+strconv.FormatInt(id, 10), nil)
	if err := confirmed(c); err != nil {
		return "", err
	}
	rc, err := h.svc.Releases.Release(ctx, id)
	if err != nil {
		return "", err
	}
	if err := h.svc.Releases.DeleteRelease(ctx, id); err != nil {
		return "", err
	}
	f.ok("Release %s deleted.", versionText(&rc.Release))
	return h.channelURL(rc.Channel.ID) + "#builds", nil
}

// consoleRenameApp: POST /console/apps/:id (name).
func (h *Handler) consoleRenameApp(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := idParam(c, "id", "app")
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ManageApp, policy.OnApp(appID)); err != nil {
		return "", err
	}
	h.onApp(c, f, appID, "rename-app", nil)
	name := strings.TrimSpace(c.PostForm("name"))
	if err := h.appNameFree(c, name, appID); err != nil {
		return "", err
	}
	app, err := h.svc.Apps.RenameApp(ctx, appID, name)
	if err != nil {
		return "", err
	}
	f.ok("Renamed to %s.", app.Name)
	return h.appURL(appID), nil
}

// appNameFree refuses a second app of the same name (the console's rule; the API, as Zealot,
// allows it: docs/decisions.md, "Console forms").
func (h *Handler) appNameFree(c *gin.Context, name string, except int64) error {
	ctx := reqCtx(c)
	for pg := 1; pg <= 1000; pg++ {
		apps, err := h.svc.Apps.ListApps(ctx, distribution.Page{Page: pg, PerPage: 100})
		if err != nil {
			return err
		}
		for _, a := range apps {
			if a.ID != except && strings.EqualFold(strings.TrimSpace(a.Name), name) {
				return errs.Field("name", "is already the name of another app; choose another name")
			}
		}
		if len(apps) < 100 {
			return nil
		}
	}
	return nil
}

// consoleDeleteApp: POST /console/apps/:id/delete (with "confirm"; admins) deletes an app with
// everything in it, then shows the console's home.
func (h *Handler) consoleDeleteApp(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := idParam(c, "id", "app")
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.DeleteApp, policy.OnApp(appID)); err != nil {
		return "", err
	}
	app, err := h.svc.Apps.App(ctx, appID)
	if err != nil {
		return "", err
	}
	h.onApp(c, f, appID, "delete-app", nil)
	if err := confirmed(c); err != nil {
		return "", err
	}
	if err := h.svc.Apps.DestroyApp(ctx, appID); err != nil {
		return "", err
	}
	f.ok("App %s deleted with its channels and builds.", app.Name)
	return h.links.Base + "/console", nil
}

// consoleRemoveMember: POST /console/apps/:id/members/:user/remove (admins).
func (h *Handler) consoleRemoveMember(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return "", err
	}
	userID, err := idParam(c, "user", "member")
	if err != nil {
		return "", err
	}
	if err := h.svc.People.RemoveAppMember(ctx, appID, userID); err != nil {
		return "", err
	}
	f.ok("Member removed from this app.")
	return h.appURL(appID) + "#members", nil
}

type deliveryView struct {
	ID                    int64
	Event, State, Created string
	Attempts              int
	Last                  string
	// Payload is the body as sent (indented when JSON); Tries every attempt, oldest first.
	Payload string
	Tries   []string
}

type webhookView struct {
	User       *distribution.User
	CSRF, Base string
	Webhook    *distribution.Webhook
	AppURL     string
	Deliveries []deliveryView
	Form       formState
	// Formats and Events are what the edit form offers; GuideURL says how to verify a delivery.
	Formats, Events []string
	GuideURL        string
}

// Subscribed reports whether the edit form ticks event: the webhook names it (none named: every
// event, and none is ticked).
func (v webhookView) Subscribed(event string) bool { return slices.Contains(v.Webhook.Events, event) }

// RobotSigned reports whether a format's robot may require its own signature (the robot secret).
func (v webhookView) RobotSigned(format string) bool { return webhook.RobotSigned(format) }

// webhookURL is a webhook's console page.
func (h *Handler) webhookURL(id int64) string {
	return h.links.Base + "/console/webhooks/" + strconv.FormatInt(id, 10)
}

// renderWebhook renders a webhook's page: its newest deliveries and their attempts.
func (h *Handler) renderWebhook(c *gin.Context, session string, u *distribution.User, id int64, form formState, status int) error {
	ctx := reqCtx(c)
	w, err := h.svc.Webhooks.Webhook(ctx, id)
	if err != nil {
		return err
	}
	ds, err := h.svc.Webhooks.WebhookDeliveries(ctx, id, 50)
	if err != nil {
		return err
	}
	v := webhookView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Webhook: w, Form: form,
		Formats: webhook.Formats, Events: webhook.Events, GuideURL: h.links.Base + "/docs/webhooks#verifying-a-delivery"}
	crumbs := []crumb{{Text: "Apps", URL: h.links.Base + "/console"}}
	if appID := h.webhookApp(c, w); appID != 0 {
		v.AppURL = h.appURL(appID)
		if app, err := h.svc.Apps.App(ctx, appID); err == nil {
			crumbs = append(crumbs, crumb{Text: app.Name, URL: v.AppURL})
		}
	}
	if w.ChannelID != 0 { // (a channel's webhook: its channel's page, where it was added)
		if cc, err := h.svc.Apps.ChannelByID(ctx, w.ChannelID); err == nil {
			crumbs = append(crumbs, crumb{Text: cc.Scheme.Name + " · " + cc.Channel.Name, URL: h.channelURL(cc.Channel.ID)})
		}
	}
	crumbs = append(crumbs, crumb{Text: "Webhook"})
	for _, d := range ds {
		dv := deliveryView{ID: d.ID, Event: d.Event, State: d.State, Attempts: d.Attempts, Created: h.when(d.CreatedAt),
			Payload: indentJSON(d.Payload)}
		for _, a := range d.History {
			try := h.when(a.At) + ": "
			if a.StatusCode == 0 {
				try += "no answer"
			} else {
				try += "HTTP " + strconv.Itoa(a.StatusCode)
			}
			try += " in " + a.Latency.Round(time.Millisecond).String()
			if a.Error != "" {
				try += ": " + truncateText(a.Error, 500)
			}
			dv.Tries = append(dv.Tries, try)
		}
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
	h.consoleRender(c, status, "webhook", page{Title: "Webhook · Console · Slipway", Body: v, Crumbs: crumbs}, session, u)
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
	return h.renderWebhook(c, session, u, id, formState{}, http.StatusOK)
}

// onWebhook makes a form of the webhook page show its failure in place.
func (h *Handler) onWebhook(c *gin.Context, f *formCall, id int64, formID string) {
	f.inPlace(formID, nil, func(s formState) error {
		return h.renderWebhook(c, f.session, f.user, id, s, http.StatusUnprocessableEntity)
	})
}

// consoleTestWebhook: POST /console/webhooks/:id/test queues a test event (admins).
func (h *Handler) consoleTestWebhook(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "webhook")
	if err != nil {
		return "", err
	}
	if _, err := h.svc.Webhooks.TestWebhook(ctx, id); err != nil {
		return "", err
	}
	f.ok("Test event queued; reload to see how it went.")
	return h.webhookURL(id), nil
}

// consoleDeleteWebhook: POST /console/webhooks/:id/delete (with "confirm"; admins), then the
// app's page.
func (h *Handler) consoleDeleteWebhook(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "webhook")
	if err != nil {
		return "", err
	}
	w, err := h.svc.Webhooks.Webhook(ctx, id)
	if err != nil {
		return "", err
	}
	h.onWebhook(c, f, id, "delete-webhook-form")
	if err := confirmed(c); err != nil {
		return "", err
	}
	appID := h.webhookApp(c, w)
	if err := h.svc.Webhooks.DeleteWebhook(ctx, id); err != nil {
		return "", err
	}
	f.ok("Webhook deleted.")
	if appID == 0 {
		return h.links.Base + "/console", nil
	}
	return h.appURL(appID), nil
}

type devicesView struct {
	User       *distribution.User
	CSRF, Base string
	Devices    []distribution.Device
	When       func(t time.Time) string
	Form       formState
	Can        grants
}

// renderDevices renders the registered devices (developers and admins; admins may delete).
func (h *Handler) renderDevices(c *gin.Context, session string, u *distribution.User, form formState, status int) error {
	ctx := reqCtx(c)
	ds, err := h.svc.Devices.Devices(ctx, distribution.Page{Page: 1, PerPage: 500})
	if err != nil {
		return err
	}
	h.consoleRender(c, status, "devices", page{Title: "Devices · Console · Slipway",
		Body: devicesView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Devices: ds, When: h.when, Form: form, Can: h.grants(c, 0)}}, session, u)
	return nil
}

// consoleDevices: GET /console/devices.
func (h *Handler) consoleDevices(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderDevices(c, session, u, formState{}, http.StatusOK)
}

// consoleDeleteDevice: POST /console/devices/:udid/delete (with "confirm"; admins).
func (h *Handler) consoleDeleteDevice(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	udid := c.Param("udid")
	if err := h.may(c, policy.ManageDevices, policy.Installation); err != nil {
		return "", err
	}
	f.inPlace("delete-device-"+udid, nil, func(s formState) error {
		return h.renderDevices(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	if err := confirmed(c); err != nil {
		return "", err
	}
	if err := h.svc.Devices.DeleteDevice(ctx, udid); err != nil {
		return "", err
	}
	f.ok("Device %s deleted.", udid)
	return h.links.Base + "/console/devices", nil
}

// consoleApproveDevice: POST /console/devices/:udid/approve (admins) lets a device registered by
// an unverified answer into the export.
func (h *Handler) consoleApproveDevice(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	udid := c.Param("udid")
	if _, err := h.svc.Devices.ApproveDevice(ctx, udid); err != nil {
		return "", err
	}
	f.ok("Device %s approved: it is in the export now.", udid)
	return h.links.Base + "/console/devices", nil
}

type usersView struct {
	User       *distribution.User
	CSRF, Base string
	Users      []distribution.User
	// Invitations are the open invitations (to the console and to apps).
	Invitations []distribution.Invitation
	Roles       []string
	When        func(t *time.Time) string
	Form        formState
}

func (h *Handler) renderUsers(c *gin.Context, session string, u *distribution.User, form formState, status int) error {
	ctx := reqCtx(c)
	users, err := h.svc.People.ListUsers(ctx)
	if err != nil {
		return err
	}
	invitations, err := h.svc.Colleagues.Invitations(ctx, 0)
	if err != nil {
		return err
	}
	h.consoleRender(c, status, "users", page{Title: "People · Console · Slipway",
		Body: usersView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Users: users, Invitations: invitations,
			When:  func(t *time.Time) string { return h.when(*t) },
			Roles: []string{distribution.RoleAdmin, distribution.RoleDeveloper, distribution.RoleViewer}, Form: form}}, session, u)
	return nil
}

// consoleUsers: GET /console/users (admins).
func (h *Handler) consoleUsers(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderUsers(c, session, u, formState{}, http.StatusOK)
}

// consoleUpdateUser: POST /console/users/:id (role, disabled; admins). Disabling ends the user's
// sessions and stops their tokens at once.
func (h *Handler) consoleUpdateUser(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "user")
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ManagePeople, policy.Installation); err != nil {
		return "", err
	}
	f.inPlace("user-form-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"role": {"role", "Role"}}, func(s formState) error {
		return h.renderUsers(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	out, err := h.svc.People.SetUserAccess(ctx, id, c.PostForm("role"), c.PostForm("disabled") != "")
	if err != nil {
		return "", err
	}
	state := "enabled"
	if out.DisabledAt != nil {
		state = "disabled"
	}
	f.ok("%s is now %s, %s.", out.Email, distribution.WithArticle(out.Role), state)
	return h.links.Base + "/console/users", nil
}

// consoleCreateApp: POST /console/apps (name; admins) makes an empty app and shows its page.
func (h *Handler) consoleCreateApp(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	if err := h.may(c, policy.CreateApp, policy.Installation); err != nil {
		return "", err
	}
	f.inPlace("create-app", map[string]fieldLabel{"name": {"name", "New app"}}, func(s formState) error {
		return h.renderHome(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
	name := strings.TrimSpace(c.PostForm("name"))
	if err := h.appNameFree(c, name, 0); err != nil {
		return "", err
	}
	app, err := h.svc.Apps.CreateApp(ctx, name)
	if err != nil {
		return "", err
	}
	f.ok("App %s made. Add a channel, then upload a build.", app.Name)
	return h.appURL(app.ID), nil
}

// consoleRenameScheme: POST /console/schemes/:id (name).
func (h *Handler) consoleRenameScheme(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "scheme")
	if err != nil {
		return "", err
	}
	sc, err := h.manageScheme(c, id)
	if err != nil {
		return "", err
	}
	h.onApp(c, f, sc.AppID, "scheme-settings-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"name": {"name", "Scheme name"}})
	name := c.PostForm("name")
	sc, err = h.svc.Apps.UpdateScheme(ctx, id, catalog.SchemeChanges{Name: &name})
	if err != nil {
		return "", err
	}
	f.ok("Scheme renamed to %s.", sc.Name)
	return h.appURL(sc.AppID), nil
}

// consoleDeleteScheme: POST /console/schemes/:id/delete (with "confirm") deletes a scheme with
// its channels and builds.
func (h *Handler) consoleDeleteScheme(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "scheme")
	if err != nil {
		return "", err
	}
	sc, err := h.manageScheme(c, id)
	if err != nil {
		return "", err
	}
	h.onApp(c, f, sc.AppID, "delete-scheme-"+strconv.FormatInt(id, 10), nil)
	if err := confirmed(c); err != nil {
		return "", err
	}
	if err := h.svc.Apps.DeleteScheme(ctx, id); err != nil {
		return "", err
	}
	f.ok("Scheme %s deleted with its channels and builds.", sc.Name)
	return h.appURL(sc.AppID), nil
}

// indentJSON shows a delivery's body: indented when it is JSON, else as it is (at most 64 KiB).
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") == nil {
		return truncateText(out.String(), 64<<10)
	}
	return truncateText(string(b), 64<<10)
}

// consoleUpdateWebhook: POST /console/webhooks/:id changes a webhook's URL, format, events and
// robot secret (blank: kept) (admins). Its signing secret stays.
func (h *Handler) consoleUpdateWebhook(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "webhook")
	if err != nil {
		return "", err
	}
	f.inPlace("edit-webhook", webhookLabels, func(s formState) error {
		return h.renderWebhook(c, f.session, f.user, id, s, http.StatusUnprocessableEntity)
	})
	in := events.WebhookInput{URL: optionalForm(c, "url"), Format: optionalForm(c, "format"), Events: c.PostFormArray("events")}
	if in.Events == nil {
		in.Events = []string{} // none ticked: every event
	}
	if rs := strings.TrimSpace(c.PostForm("robot_secret")); rs != "" {
		in.RobotSecret = &rs
	}
	if _, err := h.svc.Webhooks.UpdateWebhook(ctx, id, in); err != nil {
		return "", err
	}
	f.ok("Webhook saved.")
	return h.webhookURL(id), nil
}

// consoleEnableWebhook: POST /console/webhooks/:id/enabled (enabled=true|false; admins).
func (h *Handler) consoleEnableWebhook(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "webhook")
	if err != nil {
		return "", err
	}
	enabled := c.PostForm("enabled") == "true"
	w, err := h.svc.Webhooks.UpdateWebhook(ctx, id, events.WebhookInput{Enabled: &enabled})
	if err != nil {
		return "", err
	}
	f.ok("Webhook paused: nothing is sent to it until it is resumed.")
	if w.Enabled {
		f.ok("Webhook resumed.")
	}
	return h.webhookURL(id), nil
}

// consoleExportDevices: GET /console/devices/export, the devices in the Apple developer portal's
// "register multiple devices" file (developers and admins).
func (h *Handler) consoleExportDevices(c *gin.Context) error {
	if _, _, ok := h.consoleUser(c); !ok {
		return nil
	}
	body, err := h.svc.Devices.ExportDevices(reqCtx(c))
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "private, no-store")
	c.Header("Content-Disposition", `attachment; filename="devices.txt"`)
	c.Data(http.StatusOK, "text/plain; charset=utf-8", body)
	return nil
}
