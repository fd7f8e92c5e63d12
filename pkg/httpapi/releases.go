package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/web"
)

// channelFromQuery resolves the required channel_key parameter.
func (s *Server) channelFromQuery(c *gin.Context) (*distribution.ChannelContext, error) {
	ctx := reqCtx(c)
	key, err := requireQuery(c, "channel_key")
	if err != nil {
		return nil, err
	}
	return s.svc.Apps.Channel(ctx, key)
}

// viewFromQuery resolves the required channel_key parameter to the channel's read model, which
// the read cache may hold (distribution/readcache.go).
func (s *Server) viewFromQuery(c *gin.Context) (*readcache.ChannelView, error) {
	ctx := reqCtx(c)
	key, err := requireQuery(c, "channel_key")
	if err != nil {
		return nil, err
	}
	return s.svc.Reads.View(ctx, key)
}

// encode renders an answer once, with a strong ETag (the hash of its bytes).
func encode(v any) (*readcache.Encoded, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	return &readcache.Encoded{Body: b, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}, nil
}

// writeEncoded answers 200 with an encoded answer, or 304 when the client holds it already
// (If-None-Match). HEAD gets the same headers without the body.
func writeEncoded(c *gin.Context, e *readcache.Encoded) {
	c.Header("ETag", e.ETag)
	if web.ETagMatch(c.GetHeader("If-None-Match"), e.ETag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", e.Body)
}

// versions: GET /api/apps/versions, a channel's releases newest first, paginated.
func (s *Server) versions(c *gin.Context) error {
	ctx := reqCtx(c)
	v, err := s.viewFromQuery(c)
	if err != nil {
		return err
	}
	p, err := page(c)
	if err != nil {
		return err
	}
	e, err := v.Memo(fmt.Sprintf("versions\x00%d\x00%d", p.Page, p.PerPage), func() (*readcache.Encoded, error) {
		rels, err := s.svc.Releases.Versions(ctx, v, p)
		if err != nil {
			return nil, err
		}
		return encode(s.listing(&v.ChannelContext, s.shortReleases(rels, &v.ChannelContext)))
	})
	if err != nil {
		return err
	}
	writeEncoded(c, e)
	return nil
}

// latest: GET /api/apps/latest. Without sdk, releases is the channel's newest release (with
// bundle_id when given) as one object. With sdk (the Zealot iOS and Android SDKs), releases is the
// array of releases newer than release_version/build_version, newest first, empty when up to date.
func (s *Server) latest(c *gin.Context) error {
	ctx := reqCtx(c)
	v, err := s.viewFromQuery(c)
	if err != nil {
		return err
	}
	_, sdk := c.GetQuery("sdk")
	q := catalog.LatestQuery{BundleID: c.Query("bundle_id"), ReleaseVersion: c.Query("release_version"),
		BuildVersion: c.Query("build_version"), SDK: sdk}
	e, err := v.Memo(q.Key(), func() (*readcache.Encoded, error) {
		rels, err := s.svc.Releases.Latest(ctx, v, q)
		if err != nil {
			return nil, err
		}
		if sdk {
			return encode(s.listing(&v.ChannelContext, s.shortReleases(rels, &v.ChannelContext)))
		}
		return encode(s.listing(&v.ChannelContext, s.shortRelease(&rels[0], &v.ChannelContext)))
	})
	if err != nil {
		return err
	}
	writeEncoded(c, e)
	return nil
}

// versionExist: GET /api/apps/version_exist, by bundle_id with both versions or with git_commit.
func (s *Server) versionExist(c *gin.Context) error {
	ctx := reqCtx(c)
	v, err := s.viewFromQuery(c)
	if err != nil {
		return err
	}
	q := catalog.VersionQuery{BundleID: c.Query("bundle_id"), ReleaseVersion: c.Query("release_version"),
		BuildVersion: c.Query("build_version"), GitCommit: c.Query("git_commit")}
	e, err := v.Memo(q.Key(), func() (*readcache.Encoded, error) {
		r, err := s.svc.Releases.FindVersion(ctx, v, q)
		if err != nil {
			return nil, err
		}
		return encode(s.shortRelease(r, &v.ChannelContext))
	})
	if err != nil {
		return err
	}
	writeEncoded(c, e)
	return nil
}

// getRelease: GET /api/releases/:id, the full Release.
func (s *Server) getRelease(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Releases.Release, s.fullRelease)
}

// updateRelease: PUT or PATCH /api/releases/:id edits a release's metadata: an admin token any
// release, an upload token those it uploaded.
func (s *Server) updateRelease(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	var ch catalog.ReleaseChanges
	if err := bind(c, &ch); err != nil {
		return err
	}
	rc, err := s.svc.Releases.UpdateRelease(ctx, id, ch)
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.fullRelease(rc))
	return nil
}

// deleteRelease: DELETE /api/releases/:id; its package and icon are deleted from storage.
func (s *Server) deleteRelease(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Releases.DeleteRelease)
}
