package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
)

// shortReleaseView is the short Release form (versions, latest, version_exist).
type shortReleaseView struct {
	Version        int                    `json:"version"`
	AppName        string                 `json:"app_name"`
	BundleID       string                 `json:"bundle_id"`
	ReleaseVersion string                 `json:"release_version"`
	BuildVersion   string                 `json:"build_version"`
	Source         string                 `json:"source"`
	Branch         string                 `json:"branch"`
	GitCommit      string                 `json:"git_commit"`
	CIURL          string                 `json:"ci_url"`
	Size           int64                  `json:"size"`
	IconURL        string                 `json:"icon_url"`
	InstallURL     string                 `json:"install_url"`
	Changelog      []store.ChangelogEntry `json:"changelog"`
	CreatedAt      string                 `json:"created_at"`
}

// releaseView is the full Release form (upload response).
type releaseView struct {
	ID int64 `json:"id"`
	shortReleaseView
	ReleaseURL    string              `json:"release_url"`
	QRCodeURL     string              `json:"qrcode_url"`
	TextChangelog string              `json:"text_changelog"`
	CustomFields  []store.CustomField `json:"custom_fields"`
	App           refView             `json:"app"`
	Scheme        refView             `json:"scheme"`
	Channel       channelView         `json:"channel"`
}

// channelListingView is the envelope of versions and latest: the channel with its app and scheme.
type channelListingView struct {
	AppName  string  `json:"app_name"`
	BundleID string  `json:"bundle_id"`
	GitURL   *string `json:"git_url"`
	App      refView `json:"app"`
	Scheme   refView `json:"scheme"`
	Releases any     `json:"releases"`
}

func (s *Server) iconURL(r *store.Release) string { return s.links.Icon(r.ID, r.IconKey != nil) }

// appName renders "<app> <scheme> <channel>", as Zealot does.
func appName(app, scheme, channel string) string {
	return strings.TrimSpace(app + " " + scheme + " " + channel)
}

func (s *Server) shortRelease(r *store.Release, cc *store.ChannelContext) shortReleaseView {
	changelog := r.Changelog
	if changelog == nil {
		changelog = []store.ChangelogEntry{}
	}
	return shortReleaseView{
		Version: r.Version, AppName: appName(cc.App.Name, cc.Scheme.Name, cc.Channel.Name), BundleID: r.BundleID,
		ReleaseVersion: r.ReleaseVersion, BuildVersion: r.BuildVersion, Source: r.Source, Branch: r.Branch,
		GitCommit: r.GitCommit, CIURL: r.CIURL, Size: r.Size, IconURL: s.iconURL(r),
		InstallURL: s.links.Install(r.Platform, cc.Channel.Slug, r.ID, ""), Changelog: changelog, CreatedAt: s.timestamp(r.CreatedAt),
	}
}

func (s *Server) fullRelease(rc *store.ReleaseContext) releaseView {
	cc := &store.ChannelContext{Channel: rc.Channel, App: rc.App, Scheme: rc.Scheme}
	custom := rc.CustomFields
	if custom == nil {
		custom = []store.CustomField{}
	}
	return releaseView{
		ID: rc.ID, shortReleaseView: s.shortRelease(&rc.Release, cc), ReleaseURL: s.links.Release(rc.Channel.Slug, rc.ID),
		QRCodeURL:     s.links.QRCode(rc.Channel.Slug, rc.ID, "thumb"),
		TextChangelog: distribution.TextChangelog(rc.Changelog), CustomFields: custom,
		App: refView{ID: rc.App.ID, Name: rc.App.Name}, Scheme: refView{ID: rc.Scheme.ID, Name: rc.Scheme.Name},
		Channel: newChannelView(&rc.Channel),
	}
}

func (s *Server) listing(cc *store.ChannelContext, releases any) channelListingView {
	return channelListingView{
		AppName: appName(cc.App.Name, cc.Scheme.Name, cc.Channel.Name), BundleID: cc.Channel.BundleID, GitURL: cc.Channel.GitURL,
		App: refView{ID: cc.App.ID, Name: cc.App.Name}, Scheme: refView{ID: cc.Scheme.ID, Name: cc.Scheme.Name}, Releases: releases,
	}
}

// channelFromQuery resolves the required channel_key parameter.
func (s *Server) channelFromQuery(c *gin.Context) (*store.ChannelContext, error) {
	key, err := requireQuery(c, "channel_key")
	if err != nil {
		return nil, err
	}
	return s.db.ChannelContextBySlug(c, key)
}

// versions: GET /api/apps/versions, a channel's releases newest first, paginated.
func (s *Server) versions(c *gin.Context) {
	cc, err := s.channelFromQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	p, err := page(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	rels, err := s.db.ListReleases(c, cc.Channel.ID, p)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := make([]shortReleaseView, 0, len(rels))
	for i := range rels {
		out = append(out, s.shortRelease(&rels[i], cc))
	}
	c.JSON(http.StatusOK, s.listing(cc, out))
}

// sdkScanLimit bounds how many recent releases the SDK form of latest compares.
const sdkScanLimit = 200

// latest: GET /api/apps/latest. Without sdk, releases is the channel's newest release (with
// bundle_id when given) as one object. With sdk (the Zealot iOS and Android SDKs), releases is the
// array of releases newer than release_version/build_version, newest first, empty when up to date.
func (s *Server) latest(c *gin.Context) {
	cc, err := s.channelFromQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	bundleID := strings.TrimSpace(c.Query("bundle_id"))
	if _, sdk := c.GetQuery("sdk"); sdk {
		relVersion, bldVersion := strings.TrimSpace(c.Query("release_version")), strings.TrimSpace(c.Query("build_version"))
		if relVersion == "" && bldVersion == "" {
			s.fail(c, errs.Field("release_version", "or build_version is required with sdk"))
			return
		}
		rels, err := s.db.RecentReleases(c, cc.Channel.ID, bundleID, sdkScanLimit)
		if err != nil {
			s.fail(c, err)
			return
		}
		out := []shortReleaseView{}
		for i := range rels {
			if distribution.Newer(rels[i].ReleaseVersion, rels[i].BuildVersion, relVersion, bldVersion) {
				out = append(out, s.shortRelease(&rels[i], cc))
			}
		}
		c.JSON(http.StatusOK, s.listing(cc, out))
		return
	}
	rels, err := s.db.RecentReleases(c, cc.Channel.ID, bundleID, 1)
	if err != nil {
		s.fail(c, err)
		return
	}
	if len(rels) == 0 {
		s.fail(c, errs.New(errs.NotFound, "this channel has no release yet"))
		return
	}
	c.JSON(http.StatusOK, s.listing(cc, s.shortRelease(&rels[0], cc)))
}

// versionExist: GET /api/apps/version_exist, by bundle_id with both versions or with git_commit.
func (s *Server) versionExist(c *gin.Context) {
	cc, err := s.channelFromQuery(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	bundleID, err := requireQuery(c, "bundle_id")
	if err != nil {
		s.fail(c, err)
		return
	}
	rel, bld, commit := strings.TrimSpace(c.Query("release_version")), strings.TrimSpace(c.Query("build_version")), strings.TrimSpace(c.Query("git_commit"))
	if commit == "" && (rel == "" || bld == "") {
		s.fail(c, errs.Invalidf("give release_version and build_version, or git_commit, with bundle_id"))
		return
	}
	if commit != "" {
		rel, bld = "", ""
	}
	r, err := s.db.FindRelease(c, cc.Channel.ID, bundleID, rel, bld, commit)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, s.shortRelease(r, cc))
}
