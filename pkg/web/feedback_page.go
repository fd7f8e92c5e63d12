package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/distribution/feedback"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Feedback from the release page (docs/feedback.md): every release page has a Send feedback
// form, which POSTs multipart/form-data (the text, screenshots from the phone's photo library or
// camera, the device and system the page's script filled in) to the page's /feedback. Who may
// send is feedback.Reports.Begin's, decided before the body is read; the body streams into the
// draft as the API's does (httpapi's receiveFeedback), one screenshot held at a time. A report
// sent answers 303 to the page, which thanks the sender; a refused one shows the page again with
// the error beside the form and what was typed kept. The tester's home lists their reports, each
// with a Delete button.

// maxFeedbackBody bounds a report's body, as the API's does: its screenshots at their limit, and
// the text fields.
const maxFeedbackBody = distribution.MaxScreenshots*(15<<20) + 1<<20

// feedbackFormView is the release page's Send feedback form.
type feedbackFormView struct {
	Action string
	// AskEmail: the visitor is not signed in (no tester or console session), so the form offers
	// an email to be answered at.
	AskEmail bool
	// What the last, refused, POST said (kept), and why it was refused.
	Text, Email, Device, OSVersion string
	Error, ErrorField              string
	// Sent: the form was just sent (the 303's flag), so the page thanks the sender.
	Sent bool
	// Max is the longest text taken, in characters.
	Max int
}

// feedbackForm is the form of a release page the request was let into.
func (h *Handler) feedbackForm(c *gin.Context, rc *distribution.ReleaseContext) *feedbackFormView {
	a, ok := distribution.ActorIn(reqCtx(c))
	return &feedbackFormView{Action: h.links.Release(rc.Channel.Slug, rc.ID) + "/feedback", Max: distribution.MaxFeedbackText,
		AskEmail: !ok || a.Kind == distribution.ActorAnonymous}
}

// releaseFeedback: POST /channels/:slug/releases/:id/feedback (multipart: text, screenshot files,
// device, os_version, email) sends a report on the build from its page. A channel with a password
// takes it only from a browser that gave it (the password form otherwise, as the page answers); a
// tester-only channel from its testers and the team (Begin says who). 303 to the page with
// ?feedback=sent; a refused report stores nothing and shows the page again with why (4xx).
func (h *Handler) releaseFeedback(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	slug := c.Param("slug")
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errs.New(errs.NotFound, "there is no such release")
	}
	view, err := h.svc.Reads.View(ctx, slug)
	if err != nil {
		return err
	}
	rc, err := h.svc.Releases.ReleaseInView(ctx, view, id)
	if err != nil {
		return err
	}
	pageURL := h.links.Release(slug, id)
	c.Set(backURLKey, pageURL)
	passed, ok := h.feedbackGate(c, &view.ChannelContext, pageURL)
	if !ok {
		return nil
	}
	d, err := h.svc.Feedback.Begin(ctx, feedback.BeginInput{ReleaseID: rc.ID, Client: c.ClientIP(), PasswordPassed: passed})
	if err != nil {
		if errs.KindOf(err) == errs.TooManyRequests {
			// The visitor may see the page: it says so beside the form. What they typed is not
			// kept: a refused sender's body is never read.
			h.feedbackRefused(c, view, rc, feedback.Report{}, err)
			return nil
		}
		return err
	}
	defer d.Abandon(ctx)
	// Screenshots arrive like an upload: the idle timeout bounds a stall, not the whole body.
	c.Request.Body = http.MaxBytesReader(c.Writer, &idleBody{r: c.Request.Body, ctl: http.NewResponseController(c.Writer), idle: h.cfg.UploadIdleTimeout}, maxFeedbackBody)
	var rep feedback.Report
	if mt, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); mt != "multipart/form-data" {
		h.feedbackRefused(c, view, rc, rep, errs.New(errs.Unsupported, "the form is sent as multipart/form-data"))
		return nil
	}
	mr, err := c.Request.MultipartReader()
	if err != nil {
		h.feedbackRefused(c, view, rc, rep, errs.Wrap(errs.Invalid, err, "the form could not be read"))
		return nil
	}
	rep, err = d.Receive(ctx, mr, distribution.FeedbackFromPage)
	if err == nil {
		_, err = d.Submit(ctx, rep)
	}
	if err != nil {
		h.feedbackRefused(c, view, rc, rep, feedbackBodyErr(err))
		return nil
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, pageURL+"?feedback=sent#feedback")
	return nil
}

// feedbackGate applies a channel's password as its release page does, to a report sent from the
// page: a channel with a password takes it only from a browser holding the password's cookie
// (passed), and answers the password form otherwise (false). A tester-only channel is left to
// Begin (its policy), a channel open to anyone lets it in.
func (h *Handler) feedbackGate(c *gin.Context, cc *distribution.ChannelContext, pageURL string) (passed, ok bool) {
	ch := &cc.Channel
	if ch.TesterOnly || !ch.HasPassword() {
		return false, true
	}
	req := access.AccessRequest{Client: c.ClientIP(), AppID: cc.App.ID}
	if ck, err := c.Cookie(access.PasswordCookieName(ch.Slug)); err == nil {
		req.Cookie = ck
	}
	err := h.svc.Passwords.Authorize(reqCtx(c), ch, req)
	if err == nil {
		return true, true
	}
	h.passwordForm(c, cc, pageURL, err)
	return false, false
}

// feedbackRefused shows the release page again with why its report was refused beside the form
// and what was typed in it kept, with the status of the error's kind.
func (h *Handler) feedbackRefused(c *gin.Context, view *readcache.ChannelView, rc *distribution.ReleaseContext, rep feedback.Report, err error) {
	p := h.describe(c, err)
	form := h.feedbackForm(c, rc)
	form.Text, form.Email, form.Device, form.OSVersion = rep.Text, rep.Email, rep.Device, rep.OSVersion
	form.Error = p.Message
	if form.Error != "" {
		form.Error = strings.ToUpper(form.Error[:1]) + form.Error[1:]
	}
	for name := range p.Entry {
		form.ErrorField = name // a report's rules name one field at a time
	}
	h.renderRelease(c, p.Status, view, rc, form)
}

// feedbackBodyErr is the error of a report's body that could not be read: over its limit (413),
// or what the report's rules said of it.
func feedbackBodyErr(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errs.New(errs.TooLarge, "a report is at most %d MiB with its screenshots", maxFeedbackBody>>20)
	}
	return err
}

// testerFeedbackView is one of the tester's own reports on their home.
type testerFeedbackView struct {
	ID                            int64
	Build, BuildURL, Lines, State string
	Sent, SentISO                 string
	Shots                         []feedbackShotView
	DeleteAction                  string
}

type feedbackShotView struct{ Thumb, Full, Alt string }

// feedbackLines is how much of a report's text a list shows: its first three lines, cut at 240
// characters.
func feedbackLines(text string) string {
	lines := strings.SplitN(text, "\n", 4)
	out := strings.TrimSpace(strings.Join(lines[:min(len(lines), 3)], "\n"))
	if utf8.RuneCountInString(out) > 240 {
		out = string([]rune(out)[:240])
	}
	if out != strings.TrimSpace(text) {
		out += "…"
	}
	return out
}

// myFeedback is the visiting tester's reports as their home lists them (best effort: a home
// without them is still their home).
func (h *Handler) myFeedback(c *gin.Context) []testerFeedbackView {
	ctx := reqCtx(c)
	list, err := h.svc.Feedback.Mine(ctx)
	if err != nil {
		h.log.WarnContext(ctx, "listing a tester's feedback failed", "error", err.Error())
		return nil
	}
	out := make([]testerFeedbackView, 0, len(list))
	for i := range list {
		f := &list[i]
		v := testerFeedbackView{ID: f.ID, Build: f.AppName + " " + f.ReleaseVersion + " (" + f.BuildVersion + ")",
			BuildURL: h.links.Release(f.ChannelSlug, f.ReleaseID), Lines: feedbackLines(f.Text), State: f.State,
			Sent: h.when(f.CreatedAt), SentISO: f.CreatedAt.UTC().Format(time.RFC3339),
			DeleteAction: fmt.Sprintf("%s/t/feedback/%d/delete", h.links.Base, f.ID)}
		for _, s := range f.Screenshots {
			u := fmt.Sprintf("%s/api/feedback/%d/screenshots/%d", h.links.Base, f.ID, s.Position)
			v.Shots = append(v.Shots, feedbackShotView{Thumb: u + "?size=thumb", Full: u,
				Alt: fmt.Sprintf("Screenshot %d of your feedback on %s", s.Position, v.Build)})
		}
		out = append(out, v)
	}
	return out
}

// testerDeleteFeedback: POST /t/feedback/:id/delete deletes one of the tester's own reports (its
// screenshots go to the collector) and answers 303 to their home, which says so.
func (h *Handler) testerDeleteFeedback(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := h.sameSite(c); err != nil {
		return err
	}
	if err := readTesterForm(c); err != nil {
		return err
	}
	if visitorTester(c) == nil {
		return errs.New(errs.Unauthenticated, "sign in with the link Slipway mails you")
	}
	id, err := idParam(c, "id", "feedback")
	if err != nil {
		return err
	}
	c.Set(backURLKey, h.links.TesterHome())
	if err := h.svc.Feedback.Delete(ctx, id); err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusSeeOther, h.links.TesterHome()+"?feedback=deleted#your-feedback")
	return nil
}
