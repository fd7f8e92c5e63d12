package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/pkg/web"
)

// The update feeds of desktop apps (docs/feeds.md): per channel, from the read cache (strong
// ETag, 304, HEAD), with absolute URLs. Which releases each updater is offered is pkg/feeds'
// (beside the renderers); this file answers the requests. Deleting or retention taking a build
// drops it from every feed at once (the read cache's invalidation).

// feedReleases is how many releases a Sparkle appcast lists (newest first).
const feedReleases = 50

// feedView returns the channel's view for a feed request, after its access check: a channel with
// a password answers only to its feed token (?token=, or Authorization: Bearer), since updaters
// send no cookies. It returns the token to put in the feed's links ("" for an open channel).
func (s *Server) feedView(c *gin.Context) (*readcache.ChannelView, string, error) {
	ctx := reqCtx(c)
	v, err := s.svc.Reads.View(ctx, c.Param("slug"))
	if err != nil {
		return nil, "", err
	}
	if !v.Channel.Protected() {
		return v, "", nil
	}
	token := c.Query("token")
	if token == "" {
		token, _ = strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	}
	if !v.Channel.CheckFeedToken(strings.TrimSpace(token)) {
		return nil, "", errs.New(errs.Unauthenticated, "this channel is protected (a password, or its testers only): its feeds need the channel's feed token "+
			"(?token=..., or Authorization: Bearer ...); an admin makes one on the channel's console page (/console/channels/%d, Update feeds) or with POST /api/channels/%d/feed_token", v.Channel.ID, v.Channel.ID)
	}
	return v, strings.TrimSpace(token), nil
}

// offered returns up to limit of the releases the feeds offer (Release.InFeeds), newest first,
// that every filter in only accepts (0: no limit).
func offered(v *readcache.ChannelView, limit int, only ...func(*distribution.Release) bool) []*distribution.Release {
	var out []*distribution.Release
	for i := range v.Releases {
		r := &v.Releases[i]
		if !r.InFeeds() || slices.ContainsFunc(only, func(f func(*distribution.Release) bool) bool { return !f(r) }) {
			continue
		}
		if out = append(out, r); len(out) == limit {
			break
		}
	}
	return out
}

// feedItems returns up to limit of the releases the feeds offer, newest first, as feed items
// (see offered).
func (s *Server) feedItems(ctx context.Context, v *readcache.ChannelView, token string, limit int, only ...func(*distribution.Release) bool) ([]feeds.Item, error) {
	rels := offered(v, limit, only...)
	out := make([]feeds.Item, 0, len(rels))
	for _, r := range rels {
		it, err := s.feedItem(ctx, v, r, token)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}

// feedItem is a release as the feeds show it, with its download URL.
func (s *Server) feedItem(ctx context.Context, v *readcache.ChannelView, r *distribution.Release, token string) (feeds.Item, error) {
	u, err := s.feedURL(ctx, r, token, !v.Channel.Protected())
	if err != nil {
		return feeds.Item{}, err
	}
	notes := make([]string, len(r.Changelog))
	for j, e := range r.Changelog {
		notes[j] = e.Message
	}
	// A beta release is on Sparkle's "beta" channel (apps opt in through allowedChannels);
	// every other type is on the default channel (a macOS build without a profile is "debug").
	channel := ""
	if r.ReleaseType == "beta" {
		channel = r.ReleaseType
	}
	return feeds.Item{Title: fmt.Sprintf("%s %s", v.App.Name, r.ReleaseVersion), ReleaseVersion: r.ReleaseVersion,
		BuildVersion: r.BuildVersion, Notes: notes, Published: r.CreatedAt, URL: u, Filename: r.Filename, Size: r.Size,
		Format: r.Format, SHA512Hex: r.SHA512, SHA1Hex: r.SHA1, MinOS: r.MinOS, EdSignature: r.EdSignature,
		TauriSignature: r.TauriSignature, Channel: channel, RolloutPercent: r.RolloutPercent, Critical: r.Critical}, nil
}

// feedURL is where an updater downloads a release: the CDN when there is one and the channel is
// public (its URLs do not expire), else the download route, whose path ends with the file name
// (electron-updater picks files by extension) and which redirects to a fresh presigned or signed
// URL. A protected channel's links carry its feed token, and never lead to the CDN.
func (s *Server) feedURL(ctx context.Context, r *distribution.Release, token string, public bool) (string, error) {
	if s.cfg.CDNURL != "" && public {
		return s.svc.Objects.ObjectURL(ctx, r.ObjectKey, r.Filename, contentTypes[r.Format], true)
	}
	name := r.Filename
	if name == "" {
		name = "package"
	}
	u := fmt.Sprintf("%s/download/releases/%d/%s", s.cfg.PublicURL, r.ID, url.PathEscape(name))
	if token != "" {
		u += "?feed_token=" + url.QueryEscape(token)
	}
	return u, nil
}

// needPlatform refuses a feed for a platform the channel does not hold (404, saying which).
func needPlatform(v *readcache.ChannelView, feed string, platforms ...string) error {
	for _, p := range platforms {
		if v.Channel.DeviceType == p {
			return nil
		}
	}
	return errs.New(errs.NotFound, "channel %s holds %s builds; %s is served for %s channels", v.Channel.Slug,
		v.Channel.DeviceType, feed, strings.Join(platforms, " or "))
}

// writeFeed answers an encoded feed with its content type (200, or 304 for If-None-Match). The
// length is declared, so that HEAD says it too (App Installer looks before it fetches).
func writeFeed(c *gin.Context, e *readcache.Encoded, contentType string) {
	c.Header("Cache-Control", "no-cache")
	c.Header("ETag", e.ETag)
	if web.ETagMatch(c.GetHeader("If-None-Match"), e.ETag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Header("Content-Length", strconv.Itoa(len(e.Body)))
	c.Data(http.StatusOK, contentType, e.Body)
}

// encodeBytes wraps a rendered feed with a strong ETag (the hash of its bytes).
func encodeBytes(b []byte) *readcache.Encoded {
	sum := sha256.Sum256(b)
	return &readcache.Encoded{Body: b, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// appcast: GET /channels/:slug/appcast.xml, the Sparkle appcast of a macOS channel.
func (s *Server) appcast(c *gin.Context) error {
	ctx := reqCtx(c)
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, "the Sparkle appcast", "macos"); err != nil {
		return err
	}
	e, err := v.Memo(feeds.Key{Kind: feeds.KindAppcast, Token: token}.String(), func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, feedReleases)
		if err != nil {
			return nil, err
		}
		body, err := feeds.Appcast(v.App.Name, s.links.Channel(v.Channel.Slug), items)
		if err != nil {
			return nil, err
		}
		return encodeBytes(body), nil
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "application/rss+xml; charset=utf-8")
	return nil
}

// electron: GET /channels/:slug/electron/:file, electron-updater's latest*.yml (generic provider,
// whose url is /channels/:slug/electron).
func (s *Server) electron(c *gin.Context) error {
	ctx := reqCtx(c)
	file := c.Param("file")
	platform, ok := feeds.ElectronPlatform(file)
	if !ok {
		return errs.New(errs.NotFound, "%q is not an electron-updater feed: ask for latest.yml (Windows), latest-mac.yml, latest-linux.yml or latest-linux-arm64.yml", file)
	}
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, file, platform); err != nil {
		return err
	}
	e, err := v.Memo(feeds.Key{Kind: feeds.KindElectron, File: file, Token: token}.String(), func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, 1, func(r *distribution.Release) bool { return feeds.ElectronOffers(file, r) })
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s has no build %s can offer yet (a macOS .zip, a Windows .exe, "+
				"a Linux AppImage of the file's architecture; builds are offered once Slipway has verified their checksums)", v.Channel.Slug, file)
		}
		body, err := feeds.ElectronYML(items[0])
		if err != nil {
			return nil, err
		}
		return encodeBytes(body), nil
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "text/yaml; charset=utf-8")
	return nil
}

// tauriNewest returns the newest release of the channel the Tauri dynamic endpoint offers an
// install of arch, encoded as the endpoint's JSON: a staged release only to the installs its
// rollout draws (feeds.InRollout), else the newest release before it that is offered to them.
func (s *Server) tauriNewest(ctx context.Context, v *readcache.ChannelView, token, arch, install string) (*readcache.Encoded, error) {
	platform := v.Channel.DeviceType
	rels := offered(v, 1, func(r *distribution.Release) bool {
		return feeds.TauriServes(platform, r, arch) && feeds.InRollout(r, install)
	})
	if len(rels) == 0 {
		return &readcache.Encoded{}, nil
	}
	r := rels[0]
	return v.Memo(feeds.Key{Kind: feeds.KindTauri, Arch: arch, ReleaseID: r.ID, Token: token}.String(), func() (*readcache.Encoded, error) {
		it, err := s.feedItem(ctx, v, r, token)
		if err != nil {
			return nil, err
		}
		enc, err := encode(feeds.Tauri(it))
		if err == nil {
			enc.Version = it.ReleaseVersion
		}
		return enc, err
	})
}

// tauriInstall is the identity a Tauri check's staged rollout is drawn by: the install id the app
// sends (the X-Slipway-Install-Id header, or an install_id query parameter), else the client's
// address, which is stable for an install on one network.
func tauriInstall(c *gin.Context) string {
	id := strings.TrimSpace(c.GetHeader("X-Slipway-Install-Id"))
	if id == "" {
		id = strings.TrimSpace(c.Query("install_id"))
	}
	if id == "" || len(id) > 200 {
		return "addr:" + c.ClientIP()
	}
	return id
}

// tauri: GET /channels/:slug/tauri/:target/:arch/:current_version, the Tauri updater's dynamic
// endpoint: 204 when nothing newer than current_version is offered, else the update's JSON.
func (s *Server) tauri(c *gin.Context) error {
	ctx := reqCtx(c)
	target, arch, current := c.Param("target"), c.Param("arch"), c.Param("current_version")
	platform, ok := feeds.TauriTargetPlatform(target)
	if !ok {
		return errs.Field("target", "must be darwin, windows or linux (Tauri's {{target}}), not %q", target)
	}
	if !feeds.TauriArch(arch) {
		return errs.Field("arch", "must be x86_64, aarch64, i686 or armv7 (Tauri's {{arch}}), not %q", arch)
	}
	if strings.TrimSpace(current) == "" || len(current) > 100 {
		return errs.Field("current_version", "must be the app's version (Tauri's {{current_version}})")
	}
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, "the Tauri feed for "+target, platform); err != nil {
		return err
	}
	e, err := s.tauriNewest(ctx, v, token, arch, tauriInstall(c))
	if err != nil {
		return err
	}
	if len(e.Body) == 0 || distribution.CompareVersions(e.Version, current) <= 0 {
		c.Header("Cache-Control", "no-cache")
		c.Status(http.StatusNoContent)
		return nil
	}
	writeFeed(c, e, "application/json; charset=utf-8")
	return nil
}

// tauriStatic: GET /channels/:slug/tauri.json, the static form of the Tauri updater's document:
// the newest version the channel offers to everyone, with a "<os>-<arch>" entry for each
// architecture a build of that version runs on (builds of each architecture uploaded separately,
// or one universal build). An architecture without a build of that version has no entry: Tauri
// then reports no update for it, where the dynamic endpoint would offer it its own newest build.
// One document serves every install, so a build in a staged rollout is not listed until it is
// rolled out to all (the dynamic endpoint stages).
func (s *Server) tauriStatic(c *gin.Context) error {
	ctx := reqCtx(c)
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	platform := v.Channel.DeviceType
	archs := feeds.TauriPlatformArchs[platform]
	if archs == nil {
		return needPlatform(v, "the Tauri feed", "macos", "windows", "linux")
	}
	e, err := v.Memo(feeds.Key{Kind: feeds.KindTauriStatic, Token: token}.String(), func() (*readcache.Encoded, error) {
		newest, err := s.feedItems(ctx, v, token, 1, func(r *distribution.Release) bool {
			return feeds.RolledOut(r) && slices.ContainsFunc(archs, func(arch string) bool { return feeds.TauriServes(platform, r, arch) })
		})
		if err != nil {
			return nil, err
		}
		if len(newest) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s offers no build to every install yet (Tauri's feeds offer builds uploaded with "+
				"tauri_signature, once Slipway has verified their checksums, and in the static form once they are rolled out to 100%%)", v.Channel.Slug)
		}
		u := feeds.Tauri(newest[0])
		doc := feeds.TauriStatic{Version: u.Version, Notes: u.Notes, PubDate: u.PubDate, Platforms: map[string]feeds.TauriPlatform{}}
		for _, arch := range archs {
			items, err := s.feedItems(ctx, v, token, 1, func(r *distribution.Release) bool {
				return r.ReleaseVersion == newest[0].ReleaseVersion && feeds.RolledOut(r) && feeds.TauriServes(platform, r, arch)
			})
			if err != nil {
				return nil, err
			}
			if len(items) == 1 {
				doc.Platforms[feeds.TauriPlatformNames[platform]+"-"+arch] = feeds.TauriPlatform{Signature: items[0].TauriSignature, URL: items[0].URL}
			}
		}
		return encode(doc)
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "application/json; charset=utf-8")
	return nil
}

// squirrel: GET /channels/:slug/squirrel/RELEASES, Squirrel.Windows' release list for a Windows
// channel (Update.exe --update=<base>/channels/:slug/squirrel): "SHA1 URL size" for every .nupkg
// the channel offers to everyone (full and delta packages, oldest first; RELEASES cannot stage),
// with absolute download URLs, which Squirrel accepts in place of file names. A .nupkg is kept as a plain file of a Windows channel
// (or read as a zip holding an .exe); either way the file name says what it is.
func (s *Server) squirrel(c *gin.Context) error {
	ctx := reqCtx(c)
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, "Squirrel's RELEASES", "windows"); err != nil {
		return err
	}
	e, err := v.Memo(feeds.Key{Kind: feeds.KindSquirrel, Token: token}.String(), func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, 0, feeds.SquirrelOffers)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s offers no .nupkg yet (upload Squirrel's packages to it with their "+
				"file names; they are offered once Slipway has verified their checksums, and rolled out to 100%%)", v.Channel.Slug)
		}
		return encodeBytes(feeds.SquirrelReleases(items)), nil
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "text/plain; charset=utf-8")
	return nil
}

// appInstaller: GET /channels/:slug/app.appinstaller, Windows' App Installer file of a Windows
// channel: the newest MSIX package or bundle the channel offers to everyone (feeds.AppInstallerOffers),
// with the channel's update settings. The file names itself by this stable address (with the
// feed token of a protected channel, App Installer's one query parameter), so the installed app
// keeps checking it; a new build, a deleted one or a changed setting changes it at once.
func (s *Server) appInstaller(c *gin.Context) error {
	ctx := reqCtx(c)
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, "the App Installer file", "windows"); err != nil {
		return err
	}
	e, err := v.Memo(feeds.Key{Kind: feeds.KindAppInstaller, Token: token}.String(), func() (*readcache.Encoded, error) {
		rels := offered(v, 1, feeds.AppInstallerOffers)
		if len(rels) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s offers no MSIX package or bundle yet (upload a signed .msix or .msixbundle; "+
				"it is offered once Slipway has verified its checksums and it is rolled out to 100%%)", v.Channel.Slug)
		}
		r := rels[0]
		u, err := s.feedURL(ctx, r, token, !v.Channel.Protected())
		if err != nil {
			return nil, err
		}
		self := s.links.Channel(v.Channel.Slug) + "/app.appinstaller"
		if token != "" {
			self += "?token=" + url.QueryEscape(token)
		}
		b, err := feeds.AppInstaller(feeds.AppInstallerFile{URL: self, Main: feeds.AppInstallerMain(r, u),
			HoursBetweenUpdateChecks: v.Channel.AppInstallerHours, Critical: r.Critical})
		if err != nil {
			return nil, err
		}
		return encodeBytes(b), nil
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "application/appinstaller")
	return nil
}

// rotateFeedToken: POST /api/channels/:id/feed_token makes the channel's feed token anew and
// returns it, once; the old one stops working.
func (s *Server) rotateFeedToken(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	token, err := s.svc.Apps.RotateFeedToken(ctx, id)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, gin.H{"feed_token": token})
	return nil
}
