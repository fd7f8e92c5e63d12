package web

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// A deleted build's tester page and install link answer 410 Gone with a page that says it was
// removed, when, and why as far as a tester may know: by the channel's retention policy (and
// which rule), or "by a team member". The page never names the person or token: it is public,
// and the console session cookie (Path=/console) never reaches it; who it was is in the audit
// log (/console/audit), for admins. It links to the channel's newest build. Only the HTML pages
// change: an API client asking for a deleted release gets the API's 404 as before.

type goneView struct {
	Name, When, By string
	// NewestURL is the channel's newest build's page ("" when the channel has none left).
	NewestURL, NewestName   string
	ChannelURL, ChannelName string
}

// GonePage answers a request for release id (in the channel key names; "" for any) with its
// removal page (410) when the release was deleted and left a tombstone, and reports whether it
// answered. A protected channel asks for its password first (the page names the build).
func (h *Handler) GonePage(c *gin.Context, key string, id int64) bool {
	ctx := reqCtx(c)
	t, err := h.svc.Releases.Tombstone(ctx, key, id)
	if err != nil {
		return false
	}
	cc, err := h.svc.Apps.Channel(ctx, t.ChannelSlug)
	if err != nil {
		return false
	}
	if !h.gate(c, cc, h.links.Release(t.ChannelSlug, id)) {
		return true
	}
	v := goneView{Name: distribution.ReleaseName(t.AppName, t.ReleaseVersion, t.BuildVersion), When: h.when(t.DeletedAt),
		By: removedBy(t), ChannelURL: h.links.Channel(t.ChannelSlug), ChannelName: cc.App.Name + " · " + cc.Channel.Name}
	if t.NewestID != 0 {
		v.NewestURL = h.links.Release(t.ChannelSlug, t.NewestID)
		v.NewestName = t.NewestReleaseVersion + " (" + t.NewestBuildVersion + ")"
	}
	h.render(c, http.StatusGone, "gone", page{Title: v.Name + " was removed · Slipway", Crumb: h.channelCrumb(cc), Body: v}, true)
	return true
}

// removedBy says who removed a build, as far as a tester may know: retention and its rule, or a
// team member (a person or a token; the audit log names them).
func removedBy(t *distribution.Tombstone) string {
	if t.ByRetention() {
		if rule := retentionRules[t.Reason]; rule != "" {
			return "by the channel's retention policy (" + rule + ")"
		}
		return "by the channel's retention policy"
	}
	return "by a team member"
}

// retentionRules say why retention deleted a build.
var retentionRules = map[string]string{
	distribution.ReasonKeepBuilds:     "it keeps only the newest builds",
	distribution.ReasonMaxAge:         "builds older than its age limit go",
	distribution.ReasonMaxBytes:       "it keeps the channel under its size limit",
	distribution.ReasonExpiredProfile: "the build's provisioning profile expired",
}

// WantsPage reports whether a request is a browser's asking for a page (Accept names text/html),
// not a program's.
func WantsPage(c *gin.Context) bool {
	return strings.Contains(c.GetHeader("Accept"), "text/html")
}

// goneOr answers a page request for a deleted release with its removal page; any other error,
// or a request no page answers, is returned as it is.
func (h *Handler) goneOr(c *gin.Context, key string, id int64, err error) error {
	if errs.KindOf(err) == errs.NotFound && h.GonePage(c, key, id) {
		return nil
	}
	return err
}
