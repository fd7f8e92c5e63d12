package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/repos/apt"
)

// aptDistsPrefix is where the suite's files are.
const aptDistsPrefix = "dists/" + apt.Suite + "/"

var (
	aptByHashRe = regexp.MustCompile(`^main/binary-[a-z0-9-]+/by-hash/SHA256/([0-9a-f]{64})$`)
	aptPoolRe   = regexp.MustCompile(`^pool/([0-9]{1,18})/[^/]+\.deb$`)
)

// aptFile: GET /channels/:slug/apt/*file, a Linux channel's APT repository (docs/repositories.md):
// key.asc, dists/stable/{InRelease,Release,Release.gpg}, the Packages files of each architecture
// (plain, .gz, and by hash), and pool/<release id>/<name>.deb, a 302 to the package.
func (s *Server) aptFile(c *gin.Context) error {
	if s.cfg.RepoKey == nil {
		return errNoRepoKey()
	}
	file := strings.TrimPrefix(c.Param("file"), "/")
	if file == "key.asc" {
		return s.channelKey(c)
	}
	v, err := s.repoView(c)
	if err != nil {
		return err
	}
	if err := needPlatform(v, "the APT repository", "linux"); err != nil {
		return err
	}
	if m := aptPoolRe.FindStringSubmatch(file); m != nil {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		return s.aptPool(c, v, id)
	}
	name, ok := strings.CutPrefix(file, aptDistsPrefix)
	if !ok {
		return errs.New(errs.NotFound, "%q is not a file of the APT repository (its suite is %s: dists/%s/InRelease)", file, apt.Suite, apt.Suite)
	}
	e, err := s.aptIndexFile(reqCtx(c), v, name)
	if err != nil {
		return err
	}
	writeRepoFile(c, e, aptContentType(name))
	return nil
}

// aptContentType is the media type of a file of dists/stable/.
func aptContentType(name string) string {
	switch {
	case name == "Release.gpg":
		return "application/pgp-signature"
	case strings.HasSuffix(name, ".gz"):
		return "application/gzip"
	case aptByHashRe.MatchString(name):
		return "application/octet-stream"
	}
	return "text/plain; charset=utf-8"
}

// aptKey is the memo key of one file of a channel's APT index. The index depends on the view
// (its releases and channel), the signing key and the day: it is signed anew at least daily, so
// Valid-Until (a week on) never comes near while it is served.
func (s *Server) aptKey(day, name string) string {
	return "apt|" + s.cfg.RepoKey.Fingerprints()[0] + "|" + day + "|" + name
}

// aptIndexFile returns one file of dists/stable/ from the view's memo, building the whole index
// (every file, signed) on first use. A name the index does not have is 404, without a build.
func (s *Server) aptIndexFile(ctx context.Context, v *readcache.ChannelView, name string) (*readcache.Encoded, error) {
	now := time.Now().UTC()
	day := now.Format("2006-01-02")
	// The index's list of files is built with the files, and resolves by-hash names.
	files, err := v.Memo(s.aptKey(day, ""), func() (*readcache.Encoded, error) {
		built, err := s.aptBuild(ctx, v, now)
		if err != nil {
			return nil, err
		}
		var list strings.Builder
		for path, e := range built {
			list.WriteString(path + "\n")
			if _, err := v.Memo(s.aptKey(day, path), func() (*readcache.Encoded, error) { return e, nil }); err != nil {
				return nil, err
			}
		}
		return &readcache.Encoded{Body: []byte(list.String())}, nil
	})
	if err != nil {
		return nil, err
	}
	if m := aptByHashRe.FindStringSubmatch(name); m != nil {
		name = "by-hash/" + m[1]
	}
	if !strings.Contains("\n"+string(files.Body), "\n"+name+"\n") {
		return nil, errs.New(errs.NotFound, "%q is not a file of the channel's APT index (dists/%s/InRelease lists them)", name, apt.Suite)
	}
	return v.Memo(s.aptKey(day, name), func() (*readcache.Encoded, error) {
		// Evicted, or a view not kept (the cache is off): build again, this file only served.
		built, err := s.aptBuild(ctx, v, now)
		if err != nil {
			return nil, err
		}
		if e, ok := built[name]; ok {
			return e, nil
		}
		return nil, errs.New(errs.NotFound, "%q is not a file of the channel's APT index", name)
	})
}

// aptBuild renders and signs the channel's index: Release, InRelease, Release.gpg, each
// architecture's Packages and Packages.gz, and "by-hash/<sha256>" for each of those.
func (s *Server) aptBuild(ctx context.Context, v *readcache.ChannelView, now time.Time) (map[string]*readcache.Encoded, error) {
	rels, err := s.repoReleases(ctx, v)
	if err != nil {
		return nil, err
	}
	var pkgs []apt.Package
	for i := range rels {
		if p, ok := aptPackage(&rels[i]); ok {
			pkgs = append(pkgs, p)
		}
	}
	meta := apt.Meta{Origin: v.App.Name, Label: v.App.Name + " " + v.Channel.Name,
		Description: fmt.Sprintf("%s, channel %s (Slipway)", v.App.Name, v.Channel.Name),
		// The minute, not the instant: replicas rebuilding on the same change sign the same text.
		Date: now.Truncate(time.Minute)}
	idx := apt.Build(meta, pkgs, v.Channel.APTNewestOnly)
	inRelease, err := s.cfg.RepoKey.ClearSign(idx.Release)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "signing the APT index")
	}
	detached, err := s.cfg.RepoKey.DetachSign(idx.Release)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "signing the APT index")
	}
	out := map[string]*readcache.Encoded{"Release": encodeBytes(idx.Release), "InRelease": encodeBytes(inRelease),
		"Release.gpg": encodeBytes(detached)}
	for path, body := range idx.Files {
		out[path] = encodeBytes(body)
	}
	for sum, path := range idx.ByHash {
		out["by-hash/"+sum] = out[path]
	}
	return out, nil
}

// aptPackage is a .deb release as the index lists it. Builds uploaded before the parser kept the
// index's fields (Installed-Size, the relation fields but Depends, the extended description) are
// listed with what they have.
func aptPackage(r *distribution.Release) (apt.Package, bool) {
	if r.Format != "deb" {
		return apt.Package{}, false
	}
	arch := "all"
	if len(r.Facts.Architectures) > 0 {
		arch = r.Facts.Architectures[0]
	}
	p := apt.Package{ID: r.ID, Name: r.BundleID, Version: r.BuildVersion, Architecture: arch, Maintainer: r.Facts.Publisher,
		Description: r.Facts.Description, ExtendedDescription: r.Facts.Properties["Extended-Description"],
		Size: r.Size, SHA256: r.SHA256, Uploaded: r.CreatedAt, Fields: map[string]string{}}
	for _, k := range apt.FieldNames() {
		if val := r.Facts.Properties[k]; val != "" {
			p.Fields[k] = val
		}
	}
	return p, true
}

// aptReplaces is the upload answer's warning for a .deb of the same package, version and
// architecture as a build the channel already holds: the APT index lists the newer only ("" when
// there is none, or no repository).
func (s *Server) aptReplaces(ctx context.Context, rc *distribution.ReleaseContext) string {
	if s.cfg.RepoKey == nil || rc.Format != "deb" || rc.Channel.DeviceType != "linux" {
		return ""
	}
	v, err := s.svc.Reads.View(ctx, rc.Channel.Slug)
	if err != nil {
		return ""
	}
	p, ok := aptPackage(&rc.Release)
	if !ok {
		return ""
	}
	for i := range v.Releases {
		if o, ok := aptPackage(&v.Releases[i]); ok && o.ID != p.ID && o.Name == p.Name && o.Version == p.Version && o.Architecture == p.Architecture {
			return fmt.Sprintf("build %d has the same package, version and architecture (%s %s %s): the channel's APT repository lists this upload in its place",
				o.ID, p.Name, p.Version, p.Architecture)
		}
	}
	return ""
}

// aptPool: GET /channels/:slug/apt/pool/<release id>/<name>.deb answers 302 to the stored
// package, as the download route does (a presigned URL on S3, the service's signed URL on the
// filesystem), for a release the repository lists. apt follows the redirect and checks the
// SHA-256 the index gave.
func (s *Server) aptPool(c *gin.Context, v *readcache.ChannelView, id int64) error {
	var r *distribution.Release
	if rc, err := s.svc.Releases.ReleaseInView(reqCtx(c), v, id); err == nil {
		r = &rc.Release
	} else if errs.KindOf(err) != errs.NotFound {
		return err
	}
	if r != nil && r.Format == "deb" && repoOffers(r) {
		if err := s.redirectToObject(c, r.ObjectKey, r.Filename, contentTypes[r.Format], !v.Channel.Protected()); err != nil {
			return err
		}
		if c.Request.Method == http.MethodGet {
			s.svc.Downloads.CountDownload(r)
		}
		return nil
	}
	return errs.New(errs.NotFound, "build %d is not in the APT repository of channel %s (deleted, or not offered: run apt-get update)", id, v.Channel.Slug)
}
