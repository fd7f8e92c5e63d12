package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/insights"
)

// releaseRefView names a release in the insights answers.
type releaseRefView struct {
	ID             int64   `json:"id"`
	Version        int     `json:"version"`
	ReleaseVersion string  `json:"release_version"`
	BuildVersion   string  `json:"build_version"`
	Size           int64   `json:"size"`
	Channel        refView `json:"channel"`
}

func newReleaseRefView(rc *distribution.ReleaseContext) releaseRefView {
	return releaseRefView{ID: rc.ID, Version: rc.Version, ReleaseVersion: rc.ReleaseVersion, BuildVersion: rc.BuildVersion,
		Size: rc.Size, Channel: refView{ID: rc.Channel.ID, Name: rc.Channel.Name}}
}

// insightsView is GET /api/releases/:id/insights: the release and its snapshot.
type insightsView struct {
	Release  releaseRefView     `json:"release"`
	Insights *insights.Snapshot `json:"insights"`
}

// diffView is GET /api/releases/:id/diff: the two releases, the diff, and the diff said as
// summary lines and as a Markdown report.
type diffView struct {
	Release  releaseRefView `json:"release"`
	Against  releaseRefView `json:"against"`
	Summary  []string       `json:"summary"`
	Markdown string         `json:"markdown"`
	Diff     *insights.Diff `json:"diff"`
}

// uploadInsightsView is what an upload's answer says changed (the insights field of the release).
type uploadInsightsView struct {
	AgainstReleaseID *int64   `json:"against_release_id"`
	Summary          []string `json:"summary"`
	BudgetWarnings   []string `json:"budget_warnings"`
}

func newUploadInsightsView(n *distribution.UploadNews) *uploadInsightsView {
	if n == nil {
		return nil
	}
	v := &uploadInsightsView{Summary: n.Summary, BudgetWarnings: n.BudgetWarnings}
	if n.Against != 0 {
		v.AgainstReleaseID = &n.Against
	}
	if v.Summary == nil {
		v.Summary = []string{}
	}
	if v.BudgetWarnings == nil {
		v.BudgetWarnings = []string{}
	}
	return v
}

// releaseInsights: GET /api/releases/:id/insights.
func (s *Server) releaseInsights(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Insights.Release, func(ri *uploads.ReleaseInsights) insightsView {
		return insightsView{Release: newReleaseRefView(ri.Release), Insights: ri.Snapshot}
	})
}

// againstID reads ?against= (0 when absent: the release before in its channel).
func againstID(c *gin.Context) (int64, error) {
	raw := strings.TrimSpace(c.Query("against"))
	if raw == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.Field("against", "must be a release id (a positive integer)")
	}
	return id, nil
}

// releaseDiff: GET /api/releases/:id/diff?against=ID.
func (s *Server) releaseDiff(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, againstID, s.svc.Insights.Diff, func(d *uploads.ReleaseDiff) diffView {
		summary := d.Summary
		if summary == nil {
			summary = []string{}
		}
		return diffView{Release: newReleaseRefView(d.Release), Against: newReleaseRefView(d.Against), Summary: summary,
			Markdown: insights.Markdown(d.Diff), Diff: d.Diff}
	})
}
