package web

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// A channel's console page (/console/channels/:id: its builds paged, the upload box, retention
// with its preview beside the form, settings and webhooks) and a build's console page
// (/console/releases/:id: everything that tells one build from another, its tester page, install
// link and QR code, and its changelog, pin and delete forms), so that a person manages a channel
// and its builds without the API.

// channelURL is a channel's console page.
func (h *Handler) channelURL(id int64) string {
	return h.links.Base + "/console/channels/" + strconv.FormatInt(id, 10)
}

// buildURL is a build's console page.
func (h *Handler) buildURL(id int64) string {
	return h.links.Base + "/console/releases/" + strconv.FormatInt(id, 10)
}

// retentionPlanView is what retention would delete, each build named as the public pages name it
// (version and build, date, size), with the rule that takes it.
type retentionPlanView struct {
	// Summary says it in one sentence; Builds lists them (the first planShown); More the rest.
	Summary string
	Builds  []string
	More    int
}

// planShown bounds the builds a plan names one by one.
const planShown = 50

// planView names the builds of a retention plan.
func (h *Handler) planView(c *gin.Context, victims []distribution.RetentionVictim, preview bool) *retentionPlanView {
	ctx := reqCtx(c)
	p := &retentionPlanView{}
	n := len(victims)
	switch {
	case n == 0 && preview:
		p.Summary = "With this policy, the next run would delete nothing."
	case n == 0:
		p.Summary = "Retention deletes nothing here at its next run."
	case preview:
		p.Summary = fmt.Sprintf("With this policy, the next run would delete %s:", plural(n, "build"))
	default:
		p.Summary = fmt.Sprintf("At its next run, retention deletes %s:", plural(n, "build"))
	}
	for i, v := range victims {
		if i == planShown {
			p.More = n - planShown
			break
		}
		label := "Release #" + strconv.Itoa(v.Version)
		if rc, err := h.svc.Releases.Release(ctx, v.ID); err == nil {
			label = versionText(&rc.Release)
		}
		p.Builds = append(p.Builds, fmt.Sprintf("%s · uploaded %s · %s — %s", label, h.when(v.CreatedAt), humanSize(v.Size),
			strings.ReplaceAll(v.Reason, "_", " ")))
	}
	return p
}

// buildRow is a build in a channel's list: the facts that tell 25 CI builds apart.
type buildRow struct {
	ID                                               int64
	Version, URL, Size, Branch, Commit, Uploader, At string
	// Format is the package's kind as pages name it (".apk", ".aab"): two builds of one version
	// differ by it.
	Format    string
	Downloads int64
	Pinned    bool
	// OtherApp is the build's bundle id when it is of another app than its channel holds.
	OtherApp string
}

type channelPageView struct {
	App        *distribution.App
	User       *distribution.User
	CSRF, Base string
	// Can is what the person may do on this channel's app.
	Can    grants
	Ch     consoleChannelView
	Builds []buildRow
	// Upload is the upload box (nil: the person may not upload into this app).
	Upload *uploadBoxView
	// Plan is retention's plan under the saved policy; Preview under the policy typed (nil
	// unless "Preview" was pressed).
	Plan, Preview *retentionPlanView
	Events        []string
	Form          formState
	// Feeds are the channel's update feeds (nil: not a desktop platform).
	Feeds *feedsView
	// Testers is the channel's Testers section: the groups that open it.
	Testers *channelTestersView
	// Repos is the package repositories' setup (nil: none; repos.go).
	Repos *repoSetupView
}

// WebhookForm gives the channel's webhook form its fields' data.
func (v channelPageView) WebhookForm(id string) webhookForm {
	return webhookForm{Form: v.Form, ID: id, Formats: webhook.Formats, Events: v.Events}
}

// consoleChannel: GET /console/channels/:id.
func (h *Handler) consoleChannel(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return err
	}
	return h.renderChannel(c, session, u, id, formState{}, http.StatusOK, nil)
}

// renderChannel renders a channel's console page, with a failed form's state (or none), and the
// plan of a previewed retention policy (or nil).
func (h *Handler) renderChannel(c *gin.Context, session string, u *distribution.User, id int64, form formState, status int, preview *retentionPlanView) error {
	ctx := reqCtx(c)
	cc, err := h.svc.Apps.ChannelByID(ctx, id)
	if err != nil {
		return err
	}
	app, ch := cc.App, cc.Channel
	v := channelPageView{App: &app, User: u, CSRF: h.csrfToken(session), Base: h.links.Base,
		Can: h.grants(c, app.ID), Form: form, Preview: preview, Events: webhook.Events}
	cv := consoleChannelView{ID: ch.ID, SchemeID: cc.Scheme.ID, Name: ch.Name, Scheme: cc.Scheme.Name, Key: ch.Slug,
		DeviceType: ch.DeviceType, URL: h.links.Channel(ch.Slug), HasPassword: ch.HasPassword(), ConsoleURL: h.channelURL(ch.ID),
		SparkleSigning: ch.SparkleSigning, AppInstallerHours: ch.AppInstallerHours, APTNewestOnly: ch.APTNewestOnly, HeldApp: ch.HeldApp()}
	pg := 1
	if n, err := strconv.Atoi(c.Query("page")); err == nil && n > 1 && n <= 100_000 {
		pg = n
	}
	rels, err := h.svc.Releases.ChannelReleases(ctx, cc, distribution.Page{Page: pg, PerPage: buildsPerPage})
	if err != nil {
		return err
	}
	if len(rels) == buildsPerPage { // (a full page: there may be older builds)
		cv.OlderURL = fmt.Sprintf("%s?page=%d#builds", h.channelURL(ch.ID), pg+1)
	}
	if pg > 1 {
		cv.NewerURL = fmt.Sprintf("%s?page=%d#builds", h.channelURL(ch.ID), pg-1)
	}
	v.Builds, err = h.buildRows(c, rels)
	if err != nil {
		return err
	}
	for i := range v.Builds {
		if cv.HeldApp != "" && rels[i].BundleID != cv.HeldApp {
			v.Builds[i].OtherApp = rels[i].BundleID
		}
	}
	// One read of the channel's retention state gives its policy, rules and plan.
	if plan, err := h.svc.Retention.PlanChannelRetention(ctx, ch.ID, nil); err == nil {
		own := plan.Policy
		cv.Retention = plan.Rules
		cv.Own.KeepBuilds, cv.Own.MaxAgeDays = optNumber(own.KeepBuilds), optNumber(own.MaxAgeDays)
		cv.Own.ExpiredProfileDays = optNumber(own.ExpiredProfileDays)
		if own.MaxBytes != nil {
			cv.Own.MaxBytes = formSize(*own.MaxBytes)
		}
		if v.Can.ManageApp {
			v.Plan = h.planView(c, plan.Victims, false)
		}
	}
	if v.Can.ManageWebhooks {
		if cv.Webhooks, err = h.svc.Webhooks.ListWebhooks(ctx, 0, ch.ID); err != nil {
			return err
		}
	}
	v.Ch = cv
	if v.Can.Upload {
		v.Upload = h.channelUploadBox(v.CSRF, cv, form)
	}
	v.Feeds = h.channelFeeds(&ch)
	v.Repos = h.repoSetup(&ch, rels)
	var newest *distribution.Release
	if pg == 1 && len(rels) > 0 {
		newest = &rels[0]
	}
	v.Testers = h.channelTesters(c, &ch, form, newest)
	p := page{Title: cc.Scheme.Name + " · " + ch.Name + " · " + app.Name + " · Console · Slipway", Body: v,
		Crumbs: []crumb{{Text: "Apps", URL: h.links.Base + "/console"}, {Text: app.Name, URL: h.appURL(app.ID)}, {Text: cc.Scheme.Name + " · " + ch.Name}}}
	if v.Upload != nil {
		p.Script = h.links.Static("console.js")
	}
	h.consoleRender(c, status, "console-channel", p, session, u)
	return nil
}

// buildRows are a page of builds as a channel's list shows them, with who uploaded each.
func (h *Handler) buildRows(c *gin.Context, rels []distribution.Release) ([]buildRow, error) {
	ids := make([]int64, len(rels))
	for i := range rels {
		ids[i] = rels[i].ID
	}
	who, err := h.svc.Audit.Uploaders(reqCtx(c), ids)
	if err != nil {
		return nil, err
	}
	out := make([]buildRow, len(rels))
	for i := range rels {
		r := &rels[i]
		out[i] = buildRow{ID: r.ID, Version: versionText(r), URL: h.buildURL(r.ID), Size: humanSize(r.Size), Branch: r.Branch,
			Commit: shortCommit(r.GitCommit), At: h.when(r.CreatedAt), Downloads: r.Downloads, Pinned: r.Pinned,
			Format: name(formatNames, r.Format)}
		if a, ok := who[r.ID]; ok {
			out[i].Uploader = a.Label()
		}
	}
	return out, nil
}

// onChannel makes a form of the channel page show its failure in place.
func (h *Handler) onChannel(c *gin.Context, f *formCall, chID int64, formID string, labels map[string]fieldLabel) {
	f.inPlace(formID, labels, func(s formState) error {
		return h.renderChannel(c, f.session, f.user, chID, s, http.StatusUnprocessableEntity, nil)
	})
}

type buildPageView struct {
	releaseView
	User       *distribution.User
	CSRF, Base string
	// Can is what the person may do on this channel's app.
	Can grants
	// Channel names the build's channel; ChannelConsoleURL is its console page; PublicURL the
	// tester page, QRCodeURL its QR code; Uploader who uploaded it ("" when unknown).
	Channel, ChannelConsoleURL, PublicURL, Uploader, Changelog, FileName, SHA256 string
	Pinned                                                                       bool
	Form                                                                         formState
	// Changed lists what changed since the build before it in its channel (ChangedSince names
	// that build, ChangedSinceURL its page); FirstBuild says there is none to compare with.
	Changed                       []insights.Group
	ChangedSince, ChangedSinceURL string
	FirstBuild                    bool
	// CompareWith are the channel's other builds of the platform (newest first) to compare this
	// one with (?against=); Against is the one compared with when it was chosen.
	CompareWith []compareOption
	Against     int64
	// CompareError says why the chosen build cannot be compared with this one.
	CompareError string
	// OverBudget lists the channel's size budgets this build crosses.
	OverBudget []string
	// Updates is what the update feeds say of a desktop build (nil: not a desktop platform).
	Updates *updatesView
	// Testers are who the build went to and what each did with it (nil: nobody, or the person
	// may not read it).
	Testers []releaseTesterRow
	// Feedback is the build's reports (nil: the person may not read the app's feedback).
	Feedback *buildFeedback
}

// compareOption is a build the build page may be compared with.
type compareOption struct {
	ID    int64
	Label string
}

// maxCompareOptions bounds the builds offered to compare with (the channel's newest).
const maxCompareOptions = 50

// consoleRelease: GET /console/releases/:id, a build's console page (?against=: compared with
// that build of the channel instead of the one before it).
func (h *Handler) consoleRelease(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	id, err := idParam(c, "id", "build")
	if err != nil {
		return err
	}
	return h.renderBuild(c, session, u, id, formState{}, http.StatusOK)
}

// renderBuild renders a build's console page, with a failed form's state (or none).
func (h *Handler) renderBuild(c *gin.Context, session string, u *distribution.User, id int64, form formState, status int) error {
	ctx := reqCtx(c)
	rc, err := h.svc.Releases.Release(ctx, id)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return errs.New(errs.NotFound, "there is no build %d: it may have been deleted (the audit log says by whom)", id)
		}
		return err
	}
	cc := rc.ChannelContext()
	v := buildPageView{releaseView: h.releaseView(ctx, rc, nil), User: u, CSRF: h.csrfToken(session), Base: h.links.Base,
		Can: h.grants(c, rc.App.ID), Channel: cc.Scheme.Name + " · " + cc.Channel.Name,
		ChannelConsoleURL: h.channelURL(cc.Channel.ID), PublicURL: h.links.Release(cc.Channel.Slug, rc.ID),
		Changelog: editableChangelog(rc.Changelog), FileName: rc.Filename, SHA256: rc.SHA256,
		Pinned: rc.Pinned, Form: form, Updates: releaseUpdates(&rc.Release), Testers: h.releaseTesters(c, rc.ID)}
	if who, err := h.svc.Audit.Uploaders(ctx, []int64{rc.ID}); err == nil {
		if a, ok := who[rc.ID]; ok {
			v.Uploader = a.Label()
		}
	}
	// Best effort: the page is still the page when the comparison cannot be made. By default
	// the build before it; ?against= another build of the channel.
	var prev *distribution.Release
	if d, err := h.svc.Insights.Diff(ctx, rc.ID, 0); err == nil {
		v.Changed, v.ChangedSince, prev = d.Groups, versionText(&d.Against.Release), &d.Against.Release
		v.ChangedSinceURL = h.links.Base + "/console/releases/" + strconv.FormatInt(d.Against.ID, 10)
	} else if errs.KindOf(err) == errs.Invalid {
		v.FirstBuild = true
	}
	if against, err := strconv.ParseInt(c.Query("against"), 10, 64); err == nil && against > 0 && against != rc.ID {
		v.Against = against
		if d, err := h.svc.Insights.Diff(ctx, rc.ID, against); err == nil {
			v.Changed, v.ChangedSince, v.FirstBuild = d.Groups, versionText(&d.Against.Release), false
			v.ChangedSinceURL = h.links.Base + "/console/releases/" + strconv.FormatInt(d.Against.ID, 10)
		} else {
			v.CompareError = h.describe(c, err).Message
		}
	}
	if view, err := h.svc.Reads.View(ctx, cc.Channel.Slug); err == nil {
		for i := range view.Releases {
			if r := &view.Releases[i]; r.ID != rc.ID && r.Platform == rc.Platform && len(v.CompareWith) < maxCompareOptions {
				v.CompareWith = append(v.CompareWith, compareOption{ID: r.ID, Label: versionText(r) + " · #" + strconv.Itoa(r.Version)})
			}
		}
	}
	v.OverBudget = uploads.BudgetWarnings(rc.Channel.Budget, rc.Size, prev)
	if v.Feedback, err = h.buildPageFeedback(c, v.CSRF, rc.App.ID, rc.ID); err != nil {
		return err
	}
	name := versionText(&rc.Release)
	p := page{Title: rc.App.Name + " " + name + " · Console · Slipway", Body: v,
		Crumbs: []crumb{{Text: "Apps", URL: h.links.Base + "/console"}, {Text: rc.App.Name, URL: h.appURL(rc.App.ID)},
			{Text: v.Channel, URL: v.ChannelConsoleURL}, {Text: name}}}
	h.consoleRender(c, status, "console-release", p, session, u)
	return nil
}

// onBuild makes a form of the build page show its failure in place.
func (h *Handler) onBuild(c *gin.Context, f *formCall, id int64, formID string, labels map[string]fieldLabel) {
	f.inPlace(formID, labels, func(s formState) error {
		return h.renderBuild(c, f.session, f.user, id, s, http.StatusUnprocessableEntity)
	})
}
