package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/distribution/readcache"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Reading and managing releases.

// ReleaseStore reads and writes releases.
type ReleaseStore interface {
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
	ListReleases(ctx context.Context, channelID int64, p distribution.Page) ([]distribution.Release, error)
	// RecentReleases returns up to limit of a channel's newest releases, only those with bundleID
	// unless it is "".
	RecentReleases(ctx context.Context, channelID int64, bundleID string, limit int) ([]distribution.Release, error)
	// FindRelease returns the newest release matching bundle id and the non-empty ones of the
	// versions and commit, or errs.NotFound.
	FindRelease(ctx context.Context, channelID int64, bundleID, releaseVersion, buildVersion, gitCommit string) (*distribution.Release, error)
	UpdateRelease(ctx context.Context, r *distribution.Release) (*distribution.ReleaseContext, error)
	// DeleteRelease deletes a release and returns its object keys (recorded as deleted), leaving
	// its tombstone and audit row as by's. emit (nil: none) makes its events from the release as
	// read before the delete.
	DeleteRelease(ctx context.Context, id int64, by distribution.Actor, emit distribution.EventFunc) ([]string, error)
	// RecentUploads returns the newest releases across every app.
	RecentUploads(ctx context.Context, limit int) ([]distribution.ReleaseContext, error)
	// ReleaseTombstone returns what a deleted release left (errs.NotFound: nothing).
	ReleaseTombstone(ctx context.Context, id int64) (*distribution.Tombstone, error)
}

// Releases runs the use cases of releases once recorded (uploads.Builds records them): reading,
// editing, deleting, and the update-check reads, which the read cache's views answer.
type Releases struct {
	Store ReleaseStore
	// Effects are what a change sets off (see Apps).
	Effects distribution.Effects
	// Audit records each change as the context's actor (nil: not recorded).
	Audit *distribution.AuditLog
	// Policy decides whether the context's actor may read or change a release.
	Policy *policy.Policy
	// Signer is woken when an edit makes a release await its Sparkle signature (rolled out from 0).
	Signer distribution.Waker
}

// The reads by channel key (ReleaseInChannel, ReleaseInView, Versions, Latest, FindVersion,
// Tombstone, ReleaseToDownload) are open to whoever holds the key, as Zealot's SDKs and the
// release pages read them; a protected channel's gate is its password (access.Passwords).

// Release returns a release with its channel, scheme and app.
func (rs *Releases) Release(ctx context.Context, id int64) (*distribution.ReleaseContext, error) {
	rc, err := rs.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	return rc, rs.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(rc.App.ID))
}

// ReleaseToDownload returns a release to download by its id alone (the download links of the
// pages and feeds): the caller lets the request through the release's channel gate.
func (rs *Releases) ReleaseToDownload(ctx context.Context, id int64) (*distribution.ReleaseContext, error) {
	return rs.Store.GetRelease(ctx, id)
}

// ReleaseInChannel returns a release of the channel a key names, or errs.NotFound when the
// release is in another channel (pages and install links carry both).
func (rs *Releases) ReleaseInChannel(ctx context.Context, key string, id int64) (*distribution.ReleaseContext, error) {
	rc, err := rs.Store.GetRelease(ctx, id)
	if err != nil {
		return nil, err
	}
	if rc.Channel.Slug != key {
		return nil, errs.New(errs.NotFound, "release %d not found in this channel", id)
	}
	return rc, nil
}

// RepositoryReleases returns up to limit of the newest releases of the view's channel: the
// view's when it holds them all, else from the database (a package repository lists every
// build). Open to whoever may read the view, as the reads by channel key are.
func (rs *Releases) RepositoryReleases(ctx context.Context, v *readcache.ChannelView, limit int) ([]distribution.Release, error) {
	if v.Complete && len(v.Releases) <= limit {
		return v.Releases, nil
	}
	return rs.Store.RecentReleases(ctx, v.Channel.ID, "", limit)
}

// ReleaseInView returns a release of the view's channel: from the view when it holds it, else
// from the database; errs.NotFound when the release is in another channel.
func (rs *Releases) ReleaseInView(ctx context.Context, v *readcache.ChannelView, id int64) (*distribution.ReleaseContext, error) {
	for i := range v.Releases {
		if v.Releases[i].ID == id {
			return &distribution.ReleaseContext{Release: v.Releases[i], Channel: v.Channel, Scheme: v.Scheme, App: v.App}, nil
		}
	}
	return rs.ReleaseInChannel(ctx, v.Channel.Slug, id)
}

// Versions returns a page of a channel's releases, newest first: from the view when it holds
// that page, else from the database.
func (rs *Releases) Versions(ctx context.Context, v *readcache.ChannelView, p distribution.Page) ([]distribution.Release, error) {
	if end := p.Offset() + p.PerPage; end <= len(v.Releases) || v.Complete {
		start := min(p.Offset(), len(v.Releases))
		return v.Releases[start:min(end, len(v.Releases))], nil
	}
	return rs.Store.ListReleases(ctx, v.Channel.ID, p)
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
// the caller's version among the channel's 200 newest (readcache.ViewReleases), newest first, empty when
// it is up to date. The view answers it; only the newest release of a rare bundle id in a channel
// of more than 200 releases needs the database.
func (rs *Releases) Latest(ctx context.Context, v *readcache.ChannelView, q LatestQuery) ([]distribution.Release, error) {
	q.BundleID, q.ReleaseVersion, q.BuildVersion = strings.TrimSpace(q.BundleID), strings.TrimSpace(q.ReleaseVersion), strings.TrimSpace(q.BuildVersion)
	if q.ReleaseVersion == "" {
		return nil, errs.Field("release_version", "is required: the version of the build asking")
	}
	if q.BuildVersion == "" {
		return nil, errs.Field("build_version", "is required: the build number of the build asking")
	}
	if q.SDK {
		newer := []distribution.Release{}
		for _, r := range v.Releases {
			if (q.BundleID == "" || r.BundleID == q.BundleID) && distribution.Newer(r.ReleaseVersion, r.BuildVersion, q.ReleaseVersion, q.BuildVersion) {
				newer = append(newer, r)
			}
		}
		return newer, nil
	}
	for _, r := range v.Releases {
		if q.BundleID == "" || r.BundleID == q.BundleID {
			return []distribution.Release{r}, nil
		}
	}
	if !v.Complete {
		rels, err := rs.Store.RecentReleases(ctx, v.Channel.ID, q.BundleID, 1)
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
func (rs *Releases) FindVersion(ctx context.Context, v *readcache.ChannelView, q VersionQuery) (*distribution.Release, error) {
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
	return rs.Store.FindRelease(ctx, v.Channel.ID, q.BundleID, q.ReleaseVersion, q.BuildVersion, q.GitCommit)
}

// ReleaseChanges are the fields of a release a client edits; nil leaves a field as it is. They
// follow the upload's rules: Changelog is plain text or the JSON form, CustomFields a JSON array.
type ReleaseChanges struct {
	ReleaseVersion *string `param:"release_version"`
	BuildVersion   *string `param:"build_version"`
	ReleaseType    *string `param:"release_type"`
	Source         *string `param:"source"`
	Branch         *string `param:"branch"`
	GitCommit      *string `param:"git_commit"`
	CIURL          *string `param:"ci_url"`
	// Changelog and CustomFields are JSON text (a form's string, or a JSON body's array).
	Changelog    *string `param:"changelog,json"`
	CustomFields *string `param:"custom_fields,json"`
	// Pinned keeps the release from retention; only an admin token may change it.
	Pinned *bool `param:"pinned"`
	// EdSignature (Sparkle's EdDSA signature, base64), RolloutPercent (0-100) and Critical are
	// what the update feeds announce.
	EdSignature    *string `param:"ed_signature"`
	TauriSignature *string `param:"tauri_signature"`
	RolloutPercent *int    `param:"rollout"`
	Critical       *bool   `param:"critical"`
}

func (ch ReleaseChanges) apply(r *distribution.Release) (err error) {
	required := map[string][2]*string{"release_version": {ch.ReleaseVersion, &r.ReleaseVersion}, "build_version": {ch.BuildVersion, &r.BuildVersion}}
	for field, p := range required {
		if p[0] == nil {
			continue
		}
		v, err := distribution.ShortText(field, *p[0])
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
		if *p[1], err = distribution.ShortText(field, *p[0]); err != nil {
			return err
		}
	}
	if ch.Source != nil && r.Source == "" {
		r.Source = "api"
	}
	if ch.Branch != nil {
		r.Branch = distribution.CleanBranch(r.Branch)
	}
	if ch.ReleaseType != nil {
		if r.ReleaseType, err = distribution.NormReleaseType(*ch.ReleaseType); err != nil {
			return err
		}
	}
	if ch.CIURL != nil {
		if r.CIURL, err = distribution.WebURL("ci_url", *ch.CIURL); err != nil {
			return err
		}
	}
	if ch.Changelog != nil {
		if r.Changelog, err = distribution.ParseChangelog(*ch.Changelog); err != nil {
			return err
		}
	}
	if ch.CustomFields != nil {
		if r.CustomFields, err = distribution.ParseCustomFields(*ch.CustomFields); err != nil {
			return err
		}
	}
	if ch.Pinned != nil {
		r.Pinned = *ch.Pinned
	}
	if ch.EdSignature != nil {
		if r.EdSignature, err = distribution.EdSignature(*ch.EdSignature); err != nil {
			return err
		}
	}
	if ch.TauriSignature != nil {
		if r.TauriSignature, err = distribution.TauriSignature(*ch.TauriSignature); err != nil {
			return err
		}
	}
	if ch.RolloutPercent != nil {
		if *ch.RolloutPercent < 0 || *ch.RolloutPercent > 100 {
			return errs.Field("rollout", "must be a percentage from 0 to 100")
		}
		r.RolloutPercent = *ch.RolloutPercent
	}
	if ch.Critical != nil {
		r.Critical = *ch.Critical
	}
	return nil
}

// UpdateRelease edits a release's metadata (policy.EditRelease; pinning is policy.PinRelease).
func (rs *Releases) UpdateRelease(ctx context.Context, id int64, ch ReleaseChanges) (*distribution.ReleaseContext, error) {
	return distribution.RetryStale(func() (*distribution.ReleaseContext, error) {
		rc, err := rs.Store.GetRelease(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := rs.Policy.Authorize(ctx, policy.EditRelease, policy.OnRelease(rc.App.ID, rc.UploadedBy)); err != nil {
			return nil, err
		}
		if ch.Pinned != nil {
			if err := rs.Policy.Authorize(ctx, policy.PinRelease, policy.OnApp(rc.App.ID)); err != nil {
				return nil, err
			}
		}
		r := rc.Release
		if err := ch.apply(&r); err != nil {
			return nil, err
		}
		defer rs.Effects.Changed(distribution.Change{ChannelID: rc.Channel.ID})
		out, err := rs.Store.UpdateRelease(ctx, &r)
		if err == nil {
			rs.auditUpdate(ctx, rc, out, ch)
			if out.AwaitsSignature() && !rc.AwaitsSignature() && rs.Signer != nil {
				rs.Signer.Wake()
			}
		}
		return out, err
	})
}

// auditUpdate records an edit of a release: which fields were sent, and the old name when the
// versions changed (a rename).
func (rs *Releases) auditUpdate(ctx context.Context, before, after *distribution.ReleaseContext, ch ReleaseChanges) {
	var fields []string
	for name, set := range map[string]bool{"release_version": ch.ReleaseVersion != nil, "build_version": ch.BuildVersion != nil,
		"release_type": ch.ReleaseType != nil, "source": ch.Source != nil, "branch": ch.Branch != nil, "git_commit": ch.GitCommit != nil,
		"ci_url": ch.CIURL != nil, "changelog": ch.Changelog != nil, "custom_fields": ch.CustomFields != nil,
		"ed_signature": ch.EdSignature != nil, "tauri_signature": ch.TauriSignature != nil, "rollout": ch.RolloutPercent != nil, "critical": ch.Critical != nil} {
		if set {
			fields = append(fields, name)
		}
	}
	slices.Sort(fields)
	detail := map[string]any{"channel_id": after.Channel.ID, "fields": fields}
	action := "release.update"
	if ch.Pinned != nil && len(fields) == 0 {
		action = map[bool]string{true: "release.pin", false: "release.unpin"}[*ch.Pinned]
	} else if ch.Pinned != nil {
		detail["pinned"] = *ch.Pinned
	}
	if from := distribution.ReleaseTarget(before).Name; from != distribution.ReleaseTarget(after).Name {
		detail["from"] = from
	}
	rs.Audit.Record(ctx, action, distribution.ReleaseTarget(after), detail)
}

// DeleteRelease deletes a release; its package and icon are deleted from storage after the
// commit (or by the collector).
func (rs *Releases) DeleteRelease(ctx context.Context, id int64) error {
	rc, err := rs.Store.GetRelease(ctx, id)
	if err != nil {
		return err
	}
	if err := rs.Policy.Authorize(ctx, policy.DeleteRelease, policy.OnApp(rc.App.ID)); err != nil {
		return err
	}
	defer rs.Effects.Changed(distribution.Change{ChannelID: rc.Channel.ID})
	defer rs.Effects.Wake()
	return rs.Effects.Deleted(ctx)(rs.Store.DeleteRelease(ctx, id, distribution.ActorOf(ctx), rs.Effects.ReleaseEvents(webhook.EventReleaseDeleted)))
}

// Tombstone returns what a deleted release of the channel a key names left: when and by whom it
// went, and the channel's newest release; errs.NotFound when there is none (never deleted, in
// another channel, or its channel went too).
func (rs *Releases) Tombstone(ctx context.Context, key string, id int64) (*distribution.Tombstone, error) {
	t, err := rs.Store.ReleaseTombstone(ctx, id)
	if err != nil {
		return nil, err
	}
	if key != "" && t.ChannelSlug != key {
		return nil, errs.New(errs.NotFound, "release %d not found in this channel", id)
	}
	return t, nil
}

// RecentUploads returns the newest releases across every app, with their install counts.
func (rs *Releases) RecentUploads(ctx context.Context, limit int) ([]distribution.ReleaseContext, error) {
	if err := rs.Policy.Authorize(ctx, policy.ReadCatalog, policy.Installation); err != nil {
		return nil, err
	}
	return rs.Store.RecentUploads(ctx, limit)
}

// ChannelReleases returns a page of a channel's releases, newest first, from the database (the
// console lists every release, not the view's newest).
func (rs *Releases) ChannelReleases(ctx context.Context, cc *distribution.ChannelContext, p distribution.Page) ([]distribution.Release, error) {
	if err := rs.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(cc.App.ID)); err != nil {
		return nil, err
	}
	return rs.Store.ListReleases(ctx, cc.Channel.ID, p)
}
