package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/feeds"
	"github.com/slipwayhq/slipway/pkg/web"
)

// The package repositories of Linux channels (docs/repositories.md): APT (repos_apt.go) and DNF,
// signed with the installation's OpenPGP key (SLIPWAY_REPO_KEY_FILE, pkg/repokey). Their indexes
// come from the read cache like the update feeds (feeds.go): built once per view, strong ETag,
// 304, HEAD with the length.

// errNoRepoKey answers every repository request of an installation without a signing key.
func errNoRepoKey() error {
	return errs.New(errs.NotFound, "this installation has no repository signing key, so it serves no APT or DNF repository: "+
		"an operator makes one with `slipway repo-key generate` and names the file in SLIPWAY_REPO_KEY_FILE (docs/repositories.md)")
}

// repoRealm is the HTTP basic realm of a channel's repositories.
func repoRealm(slug string) string {
	return `Basic realm="Slipway channel ` + strings.ReplaceAll(slug, `"`, "") + `", charset="UTF-8"`
}

// repoView returns the channel's view for a repository request, after its access check. An open
// channel needs nothing. A channel with a password or for its testers only answers to its feed
// token (the channel's repository credentials, decisions.md): as the password of HTTP basic
// authentication, with any user name (the docs say `slipway`), as apt's auth.conf.d and a .repo
// file's username/password send it; or as `Authorization: Bearer`. Without it: 401 with a Basic
// challenge. An installation without a signing key answers 404 saying so.
func (s *Server) repoView(c *gin.Context) (*readcache.ChannelView, error) {
	if s.cfg.RepoKey == nil {
		return nil, errNoRepoKey()
	}
	v, err := s.svc.Reads.View(reqCtx(c), c.Param("slug"))
	if err != nil {
		return nil, err
	}
	if !v.Channel.Protected() {
		return v, nil
	}
	token := ""
	if _, password, ok := c.Request.BasicAuth(); ok {
		token = password
	} else if bearer, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); ok {
		token = bearer
	}
	if !v.Channel.CheckFeedToken(strings.TrimSpace(token)) {
		c.Header("WWW-Authenticate", repoRealm(v.Channel.Slug))
		return nil, errs.New(errs.Unauthenticated, "this channel is protected (a password, or its testers only): its repositories need the channel's feed token "+
			"as the HTTP basic password (user name slipway; in /etc/apt/auth.conf.d or the .repo file), or as Authorization: Bearer; "+
			"an admin makes one on the channel's console page (/console/channels/%d, Update feeds) or with POST /api/channels/%d/feed_token", v.Channel.ID, v.Channel.ID)
	}
	return v, nil
}

// writeRepoFile answers a repository file: strong ETag, 304 for If-None-Match, and the length
// on HEAD too. Clients poll these files: no-cache makes every poll revalidate.
func writeRepoFile(c *gin.Context, e *readcache.Encoded, contentType string) {
	c.Header("Cache-Control", "no-cache")
	c.Header("ETag", e.ETag)
	c.Header("X-Content-Type-Options", "nosniff")
	if web.ETagMatch(c.GetHeader("If-None-Match"), e.ETag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Header("Content-Length", strconv.Itoa(len(e.Body)))
	if c.Request.Method == http.MethodHead {
		c.Header("Content-Type", contentType)
		c.Status(http.StatusOK)
		return
	}
	c.Data(http.StatusOK, contentType, e.Body)
}

// pgpKeysType is the media type of key.asc.
const pgpKeysType = "application/pgp-keys"

// installationKey: GET /keys/slipway.asc, the armored public keys of the installation's
// repository signing keys (both during a rotation).
func (s *Server) installationKey(c *gin.Context) error {
	if s.cfg.RepoKey == nil {
		return errNoRepoKey()
	}
	writeRepoFile(c, encodeBytes(s.cfg.RepoKey.PublicKeys()), pgpKeysType)
	return nil
}

// channelKey: GET /channels/:slug/apt/key.asc, the same public keys beside a channel's
// repository, so the setup lines need one base URL. A public key is no secret: it is served
// without the channel's credentials, as the setup's first line (curl ... | gpg --dearmor) fetches
// it, for every channel that exists.
func (s *Server) channelKey(c *gin.Context) error {
	if s.cfg.RepoKey == nil {
		return errNoRepoKey()
	}
	if _, err := s.svc.Reads.View(reqCtx(c), c.Param("slug")); err != nil {
		return err
	}
	writeRepoFile(c, encodeBytes(s.cfg.RepoKey.PublicKeys()), pgpKeysType)
	return nil
}

// maxRepoReleases bounds the releases one repository index is built from when the channel holds
// more than its view (readcache.ViewReleases): its newest releases are read then.
const maxRepoReleases = 10_000

// repoReleases are the releases a channel's repositories offer, newest first: every release the
// feeds offer (its checksums verified from the stored bytes) that is rolled out to everyone (a
// repository cannot stage a rollout). All of the channel's releases are read when it holds more
// than its view. APT and DNF list the same builds.
func (s *Server) repoReleases(ctx context.Context, v *readcache.ChannelView) ([]distribution.Release, error) {
	all, err := s.svc.Releases.RepositoryReleases(ctx, v, maxRepoReleases)
	if err != nil {
		return nil, err
	}
	var out []distribution.Release
	for i := range all {
		if r := &all[i]; repoOffers(r) {
			out = append(out, *r)
		}
	}
	return out, nil
}

// repoOffers reports whether the repositories offer a release: the feeds offer it (its checksums
// verified from the stored bytes) and it is rolled out to everyone.
func repoOffers(r *distribution.Release) bool { return r.InFeeds() && feeds.RolledOut(r) }
