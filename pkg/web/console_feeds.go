package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/pkg/links"
)

// feedsView is a desktop channel's update feeds as its console page shows them.
type feedsView struct {
	Feeds []links.Feed
	// Protected: the channel has a password, so the feeds answer only to its feed token;
	// TokenMade says one has been made (the console cannot show it again: only its hash is kept).
	Protected, TokenMade bool
}

// channelFeeds is the channel's feeds view, nil for a platform without update feeds.
func (h *Handler) channelFeeds(ch *distribution.Channel) *feedsView {
	if !distribution.DesktopPlatform(ch.DeviceType) {
		return nil
	}
	return &feedsView{Feeds: h.links.Feeds(ch.Slug, ch.DeviceType), Protected: ch.Protected(), TokenMade: ch.FeedTokenHash != ""}
}

// consoleRotateFeedToken: POST /console/channels/:id/feed_token (admins) makes the channel's feed
// token anew and shows it once. Replacing a token asks for "confirm": installed apps holding the
// old one stop finding updates at once.
func (h *Handler) consoleRotateFeedToken(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "feed-token-"+strconv.FormatInt(id, 10), nil)
	cc, err := h.svc.Apps.ChannelByID(ctx, id)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.RotateFeedToken, policy.OnApp(cc.App.ID)); err != nil {
		return "", err
	}
	if cc.Channel.FeedTokenHash != "" {
		if err := confirmed(c); err != nil {
			return "", errs.Field("confirm", "must be ticked: apps configured with the old token stop finding updates")
		}
	}
	token, err := h.svc.Apps.RotateFeedToken(ctx, id)
	if err != nil {
		return "", err
	}
	f.flash = flash{Kind: "ok", Message: "A new feed token was made for " + cc.Channel.Name +
		". Copy it now: it is shown only this once. Updaters send it as ?token=… on the feed URLs.", Secret: token, SecretID: "new-feed-token"}
	return h.channelURL(id) + "#feeds", nil
}

// consoleSetSigning: POST /console/channels/:id/signing (admins) switches Slipway's Sparkle
// signing of the channel's macOS builds on ("sparkle_signing" ticked) or off.
func (h *Handler) consoleSetSigning(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "sparkle-signing-"+strconv.FormatInt(id, 10), nil)
	cc, err := h.svc.Apps.ChannelByID(ctx, id)
	if err != nil {
		return "", err
	}
	if err := h.may(c, policy.ConfigureSigning, policy.OnApp(cc.App.ID)); err != nil {
		return "", err
	}
	on := c.PostForm("sparkle_signing") != ""
	if _, err := h.svc.Apps.UpdateChannel(ctx, id, catalog.ChannelChanges{SparkleSigning: &on}); err != nil {
		return "", err
	}
	if on {
		f.ok("Slipway signs the builds uploaded to %s from now on, by tokens limited to the app, admin tokens and the app's people, once they are rolled out.", cc.Channel.Name)
	} else {
		f.ok("Slipway no longer signs the builds uploaded to %s.", cc.Channel.Name)
	}
	return h.channelURL(id) + "#feeds", nil
}

// consoleSetAppInstaller: POST /console/channels/:id/appinstaller sets how often the channel's
// App Installer file is checked when the app starts ("appinstaller_hours", 0 to 255).
func (h *Handler) consoleSetAppInstaller(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "appinstaller-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"appinstaller_hours": {"appinstaller_hours", "Hours between update checks"}})
	hours := c.PostForm("appinstaller_hours")
	ch, err := h.svc.Apps.UpdateChannel(ctx, id, catalog.ChannelChanges{AppInstallerHours: &hours})
	if err != nil {
		return "", err
	}
	if ch.AppInstallerHours == 0 {
		f.ok("The App Installer file of %s is checked at every start of the app.", ch.Name)
	} else {
		f.ok("The App Installer file of %s is checked at most every %d hours when the app starts.", ch.Name, ch.AppInstallerHours)
	}
	return h.channelURL(id) + "#feeds", nil
}

// consoleSetAPT: POST /console/channels/:id/apt sets which builds the channel's APT repository
// lists ("apt_newest_only": "1" the newest version of each package and architecture only, else
// every build the channel offers).
func (h *Handler) consoleSetAPT(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "apt-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"apt_newest_only": {"apt_newest_only", "Which builds"}})
	newest := c.PostForm("apt_newest_only") == "1"
	ch, err := h.svc.Apps.UpdateChannel(ctx, id, catalog.ChannelChanges{APTNewestOnly: &newest})
	if err != nil {
		return "", err
	}
	if ch.APTNewestOnly {
		f.ok("The APT repository of %s lists the newest version of each package only.", ch.Name)
	} else {
		f.ok("The APT repository of %s lists every build the channel offers.", ch.Name)
	}
	return h.channelURL(id) + "#repo-setup", nil
}

// consoleSetUpdates: POST /console/releases/:id/updates sets what the update feeds announce of a
// desktop build: its staged-rollout percentage (0 takes it out of the feeds) and whether it is
// a critical update.
func (h *Handler) consoleSetUpdates(c *gin.Context, f *formCall) (string, error) {
	ctx := reqCtx(c)
	id, err := idParam(c, "id", "release")
	if err != nil {
		return "", err
	}
	h.onBuild(c, f, id, "updates-form-"+strconv.FormatInt(id, 10), map[string]fieldLabel{"rollout": {"rollout", "Rollout"}})
	rollout, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(c.PostForm("rollout")), "%")))
	if err != nil {
		return "", errs.Field("rollout", "must be a whole number from 0 to 100")
	}
	critical := c.PostForm("critical") != ""
	rc, err := h.svc.Releases.UpdateRelease(ctx, id, catalog.ReleaseChanges{RolloutPercent: &rollout, Critical: &critical})
	if err != nil {
		return "", err
	}
	what := "offered to every install"
	switch {
	case rc.RolloutPercent == 0:
		what = "out of the update feeds (rollout 0%)"
	case rc.RolloutPercent < 100:
		what = "rolled out to " + strconv.Itoa(rc.RolloutPercent) + "% of installs"
	}
	if rc.Critical {
		what += ", as a critical update"
	}
	f.ok("Release %s is %s.", versionText(&rc.Release), what)
	return h.buildURL(id) + "#updates", nil
}

// andList joins words as a sentence does: "a", "a and b", "a, b and c".
func andList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// updatesView is what the update feeds say of a desktop build, for its console page.
type updatesView struct {
	// State is the checksum state in words; Offered says which frameworks the feeds offer the
	// build to (or why none), and Frameworks whether each framework of its platform can use it.
	State      string
	Offered    string
	Frameworks []frameworkView
	// Sparkle says whether the build has a Sparkle signature ("" for other platforms).
	Sparkle  string
	SHA512   string
	SHA1     string
	Rollout  string
	Critical bool
}

// frameworkView is whether one update framework can use a build (feeds.Usability), with its
// element id.
type frameworkView struct {
	feeds.Usability
	ID string
}

// releaseUpdates is the build's updates view, nil for a platform without update feeds.
func releaseUpdates(r *distribution.Release) *updatesView {
	if !distribution.DesktopPlatform(r.Platform) {
		return nil
	}
	v := &updatesView{SHA512: r.SHA512, SHA1: r.SHA1, Rollout: strconv.Itoa(r.RolloutPercent), Critical: r.Critical}
	var usable []string
	for _, u := range feeds.Frameworks(r) {
		v.Frameworks = append(v.Frameworks, frameworkView{Usability: u, ID: "usable-" + strings.ToLower(strings.ReplaceAll(u.Framework, ".", "-"))})
		if u.Usable {
			usable = append(usable, u.Framework)
		}
	}
	switch {
	case !r.InFeeds():
		v.Offered = "not offered"
	case len(usable) == 0:
		v.Offered = "in the feeds, but no framework can use it (below)"
	default:
		v.Offered = "offered to " + andList(usable)
		if r.RolloutPercent < 100 {
			v.Offered += fmt.Sprintf(", to %d%% of installs", r.RolloutPercent)
		}
	}
	switch r.ChecksumState {
	case distribution.ChecksumVerified:
		v.State = "verified: Slipway computed its checksums from the stored bytes"
	case distribution.ChecksumMismatch:
		v.State = "mismatch: " + r.ChecksumError
	default:
		v.State = "being verified: the feeds leave it out until Slipway has read the stored bytes (seconds)"
	}
	if r.Platform == "macos" {
		switch {
		case r.EdSignature != "":
			v.Sparkle = "signed (EdDSA)"
		case r.SparkleSign && r.RolloutPercent == 0:
			v.Sparkle = "none yet: Slipway signs it once it is rolled out above 0%"
		case r.SparkleSign:
			v.Sparkle = "none yet: Slipway signs it once it has read the stored bytes (needs SLIPWAY_SPARKLE_KEY_FILE)"
		default:
			v.Sparkle = "none: Sparkle refuses an update without one (upload with ed_signature, or have an admin switch on Slipway's signing for the channel before uploading)"
		}
	}
	return v
}
