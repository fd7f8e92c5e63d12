package distribution

import (
	"context"
	"fmt"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Reading and managing releases.

// Release returns a release with its channel, scheme and app.
func (s *Service) Release(ctx context.Context, id int64) (*ReleaseContext, error) {
	return s.Store.GetRelease(ctx, id)
}

// ReleaseInChannel returns a release of the channel a key names, or errs.NotFound when the
// release is in another channel (pages and install links carry both).
func (s *Service) ReleaseInChannel(ctx context.Context, key string, id int64) (*ReleaseContext, error) {
	rc, err := s.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	if rc.Channel.Slug != key {
		return nil, errs.New(errs.NotFound, "release %d not found in this channel", id)
	}
	return rc, nil
}

// ReleaseInView returns a release of the view's channel: from the view when it holds it, else
// from the database; errs.NotFound when the release is in another channel.
func (s *Service) ReleaseInView(ctx context.Context, v *ChannelView, id int64) (*ReleaseContext, error) {
	for i := range v.Releases {
		if v.Releases[i].ID == id {
			return &ReleaseContext{Release: v.Releases[i], Channel: v.Channel, Scheme: v.Scheme, App: v.App}, nil
		}
	}
	return s.ReleaseInChannel(ctx, v.Channel.Slug, id)
}

// Versions returns a page of a channel's releases, newest first: from the view when it holds
// that page, else from the database.
func (s *Service) Versions(ctx context.Context, v *ChannelView, p Page) ([]Release, error) {
	if end := p.Offset() + p.PerPage; end <= len(v.Releases) || v.Complete {
		start := min(p.Offset(), len(v.Releases))
		return v.Releases[start:min(end, len(v.Releases))], nil
	}
	return s.Store.ListReleases(ctx, v.Channel.ID, p)
}

// LatestQuery is what GET /api/apps/latest asks.
type LatestQuery struct {
	// BundleID, when set, limits the answer to releases of that bundle id.
	BundleID string
	// ReleaseVersion and BuildVersion are the caller's own version; both are required.
	ReleaseVersion, BuildVersion string
	// SDK is set by the Zealot mobile SDKs, which want every newer release, not the newest one.
	SDK bool
}

// Key names the query in a view's memo of encoded answers.
func (q LatestQuery) Key() string {
	return fmt.Sprintf("latest\x00%s\x00%s\x00%s\x00%t", q.BundleID, q.ReleaseVersion, q.BuildVersion, q.SDK)
}

// Latest answers the update check (decisions.md): without SDK, the channel's newest release (of
// the bundle id when given), errs.NotFound when there is none; with SDK, the releases newer than
// the caller's version among the channel's 200 newest (viewReleases), newest first, empty when
// it is up to date. The view answers it; only the newest release of a rare bundle id in a channel
// of more than 200 releases needs the database.
func (s *Service) Latest(ctx context.Context, v *ChannelView, q LatestQuery) ([]Release, error) {
	q.BundleID, q.ReleaseVersion, q.BuildVersion = strings.TrimSpace(q.BundleID), strings.TrimSpace(q.ReleaseVersion), strings.TrimSpace(q.BuildVersion)
	if q.ReleaseVersion == "" {
		return nil, errs.Field("release_version", "is required: the version of the build asking")
	}
	if q.BuildVersion == "" {
		return nil, errs.Field("build_version", "is required: the build number of the build asking")
	}
	if q.SDK {
		newer := []Release{}
		for _, r := range v.Releases {
			if (q.BundleID == "" || r.BundleID == q.BundleID) && Newer(r.ReleaseVersion, r.BuildVersion, q.ReleaseVersion, q.BuildVersion) {
				newer = append(newer, r)
			}
		}
		return newer, nil
	}
	for _, r := range v.Releases {
		if q.BundleID == "" || r.BundleID == q.BundleID {
			return []Release{r}, nil
		}
	}
	if !v.Complete {
		rels, err := s.Store.RecentReleases(ctx, v.Channel.ID, q.BundleID, 1)
		if err != nil || len(rels) > 0 {
			return rels, err
		}
	}
	return nil, errs.New(errs.NotFound, "this channel has no release yet")
}

// VersionQuery is what GET /api/apps/version_exist asks: a bundle id with both versions, or with
// a git commit.
type VersionQuery struct {
	BundleID, ReleaseVersion, BuildVersion, GitCommit string
}

// Key names the query in a view's memo of encoded answers.
func (q VersionQuery) Key() string {
	return fmt.Sprintf("exist\x00%s\x00%s\x00%s\x00%s", q.BundleID, q.ReleaseVersion, q.BuildVersion, q.GitCommit)
}

// FindVersion returns the newest release of the channel matching q, or errs.NotFound: from the
// view, or from the database when the view does not hold every release.
func (s *Service) FindVersion(ctx context.Context, v *ChannelView, q VersionQuery) (*Release, error) {
	q.BundleID, q.ReleaseVersion = strings.TrimSpace(q.BundleID), strings.TrimSpace(q.ReleaseVersion)
	q.BuildVersion, q.GitCommit = strings.TrimSpace(q.BuildVersion), strings.TrimSpace(q.GitCommit)
	if q.BundleID == "" {
		return nil, errs.Field("bundle_id", "is required")
	}
	if q.GitCommit == "" && (q.ReleaseVersion == "" || q.BuildVersion == "") {
		return nil, errs.Invalidf("give release_version and build_version, or git_commit, with bundle_id")
	}
	if q.GitCommit != "" {
		q.ReleaseVersion, q.BuildVersion = "", ""
	}
	for i := range v.Releases {
		r := &v.Releases[i]
		if r.BundleID == q.BundleID && (q.GitCommit == "" || r.GitCommit == q.GitCommit) &&
			(q.ReleaseVersion == "" || r.ReleaseVersion == q.ReleaseVersion) && (q.BuildVersion == "" || r.BuildVersion == q.BuildVersion) {
			return r, nil
		}
	}
	if v.Complete {
		return nil, errs.New(errs.NotFound, "no such release in this channel")
	}
	return s.Store.FindRelease(ctx, v.Channel.ID, q.BundleID, q.ReleaseVersion, q.BuildVersion, q.GitCommit)
}

// ReleaseChanges are the fields of a release a client edits; nil leaves a field as it is. They
// follow the upload's rules: Changelog is plain text or the JSON form, CustomFields a JSON array.
type ReleaseChanges struct {
	ReleaseVersion, BuildVersion, ReleaseType, Source *string
	Branch, GitCommit, CIURL                          *string
	Changelog, CustomFields                           *string
	// Pinned keeps the release from retention; only an admin token may change it.
	Pinned *bool
}

func (ch ReleaseChanges) apply(r *Release) (err error) {
	required := map[string][2]*string{"release_version": {ch.ReleaseVersion, &r.ReleaseVersion}, "build_version": {ch.BuildVersion, &r.BuildVersion}}
	for field, p := range required {
		if p[0] == nil {
			continue
		}
		v, err := shortText(field, *p[0])
		if err != nil {
			return err
		}
		if v == "" {
			return errs.Field(field, "can't be blank")
		}
		*p[1] = v
	}
	optional := map[string][2]*string{"source": {ch.Source, &r.Source}, "branch": {ch.Branch, &r.Branch}, "git_commit": {ch.GitCommit, &r.GitCommit}}
	for field, p := range optional {
		if p[0] == nil {
			continue
		}
		if *p[1], err = shortText(field, *p[0]); err != nil {
			return err
		}
	}
	if ch.Source != nil && r.Source == "" {
		r.Source = "api"
	}
	if ch.Branch != nil {
		r.Branch = CleanBranch(r.Branch)
	}
	if ch.ReleaseType != nil {
		if r.ReleaseType, err = normReleaseType(*ch.ReleaseType); err != nil {
			return err
		}
	}
	if ch.CIURL != nil {
		if r.CIURL, err = webURL("ci_url", *ch.CIURL); err != nil {
			return err
		}
	}
	if ch.Changelog != nil {
		if r.Changelog, err = ParseChangelog(*ch.Changelog); err != nil {
			return err
		}
	}
	if ch.CustomFields != nil {
		if r.CustomFields, err = ParseCustomFields(*ch.CustomFields); err != nil {
			return err
		}
	}
	if ch.Pinned != nil {
		r.Pinned = *ch.Pinned
	}
	return nil
}

// CanEditRelease reports whether a token may edit a release: an admin token any, an upload token
// the releases it uploaded.
func CanEditRelease(t *Token, r *Release) bool {
	return t.Scope == ScopeAdmin || (t.Scope == ScopeUpload && r.UploadedBy != 0 && r.UploadedBy == t.ID)
}

// UpdateRelease edits a release's metadata on behalf of a token (see CanEditRelease).
func (s *Service) UpdateRelease(ctx context.Context, t *Token, id int64, ch ReleaseChanges) (*ReleaseContext, error) {
	return retryStale(func() (*ReleaseContext, error) {
		rc, err := s.Store.GetRelease(ctx, id)
		if err != nil {
			return nil, err
		}
		if !CanEditRelease(t, &rc.Release) {
			return nil, errs.New(errs.Forbidden, "an upload token may edit only the releases it uploaded; this needs an admin token")
		}
		if ch.Pinned != nil && t.Scope != ScopeAdmin {
			return nil, errs.New(errs.Forbidden, "pinning a release (keeping it from retention) needs an admin token")
		}
		r := rc.Release
		if err := ch.apply(&r); err != nil {
			return nil, err
		}
		defer s.changed(Change{ChannelID: rc.Channel.ID})
		return s.Store.UpdateRelease(ctx, &r)
	})
}

// DeleteRelease deletes a release; its package and icon are deleted from storage after the
// commit (or by the collector).
func (s *Service) DeleteRelease(ctx context.Context, id int64) error {
	rc, err := s.Store.GetRelease(ctx, id)
	if err != nil {
		return err
	}
	defer s.changed(Change{ChannelID: rc.Channel.ID})
	defer s.WakeWebhooks()
	return s.deleted(ctx)(s.Store.DeleteRelease(ctx, id, s.releaseEvents(webhook.EventReleaseDeleted, 0)))
}
