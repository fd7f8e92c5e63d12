package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Release is one uploaded build in a channel.
type Release struct {
	ID             int64
	ChannelID      int64
	Version        int
	Name           string // the app name parsed from the package
	BundleID       string
	ReleaseVersion string
	BuildVersion   string
	ReleaseType    string
	Source         string
	Branch         string
	GitCommit      string
	CIURL          string
	Changelog      []ChangelogEntry
	CustomFields   []CustomField
	Platform       string
	Format         string
	Device         string
	MinOS          string
	TargetSDK      string
	Profile        *ProfileSummary
	Size           int64
	SHA256         string
	ObjectKey      string
	Filename       string
	IconKey        *string
	IconType       *string
	CreatedAt      time.Time
}

// ChangelogEntry is one changelog line; the JSON form may carry author, email and date.
type ChangelogEntry struct {
	Message string `json:"message"`
	Author  string `json:"author,omitempty"`
	Email   string `json:"email,omitempty"`
	Date    string `json:"date,omitempty"`
}

// CustomField is a title, value and icon-font class shown on the release page.
type CustomField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

// ProfileSummary is what Slipway keeps of an Apple provisioning profile.
type ProfileSummary struct {
	Name        string    `json:"name"`
	TeamID      string    `json:"team_id"`
	TeamName    string    `json:"team_name"`
	ExpiresAt   time.Time `json:"expires_at"`
	DeviceCount int       `json:"device_count"`
	AllDevices  bool      `json:"all_devices"`
	Development bool      `json:"development"`
}

// ReleaseContext is a release with the channel, scheme and app it belongs to.
type ReleaseContext struct {
	Release
	Channel Channel
	Scheme  Scheme
	App     App // without schemes
}

const releaseColumns = `r.id, r.channel_id, r.version, r.name, r.bundle_id, r.release_version, r.build_version, r.release_type,
	r.source, r.branch, r.git_commit, r.ci_url, r.changelog, r.custom_fields, r.platform, r.format, r.device, r.min_os,
	r.target_sdk, r.profile, r.size, r.sha256, r.object_key, r.filename, r.icon_key, r.icon_type, r.created_at`

const releaseContextColumns = releaseColumns + `, ` + channelColumns + `, s.id, s.app_id, s.name, a.id, a.name, a.created_at, a.updated_at`

const releaseContextFrom = ` FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id`

func scanRelease(row pgx.Row, r *Release, extra ...any) error {
	var changelog, custom, profile []byte
	dest := []any{&r.ID, &r.ChannelID, &r.Version, &r.Name, &r.BundleID, &r.ReleaseVersion, &r.BuildVersion, &r.ReleaseType,
		&r.Source, &r.Branch, &r.GitCommit, &r.CIURL, &changelog, &custom, &r.Platform, &r.Format, &r.Device, &r.MinOS,
		&r.TargetSDK, &profile, &r.Size, &r.SHA256, &r.ObjectKey, &r.Filename, &r.IconKey, &r.IconType, &r.CreatedAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return err
	}
	r.Changelog, r.CustomFields, r.Profile = []ChangelogEntry{}, []CustomField{}, nil
	if err := json.Unmarshal(changelog, &r.Changelog); err != nil {
		return err
	}
	if err := json.Unmarshal(custom, &r.CustomFields); err != nil {
		return err
	}
	if len(profile) > 0 && string(profile) != "null" {
		r.Profile = &ProfileSummary{}
		return json.Unmarshal(profile, r.Profile)
	}
	return nil
}

func scanReleaseContext(row pgx.Row, rc *ReleaseContext) error {
	c := &rc.Channel
	return scanRelease(row, &rc.Release,
		&c.ID, &c.SchemeID, &c.Name, &c.Slug, &c.DeviceType, &c.BundleID, &c.GitURL, &c.PasswordHash, &c.CreatedAt,
		&rc.Scheme.ID, &rc.Scheme.AppID, &rc.Scheme.Name, &rc.App.ID, &rc.App.Name, &rc.App.CreatedAt, &rc.App.UpdatedAt)
}

// GetRelease returns a release with its channel, scheme and app, or errs.NotFound.
func (db *DB) GetRelease(ctx context.Context, id int64) (*ReleaseContext, error) {
	return getRelease(ctx, db.Pool, id)
}

func getRelease(ctx context.Context, q querier, id int64) (*ReleaseContext, error) {
	var rc ReleaseContext
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
func (db *DB) ListReleases(ctx context.Context, channelID int64, p Page) ([]Release, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseColumns+` FROM releases r WHERE r.channel_id = $1
		ORDER BY r.version DESC LIMIT $2 OFFSET $3`, channelID, p.PerPage, p.Offset())
	if err != nil {
		return nil, dbErr(err)
	}
	return collectReleases(rows)
}

// CountReleases returns the number of releases in a channel.
func (db *DB) CountReleases(ctx context.Context, channelID int64) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM releases WHERE channel_id = $1`, channelID).Scan(&n)
	return n, dbErr(err)
}

// RecentReleases returns up to limit of a channel's newest releases, optionally only those with
// bundleID ("" for any).
func (db *DB) RecentReleases(ctx context.Context, channelID int64, bundleID string, limit int) ([]Release, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseColumns+` FROM releases r WHERE r.channel_id = $1 AND ($2 = '' OR r.bundle_id = $2)
		ORDER BY r.version DESC LIMIT $3`, channelID, bundleID, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	return collectReleases(rows)
}

// FindRelease returns the newest release of a channel matching bundle id and either both versions
// or a git commit (empty arguments are not compared), or errs.NotFound.
func (db *DB) FindRelease(ctx context.Context, channelID int64, bundleID, releaseVersion, buildVersion, gitCommit string) (*Release, error) {
	var r Release
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

func collectReleases(rows pgx.Rows) ([]Release, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Release, error) {
		var rel Release
		return rel, scanRelease(r, &rel)
	})
	if out == nil {
		out = []Release{}
	}
	return out, dbErr(err)
}

// NewRelease is what an upload records.
type NewRelease struct {
	Release
	// ChannelSlug targets an existing channel; empty finds or creates app, scheme and channel.
	ChannelSlug string
	// AppName and SchemeName are used when ChannelSlug is empty.
	AppName    string
	SchemeName string
	// Check validates the package against an existing channel (platform, bundle id pattern).
	Check func(c *Channel) error
	// PasswordHash, when non-empty, becomes the channel's download password.
	PasswordHash string
	// TokenID and IdempotencyKey make a retried upload return the first release.
	TokenID        int64
	IdempotencyKey string
}

// ErrIdempotentReplay is returned (with the first release's id) when an upload's idempotency key
// was already used by this token.
type ErrIdempotentReplay struct{ ReleaseID int64 }

func (e *ErrIdempotentReplay) Error() string { return "idempotent replay" }

// CreateRelease records an uploaded build in one transaction: it finds or creates the app, scheme
// and channel (or locks the given channel), takes the channel's next version, inserts the release
// and claims its pending objects. Concurrent uploads to one channel get distinct versions;
// concurrent auto-creating uploads of one app name create one app, one scheme and one channel
// (they serialise on an advisory lock of the name). The app row is locked FOR KEY SHARE, so an
// app being destroyed is either destroyed after this release is recorded (and its objects are
// collected with it) or is already gone (and this upload fails with 404).
func (db *DB) CreateRelease(ctx context.Context, nr *NewRelease, objectKeys []string) (*ReleaseContext, error) {
	var id int64
	var rc *ReleaseContext
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if nr.IdempotencyKey != "" {
			var prev int64
			err := tx.QueryRow(ctx, `SELECT release_id FROM upload_idempotency WHERE token_id = $1 AND key = $2`, nr.TokenID, nr.IdempotencyKey).Scan(&prev)
			if err == nil {
				return &ErrIdempotentReplay{ReleaseID: prev}
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		ch, err := resolveChannel(ctx, tx, nr)
		if err != nil {
			return err
		}
		if nr.PasswordHash != "" {
			if _, err := tx.Exec(ctx, `UPDATE channels SET password_hash = $2, updated_at = now() WHERE id = $1`, ch.ID, nr.PasswordHash); err != nil {
				return err
			}
		}
		var version int
		if err := tx.QueryRow(ctx, `UPDATE channels SET last_version = last_version + 1 WHERE id = $1 RETURNING last_version`, ch.ID).Scan(&version); err != nil {
			return err
		}
		r := &nr.Release
		changelog, _ := json.Marshal(r.Changelog)
		custom, _ := json.Marshal(r.CustomFields)
		var profile []byte
		if r.Profile != nil {
			profile, _ = json.Marshal(r.Profile)
		}
		err = tx.QueryRow(ctx, `INSERT INTO releases (channel_id, version, name, bundle_id, release_version, build_version, release_type,
			source, branch, git_commit, ci_url, changelog, custom_fields, platform, format, device, min_os, target_sdk, profile,
			size, sha256, object_key, filename, icon_key, icon_type)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25) RETURNING id`,
			ch.ID, version, r.Name, r.BundleID, r.ReleaseVersion, r.BuildVersion, r.ReleaseType, r.Source, r.Branch, r.GitCommit,
			r.CIURL, changelog, custom, r.Platform, r.Format, r.Device, r.MinOS, r.TargetSDK, profile, r.Size, r.SHA256,
			r.ObjectKey, r.Filename, r.IconKey, r.IconType).Scan(&id)
		if err != nil {
			return err
		}
		if nr.IdempotencyKey != "" {
			tag, err := tx.Exec(ctx, `INSERT INTO upload_idempotency (token_id, key, release_id) VALUES ($1, $2, $3)
				ON CONFLICT DO NOTHING`, nr.TokenID, nr.IdempotencyKey, id)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				// A concurrent retry with the same key committed first: roll back and replay it.
				var prev int64
				if err := db.Pool.QueryRow(ctx, `SELECT release_id FROM upload_idempotency WHERE token_id = $1 AND key = $2`,
					nr.TokenID, nr.IdempotencyKey).Scan(&prev); err != nil {
					return err
				}
				return &ErrIdempotentReplay{ReleaseID: prev}
			}
		}
		if err := claim(ctx, tx, objectKeys...); err != nil {
			return err
		}
		// Read back inside the transaction: once it has committed, nothing may fail the upload.
		rc, err = getRelease(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// resolveChannel returns the upload's channel, locking its app row FOR KEY SHARE.
func resolveChannel(ctx context.Context, tx pgx.Tx, nr *NewRelease) (*Channel, error) {
	if nr.ChannelSlug != "" {
		var c Channel
		err := scanChannel(tx.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels c JOIN schemes s ON s.id = c.scheme_id
			JOIN apps a ON a.id = s.app_id WHERE c.slug = $1 FOR KEY SHARE OF a`, nr.ChannelSlug), &c)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errs.New(errs.NotFound, "channel not found: check channel_key")
		}
		if err != nil {
			return nil, err
		}
		if nr.Check != nil {
			if err := nr.Check(&c); err != nil {
				return nil, err
			}
		}
		return &c, nil
	}
	// Auto-create: serialise uploads of one app name, then find or create each level.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7462, hashtext($1))`, nr.AppName); err != nil {
		return nil, err
	}
	var appID int64
	err := tx.QueryRow(ctx, `SELECT id FROM apps WHERE name = $1 ORDER BY id LIMIT 1 FOR KEY SHARE`, nr.AppName).Scan(&appID)
	if errors.Is(err, pgx.ErrNoRows) {
		err = tx.QueryRow(ctx, `INSERT INTO apps (name) VALUES ($1) RETURNING id`, nr.AppName).Scan(&appID)
	}
	if err != nil {
		return nil, err
	}
	var schemeID int64
	if err := tx.QueryRow(ctx, `INSERT INTO schemes (app_id, name) VALUES ($1, $2)
		ON CONFLICT (app_id, name) DO UPDATE SET updated_at = schemes.updated_at RETURNING id`, appID, nr.SchemeName).Scan(&schemeID); err != nil {
		return nil, err
	}
	var c Channel
	err = scanChannel(tx.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels c WHERE c.scheme_id = $1 AND c.device_type = $2
		ORDER BY c.id LIMIT 1`, schemeID, nr.Platform), &c)
	if errors.Is(err, pgx.ErrNoRows) {
		err = scanChannel(tx.QueryRow(ctx, `INSERT INTO channels AS c (scheme_id, name, slug, device_type, bundle_id)
			VALUES ($1, $2, $3, $2, '*') RETURNING `+channelColumns, schemeID, nr.Platform, NewSlug()), &c)
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}
