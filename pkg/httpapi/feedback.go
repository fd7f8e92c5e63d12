package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/feedback"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Feedback: testers' reports on builds (feedback.Reports). Apps send them as the release page
// does (multipart/form-data); the team reads them with a token or its console session.

// maxFeedbackBody bounds a report's body: its screenshots at their limit, and the text fields.
const maxFeedbackBody = distribution.MaxScreenshots*(15<<20) + 1<<20

// feedbackActor lets a request in as its token (an Authorization header or token parameter), or
// else as its visitor (a tester session, a console session, or no one: the policy decides).
func (s *Server) feedbackActor(visitor gin.HandlerFunc) gin.HandlerFunc {
	token := s.handle(s.requireToken())
	return func(c *gin.Context) {
		if headerOrQueryToken(c) != "" {
			token(c)
			return
		}
		visitor(c)
	}
}

// sendFeedback: POST /api/releases/:id/feedback (multipart: text, screenshot files, device,
// os_version, locale, app_state, email) → 201 with the report.
func (s *Server) sendFeedback(c *gin.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	return s.receiveFeedback(c, id)
}

// sendFeedbackByVersion: POST /api/feedback?channel_key=&release_version=&build_version= (and
// bundle_id when the channel holds more than one app), as Zealot's SDKs name a build.
func (s *Server) sendFeedbackByVersion(c *gin.Context) error {
	key, err := requireQuery(c, "channel_key")
	if err != nil {
		return err
	}
	rv, err := requireQuery(c, "release_version")
	if err != nil {
		return err
	}
	bv, err := requireQuery(c, "build_version")
	if err != nil {
		return err
	}
	v, err := s.svc.Reads.View(reqCtx(c), key)
	if err != nil {
		return err
	}
	bundle := strings.TrimSpace(c.Query("bundle_id"))
	if bundle == "" {
		// Without a bundle id, the channel's newest build of those versions (the view holds the
		// newest 200: an older one needs bundle_id).
		rv, bv = strings.TrimSpace(rv), strings.TrimSpace(bv)
		for i := range v.Releases {
			if r := &v.Releases[i]; r.ReleaseVersion == rv && r.BuildVersion == bv {
				return s.receiveFeedback(c, r.ID)
			}
		}
		if v.Complete {
			return errs.New(errs.NotFound, "no such release in this channel")
		}
		return errs.New(errs.NotFound, "no recent release of this channel has these versions; send bundle_id to look further")
	}
	r, err := s.svc.Releases.FindVersion(reqCtx(c), v, catalog.VersionQuery{BundleID: bundle, ReleaseVersion: rv, BuildVersion: bv})
	if err != nil {
		return err
	}
	return s.receiveFeedback(c, r.ID)
}

// receiveFeedback begins a report (who may send it is decided before the body is read), streams
// its form in, and records it; whatever it stored is discarded on any error.
func (s *Server) receiveFeedback(c *gin.Context, releaseID int64) error {
	ctx := reqCtx(c)
	d, err := s.svc.Feedback.Begin(ctx, feedback.BeginInput{ReleaseID: releaseID, Client: c.ClientIP()})
	if err != nil {
		return err
	}
	defer d.Abandon(ctx)
	// Screenshots arrive like an upload: the idle timeout bounds a stall, not the whole body,
	// which may take longer while the parse budget is busy or the link is slow. The report is
	// read through its limit; c.Request.Body stays the server's, for drainBody to read past it.
	body := http.MaxBytesReader(c.Writer, s.uploadBody(c), maxFeedbackBody)
	var rep feedback.Report
	mt, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	switch mt {
	case "multipart/form-data":
		if params["boundary"] == "" {
			return errs.Invalidf("the form could not be read: its Content-Type has no boundary")
		}
		var err error
		if rep, err = d.Receive(ctx, multipart.NewReader(body, params["boundary"]), distribution.FeedbackFromAPI); err != nil {
			// Apps write the whole body before they read the answer: reading on (bounded, as
			// drainBody does for uploads, and past the report's limit) lets the refusal reach
			// them instead of a reset.
			drainBody(c)
			return feedbackBodyErr(err)
		}
	case "application/json":
		var in struct {
			Text      string          `json:"text"`
			Device    string          `json:"device"`
			OSVersion string          `json:"os_version"`
			Locale    string          `json:"locale"`
			AppState  json.RawMessage `json:"app_state"`
			Email     string          `json:"email"`
		}
		if err := json.NewDecoder(body).Decode(&in); err != nil {
			if tooBig := feedbackBodyErr(err); errs.KindOf(tooBig) == errs.TooLarge {
				return tooBig
			}
			return errs.Wrap(errs.Invalid, err, "the body is not the JSON object of a report")
		}
		rep = feedback.Report{Text: in.Text, Device: in.Device, OSVersion: in.OSVersion, Locale: in.Locale,
			AppState: string(in.AppState), Email: in.Email, Source: distribution.FeedbackFromAPI}
	default:
		return errs.New(errs.Unsupported, "send the report as multipart/form-data (with screenshots) or application/json (text only)")
	}
	f, err := d.Submit(ctx, rep)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, s.feedbackView(f))
	return nil
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

// releaseFeedback: GET /api/releases/:id/feedback → the build's reports, newest first.
func (s *Server) releaseFeedback(c *gin.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := page(c)
	if err != nil {
		return err
	}
	list, total, err := s.svc.Feedback.OnRelease(reqCtx(c), id, p)
	if err != nil {
		return err
	}
	c.Header("X-Total-Count", strconv.Itoa(total))
	c.JSON(http.StatusOK, each(s.feedbackView)(list))
	return nil
}

// appFeedback: GET /api/apps/:id/feedback?release_id=&tester_id=&state=&q= → the app's inbox.
func (s *Server) appFeedback(c *gin.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	p, err := page(c)
	if err != nil {
		return err
	}
	q := distribution.FeedbackQuery{AppID: id, State: c.Query("state"), Search: c.Query("q"), Page: p}
	for name, dst := range map[string]*int64{"release_id": &q.ReleaseID, "tester_id": &q.TesterID} {
		if v := c.Query(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return errs.Field(name, "must be a positive integer")
			}
			*dst = n
		}
	}
	list, total, err := s.svc.Feedback.Inbox(reqCtx(c), q)
	if err != nil {
		return err
	}
	c.Header("X-Total-Count", strconv.Itoa(total))
	c.JSON(http.StatusOK, each(s.feedbackView)(list))
	return nil
}

// getFeedback: GET /api/feedback/:id.
func (s *Server) getFeedback(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Feedback.Get, s.feedbackView)
}

// setFeedbackState: PATCH /api/feedback/:id {"state": "open"|"resolved"}.
func (s *Server) setFeedbackState(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, func(c *gin.Context) (string, error) {
		var in struct {
			State string `param:"state"`
		}
		return in.State, bind(c, &in)
	}, s.svc.Feedback.SetState, s.feedbackView)
}

// deleteFeedback: DELETE /api/feedback/:id.
func (s *Server) deleteFeedback(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Feedback.Delete)
}

// feedbackScreenshot: GET /api/feedback/:id/screenshots/:n (?size=thumb) → 302 to the image.
func (s *Server) feedbackScreenshot(c *gin.Context) error {
	id, err := pathID(c)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 || n > distribution.MaxScreenshots {
		return errs.Field("n", "must be 1 to %d", distribution.MaxScreenshots)
	}
	size := c.Query("size")
	if size != "" && size != "thumb" && size != "full" {
		return errs.Field("size", "must be thumb or full")
	}
	u, err := s.svc.Feedback.ScreenshotURL(reqCtx(c), id, n, size == "thumb")
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u)
	return nil
}

type feedbackAuthorView struct {
	Kind     string `json:"kind"`
	Name     string `json:"name,omitempty"`
	Email    string `json:"email,omitempty"`
	TesterID int64  `json:"tester_id,omitempty"`
}

type screenshotView struct {
	Position    int    `json:"position"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
	ThumbURL    string `json:"thumb_url"`
}

type feedbackView struct {
	ID             int64              `json:"id"`
	ReleaseID      int64              `json:"release_id"`
	AppID          int64              `json:"app_id"`
	AppName        string             `json:"app_name"`
	ChannelKey     string             `json:"channel_key"`
	ReleaseVersion string             `json:"release_version"`
	BuildVersion   string             `json:"build_version"`
	Version        int                `json:"version"`
	Author         feedbackAuthorView `json:"author"`
	Text           string             `json:"text"`
	Device         string             `json:"device"`
	OSVersion      string             `json:"os_version"`
	Locale         string             `json:"locale"`
	AppState       json.RawMessage    `json:"app_state"`
	Source         string             `json:"source"`
	State          string             `json:"state"`
	StateBy        string             `json:"state_by,omitempty"`
	StateAt        *time.Time         `json:"state_at,omitempty"`
	CreatedAt      time.Time          `json:"created_at"`
	Screenshots    []screenshotView   `json:"screenshots"`
}

func (s *Server) feedbackView(f *distribution.Feedback) feedbackView {
	v := feedbackView{ID: f.ID, ReleaseID: f.ReleaseID, AppID: f.AppID, AppName: f.AppName, ChannelKey: f.ChannelSlug,
		ReleaseVersion: f.ReleaseVersion, BuildVersion: f.BuildVersion, Version: f.ReleaseNumber,
		Author: feedbackAuthorView{Kind: f.AuthorKind, Name: f.AuthorName, Email: f.AuthorEmail, TesterID: f.TesterID},
		Text:   f.Text, Device: f.Device, OSVersion: f.OSVersion, Locale: f.Locale, AppState: f.AppState, Source: f.Source,
		State: f.State, StateBy: f.StateBy, StateAt: f.StateAt, CreatedAt: f.CreatedAt, Screenshots: []screenshotView{}}
	if len(v.AppState) == 0 {
		v.AppState = json.RawMessage("{}")
	}
	for _, sh := range f.Screenshots {
		u := fmt.Sprintf("%s/api/feedback/%d/screenshots/%d", s.links.Base, f.ID, sh.Position)
		v.Screenshots = append(v.Screenshots, screenshotView{Position: sh.Position, ContentType: sh.ContentType, Width: sh.Width,
			Height: sh.Height, Size: sh.Size, URL: u, ThumbURL: u + "?size=thumb"})
	}
	return v
}
