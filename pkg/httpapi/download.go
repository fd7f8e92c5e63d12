package httpapi

import (
	"cmp"
	"net/http"
	"net/url"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/web"
)

// contentTypes of downloaded packages, by format.
var contentTypes = map[string]string{
	"ipa": "application/octet-stream", "apk": "application/vnd.android.package-archive", "aab": "application/octet-stream",
	"macos-zip": "application/zip", "pkg": "application/octet-stream", "dmg": "application/x-apple-diskimage",
	"hap": "application/octet-stream", "harmony-app": "application/octet-stream", "exe": "application/vnd.microsoft.portable-executable",
	"exe-zip": "application/zip", "msi": "application/x-msi", "msix": "application/msix", "msixbundle": "application/msixbundle",
	"deb": "application/vnd.debian.binary-package", "rpm": "application/x-rpm", "appimage": "application/vnd.appimage",
	"other": "application/octet-stream",
}

// authorize lets the request into the channel of releaseID (see access.Passwords.Authorize):
// the password cookie, an "access" token, or a "password" parameter.
func (s *Server) authorize(c *gin.Context, ch *distribution.Channel, appID, releaseID int64) error {
	ctx := reqCtx(c)
	req := access.AccessRequest{Token: c.Query("access"), Password: c.Query("password"), Client: c.ClientIP(), ReleaseID: releaseID,
		FeedToken: c.Query("feed_token"), AppID: appID}
	if ck, err := c.Cookie(access.PasswordCookieName(ch.Slug)); err == nil {
		req.Cookie = ck
	}
	if err := s.svc.Passwords.Authorize(ctx, ch, req); err != nil {
		return err
	}
	if tid := s.svc.Passwords.TokenTester(ch, req); tid != 0 {
		// A tester's install link (iOS fetches with no cookies): the install is theirs.
		c.Request = c.Request.WithContext(distribution.WithActor(ctx, distribution.Actor{Kind: distribution.ActorTester, TesterID: tid, Name: "tester"}))
	}
	return nil
}

// redirectToObject answers 302 to where the object can be fetched (uploads.Objects.ObjectURL:
// the CDN for a public object, else a presigned S3 URL or the service's own signed URL).
// Location headers are never logged.
func (s *Server) redirectToObject(c *gin.Context, key, filename, contentType string, public bool) error {
	ctx := reqCtx(c)
	u, err := s.svc.Objects.ObjectURL(ctx, key, filename, contentType, public)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.Redirect(http.StatusFound, u)
	return nil
}

// serveObject: GET /objects/*key serves an object of the filesystem backend behind a signed,
// expiring URL, with Range support.
func (s *Server) serveObject(c *gin.Context) error {
	ctx := reqCtx(c)
	key := strings.TrimPrefix(c.Param("key"), "/")
	name, ctype := c.Query("name"), c.Query("type")
	f, err := s.svc.Objects.OpenSignedObject(ctx, key, name, ctype, c.Query("t"))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if name != "" {
		c.Header("Content-Disposition", blob.ContentDisposition(name))
	}
	if ctype != "" {
		c.Header("Content-Type", ctype)
	}
	c.Header("Cache-Control", "private, max-age=300")
	http.ServeContent(c.Writer, c.Request, "", st.ModTime(), f)
	return nil
}

// downloadRelease: GET /download/releases/:id → 302 to the package.
func (s *Server) downloadRelease(c *gin.Context) error {
	rc, err := s.releaseForDownload(c)
	if errs.KindOf(err) == errs.NotFound && web.WantsPage(c) {
		// A tester's browser following a deleted build's install link: its removal page (410).
		// Programs get the API's 404.
		if id, idErr := pathID(c); idErr == nil && s.pages.GonePage(c, "", id) {
			return nil
		}
	}
	if err == nil {
		err = installable(rc)
	}
	if err != nil {
		return err
	}
	if err := s.redirectToObject(c, rc.ObjectKey, rc.Filename, contentTypes[rc.Format], !rc.Channel.Protected()); err != nil {
		return err
	}
	// An iOS install was counted when its manifest was fetched; the device's fetch of the
	// package that follows (marked via=install) is not counted again. HEAD is not a download.
	if c.Request.Method == http.MethodGet && c.Query("via") != "install" {
		s.svc.Downloads.CountDownload(&rc.Release)
		s.testerInstalled(c, rc)
	}
	return nil
}

// testerInstalled records that the request's tester (a tester session, the tester a console user
// is, or a tester's install link) installed the release. A failure to record it never fails the
// install.
func (s *Server) testerInstalled(c *gin.Context, rc *distribution.ReleaseContext) {
	ctx := reqCtx(c)
	if _, err := s.svc.Testers.Seen(ctx, rc.ID, true); err != nil {
		s.log.WarnContext(ctx, "recording a tester's install failed", "release_id", rc.ID, "error", err)
	}
}

// releaseIcon: GET /releases/:id/icon → 302 to the icon (or the default icon).
func (s *Server) releaseIcon(c *gin.Context) error {
	rc, err := s.releaseForDownload(c)
	if err != nil {
		return err
	}
	if rc.IconKey == nil {
		c.Redirect(http.StatusFound, s.links.Icon(rc.ID, false))
		return nil
	}
	ctype := "image/png"
	if rc.IconType != nil {
		ctype = *rc.IconType
	}
	return s.redirectToObject(c, *rc.IconKey, "", ctype, !rc.Channel.Protected())
}

// releaseForDownload loads the release of the :id path parameter (in the :slug channel, when the
// route has one) and checks channel access.
func (s *Server) releaseForDownload(c *gin.Context) (*distribution.ReleaseContext, error) {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return nil, err
	}
	var rc *distribution.ReleaseContext
	if slug := c.Param("slug"); slug != "" {
		rc, err = s.svc.Releases.ReleaseInChannel(ctx, slug, id)
	} else {
		rc, err = s.svc.Releases.ReleaseToDownload(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return rc, s.authorize(c, &rc.Channel, rc.App.ID, rc.ID)
}

// installable refuses a release whose stored bytes are not what its uploader declared (409).
func installable(rc *distribution.ReleaseContext) error {
	if rc.ChecksumState == distribution.ChecksumMismatch {
		return errs.New(errs.Conflict, "release %d cannot be installed: %s", rc.ID, rc.ChecksumError)
	}
	return nil
}

// installManifest: GET /channels/:slug/releases/:id/install, the plist iOS reads through an
// itms-services link: the package URL, bundle identifier, version and title.
func (s *Server) installManifest(c *gin.Context) error {
	rc, err := s.releaseForDownload(c)
	if err == nil {
		err = installable(rc)
	}
	if err != nil {
		return err
	}
	harmony := links.HarmonyInstallable(rc.Platform, rc.Format)
	if rc.Platform != "ios" && !harmony {
		return errs.New(errs.NotFound, "release %d is not an iOS build or a HarmonyOS .hap; download it from %s", rc.ID, s.links.Download(rc.ID, ""))
	}
	pkgURL := s.links.InstallDownload(rc.ID, s.svc.Passwords.ReleaseAccessTokenAs(reqCtx(c), &rc.Channel, rc.ID))
	if c.Request.Method == http.MethodGet {
		s.testerInstalled(c, rc)
	}
	iconURL := s.links.Icon(rc.ID, rc.IconKey != nil)
	var body []byte
	if harmony {
		body, err = web.HarmonyManifest(s.harmonyApp(&rc.Release, rc.App.Name, pkgURL, iconURL))
	} else {
		body, err = web.InstallManifest(pkgURL, iconURL, rc.BundleID, rc.ReleaseVersion, rc.App.Name)
	}
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	if harmony {
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	} else {
		c.Data(http.StatusOK, "text/xml; charset=utf-8", body)
	}
	if c.Request.Method == http.MethodGet {
		s.svc.Downloads.CountDownload(&rc.Release)
	}
	return nil
}

// harmonyApp is what the HarmonyOS install manifest of a .hap release says.
func (s *Server) harmonyApp(r *distribution.Release, label, pkgURL, iconURL string) web.HarmonyApp {
	domain := ""
	if u, err := url.Parse(s.links.Base); err == nil {
		domain = u.Hostname()
	}
	var devices []string
	for _, d := range strings.Split(r.Device, ",") {
		if d = strings.TrimSpace(d); d != "" {
			devices = append(devices, d)
		}
	}
	props := r.Facts.Properties
	return web.HarmonyApp{BundleName: r.BundleID, VersionName: r.ReleaseVersion, VersionCode: r.BuildVersion, Label: label,
		DeployDomain: domain, IconURL: iconURL, MinAPIVersion: r.MinOS, TargetAPIVersion: r.TargetSDK,
		Module: cmp.Or(props["Module"], "entry"), ModuleType: cmp.Or(props["ModuleType"], "entry"), DeviceTypes: devices,
		PackageURL: pkgURL, PackageHash: r.SHA256}
}
