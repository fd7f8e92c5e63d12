package httpapi

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/repos/rpmmd"
	"github.com/slipwayhq/slipway/pkg/web"
)

// The DNF/YUM repository of a Linux channel (docs/repositories.md): /channels/:slug/rpm, whose
// repodata/ is rendered by pkg/repos/rpmmd from the read cache (every .rpm build the channel
// offers, as the update feeds offer them), signed with the installation's repository key, and
// whose packages/<release id>/<file name> redirect to the stored objects. A channel's change
// (an upload, a delete, retention) drops its view, and the next request renders the new
// generation: its data files have new names (their checksums), so no client or cache mixes
// generations.

// rpmRepodata: GET /channels/:slug/rpm/repodata/:file, repomd.xml, repomd.xml.asc and the data
// files it names.
func (s *Server) rpmRepodata(c *gin.Context) error {
	v, err := s.rpmView(c)
	if err != nil {
		return err
	}
	name := "repodata/" + c.Param("file")
	e, err := v.Memo("rpm", func() (*readcache.Encoded, error) {
		repo, err := s.rpmRender(c, v)
		if err != nil {
			return nil, err
		}
		return rpmBundle(repo), nil
	})
	if err != nil {
		return err
	}
	f, ok := rpmFile(e, name)
	if !ok {
		return errs.New(errs.NotFound, "%s is not in channel %s's DNF repository (its files are named after their checksums: read repodata/repomd.xml again)", name, v.Channel.Slug)
	}
	// repomd.xml changes with every generation; the files it names never change.
	if strings.HasSuffix(name, "/repomd.xml") || strings.HasSuffix(name, "/repomd.xml.asc") {
		c.Header("Cache-Control", "no-cache")
	} else if v.Channel.Protected() {
		c.Header("Cache-Control", "private, max-age=86400, immutable")
	} else {
		c.Header("Cache-Control", "public, max-age=86400, immutable")
	}
	c.Header("ETag", f.etag)
	if web.ETagMatch(c.GetHeader("If-None-Match"), f.etag) {
		c.Status(http.StatusNotModified)
		return nil
	}
	c.Header("Content-Length", strconv.Itoa(len(f.body)))
	c.Data(http.StatusOK, f.contentType, f.body)
	return nil
}

// rpmBundle keeps a rendered repository as one cached answer (one memo, whatever names clients
// ask for): Body holds the files one after the other, Version their index, a line per file
// (name, content type, offset, length, ETag, tab-separated).
func rpmBundle(repo *rpmmd.Repository) *readcache.Encoded {
	var body []byte
	var index strings.Builder
	for _, f := range repo.Files {
		fmt.Fprintf(&index, "%s\t%s\t%d\t%d\t%s\n", f.Name, f.ContentType, len(body), len(f.Data), encodeBytes(f.Data).ETag)
		body = append(body, f.Data...)
	}
	sum := sha256.Sum256(body)
	return &readcache.Encoded{Body: body, Version: index.String(), ETag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// rpmBundled is one file of a bundle.
type rpmBundled struct {
	contentType, etag string
	body              []byte
}

// rpmFile finds the file of that name in a bundle.
func rpmFile(e *readcache.Encoded, name string) (rpmBundled, bool) {
	for _, line := range strings.Split(e.Version, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 5 || f[0] != name {
			continue
		}
		off, err1 := strconv.Atoi(f[2])
		n, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || off < 0 || n < 0 || off+n > len(e.Body) {
			return rpmBundled{}, false
		}
		return rpmBundled{contentType: f[1], etag: f[4], body: e.Body[off : off+n : off+n]}, true
	}
	return rpmBundled{}, false
}

// rpmPackage: GET /channels/:slug/rpm/packages/:id/:file → 302 to the stored .rpm (as the
// download route redirects), for a release the repository lists.
func (s *Server) rpmPackage(c *gin.Context) error {
	v, err := s.rpmView(c)
	if err != nil {
		return err
	}
	id, err := pathID(c)
	if err != nil {
		return err
	}
	rc, err := s.svc.Releases.ReleaseInView(reqCtx(c), v, id)
	if err != nil {
		return err
	}
	if !rpmListed(&rc.Release) || !repoOffers(&rc.Release) || rpmFileName(&rc.Release) != c.Param("file") {
		return errs.New(errs.NotFound, "release %d is not in channel %s's DNF repository as %s", id, v.Channel.Slug, c.Param("file"))
	}
	if err := installable(rc); err != nil {
		return err
	}
	if err := s.redirectToObject(c, rc.ObjectKey, rpmFileName(&rc.Release), contentTypes["rpm"], !v.Channel.Protected()); err != nil {
		return err
	}
	if c.Request.Method == http.MethodGet {
		s.svc.Downloads.CountDownload(&rc.Release)
	}
	return nil
}

// rpmView is the channel's view for a repository request: a repository key configured, its
// access checked (repoView), a Linux channel.
func (s *Server) rpmView(c *gin.Context) (*readcache.ChannelView, error) {
	v, err := s.repoView(c)
	if err != nil {
		return nil, err
	}
	return v, needPlatform(v, "the DNF repository", "linux")
}

// rpmListed reports whether the repository lists one of the releases the repositories offer
// (repoReleases): an .rpm, not a source package.
func rpmListed(r *distribution.Release) bool {
	return r.Format == "rpm" && r.Facts.Properties["SourcePackage"] == ""
}

// rpmFileName is the name a release's package has in the repository: its file name, or one
// made of its name, version and architecture.
func rpmFileName(r *distribution.Release) string {
	name := r.Filename
	if name == "" || strings.ContainsAny(name, "/\\") {
		arch := "noarch"
		if len(r.Facts.Architectures) > 0 {
			arch = r.Facts.Architectures[0]
		}
		name = r.BundleID + "-" + r.BuildVersion + "." + arch + ".rpm"
	}
	return name
}

// rpmRender renders the repository of the view's channel: every release it lists, newest first;
// of two with the same name, epoch, version, release and architecture, the newer only.
func (s *Server) rpmRender(c *gin.Context, v *readcache.ChannelView) (*rpmmd.Repository, error) {
	rels, err := s.repoReleases(reqCtx(c), v)
	if err != nil {
		return nil, err
	}
	var pkgs []rpmmd.Package
	seen := map[string]bool{}
	var newest int64
	for i := range rels {
		r := &rels[i]
		if !rpmListed(r) {
			continue
		}
		p := rpmPackageOf(r)
		nevra := strings.Join([]string{p.Name, p.Epoch, p.Version, p.Release, p.Arch}, "\x00")
		if seen[nevra] {
			continue
		}
		seen[nevra] = true
		pkgs = append(pkgs, p)
		newest = max(newest, p.FileTime)
	}
	return rpmmd.Render(pkgs, newest, s.cfg.RepoKey.DetachSign)
}

// rpmPackageOf is what the repository lists of a release, from what the parser read.
func rpmPackageOf(r *distribution.Release) rpmmd.Package {
	p := r.Facts.Properties
	num := func(k string) int64 { n, _ := strconv.ParseInt(p[k], 10, 64); return n }
	arch := "noarch"
	if len(r.Facts.Architectures) > 0 {
		arch = r.Facts.Architectures[0]
	}
	version := r.ReleaseVersion
	release := p["Release"]
	if release == "" {
		// A release kept before the parser recorded Release: the build version is version-release.
		if v, rel, ok := strings.Cut(r.BuildVersion, "-"); ok && v == version {
			release = rel
		}
	}
	return rpmmd.Package{
		Name: r.BundleID, Arch: arch, Epoch: p["Epoch"], Version: version, Release: release, SHA256: r.SHA256,
		Summary: r.Facts.Description, Description: cmp.Or(p["Description"], r.Facts.Description),
		Packager: p["Packager"], URL: p["URL"], License: p["License"], Vendor: p["Vendor"], Group: p["Group"],
		BuildHost: p["BuildHost"], SourceRPM: p["SourceRPM"], FileTime: r.CreatedAt.Unix(), BuildTime: num("BuildTime"),
		Size: r.Size, InstalledSize: num("InstalledSize"), Archive: num("ArchiveSize"),
		HeaderStart: num("HeaderStart"), HeaderEnd: num("HeaderEnd"),
		Provides: rpmmd.ParseDeps(p["Provides"]), Requires: rpmmd.ParseDeps(p["Requires"]),
		Conflicts: rpmmd.ParseDeps(p["Conflicts"]), Obsoletes: rpmmd.ParseDeps(p["Obsoletes"]),
		Href: "packages/" + strconv.FormatInt(r.ID, 10) + "/" + url.PathEscape(rpmFileName(r)),
	}
}
