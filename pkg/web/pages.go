package web

import (
	"context"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
)

// otherReleases is how many of the channel's other recent releases a release page lists.
const otherReleases = 10

// channelPerPage is the length of a channel page's release list.
const channelPerPage = 20

// releaseView is release.html's data: every value is final text or a URL; the template escapes it.
type releaseView struct {
	ID                                      int64
	AppName, Platform, PlatformIcon, Device string
	ReleaseVersion, BuildVersion            string
	Version                                 int
	// DeviceCheck says whether the device registered from this browser is in an ad hoc or development
	// profile (nil: none registered, or the build installs anywhere); RegisterURL is /udid.
	DeviceCheck *deviceCheck
	RegisterURL string
	// OtherApp is the build's bundle id when it is of another app than the channel holds
	// (HeldApp), "" otherwise.
	OtherApp, HeldApp string
	// Downloads counts downloads and iOS installs (up to the read cache's TTL late).
	Downloads                                int64
	Size, Uploaded, UploadedISO, ReleaseType string
	BundleID, MinOS, Source                  string
	Branch, BranchURL, Commit, ShortCommit   string
	CommitURL, CIURL                         string
	IconURL, QRCodeURL, ChannelURL           string
	install                                  // Install button
	Insecure, Expired                        bool
	// Android: the install button downloads an APK, which Android lets a browser install only once allowed.
	Android        bool
	ProfileExpires string
	Profile        *profileView
	// Facts are the package's platform facts, in the order shown.
	Facts []fact
	// HarmonyInstallURL is the store://enterprise link of a HarmonyOS .hap ("" otherwise).
	HarmonyInstallURL template.URL
	// AppInstallerURL is the channel's App Installer file, for an MSIX build of a channel open to
	// anyone with its link ("" otherwise: a protected channel's file needs its feed token).
	AppInstallerURL string
	// Changes says what changed since the channel's previous build (size, new permissions);
	// Since names that build.
	Changes, Since string
	Changelog      []distribution.ChangelogEntry
	CustomFields   []distribution.CustomField
	Others         []summaryView
	// Mine is the visiting tester's own state with this build (nil: not a tester).
	Mine *testerStateView
	// Feedback is the page's Send feedback form.
	Feedback *feedbackFormView
	// Repos is the channel's package repositories' setup (nil: none; repos.go).
	Repos *repoSetupView
}

// testerStateView is what a release page tells the tester visiting it of their own state.
type testerStateView struct {
	State, Text, HomeURL string
}

// testerState records that the visiting tester opened the release page (best effort: a page
// that could not record it is still the page) and says what they did with the build.
func (h *Handler) testerState(c *gin.Context, tr *distribution.Tester, releaseID int64) *testerStateView {
	ctx := reqCtx(c)
	if _, err := h.svc.Testers.Seen(ctx, releaseID, false); err != nil {
		h.log.WarnContext(ctx, "recording that a tester opened a release failed", "release_id", releaseID, "error", err.Error())
	}
	v := &testerStateView{HomeURL: h.links.TesterHome()}
	rt, err := h.svc.Testers.MyRelease(ctx, releaseID)
	switch {
	case err != nil || rt == nil:
		v.State, v.Text = distribution.TesterOpened, "Signed in as "+tr.Email+"."
	case rt.InstalledAt != nil:
		v.State, v.Text = distribution.TesterInstalled, "You installed this build on "+h.when(*rt.InstalledAt)+"."
	case rt.OpenedAt != nil && !rt.InvitedAt.IsZero() && rt.OpenedAt.Sub(rt.InvitedAt) > time.Second:
		v.State, v.Text = distribution.TesterOpened, "This build was given to you on "+h.when(rt.InvitedAt)+"; you first opened it on "+h.when(*rt.OpenedAt)+"."
	case rt.OpenedAt != nil:
		v.State, v.Text = distribution.TesterOpened, "You first opened this build on "+h.when(*rt.OpenedAt)+"."
	default:
		v.State, v.Text = distribution.TesterInvited, "This build was given to you on "+h.when(rt.InvitedAt)+"."
	}
	return v
}

// fact is a name and a value in the release page's details.
type fact struct {
	ID, Name, Value string
	Mono            bool
}

type profileView struct {
	Name, Team, Expires string
	Expired             bool
	// Limited is an ad hoc or development profile: it lists DeviceCount devices.
	Limited     bool
	DeviceCount int
}

// install is the Install button: disabled (Installable false) for an expired profile.
type install struct {
	InstallURL         template.URL
	InstallLabel, Note string
	Installable        bool
}

// summaryView is a release in a list.
type summaryView struct {
	URL, ReleaseVersion, BuildVersion, Size, Uploaded, Summary string
	Version                                                    int
	IconURL                                                    string
	// OtherApp is the build's bundle id when it is of another app than its channel holds
	// (Channel.HeldApp), "" otherwise.
	OtherApp string
	install
}

type channelView struct {
	AppName, ChannelLabel string
	Insecure              bool
	Latest                *summaryView
	Releases              []summaryView
	Total, Page, Pages    int
	PrevURL, NextURL      string
	// Repos is the channel's package repositories' setup (nil: none; repos.go).
	Repos *repoSetupView
}

// releasePage: GET /channels/:slug/releases/:id, the page a tester opens to install a build.
func (h *Handler) releasePage(c *gin.Context) error {
	ctx := reqCtx(c)
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
		return h.goneOr(c, slug, id, err)
	}
	if !h.gate(c, &view.ChannelContext, h.links.Release(slug, id)) {
		return nil
	}
	form := h.feedbackForm(c, rc)
	form.Sent = c.Query("feedback") == "sent"
	h.renderRelease(c, http.StatusOK, view, rc, form)
	return nil
}

// renderRelease writes a release page the request was let into (by gate), with its feedback
// form (as the last POST of it left it, when it was refused).
func (h *Handler) renderRelease(c *gin.Context, status int, view *readcache.ChannelView, rc *distribution.ReleaseContext, form *feedbackFormView) {
	ctx := reqCtx(c)
	slug, id, cc := rc.Channel.Slug, rc.ID, &view.ChannelContext
	v := h.releaseView(ctx, rc, view.Releases[:min(len(view.Releases), otherReleases+1)])
	v.Feedback = form
	v.Repos = h.repoSetup(&rc.Channel, view.Releases)
	if prev := previousIn(view.Releases, rc.ID); prev != nil {
		// Best effort: a page without the line is still the page.
		if changes, err := h.svc.Insights.Changes(ctx, rc.ID, prev.ID); err == nil && changes != "" {
			v.Changes, v.Since = changes, versionText(prev)
		}
	}
	if tr := visitorTester(c); tr != nil {
		v.Mine = h.testerState(c, tr, rc.ID)
	}
	if v.Profile != nil && v.Profile.Limited {
		v.DeviceCheck, v.RegisterURL = h.checkDevice(c, &rc.Release), h.links.Base+"/udid"
	}
	og := &openGraph{
		Title:       rc.App.Name + " " + versionText(&rc.Release),
		Description: strings.Join(nonEmpty(v.Platform, v.Device, v.ReleaseType, v.Size, "uploaded "+v.Uploaded), " · "),
		URL:         h.links.Release(slug, id),
		// A preview bot has no password cookie, so a protected channel shows the default icon.
		Image: h.links.Icon(rc.ID, rc.IconKey != nil && !rc.Channel.Protected()),
	}
	h.render(c, status, "release", page{
		Title: og.Title + " · Slipway", OG: og, Crumb: h.channelCrumb(cc), Body: v, PageScript: h.links.Static("feedback.js"),
	}, rc.Channel.Protected())
}

// previousIn returns the release after id in releases (a channel's, newest first): the build before
// it; nil when id is last or absent.
func previousIn(releases []distribution.Release, id int64) *distribution.Release {
	for i := range releases {
		if releases[i].ID == id && i+1 < len(releases) {
			return &releases[i+1]
		}
	}
	return nil
}

func (h *Handler) releaseView(ctx context.Context, rc *distribution.ReleaseContext, recent []distribution.Release) releaseView {
	r, ch := &rc.Release, &rc.Channel
	v := releaseView{
		ID: r.ID, AppName: rc.App.Name, Platform: name(platformNames, r.Platform), PlatformIcon: iconClass(r.Platform),
		Device: deviceLabel(r.Device), ReleaseVersion: r.ReleaseVersion, BuildVersion: r.BuildVersion, Version: r.Version,
		Size: humanSize(r.Size), Uploaded: h.when(r.CreatedAt), UploadedISO: r.CreatedAt.UTC().Format(time.RFC3339),
		Downloads: r.Downloads, ReleaseType: name(releaseTypeNames, r.ReleaseType), BundleID: r.BundleID, MinOS: minOSLabel(r.Platform, r.MinOS), Source: r.Source,
		Branch: r.Branch, Commit: r.GitCommit, ShortCommit: shortCommit(r.GitCommit), CIURL: links.WebURL(r.CIURL),
		IconURL: h.links.Icon(r.ID, r.IconKey != nil), QRCodeURL: h.links.QRCode(ch.Slug, r.ID, "medium"),
		ChannelURL: h.links.Channel(ch.Slug), Changelog: r.Changelog, CustomFields: r.CustomFields,
		Insecure: r.Platform == "ios" && !h.https(), Android: r.Platform == "android",
	}
	if ch.GitURL != nil {
		v.BranchURL, v.CommitURL = links.GitBranch(*ch.GitURL, r.Branch), links.GitCommit(*ch.GitURL, r.GitCommit)
	}
	if p := r.Profile; p != nil {
		team := strings.Join(nonEmpty(p.TeamName, p.TeamID), " · ")
		v.Profile = &profileView{Name: p.Name, Team: team, Expires: h.when(p.ExpiresAt), Expired: profileExpired(r),
			Limited: !p.AllDevices && p.DeviceCount > 0, DeviceCount: p.DeviceCount}
		v.Expired, v.ProfileExpires = v.Profile.Expired, v.Profile.Expires
	}
	v.install = h.installButton(ctx, r, ch)
	if held := ch.HeldApp(); held != "" && r.BundleID != held {
		v.OtherApp, v.HeldApp = r.BundleID, held
	}
	v.Facts = platformFacts(r)
	if links.HarmonyInstallable(r.Platform, r.Format) {
		v.HarmonyInstallURL = installURL(links.HarmonyInstall(h.links.Manifest(ch.Slug, r.ID, h.svc.Passwords.ReleaseAccessTokenAs(ctx, ch, r.ID))))
	}
	if (r.Format == "msix" || r.Format == "msixbundle") && !ch.Protected() {
		v.AppInstallerURL = h.links.Channel(ch.Slug) + "/app.appinstaller"
	}
	for i := range recent {
		if recent[i].ID != r.ID && len(v.Others) < otherReleases {
			v.Others = append(v.Others, h.summary(ctx, &recent[i], ch))
		}
	}
	return v
}

// channelPage: GET /channels/:slug, the channel's newest release and the list of its releases.
func (h *Handler) channelPage(c *gin.Context) error {
	ctx := reqCtx(c)
	slug := c.Param("slug")
	view, err := h.svc.Reads.View(ctx, slug)
	if err != nil {
		return err
	}
	cc := &view.ChannelContext
	if !h.gate(c, cc, h.links.Channel(slug)) {
		return nil
	}
	pageNo := 1
	if raw := c.Query("page"); raw != "" {
		if pageNo, err = strconv.Atoi(raw); err != nil || pageNo <= 0 || pageNo > 1_000_000 {
			c.Set(backURLKey, h.links.Channel(slug))
			return errs.Field("page", "must be a positive integer")
		}
	}
	ch := &cc.Channel
	total := view.Total
	list, err := h.svc.Releases.Versions(ctx, view, distribution.Page{Page: pageNo, PerPage: channelPerPage})
	if err != nil {
		return err
	}
	v := channelView{AppName: cc.App.Name, ChannelLabel: channelLabel(cc), Total: total, Page: pageNo,
		Pages: max(1, (total+channelPerPage-1)/channelPerPage), Insecure: ch.DeviceType == "ios" && !h.https()}
	v.Repos = h.repoSetup(ch, view.Releases)
	if pageNo > 1 {
		v.PrevURL = h.links.ChannelPage(slug, min(pageNo-1, v.Pages))
	}
	if pageNo < v.Pages {
		v.NextURL = h.links.ChannelPage(slug, pageNo+1)
	}
	for i := range list {
		v.Releases = append(v.Releases, h.summary(ctx, &list[i], ch))
	}
	og := &openGraph{Title: cc.App.Name + " · " + v.ChannelLabel, URL: h.links.Channel(slug), Image: h.links.Icon(0, false)}
	if newest := newestOfApp(view.Releases, ch); newest != nil {
		s := h.summary(ctx, newest, ch)
		v.Latest = &s
		og.Description = "Newest: " + versionText(newest) + ", uploaded " + s.Uploaded
		og.Image = h.links.Icon(newest.ID, newest.IconKey != nil && !ch.Protected())
	}
	h.render(c, http.StatusOK, "channel", page{Title: og.Title + " · Slipway", OG: og, Body: v}, ch.Protected())
	return nil
}

// newestOfApp is the channel's newest release (releases newest first) of the app it holds: a
// build of another app uploaded to it is never offered as the channel's newest. When
// none of releases is of its app, the newest of all (nil when there is none).
func newestOfApp(releases []distribution.Release, ch *distribution.Channel) *distribution.Release {
	if len(releases) == 0 {
		return nil
	}
	if held := ch.HeldApp(); held != "" {
		for i := range releases {
			if releases[i].BundleID == held {
				return &releases[i]
			}
		}
	}
	return &releases[0]
}

func (h *Handler) summary(ctx context.Context, r *distribution.Release, ch *distribution.Channel) summaryView {
	s := summaryView{
		URL: h.links.Release(ch.Slug, r.ID), ReleaseVersion: r.ReleaseVersion, BuildVersion: r.BuildVersion,
		Size: humanSize(r.Size), Uploaded: h.when(r.CreatedAt), Version: r.Version, IconURL: h.links.Icon(r.ID, r.IconKey != nil),
		install: h.installButton(ctx, r, ch),
	}
	if len(r.Changelog) > 0 {
		s.Summary, _, _ = strings.Cut(r.Changelog[0].Message, "\n")
	}
	if held := ch.HeldApp(); held != "" && r.BundleID != held {
		s.OtherApp = r.BundleID
	}
	return s
}

// installButton is the Install link of a release: the itms-services link on iOS, the download
// otherwise. On a protected channel the link carries a short-lived access token, since iOS
// fetches the manifest and the package without the browser's cookies (and so may an Android
// download manager). On a channel open to its testers only, the token is made for the request's
// tester (or console user), so that the install is recorded as theirs and stops working when
// the channel is no longer given to them.
func (h *Handler) installButton(ctx context.Context, r *distribution.Release, ch *distribution.Channel) install {
	in := install{InstallURL: installURL(h.links.Install(r.Platform, ch.Slug, r.ID, h.svc.Passwords.ReleaseAccessTokenAs(ctx, ch, r.ID))), Installable: true}
	switch {
	case r.Platform == "ios":
		in.InstallLabel = "Install"
		if r.ReleaseType == "appstore" {
			in.Note = "This is an App Store build: devices install it only through TestFlight or the App Store."
		}
	case r.Platform == "android" && r.Format == "aab":
		in.InstallLabel = "Download"
		in.Note = "This is an Android App Bundle (.aab): a device cannot install it directly."
	case r.Platform == "android":
		in.InstallLabel = "Install"
	case r.Platform == "harmonyos" && r.Format == "harmony-app":
		in.InstallLabel = "Download .app"
		in.Note = "This is a HarmonyOS .app bundle, for AppGallery: a device installs its .hap modules, not the .app."
	case r.Format == "other":
		in.InstallLabel = "Download"
		in.Note = "Slipway kept this file as it was uploaded, without reading it."
	case formatNames[r.Format] != "" && (r.Platform == "harmonyos" || r.Platform == "windows" || r.Platform == "linux"):
		in.InstallLabel = "Download " + formatNames[r.Format]
	default:
		in.InstallLabel = "Download"
	}
	if profileExpired(r) {
		in.Installable, in.InstallLabel = false, "Profile expired"
	}
	return in
}

// installURL marks an install link as safe for href: html/template only lets http(s) and mailto
// through, and iOS installs through itms-services. Links come from package links, never from
// user input; anything of another scheme is still refused.
func installURL(u string) template.URL {
	for _, scheme := range []string{"https://", "http://", "itms-services://", "store://enterprise/manifest?url="} {
		if strings.HasPrefix(u, scheme) {
			return template.URL(u)
		}
	}
	return "#"
}

// platformFacts are the details the package's platform gives beyond the shared ones: the format,
// target SDK, architectures, publisher, permissions and the format's own properties.
func platformFacts(r *distribution.Release) []fact {
	f := &r.Facts
	var out []fact
	add := func(id, name, value string, mono bool) {
		if value != "" {
			out = append(out, fact{ID: id, Name: name, Value: value, Mono: mono})
		}
	}
	add("fact-format", "Format", formatNames[r.Format], false)
	add("fact-target", "Target API", r.TargetSDK, false)
	add("fact-arch", "Architecture", strings.Join(f.Architectures, ", "), false)
	add("fact-publisher", "Publisher", f.Publisher, false)
	add("fact-description", "Description", f.Description, false)
	if f.Debuggable {
		add("fact-debug", "Debuggable", "yes", false)
	}
	add("fact-permissions", "Permissions", strings.Join(f.Permissions, ", "), true)
	keys := make([]string, 0, len(f.Properties))
	for k := range f.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !appinfo.IndexProperties[k] {
			add("fact-"+strings.ToLower(k), k, f.Properties[k], strings.HasSuffix(k, "Code"))
		}
	}
	return out
}

func profileExpired(r *distribution.Release) bool {
	return r.Profile != nil && !r.Profile.ExpiresAt.IsZero() && r.Profile.ExpiresAt.Before(time.Now())
}

func (h *Handler) https() bool { return strings.HasPrefix(h.cfg.PublicURL, "https://") }

func (h *Handler) channelCrumb(cc *distribution.ChannelContext) *crumb {
	return &crumb{Text: cc.App.Name + " · " + channelLabel(cc), URL: h.links.Channel(cc.Channel.Slug)}
}

// channelLabel names a channel within its app: "Adhoc · iOS".
func channelLabel(cc *distribution.ChannelContext) string {
	return strings.Join(nonEmpty(cc.Scheme.Name, name(platformNames, cc.Channel.Name)), " · ")
}

func versionText(r *distribution.Release) string {
	return r.ReleaseVersion + " (" + r.BuildVersion + ")"
}

func nonEmpty(s ...string) []string {
	out := s[:0:0]
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}
