package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/pkg/web"
)

// The update feeds of desktop apps (issue 23, docs/feeds.md): per channel, from the read cache
// (strong ETag, 304, HEAD), with absolute URLs. A feed offers only releases whose checksums
// Slipway computed from the stored bytes and that are rolled out to someone; deleting or
// retention taking a build drops it from every feed at once (the read cache's invalidation).

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
	if !v.Channel.HasPassword() {
		return v, "", nil
	}
	token := c.Query("token")
	if token == "" {
		token, _ = strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	}
	if !v.Channel.CheckFeedToken(strings.TrimSpace(token)) {
		return nil, "", errs.New(errs.Unauthenticated, "this channel is password protected: its feeds need the channel's feed token "+
			"(?token=..., or Authorization: Bearer ...); an admin makes one with POST /api/channels/%d/feed_token", v.Channel.ID)
	}
	return v, strings.TrimSpace(token), nil
}

// feedItems returns up to limit of the releases the feeds offer, newest first, as feed items.
// Only releases that every filter in only accepts are taken.
func (s *Server) feedItems(ctx context.Context, v *readcache.ChannelView, token string, limit int, only ...func(*distribution.Release) bool) ([]feeds.Item, error) {
	var out []feeds.Item
	for i := range v.Releases {
		r := &v.Releases[i]
		if !r.InFeeds() || slices.ContainsFunc(only, func(f func(*distribution.Release) bool) bool { return !f(r) }) {
			continue
		}
		u, err := s.feedURL(ctx, r, token)
		if err != nil {
			return nil, err
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
		out = append(out, feeds.Item{Title: fmt.Sprintf("%s %s", v.App.Name, r.ReleaseVersion), ReleaseVersion: r.ReleaseVersion,
			BuildVersion: r.BuildVersion, Notes: notes, Published: r.CreatedAt, URL: u, Filename: r.Filename, Size: r.Size,
			Format: r.Format, SHA512Hex: r.SHA512, SHA1Hex: r.SHA1, MinOS: r.MinOS, EdSignature: r.EdSignature,
			TauriSignature: r.TauriSignature, Channel: channel, RolloutPercent: r.RolloutPercent, Critical: r.Critical})
		if len(out) == limit {
			break
		}
	}
	return out, nil
}

// feedURL is where an updater downloads a release: the CDN when there is one (its URLs do not
// expire), else the download route, whose path ends with the file name (electron-updater picks
// files by extension) and which redirects to a fresh presigned or signed URL. A protected
// channel's links carry its feed token.
func (s *Server) feedURL(ctx context.Context, r *distribution.Release, token string) (string, error) {
	if s.cfg.CDNURL != "" {
		return s.svc.Objects.ObjectURL(ctx, r.ObjectKey, r.Filename, contentTypes[r.Format])
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

// writeFeed answers an encoded feed with its content type (200, or 304 for If-None-Match).
func writeFeed(c *gin.Context, e *readcache.Encoded, contentType string) {
	c.Header("Cache-Control", "no-cache")
	c.Header("ETag", e.ETag)
	if web.ETagMatch(c.GetHeader("If-None-Match"), e.ETag) {
		c.Status(http.StatusNotModified)
		return
	}
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
	e, err := v.Memo("feed\x00appcast\x00"+token, func() (*readcache.Encoded, error) {
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

// electronFeeds are the files of electron-updater's generic provider, by the platform each is for.
var electronFeeds = map[string]string{"latest.yml": "windows", "latest-mac.yml": "macos", "latest-linux.yml": "linux",
	"latest-linux-arm64.yml": "linux"}

// electronFormats are the package formats each electron-updater feed offers: on macOS the .zip
// (Squirrel.Mac installs from it), on Windows the NSIS installer (.exe), on Linux the AppImage.
var electronFormats = map[string][]string{"latest-mac.yml": {"macos-zip"}, "latest.yml": {"exe"},
	"latest-linux.yml": {"appimage"}, "latest-linux-arm64.yml": {"appimage"}}

// electronArchs are the architectures a Linux feed takes (a build that names none is taken as
// x86_64, electron-builder's default).
var electronArchs = map[string][]string{"latest-linux.yml": {"x86_64", "amd64", ""}, "latest-linux-arm64.yml": {"aarch64", "arm64"}}

// electronOffers reports whether an electron-updater feed file offers a release.
func electronOffers(file string, r *distribution.Release) bool {
	if !slices.Contains(electronFormats[file], r.Format) {
		return false
	}
	archs, ok := electronArchs[file]
	if !ok {
		return true
	}
	if len(r.Facts.Architectures) == 0 {
		return slices.Contains(archs, "")
	}
	return slices.ContainsFunc(r.Facts.Architectures, func(a string) bool { return slices.Contains(archs, a) })
}

// electron: GET /channels/:slug/electron/:file, electron-updater's latest*.yml (generic provider,
// whose url is /channels/:slug/electron).
func (s *Server) electron(c *gin.Context) error {
	ctx := reqCtx(c)
	file := c.Param("file")
	platform, ok := electronFeeds[file]
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
	e, err := v.Memo("feed\x00electron\x00"+file+"\x00"+token, func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, 0, func(r *distribution.Release) bool { return electronOffers(file, r) })
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

// tauriTargets maps the Tauri updater's {{target}} to the channel platform it asks for.
var tauriTargets = map[string]string{"darwin": "macos", "macos": "macos", "windows": "windows", "linux": "linux"}

// tauriArchs are the {{arch}} values the Tauri updater sends.
var tauriArchs = map[string]bool{"x86_64": true, "aarch64": true, "i686": true, "armv7": true}

// tauriArchWords maps the architectures packages name (pkg/appinfo: Apple's, Windows', Debian's
// and RPM's words) to the Tauri updater's {{arch}}; "*" is a package for every architecture.
var tauriArchWords = map[string]string{
	"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
	"arm64": "aarch64", "arm64e": "aarch64", "aarch64": "aarch64",
	"x86": "i686", "i386": "i686", "i686": "i686",
	"arm": "armv7", "armhf": "armv7", "armv7": "armv7", "armv7hl": "armv7", "armv7l": "armv7",
	"all": "*", "noarch": "*", "neutral": "*",
}

// tauriDefaultArchs are what a build whose package names no architecture Tauri knows is taken
// to run on: a Mac build is universal, a Windows or Linux one x86_64 (the bundlers' default).
var tauriDefaultArchs = map[string][]string{"macos": {"x86_64", "aarch64"}, "windows": {"x86_64"}, "linux": {"x86_64"}}

// tauriServes reports whether release r runs on the Tauri arch (its package's architectures).
func tauriServes(platform string, r *distribution.Release, arch string) bool {
	known := false
	for _, word := range r.Facts.Architectures {
		switch a := tauriArchWords[strings.ToLower(word)]; a {
		case "":
		case "*", arch:
			return true
		default:
			known = true
		}
	}
	return !known && slices.Contains(tauriDefaultArchs[platform], arch)
}

// tauriNewest returns the newest release of the channel the Tauri feeds offer for an arch,
// encoded as the dynamic endpoint's JSON.
func (s *Server) tauriNewest(ctx context.Context, v *readcache.ChannelView, token, arch string) (*readcache.Encoded, error) {
	platform := v.Channel.DeviceType
	return v.Memo("feed\x00tauri\x00"+arch+"\x00"+token, func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, 1, func(r *distribution.Release) bool { return tauriServes(platform, r, arch) })
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return &readcache.Encoded{}, nil
		}
		enc, err := encode(feeds.Tauri(items[0]))
		if err == nil {
			enc.Version = items[0].ReleaseVersion
		}
		return enc, err
	})
}

// tauri: GET /channels/:slug/tauri/:target/:arch/:current_version, the Tauri updater's dynamic
// endpoint: 204 when nothing newer than current_version is offered, else the update's JSON.
func (s *Server) tauri(c *gin.Context) error {
	ctx := reqCtx(c)
	target, arch, current := c.Param("target"), c.Param("arch"), c.Param("current_version")
	platform, ok := tauriTargets[target]
	if !ok {
		return errs.Field("target", "must be darwin, windows or linux (Tauri's {{target}}), not %q", target)
	}
	if !tauriArchs[arch] {
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
	e, err := s.tauriNewest(ctx, v, token, arch)
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

// tauriPlatformArchs are the architectures of each channel platform the static form can list.
var tauriPlatformArchs = map[string][]string{"macos": {"x86_64", "aarch64"}, "windows": {"x86_64", "aarch64", "i686"},
	"linux": {"x86_64", "aarch64", "i686", "armv7"}}

// tauriPlatformNames are Tauri's names of the channel platforms in the static form's keys.
var tauriPlatformNames = map[string]string{"macos": "darwin", "windows": "windows", "linux": "linux"}

// tauriStatic: GET /channels/:slug/tauri.json, the static form of the Tauri updater's document:
// the newest version the channel offers, with a "<os>-<arch>" entry for each architecture a build
// of that version runs on (builds of each architecture uploaded separately, or one universal
// build). An architecture without a build of that version has no entry: Tauri then reports no
// update for it, where the dynamic endpoint would offer it its own newest build.
func (s *Server) tauriStatic(c *gin.Context) error {
	ctx := reqCtx(c)
	v, token, err := s.feedView(c)
	if err != nil {
		return err
	}
	platform := v.Channel.DeviceType
	archs := tauriPlatformArchs[platform]
	if archs == nil {
		return needPlatform(v, "the Tauri feed", "macos", "windows", "linux")
	}
	e, err := v.Memo("feed\x00tauri-static\x00"+token, func() (*readcache.Encoded, error) {
		newest, err := s.feedItems(ctx, v, token, 1)
		if err != nil {
			return nil, err
		}
		if len(newest) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s offers no build yet (builds are offered once Slipway has verified their checksums)", v.Channel.Slug)
		}
		u := feeds.Tauri(newest[0])
		doc := feeds.TauriStatic{Version: u.Version, Notes: u.Notes, PubDate: u.PubDate, Platforms: map[string]feeds.TauriPlatform{}}
		for _, arch := range archs {
			items, err := s.feedItems(ctx, v, token, 1, func(r *distribution.Release) bool {
				return r.ReleaseVersion == newest[0].ReleaseVersion && tauriServes(platform, r, arch)
			})
			if err != nil {
				return nil, err
			}
			if len(items) == 1 {
				doc.Platforms[tauriPlatformNames[platform]+"-"+arch] = feeds.TauriPlatform{Signature: items[0].TauriSignature, URL: items[0].URL}
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
// the channel offers (full and delta packages, oldest first), with absolute download URLs, which
// Squirrel accepts in place of file names. A .nupkg is kept as a plain file of a Windows channel
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
	e, err := v.Memo("feed\x00squirrel\x00"+token, func() (*readcache.Encoded, error) {
		items, err := s.feedItems(ctx, v, token, 0, func(r *distribution.Release) bool {
			return strings.HasSuffix(strings.ToLower(r.Filename), ".nupkg") && r.SHA1 != ""
		})
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, errs.New(errs.NotFound, "channel %s offers no .nupkg yet (upload Squirrel's packages to it with their "+
				"file names; they are offered once Slipway has verified their checksums)", v.Channel.Slug)
		}
		return encodeBytes(feeds.SquirrelReleases(items)), nil
	})
	if err != nil {
		return err
	}
	writeFeed(c, e, "text/plain; charset=utf-8")
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
