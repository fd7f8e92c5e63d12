package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/storage"
	"github.com/slipwayhq/slipway/pkg/store"
	"github.com/slipwayhq/slipway/pkg/web"
)

// contentTypes of downloaded packages, by format.
var contentTypes = map[string]string{
	"ipa": "application/octet-stream", "apk": "application/vnd.android.package-archive", "aab": "application/octet-stream",
	"macos-zip": "application/zip", "pkg": "application/octet-stream", "dmg": "application/x-apple-diskimage",
}

// authorize lets the request into the channel of releaseID (see distribution.Service.Authorize):
// the password cookie, an "access" token, or a "password" parameter.
func (s *Server) authorize(c *gin.Context, ch *store.Channel, releaseID int64) error {
	req := distribution.AccessRequest{Token: c.Query("access"), Password: c.Query("password"), Client: c.ClientIP(), ReleaseID: releaseID}
	if ck, err := c.Cookie(distribution.PasswordCookieName(ch.Slug)); err == nil {
		req.Cookie = ck
	}
	return s.svc.Authorize(c, ch, req)
}

// redirectToObject answers 302 to where the object can be fetched: the CDN, a presigned S3 URL, or
// the service's own signed URL (filesystem storage). The decision is made here, not in the
// backend. Location headers are never logged.
func (s *Server) redirectToObject(c *gin.Context, key, filename, contentType string) {
	c.Header("Cache-Control", "no-store")
	if s.cfg.CDNURL != "" {
		c.Redirect(http.StatusFound, s.cfg.CDNURL+"/"+escapeKey(key))
		return
	}
	switch b := s.storage.(type) {
	case storage.Presigner:
		u, err := b.PresignGet(c, key, s.cfg.PresignTTL, storage.GetOptions{Filename: filename, ContentType: contentType})
		if err != nil {
			s.fail(c, errs.Wrap(errs.Unavailable, err, "object storage is unavailable; retry later"))
			return
		}
		c.Redirect(http.StatusFound, u)
	case storage.FileOpener:
		q := url.Values{"name": {filename}, "type": {contentType}}
		q.Set("t", s.svc.Signer.Token("object", s.cfg.PresignTTL, key, filename, contentType))
		c.Redirect(http.StatusFound, s.cfg.PublicURL+"/objects/"+escapeKey(key)+"?"+q.Encode())
	default:
		s.fail(c, fmt.Errorf("storage backend %T can neither presign nor serve files", s.storage))
	}
}

func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// serveObject: GET /objects/*key serves an object of the filesystem backend behind a signed,
// expiring URL, with Range support.
func (s *Server) serveObject(c *gin.Context) {
	key := strings.TrimPrefix(c.Param("key"), "/")
	name, ctype := c.Query("name"), c.Query("type")
	fo, ok := s.storage.(storage.FileOpener)
	if !ok || !s.svc.Signer.CheckToken(c.Query("t"), "object", key, name, ctype) {
		s.fail(c, errs.New(errs.Forbidden, "this download link is invalid or has expired; open the release page again"))
		return
	}
	f, err := fo.OpenFile(c, key)
	if err != nil {
		// A key that is not a valid object (it climbs out of the folder, or a link planted there
		// leads out) can carry a valid signature only if the secret leaked: it is not found either.
		if errs.KindOf(err) == errs.Internal && (isNotFound(err) || errors.Is(err, storage.ErrInvalidKey)) {
			err = errs.New(errs.NotFound, "the file no longer exists")
		}
		s.fail(c, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.fail(c, err)
		return
	}
	if name != "" {
		c.Header("Content-Disposition", storage.ContentDisposition(name))
	}
	if ctype != "" {
		c.Header("Content-Type", ctype)
	}
	c.Header("Cache-Control", "private, max-age=300")
	http.ServeContent(c.Writer, c.Request, "", st.ModTime(), f)
}

// downloadRelease: GET /download/releases/:id → 302 to the package.
func (s *Server) downloadRelease(c *gin.Context) {
	rc, ok := s.releaseForDownload(c)
	if !ok {
		return
	}
	s.redirectToObject(c, rc.ObjectKey, rc.Filename, contentTypes[rc.Format])
}

// releaseIcon: GET /releases/:id/icon → 302 to the icon (or the default icon).
func (s *Server) releaseIcon(c *gin.Context) {
	rc, ok := s.releaseForDownload(c)
	if !ok {
		return
	}
	if rc.IconKey == nil {
		c.Redirect(http.StatusFound, s.links.Icon(rc.ID, false))
		return
	}
	ctype := "image/png"
	if rc.IconType != nil {
		ctype = *rc.IconType
	}
	s.redirectToObject(c, *rc.IconKey, "", ctype)
}

// releaseForDownload loads the release of the :id path parameter and checks channel access.
func (s *Server) releaseForDownload(c *gin.Context) (*store.ReleaseContext, bool) {
	id, err := pathID(c)
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	rc, err := s.db.GetRelease(c, id)
	if err == nil && c.Param("slug") != "" && c.Param("slug") != rc.Channel.Slug {
		err = errs.New(errs.NotFound, "release %d not found in this channel", id)
	}
	if err == nil {
		err = s.authorize(c, &rc.Channel, rc.ID)
	}
	if err != nil {
		s.fail(c, err)
		return nil, false
	}
	return rc, true
}

// installManifest: GET /channels/:slug/releases/:id/install, the plist iOS reads through an
// itms-services link: the package URL, bundle identifier, version and title.
func (s *Server) installManifest(c *gin.Context) {
	rc, ok := s.releaseForDownload(c)
	if !ok {
		return
	}
	if rc.Platform != "ios" {
		s.fail(c, errs.New(errs.NotFound, "release %d is not an iOS build; download it from %s", rc.ID, s.links.Download(rc.ID, "")))
		return
	}
	pkgURL := s.links.Download(rc.ID, s.svc.ReleaseAccessToken(&rc.Channel, rc.ID))
	body, err := web.InstallManifest(pkgURL, s.iconURL(&rc.Release), rc.BundleID, rc.ReleaseVersion, rc.App.Name)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "text/xml; charset=utf-8", body)
}
