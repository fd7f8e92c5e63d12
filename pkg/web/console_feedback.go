package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Testers' feedback in the console (docs/feedback.md, "Reading it"): the app's inbox
// (/console/apps/:id/feedback, newest first, filtered by build, tester, state and a search in
// the text), each build's reports on its page, the Resolve / Reopen and Delete forms of a report,
// and the app page's "Mail me feedback" choice. Every form goes through feedback.Reports, which
// asks the policy again; the pages show a form only to whoever it would let through.

// feedbackPerPage is how many reports the inbox shows at once, and a build's page.
const feedbackPerPage = 20

// feedbackURL is an app's feedback inbox.
func (h *Handler) feedbackURL(appID int64) string {
	return h.appURL(appID) + "/feedback"
}

// feedbackShot is one screenshot of a report: its thumbnail, linking to the full image (both
// through the API, which takes the console session and redirects to the object).
type feedbackShot struct {
	N             int
	URL, ThumbURL string
	// Width and Height are the thumbnail's size on the page; FullW and FullH the image's.
	Width, Height int
	FullW, FullH  int
}

// feedbackRow is a report as the console lists it.
type feedbackRow struct {
	ID int64
	// Build names the build ("1.2 (34) · #5"), BuildURL its console page, Channel its channel.
	Build, BuildURL, Channel string
	// Author is the tester's (or person's, or token's) name, or "anonymous"; Email an anonymous
	// sender's optional address.
	Author, Email string
	Anonymous     bool
	Text          string
	Device, OS    string
	Locale        string
	At, Source    string
	State         string
	Resolved      bool
	// StateNote says who resolved or reopened it, and when.
	StateNote string
	// AppState is the app's JSON, indented ("" when none).
	AppState string
	Shots    []feedbackShot
}

// feedbackListView is a list of reports with the forms that act on them (template
// "feedback-reports").
type feedbackListView struct {
	Rows       []feedbackRow
	CSRF, Base string
	// Manage: the person may resolve, reopen and delete the app's reports.
	Manage bool
	// Back is where the forms return: "build" (the build's page) or "inbox" (with Filters, the
	// inbox's query).
	Back, Filters string
	// Empty is said when there are no reports.
	Empty string
}

// feedbackRows are reports as the console shows them.
func (h *Handler) feedbackRows(list []distribution.Feedback) []feedbackRow {
	out := make([]feedbackRow, len(list))
	for i := range list {
		f := &list[i]
		r := feedbackRow{ID: f.ID, Build: fmt.Sprintf("%s (%s) · #%d", f.ReleaseVersion, f.BuildVersion, f.ReleaseNumber),
			BuildURL: h.buildURL(f.ReleaseID), Channel: f.ChannelName, Author: f.AuthorName, Text: f.Text, Device: f.Device,
			OS: f.OSVersion, Locale: f.Locale, At: h.when(f.CreatedAt), State: f.State, Resolved: f.State == distribution.FeedbackResolved}
		switch f.AuthorKind {
		case distribution.ActorAnonymous:
			r.Author, r.Anonymous, r.Email = "anonymous", true, f.AuthorEmail
		case distribution.ActorTester:
			if r.Author == "" {
				r.Author = "a tester"
			}
		}
		if r.Author == "" {
			r.Author = f.AuthorKind
		}
		if f.Source == distribution.FeedbackFromPage {
			r.Source = "release page"
		} else {
			r.Source = "app"
		}
		if f.StateAt != nil && f.StateBy != "" {
			verb := "reopened"
			if r.Resolved {
				verb = "resolved"
			}
			r.StateNote = fmt.Sprintf("%s by %s, %s", verb, f.StateBy, h.when(*f.StateAt))
		}
		if len(f.AppState) > 0 && string(f.AppState) != "{}" {
			var b bytes.Buffer
			if json.Indent(&b, f.AppState, "", "  ") == nil {
				r.AppState = b.String()
			} else {
				r.AppState = string(f.AppState)
			}
		}
		for _, s := range f.Screenshots {
			u := fmt.Sprintf("%s/api/feedback/%d/screenshots/%d", h.links.Base, f.ID, s.Position)
			w, hh := fitWithin(s.Width, s.Height, 160)
			r.Shots = append(r.Shots, feedbackShot{N: s.Position, URL: u, ThumbURL: u + "?size=thumb", Width: w, Height: hh,
				FullW: s.Width, FullH: s.Height})
		}
		out[i] = r
	}
	return out
}

// fitWithin scales w×h to fit a box of side max, keeping its shape (a thumbnail's size on the
// page, so the list does not jump as the images arrive).
func fitWithin(w, h, max int) (int, int) {
	if w <= 0 || h <= 0 {
		return max, max
	}
	if w >= h {
		return max, (h*max + w/2) / w
	}
	return (w*max + h/2) / h, max
}

// feedbackFilter is one choice of a select of the inbox's filters.
type feedbackFilter struct {
	Value, Label string
	Selected     bool
}

type feedbackInboxView struct {
	App        *distribution.App
	CSRF, Base string
	List       feedbackListView
	// The filters as chosen, and what the selects offer.
	Builds, Testers, States []feedbackFilter
	Query                   string
	Filtered                bool
	// Total is how many reports match; Shown says which are on this page.
	Total              int
	Shown              string
	OlderURL, NewerURL string
	ClearURL           string
}

// inboxQuery reads the inbox's filters from a query (the page's own, or the one a form returns
// to): release_id, tester_id, state, q and page. Anything else is dropped.
func inboxQuery(appID int64, v url.Values) (distribution.FeedbackQuery, url.Values, error) {
	q := distribution.FeedbackQuery{AppID: appID, Page: distribution.Page{Page: 1, PerPage: feedbackPerPage}}
	kept := url.Values{}
	for name, dst := range map[string]*int64{"release_id": &q.ReleaseID, "tester_id": &q.TesterID} {
		if s := strings.TrimSpace(v.Get(name)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return q, nil, errs.Field(name, "must be a positive integer")
			}
			*dst = n
			kept.Set(name, s)
		}
	}
	switch st := v.Get("state"); st {
	case "", "all":
	case distribution.FeedbackOpen, distribution.FeedbackResolved:
		q.State = st
		kept.Set("state", st)
	default:
		return q, nil, errs.Field("state", "must be all, open or resolved")
	}
	if s := strings.TrimSpace(v.Get("q")); s != "" {
		q.Search = s
		kept.Set("q", s)
	}
	if n, err := strconv.Atoi(v.Get("page")); err == nil && n > 1 && n <= 100_000 {
		q.Page.Page = n
		kept.Set("page", strconv.Itoa(n))
	}
	return q, kept, nil
}

// consoleFeedback: GET /console/apps/:id/feedback, the app's feedback inbox.
func (h *Handler) consoleFeedback(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return err
	}
	app, err := h.svc.Apps.App(ctx, appID)
	if err != nil {
		return err
	}
	c.Set(backURLKey, h.appURL(appID))
	q, kept, err := inboxQuery(appID, c.Request.URL.Query())
	if err != nil {
		return err
	}
	list, total, err := h.svc.Feedback.Inbox(ctx, q)
	if err != nil {
		return err
	}
	facets, err := h.svc.Feedback.Facets(ctx, appID)
	if err != nil {
		return err
	}
	csrf := h.csrfToken(session)
	filters := kept.Encode()
	v := feedbackInboxView{App: app, CSRF: csrf, Base: h.links.Base, Query: q.Search, Total: total, ClearURL: h.feedbackURL(appID),
		Filtered: q.ReleaseID != 0 || q.TesterID != 0 || q.State != "" || q.Search != "",
		List: feedbackListView{Rows: h.feedbackRows(list), CSRF: csrf, Base: h.links.Base, Back: "inbox", Filters: filters,
			Manage: h.svc.Policy.Allowed(ctx, policy.ManageFeedback, policy.OnReport(appID, 0))}}
	if v.Filtered {
		v.List.Empty = "No report matches these filters."
	} else {
		v.List.Empty = "No feedback yet. Testers send it from a build's release page, or from inside the app (docs/feedback.md)."
	}
	v.Builds = append(v.Builds, feedbackFilter{Value: "", Label: "Every build", Selected: q.ReleaseID == 0})
	found := q.ReleaseID == 0
	for _, b := range facets.Builds {
		sel := b.ReleaseID == q.ReleaseID
		found = found || sel
		v.Builds = append(v.Builds, feedbackFilter{Value: strconv.FormatInt(b.ReleaseID, 10), Selected: sel,
			Label: fmt.Sprintf("%s (%s) · #%d · %s — %s", b.ReleaseVersion, b.BuildVersion, b.ReleaseNumber, b.ChannelName, plural(b.Count, "report"))})
	}
	if !found { // (a build without reports, or past the ones offered, named by its link)
		v.Builds = append(v.Builds, feedbackFilter{Value: strconv.FormatInt(q.ReleaseID, 10), Label: "build " + strconv.FormatInt(q.ReleaseID, 10), Selected: true})
	}
	v.Testers = append(v.Testers, feedbackFilter{Value: "", Label: "Anyone", Selected: q.TesterID == 0})
	found = q.TesterID == 0
	for _, t := range facets.Testers {
		sel := t.TesterID == q.TesterID
		found = found || sel
		label := t.Email
		if t.Name != "" {
			label = t.Name + " · " + t.Email
		}
		v.Testers = append(v.Testers, feedbackFilter{Value: strconv.FormatInt(t.TesterID, 10), Label: label + " — " + plural(t.Count, "report"), Selected: sel})
	}
	if !found {
		v.Testers = append(v.Testers, feedbackFilter{Value: strconv.FormatInt(q.TesterID, 10), Label: "tester " + strconv.FormatInt(q.TesterID, 10), Selected: true})
	}
	for _, s := range [][2]string{{"all", "Open and resolved"}, {distribution.FeedbackOpen, "Open"}, {distribution.FeedbackResolved, "Resolved"}} {
		v.States = append(v.States, feedbackFilter{Value: s[0], Label: s[1], Selected: s[0] == q.State || (s[0] == "all" && q.State == "")})
	}
	if len(list) > 0 {
		first := q.Page.Offset() + 1
		v.Shown = fmt.Sprintf("%d–%d of %d", first, first+len(list)-1, total)
	}
	pageURL := func(n int) string {
		p := url.Values{}
		for k, vs := range kept {
			p[k] = vs
		}
		if n > 1 {
			p.Set("page", strconv.Itoa(n))
		} else {
			p.Del("page")
		}
		if s := p.Encode(); s != "" {
			return h.feedbackURL(appID) + "?" + s
		}
		return h.feedbackURL(appID)
	}
	if q.Page.Offset()+len(list) < total {
		v.OlderURL = pageURL(q.Page.Page + 1)
	}
	if q.Page.Page > 1 {
		v.NewerURL = pageURL(q.Page.Page - 1)
	}
	p := page{Title: "Feedback · " + app.Name + " · Console · Slipway", Body: v,
		Crumbs: []crumb{{Text: "Apps", URL: h.links.Base + "/console"}, {Text: app.Name, URL: h.appURL(appID)}, {Text: "Feedback"}}}
	h.consoleRender(c, http.StatusOK, "console-feedback", p, session, u)
	return nil
}

// buildFeedback is a build's reports for its console page (nil: the person may not read them).
type buildFeedback struct {
	List     feedbackListView
	Total    int
	InboxURL string
}

// buildPageFeedback lists a build's newest reports for its page, with a link to the inbox filtered
// by the build (nil when the person may not read the app's feedback).
func (h *Handler) buildPageFeedback(c *gin.Context, csrf string, appID, releaseID int64) (*buildFeedback, error) {
	ctx := reqCtx(c)
	if !h.svc.Policy.Allowed(ctx, policy.ReadFeedback, policy.OnApp(appID)) {
		return nil, nil
	}
	list, total, err := h.svc.Feedback.OnRelease(ctx, releaseID, distribution.Page{Page: 1, PerPage: feedbackPerPage})
	if err != nil {
		return nil, err
	}
	return &buildFeedback{Total: total, InboxURL: h.feedbackURL(appID) + "?release_id=" + strconv.FormatInt(releaseID, 10),
		List: feedbackListView{Rows: h.feedbackRows(list), CSRF: csrf, Base: h.links.Base, Back: "build",
			Manage: h.svc.Policy.Allowed(ctx, policy.ManageFeedback, policy.OnReport(appID, 0)),
			Empty:  "No feedback on this build yet. Testers send it from its release page, or from inside the app."}}, nil
}

// appFeedbackView is the app page's Feedback section: the inbox's link with the open reports'
// count, and the person's mail choice.
type appFeedbackView struct {
	InboxURL string
	Open     int
	// Mail: the person gets each report by mail; CanMail: they may choose (a person, not a
	// token); MailOff: no SMTP relay is configured, so mails wait in the outbox.
	Mail, CanMail, MailOff bool
}

// appFeedback is the app page's Feedback section (nil: the person may not read its feedback).
func (h *Handler) appFeedback(c *gin.Context, appID int64) (*appFeedbackView, error) {
	ctx := reqCtx(c)
	if !h.svc.Policy.Allowed(ctx, policy.ReadFeedback, policy.OnApp(appID)) {
		return nil, nil
	}
	_, open, err := h.svc.Feedback.Inbox(ctx, distribution.FeedbackQuery{AppID: appID, State: distribution.FeedbackOpen,
		Page: distribution.Page{Page: 1, PerPage: 1}})
	if err != nil {
		return nil, err
	}
	v := &appFeedbackView{InboxURL: h.feedbackURL(appID), Open: open, MailOff: !h.svc.MailOn,
		CanMail: distribution.ActorOf(ctx).Kind == distribution.ActorUser}
	if v.Mail, err = h.svc.Feedback.MailChoice(ctx, appID); err != nil {
		return nil, err
	}
	return v, nil
}

// feedbackParam reads a report's id from the path and returns the report (as the person may
// read it).
func (h *Handler) feedbackParam(c *gin.Context) (*distribution.Feedback, error) {
	id, err := idParam(c, "id", "report")
	if err != nil {
		return nil, err
	}
	return h.svc.Feedback.Get(reqCtx(c), id)
}

// feedbackBack is where a report's form returns: the build's page, or the inbox with the
// filters it was shown with (only the inbox's own parameters are kept).
func (h *Handler) feedbackBack(c *gin.Context, f *distribution.Feedback, anchor string) string {
	if c.PostForm("back") == "build" {
		return h.buildURL(f.ReleaseID) + "#" + anchor
	}
	u := h.feedbackURL(f.AppID)
	if v, err := url.ParseQuery(c.PostForm("filters")); err == nil {
		if _, kept, err := inboxQuery(f.AppID, v); err == nil && len(kept) > 0 {
			u += "?" + kept.Encode()
		}
	}
	return u + "#" + anchor
}

// consoleSetFeedbackState: POST /console/feedback/:id/state (state=open|resolved), for those who
// manage the app's feedback (developers, admins).
func (h *Handler) consoleSetFeedbackState(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	rep, err := h.feedbackParam(c)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ManageFeedback, policy.OnReport(rep.AppID, 0)); err != nil {
		return "", err
	}
	state := c.PostForm("state")
	if state != distribution.FeedbackOpen && state != distribution.FeedbackResolved {
		return "", errs.New(errs.Invalid, "state must be open or resolved")
	}
	if _, err := h.svc.Feedback.SetState(ctx, rep.ID, state); err != nil {
		return "", err
	}
	if state == distribution.FeedbackResolved {
		f.ok("Report %d marked resolved.", rep.ID)
	} else {
		f.ok("Report %d is open again.", rep.ID)
	}
	return h.feedbackBack(c, rep, "feedback-"+strconv.FormatInt(rep.ID, 10)), nil
}

// consoleDeleteFeedback: POST /console/feedback/:id/delete deletes a report and its screenshots
// (their objects go to the collector), for those who manage the app's feedback.
func (h *Handler) consoleDeleteFeedback(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	rep, err := h.feedbackParam(c)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.DeleteFeedback, policy.OnReport(rep.AppID, 0)); err != nil {
		return "", err
	}
	if err := h.svc.Feedback.Delete(ctx, rep.ID); err != nil {
		return "", err
	}
	f.ok("Report %d deleted, with its %s.", rep.ID, plural(len(rep.Screenshots), "screenshot"))
	return h.feedbackBack(c, rep, "feedback"), nil
}

// consoleFeedbackMail: POST /console/apps/:id/feedback-mail (mail=1 ticked, or not) sets whether
// the signed-in person gets the app's feedback by mail.
func (h *Handler) consoleFeedbackMail(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	appID, err := h.appIDParam(c)
	if err != nil {
		return "", err
	}
	if _, err := h.svc.Apps.App(ctx, appID); err != nil {
		return "", err
	}
	on := c.PostForm("mail") == "1"
	if err := h.svc.Feedback.ChooseMail(ctx, appID, on); err != nil {
		return "", err
	}
	switch {
	case on && !h.svc.MailOn:
		f.ok("Feedback on this app's builds will be mailed to you once this server can send mail (no SMTP relay is configured).")
	case on:
		f.ok("Feedback on this app's builds will be mailed to you.")
	default:
		f.ok("Feedback on this app's builds is no longer mailed to you.")
	}
	return h.appURL(appID) + "#feedback", nil
}
