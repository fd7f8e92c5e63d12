package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// The console's app page: schemes and channels with their newest releases, and the forms that
// change them. Every form is a POST with the CSRF token and a single-use form token, authorised
// on the server (the policy, by the use case), audited, and answered 303 to the page that shows its
// result, or with its own page again (422) when its input is refused (forms.go).

type consoleChannelView struct {
	ID, SchemeID                       int64
	Name, Scheme, Key, DeviceType, URL string
	// ConsoleURL is the channel's console page.
	ConsoleURL  string
	HasPassword bool
	// SparkleSigning: Slipway signs the channel's macOS builds (an admin's switch).
	SparkleSigning bool
	// AppInstallerHours: how often a Windows channel's App Installer file is checked at start.
	AppInstallerHours int
	// APTNewestOnly: a Linux channel's APT repository lists only the newest version of each package.
	APTNewestOnly bool
	// HeldApp is the bundle id of the app the channel holds, learned from its first build
	// (Channel.HeldApp; "" when it takes any).
	HeldApp   string
	Retention distribution.RetentionRules
	// Own is the channel's own policy, as its form shows it ("" inherits).
	Own struct{ KeepBuilds, MaxAgeDays, MaxBytes, ExpiredProfileDays string }
	// OlderURL and NewerURL page through the channel's builds.
	OlderURL, NewerURL string
	Webhooks           []distribution.Webhook
	// Newest is the newest build (nil: none yet) and Total the number of builds, for the app
	// page's compact list.
	Newest *buildRow
	Total  int
}

// appSchemeView is a scheme on the app page, with its channels (none: made with the API).
type appSchemeView struct {
	ID       int64
	Name     string
	Channels []consoleChannelView
}

type consoleAppView struct {
	App  *distribution.App
	User *distribution.User
	CSRF string
	Base string
	// Can is what the person may do on this app.
	Can     grants
	Schemes []appSchemeView
	Members []distribution.User
	// Invitations are the app's open invitations (for whoever may invite to it).
	Invitations []distribution.Invitation
	// AppWebhooks are the app's own webhooks (every channel); Events those one may choose.
	AppWebhooks []distribution.Webhook
	Events      []string
	// Form is the failed form's state (the zero value when none failed).
	Form        formState
	DeviceTypes []string
	// Upload is the upload box (nil: the person may not upload into this app).
	Upload *uploadBoxView
	// Feedback is the Feedback section (nil: the person may not read the app's feedback).
	Feedback *appFeedbackView
}

// schemeForm is what the rename and delete forms of a scheme need.
type schemeForm struct {
	ID               int64
	Name, CSRF, Base string
	Form             formState
}

// SchemeForm gives the app page's scheme forms (template "scheme-forms") their data.
func (v consoleAppView) SchemeForm(id int64, name string) schemeForm {
	return schemeForm{ID: id, Name: name, CSRF: v.CSRF, Base: v.Base, Form: v.Form}
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

// deviceTypes are the channel device types the console's "New channel" form offers.
var deviceTypes = []string{"ios", "android", "macos", "harmonyos", "windows", "linux"}

// uploadAccept is the file picker's filter per device type ("" takes any file: Windows and Linux
// channels keep unparsed files too), and how the drop zone names it.
var uploadAccept = map[string][2]string{
	"ios":       {".ipa", ".ipa"},
	"android":   {".apk,.aab", ".apk or .aab"},
	"macos":     {".zip,.dmg,.pkg", "macOS .zip, .dmg or .pkg"},
	"harmonyos": {".hap,.app", "HarmonyOS .hap or .app"},
	"windows":   {"", ".exe, .msi, .msix, .appx, their bundles, a .zip holding an .exe, or any other file"},
	"linux":     {"", ".deb, .rpm, .AppImage or any other file"},
}

// Accept is the upload box's file filter.
func (v consoleChannelView) Accept() string { return uploadAccept[v.DeviceType][0] }

// Accepts names the files the upload box takes.
func (v consoleChannelView) Accepts() string {
	if a, ok := uploadAccept[v.DeviceType]; ok {
		return a[1]
	}
	return "any " + name(platformNames, v.DeviceType) + " build"
}

// RetentionBytes is the channel's size limit as people read sizes.
func (v consoleChannelView) RetentionBytes() string { return humanSize(v.Retention.MaxBytes) }

// webhookForm is what the "webhook-fields" template needs.
type webhookForm struct {
	Form            formState
	ID              string
	Formats, Events []string
}

// WebhookForm gives a webhook form's fields their data (id names the form).
func (v consoleAppView) WebhookForm(id string) webhookForm {
	return webhookForm{Form: v.Form, ID: id, Formats: webhook.Formats, Events: v.Events}
}

// appURL is an app's console page.
func (h *Handler) appURL(appID int64) string {
	return h.links.Base + "/console/apps/" + strconv.FormatInt(appID, 10)
}

// renderApp renders an app's console page, with a failed form's state (or none) and status.
func (h *Handler) renderApp(c *gin.Context, session string, u *distribution.User, appID int64, form formState, status int) error {
	ctx := reqCtx(c)
	app, err := h.svc.Apps.App(ctx, appID)
	if err != nil {
		return err
	}
	v := consoleAppView{App: app, User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Can: h.grants(c, appID),
		Form: form, DeviceTypes: deviceTypes}
	for _, sc := range app.Schemes {
		sv := appSchemeView{ID: sc.ID, Name: sc.Name}
		for _, ch := range sc.Channels {
			cv := consoleChannelView{ID: ch.ID, SchemeID: sc.ID, Name: ch.Name, Scheme: sc.Name, Key: ch.Slug, DeviceType: ch.DeviceType,
				URL: h.links.Channel(ch.Slug), ConsoleURL: h.channelURL(ch.ID), HasPassword: ch.HasPassword()}
			// The newest build and the count, from the read cache the public pages use.
			if view, err := h.svc.Reads.View(ctx, ch.Slug); err == nil {
				cv.Total = view.Total
				if len(view.Releases) > 0 {
					rows, err := h.buildRows(c, view.Releases[:1])
					if err != nil {
						return err
					}
					cv.Newest = &rows[0]
				}
			}
			sv.Channels = append(sv.Channels, cv)
		}
		v.Schemes = append(v.Schemes, sv)
	}
	v.Events = webhook.Events
	if v.Can.Upload {
		v.Upload = h.appUploadBox(v.CSRF, appID, form)
	}
	if v.Can.ManageWebhooks {
		if v.AppWebhooks, err = h.svc.Webhooks.ListWebhooks(ctx, appID, 0); err != nil {
			return err
		}
	}
	if v.Feedback, err = h.appFeedback(c, appID); err != nil {
		return err
	}
	if v.Members, err = h.svc.People.AppMembers(ctx, appID); err != nil {
		return err
	}
	if v.Can.InvitePeople {
		if v.Invitations, err = h.svc.Colleagues.Invitations(ctx, appID); err != nil {
			return err
		}
	}
	p := page{Title: app.Name + " · Console · Slipway", Body: v,
		Crumbs: []crumb{{Text: "Apps", URL: h.links.Base + "/console"}, {Text: app.Name}}}
	if v.Upload != nil {
		p.Script = h.links.Static("console.js")
	}
	h.consoleRender(c, status, "app", p, session, u)
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
	return h.renderApp(c, session, u, id, formState{}, http.StatusOK)
}

// onApp makes a form of the app page show its failure in place.
func (h *Handler) onApp(c *gin.Context, f *formCall, appID int64, formID string, labels map[string]fieldLabel) {
	f.inPlace(formID, labels, func(s formState) error {
		return h.renderApp(c, f.session, f.user, appID, s, http.StatusUnprocessableEntity)
	})
}

func optionalForm(c *gin.Context, name string) *string {
	if v, ok := c.GetPostForm(name); ok {
		return &v
	}
	return nil
}

// channelLabels name the channel forms' fields as the forms do.
var channelLabels = map[string]fieldLabel{
	"name": {"name", "Name"}, "slug": {"key", "Key"}, "device_type": {"device_type", "Device type"},
	"password": {"password", "Password"}, "scheme": {"scheme", "Scheme"},
}

// consoleCreateChannel: POST /console/apps/:id/channels makes a channel (and its scheme when new).
func (h *Handler) consoleCreateChannel(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ManageApp, policy.OnApp(appID)); err != nil {
		return "", err
	}
	h.onApp(c, f, appID, "create-channel", channelLabels)
	schemeName := strings.TrimSpace(c.PostForm("scheme"))
	if schemeName == "" {
		return "", errs.Field("scheme", "can't be blank")
	}
	name := strings.TrimSpace(c.PostForm("name"))
	ch := catalog.ChannelChanges{Name: &name, DeviceType: optionalForm(c, "device_type")}
	if pw := c.PostForm("password"); pw != "" {
		ch.Password = &pw
	}
	made, err := h.svc.Apps.CreateChannelIn(ctx, appID, schemeName, ch)
	if err != nil {
		return "", err
	}
	f.ok("Channel %s made; its key is %s.", made.Name, made.Slug)
	return h.channelURL(made.ID), nil
}

// channelNameFree refuses a second channel of the same name in a scheme of the app (the console's
// rule; the API, as Zealot, allows it: docs/decisions.md, "Console forms").
func (h *Handler) channelNameFree(c *gin.Context, appID int64, scheme, name string, except int64) error {
	app, err := h.svc.Apps.App(reqCtx(c), appID)
	if err != nil {
		return err
	}
	for _, sc := range app.Schemes {
		if !strings.EqualFold(sc.Name, scheme) {
			continue
		}
		for _, ch := range sc.Channels {
			if ch.ID != except && strings.EqualFold(strings.TrimSpace(ch.Name), name) {
				return errs.Field("name", "is already the name of a channel of the scheme %s; choose another name", sc.Name)
			}
		}
	}
	return nil
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

// retentionLabels name the retention form's fields.
var retentionLabels = map[string]fieldLabel{
	"keep_builds": {"keep_builds", "Keep builds"}, "max_age_days": {"max_age_days", "Max age (days)"},
	"max_bytes": {"max_bytes", "Max size"}, "expired_profile_days": {"expired_profile_days", "Expired profile (days)"},
}

// consoleSetRetention: POST /console/channels/:id/retention (empty fields inherit). "Preview,
// don't save" changes nothing: it answers the app page with the plan beside the form and the
// typed policy kept.
func (h *Handler) consoleSetRetention(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	chID, appID, err := h.channelApp(c)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ManageApp, policy.OnApp(appID)); err != nil {
		return "", err
	}
	formID := "retention-" + strconv.FormatInt(chID, 10)
	h.onChannel(c, f, chID, formID, retentionLabels)
	var p distribution.RetentionPolicy
	for _, field := range []string{"keep_builds", "max_age_days", "expired_profile_days"} {
		dst := map[string]**int{"keep_builds": &p.KeepBuilds, "max_age_days": &p.MaxAgeDays, "expired_profile_days": &p.ExpiredProfileDays}[field]
		if v := strings.TrimSpace(c.PostForm(field)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", errs.Field(field, "must be a whole number, or empty to inherit")
			}
			*dst = &n
		}
	}
	if v := strings.TrimSpace(c.PostForm("max_bytes")); v != "" {
		n, err := parseSize(v)
		if err != nil {
			return "", errs.Field("max_bytes", "must be a size such as 500 MB or 2 GB (0 turns it off), or empty to inherit")
		}
		p.MaxBytes = &n
	}
	if c.PostForm("preview") != "" {
		// Show what this policy would delete, without saving it.
		plan, err := h.svc.Retention.PlanChannelRetention(ctx, chID, &p)
		if err != nil {
			return "", err
		}
		f.answered = true // (nothing was done: the form stays usable, to save what was previewed)
		return "", h.renderChannel(c, f.session, f.user, chID, formState{ID: formID, Values: formValues(c)}, http.StatusOK, h.planView(c, plan.Victims, true))
	}
	if err := h.svc.Retention.SetChannelRetention(ctx, chID, &p); err != nil {
		return "", err
	}
	f.ok("Retention saved. It applies at the next enforcement run.")
	return h.channelURL(chID) + "#retention", nil
}

// webhookLabels name the webhook forms' fields.
var webhookLabels = map[string]fieldLabel{
	"url": {"url", "Webhook URL"}, "format": {"format", "Format"}, "events": {"events", "Events"}, "robot_secret": {"robot_secret", "Robot secret"},
}

// consoleCreateWebhook: POST /console/channels/:id/webhooks (admins); the secret is shown once.
func (h *Handler) consoleCreateWebhook(c *gin.Context, f *formCall) (string, error) {
	chID, appID, err := h.channelApp(c)
	if err != nil {
		return "", err
	}
	return h.createWebhook(c, f, appID, 0, chID, "webhook-"+strconv.FormatInt(chID, 10))
}

// consoleCreateAppWebhook: POST /console/apps/:id/webhooks (admins): a webhook of every channel
// of the app (and of its debug files).
func (h *Handler) consoleCreateAppWebhook(c *gin.Context, f *formCall) (string, error) {
	appID, err := h.appIDParam(c)
	if err != nil {
		return "", err
	}
	return h.createWebhook(c, f, appID, appID, 0, "app-webhook")
}

// createWebhook makes an app's (hookApp) or a channel's webhook from the form: url, format and
// the events ticked (none ticked: every event).
func (h *Handler) createWebhook(c *gin.Context, f *formCall, appID, hookApp, hookChannel int64, formID string) (string, error) {
	ctx := reqCtx(c)
	if err := h.may(c, policy.ManageWebhooks, policy.OnApp(appID)); err != nil {
		return "", err
	}
	if hookChannel != 0 {
		h.onChannel(c, f, hookChannel, formID, webhookLabels)
	} else {
		h.onApp(c, f, appID, formID, webhookLabels)
	}
	in := events.WebhookInput{URL: optionalForm(c, "url"), Format: optionalForm(c, "format")}
	if evs := c.PostFormArray("events"); len(evs) > 0 {
		in.Events = evs
	}
	if rs := strings.TrimSpace(c.PostForm("robot_secret")); rs != "" {
		in.RobotSecret = &rs
	}
	w, err := h.svc.Webhooks.CreateWebhook(ctx, hookApp, hookChannel, in)
	if err != nil {
		return "", err
	}
	f.flash = flash{Kind: "ok", Message: "Webhook added. Its signing secret is shown this once: copy it now.", Secret: w.Secret, SecretID: "secret"}
	return h.links.Base + "/console/webhooks/" + strconv.FormatInt(w.ID, 10), nil
}

// consoleUpdateRelease: POST /console/releases/:id edits a release's changelog.
func (h *Handler) consoleUpdateRelease(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "release")
	if err != nil {
		return "", err
	}
	h.onBuild(c, f, id, "release-form-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"changelog": {"changelog", "Changelog"}})
	rc, err := h.svc.Releases.UpdateRelease(ctx, id, catalog.ReleaseChanges{Changelog: optionalForm(c, "changelog")})
	if err != nil {
		return "", err
	}
	f.ok("Release %s saved.", versionText(&rc.Release))
	return h.buildURL(id), nil
}

// consoleAddMember: POST /console/apps/:id/members (admins and the app's developers) makes a
// colleague a developer of the app: at once when they have an account, else by a mailed
// invitation (or, with mail off, a link shown to pass on).
func (h *Handler) consoleAddMember(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return "", err
	}
	if _, err := h.svc.Apps.App(ctx, appID); err != nil {
		return "", err
	}
	if err := h.may(c, policy.InvitePeople, policy.OnApp(appID)); err != nil {
		return "", err
	}
	h.onApp(c, f, appID, "add-member-form", map[string]fieldLabel{"email": {"email", "Email"}})
	out, err := h.svc.Colleagues.Invite(ctx, access.InviteInput{Email: c.PostForm("email"), AppID: appID})
	if err != nil {
		return "", err
	}
	f.invited(out)
	return h.appURL(appID) + "#members", nil
}

// optNumber shows an optional number in a form field ("" when unset).
func optNumber(n *int) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(*n)
}
