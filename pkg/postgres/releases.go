package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The JSON forms of a release's jsonb columns. They are the store's own: the domain types carry
// no tags, and the API's views choose their own wire names.
type changelogRow struct {
	Message string `json:"message"`
	Author  string `json:"author,omitempty"`
	Email   string `json:"email,omitempty"`
	Date    string `json:"date,omitempty"`
}

type customFieldRow struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

type profileRow struct {
	Name        string    `json:"name"`
	TeamID      string    `json:"team_id"`
	TeamName    string    `json:"team_name"`
	ExpiresAt   time.Time `json:"expires_at"`
	DeviceCount int       `json:"device_count"`
	AllDevices  bool      `json:"all_devices"`
	Development bool      `json:"development"`
}

// factsRow is the jsonb form of distribution.PlatformFacts (releases.platform_facts).
type factsRow struct {
	Architectures []string          `json:"architectures,omitempty"`
	Publisher     string            `json:"publisher,omitempty"`
	Description   string            `json:"description,omitempty"`
	Permissions   []string          `json:"permissions,omitempty"`
	Debuggable    bool              `json:"debuggable,omitempty"`
	Properties    map[string]string `json:"properties,omitempty"`
}

func encodeFacts(f *distribution.PlatformFacts) []byte {
	b, _ := json.Marshal(factsRow(*f))
	return b
}

func decodeFacts(r *distribution.Release, b []byte) error {
	var f factsRow
	if len(b) > 0 {
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
	}
	r.Facts = distribution.PlatformFacts(f)
	return nil
}

func encodeReleaseJSON(r *distribution.Release) (changelog, custom, profile []byte) {
	cl := make([]changelogRow, len(r.Changelog))
	for i, e := range r.Changelog {
		cl[i] = changelogRow(e)
	}
	cf := make([]customFieldRow, len(r.CustomFields))
	for i, f := range r.CustomFields {
		cf[i] = customFieldRow(f)
	}
	changelog, _ = json.Marshal(cl)
	custom, _ = json.Marshal(cf)
	if r.Profile != nil {
		profile, _ = json.Marshal(profileRow(*r.Profile))
	}
	return changelog, custom, profile
}

func decodeReleaseJSON(r *distribution.Release, changelog, custom, profile []byte) error {
	var cl []changelogRow
	var cf []customFieldRow
	if err := json.Unmarshal(changelog, &cl); err != nil {
		return err
	}
	if err := json.Unmarshal(custom, &cf); err != nil {
		return err
	}
	r.Changelog = make([]distribution.ChangelogEntry, len(cl))
	for i, e := range cl {
		r.Changelog[i] = distribution.ChangelogEntry(e)
	}
	r.CustomFields = make([]distribution.CustomField, len(cf))
	for i, f := range cf {
		r.CustomFields[i] = distribution.CustomField(f)
	}
	r.Profile = nil
	if len(profile) > 0 && string(profile) != "null" {
		var p profileRow
		if err := json.Unmarshal(profile, &p); err != nil {
			return err
		}
		ps := distribution.ProfileSummary(p)
		r.Profile = &ps
	}
	return nil
}

const releaseColumns = `r.id, r.channel_id, r.version, r.name, r.bundle_id, r.release_version, r.build_version, r.release_type,
	r.source, r.branch, r.git_commit, r.ci_url, r.changelog, r.custom_fields, r.platform, r.format, r.device, r.min_os,
	r.target_sdk, r.profile, r.size, r.sha256, r.object_key, r.filename, r.icon_key, r.icon_type, coalesce(r.uploaded_by, 0),
	r.created_at, r.updated_at, r.pinned, r.sha512, r.sha1, r.checksum_state, r.checksum_error, r.ed_signature, r.tauri_signature,
	r.rollout_percent, r.critical, coalesce((SELECT d.downloads FROM release_downloads d WHERE d.release_id = r.id), 0),
	r.platform_facts, r.sparkle_sign`

const releaseContextColumns = releaseColumns + `, ` + channelContextColumns

const releaseContextFrom = ` FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id`

func scanRelease(row pgx.Row, r *distribution.Release, extra ...any) error {
	var changelog, custom, profile, facts []byte
	dest := []any{&r.ID, &r.ChannelID, &r.Version, &r.Name, &r.BundleID, &r.ReleaseVersion, &r.BuildVersion, &r.ReleaseType,
		&r.Source, &r.Branch, &r.GitCommit, &r.CIURL, &changelog, &custom, &r.Platform, &r.Format, &r.Device, &r.MinOS,
		&r.TargetSDK, &profile, &r.Size, &r.SHA256, &r.ObjectKey, &r.Filename, &r.IconKey, &r.IconType, &r.UploadedBy,
		&r.CreatedAt, &r.UpdatedAt, &r.Pinned, &r.SHA512, &r.SHA1, &r.ChecksumState, &r.ChecksumError, &r.EdSignature, &r.TauriSignature,
		&r.RolloutPercent, &r.Critical, &r.Downloads, &facts, &r.SparkleSign}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return err
	}
	if err := decodeFacts(r, facts); err != nil {
		return err
	}
	return decodeReleaseJSON(r, changelog, custom, profile)
}

func scanReleaseContext(row pgx.Row, rc *distribution.ReleaseContext) error {
	cc := distribution.ChannelContext{}
	if err := scanRelease(row, &rc.Release, channelContextDest(&cc)...); err != nil {
		return err
	}
	rc.Channel, rc.Scheme, rc.App = cc.Channel, cc.Scheme, cc.App
	return nil
}

// GetRelease returns a release with its channel, scheme and app, or errs.NotFound.
func (db *Releases) GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error) {
	return getRelease(ctx, db.Pool, id)
}

func getRelease(ctx context.Context, q querier, id int64) (*distribution.ReleaseContext, error) {
	var rc distribution.ReleaseContext
	err := scanReleaseContext(q.QueryRow(ctx, `SELECT `+releaseContextColumns+releaseContextFrom+` WHERE r.id = $1`, id), &rc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "release %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &rc, nil
}

// ListReleases returns a page of a channel's releases, newest (highest version) first.
func (db *Releases) ListReleases(ctx context.Context, channelID int64, p distribution.Page) ([]distribution.Release, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseColumns+` FROM releases r WHERE r.channel_id = $1
		ORDER BY r.version DESC LIMIT $2 OFFSET $3`, channelID, p.PerPage, p.Offset())
	if err != nil {
		return nil, dbErr(err)
	}
	return collectReleases(rows)
}

// CountReleases returns the number of releases in a channel.
func (db *Releases) CountReleases(ctx context.Context, channelID int64) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM releases WHERE channel_id = $1`, channelID).Scan(&n)
	return n, dbErr(err)
}

// RecentReleases returns up to limit of a channel's newest releases, optionally only those with
// bundleID ("" for any).
func (db *Releases) RecentReleases(ctx context.Context, channelID int64, bundleID string, limit int) ([]distribution.Release, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseColumns+` FROM releases r WHERE r.channel_id = $1 AND ($2 = '' OR r.bundle_id = $2)
		ORDER BY r.version DESC LIMIT $3`, channelID, bundleID, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	return collectReleases(rows)
}

// FindRelease returns the newest release of a channel matching bundle id and either both versions
// or a git commit (empty arguments are not compared), or errs.NotFound.
func (db *Releases) FindRelease(ctx context.Context, channelID int64, bundleID, releaseVersion, buildVersion, gitCommit string) (*distribution.Release, error) {
	var r distribution.Release
	err := scanRelease(db.Pool.QueryRow(ctx, `SELECT `+releaseColumns+` FROM releases r
		WHERE r.channel_id = $1 AND r.bundle_id = $2
		  AND ($3 = '' OR r.release_version = $3) AND ($4 = '' OR r.build_version = $4) AND ($5 = '' OR r.git_commit = $5)
		ORDER BY r.version DESC LIMIT 1`, channelID, bundleID, releaseVersion, buildVersion, gitCommit), &r)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "no such release in this channel")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &r, nil
}

func collectReleases(rows pgx.Rows) ([]distribution.Release, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Release, error) {
		var rel distribution.Release
		return rel, scanRelease(r, &rel)
	})
	if out == nil {
		out = []distribution.Release{}
	}
	return out, dbErr(err)
}

// insertRelease records a release (its ChannelID and Version set) with the UDIDs its profile
// lists, and returns its id.
func insertRelease(ctx context.Context, q querier, r *distribution.Release, devices []string) (int64, error) {
	var uploadedBy *int64
	if r.UploadedBy > 0 {
		uploadedBy = &r.UploadedBy
	}
	changelog, custom, profile := encodeReleaseJSON(r)
	var id int64
	err := q.QueryRow(ctx, `INSERT INTO releases (channel_id, version, name, bundle_id, release_version, build_version, release_type,
		source, branch, git_commit, ci_url, changelog, custom_fields, platform, format, device, min_os, target_sdk, profile,
		size, sha256, object_key, filename, icon_key, icon_type, uploaded_by, profile_devices, platform_facts,
		sha512, sha1, checksum_state, ed_signature, rollout_percent, critical, tauri_signature, sparkle_sign)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26,$27,$28,
		$29,$30,$31,$32,$33,$34,$35,$36) RETURNING id`,
		r.ChannelID, r.Version, r.Name, r.BundleID, r.ReleaseVersion, r.BuildVersion, r.ReleaseType, r.Source, r.Branch, r.GitCommit,
		r.CIURL, changelog, custom, r.Platform, r.Format, r.Device, r.MinOS, r.TargetSDK, profile, r.Size, r.SHA256,
		r.ObjectKey, r.Filename, r.IconKey, r.IconType, uploadedBy, profileDevices(devices), encodeFacts(&r.Facts),
		r.SHA512, r.SHA1, checksumStateOrUnverified(r.ChecksumState), r.EdSignature, r.RolloutPercent, r.Critical, r.TauriSignature, r.SparkleSign).Scan(&id)
	return id, err
}

// newestRelease returns a channel's newest release and its insights snapshot (nil, nil when the
// channel has no release; a nil snapshot when the release has none recorded).
func newestRelease(ctx context.Context, q querier, channelID int64) (*distribution.Release, []byte, error) {
	var r distribution.Release
	var snapshot []byte
	err := scanRelease(q.QueryRow(ctx, `SELECT `+releaseColumns+`, i.snapshot FROM releases r
		LEFT JOIN release_insights i ON i.release_id = r.id WHERE r.channel_id = $1 ORDER BY r.version DESC LIMIT 1`, channelID), &r, &snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return &r, snapshot, nil
}

// UpdateRelease saves the editable fields of a release (versions, type, source, git and CI
// fields, changelog, custom fields) if the row is still as read (its updated_at is r.UpdatedAt;
// distribution.ErrStale otherwise) and returns it, or errs.NotFound.
func (db *Releases) UpdateRelease(ctx context.Context, r *distribution.Release) (*distribution.ReleaseContext, error) {
	changelog, custom, _ := encodeReleaseJSON(r)
	tag, err := db.Pool.Exec(ctx, `UPDATE releases SET release_version = $2, build_version = $3, release_type = $4, source = $5,
		branch = $6, git_commit = $7, ci_url = $8, changelog = $9, custom_fields = $10, pinned = $12,
		ed_signature = $13, rollout_percent = $14, critical = $15, tauri_signature = $16, updated_at = clock_timestamp()
		WHERE id = $1 AND updated_at = $11`,
		r.ID, r.ReleaseVersion, r.BuildVersion, r.ReleaseType, r.Source, r.Branch, r.GitCommit, r.CIURL, changelog, custom, r.UpdatedAt, r.Pinned,
		r.EdSignature, r.RolloutPercent, r.Critical, r.TauriSignature)
	if err != nil {
		return nil, dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return nil, db.staleOrMissing(ctx, "releases", r.ID, errs.New(errs.NotFound, "release %d not found", r.ID))
	}
	return db.GetRelease(ctx, r.ID)
}

// DeleteRelease deletes a release and records its package and icon as deleted in the same
// transaction, with its tombstone and audit row (by is who deleted it); it returns their keys, or
// errs.NotFound.
func (db *Releases) DeleteRelease(ctx context.Context, id int64, by distribution.Actor, emit distribution.EventFunc) ([]string, error) {
	var keys []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		keys, err = deleteRelease(ctx, tx, id, by, "", emit)
		return err
	})
	return keys, err
}

// deleteRelease deletes a release inside tx, writes its events (read before the delete), its
// tombstone and its audit row (by: who, reason: the retention rule or ""), and records its
// objects as deleted; it returns their keys.
func deleteRelease(ctx context.Context, tx pgx.Tx, id int64, by distribution.Actor, reason string, emit distribution.EventFunc) ([]string, error) {
	rc, err := getRelease(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if emit != nil {
		if err := insertEvents(ctx, tx, emit, rc); err != nil {
			return nil, err
		}
	}
	if err := insertTombstone(ctx, tx, rc, by, reason); err != nil {
		return nil, err
	}
	detail := map[string]any{"channel_id": rc.Channel.ID, "channel": rc.Channel.Name}
	if reason != "" {
		detail["reason"] = reason
	}
	if err := insertAudit(ctx, tx, distribution.AuditRecord{Actor: by, Action: "release.delete", Target: distribution.ReleaseTarget(rc), Detail: detail}); err != nil {
		return nil, err
	}
	var keys []string
	{
		var pkg string
		var icon *string
		err := tx.QueryRow(ctx, `DELETE FROM releases WHERE id = $1 RETURNING object_key, icon_key`, id).Scan(&pkg, &icon)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errs.New(errs.NotFound, "release %d not found", id)
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, pkg)
		if icon != nil {
			keys = append(keys, *icon)
		}
	}
	return keys, markDeleted(ctx, tx, keys)
}

// checksumStateOrUnverified is the state a new release is recorded in: the one given, else
// unverified (the store never takes checksums for verified unless told so).
func checksumStateOrUnverified(state string) string {
	if state == "" {
		return distribution.ChecksumUnverified
	}
	return state
}
