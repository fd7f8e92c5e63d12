package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const appColumns = `a.id, a.name, a.created_at, a.updated_at`

func appDest(a *distribution.App) []any { return []any{&a.ID, &a.Name, &a.CreatedAt, &a.UpdatedAt} }

const schemeColumns = `s.id, s.app_id, s.name, s.new_build_callout, s.retained_builds, s.created_at, s.updated_at`

func schemeDest(s *distribution.Scheme) []any {
	return []any{&s.ID, &s.AppID, &s.Name, &s.NewBuildCallout, &s.RetainedBuilds, &s.CreatedAt, &s.UpdatedAt}
}

const channelColumns = `c.id, c.scheme_id, c.name, c.slug, c.device_type, c.bundle_id, c.git_url, c.password_hash,
	c.download_filename_type, c.max_size_bytes, c.max_growth_percent, c.enforce_budget, c.feed_token_hash, c.sparkle_signing, c.tester_only,
	coalesce(c.app_bundle_id, '*'), c.appinstaller_hours, c.apt_newest_only, c.created_at, c.updated_at`

func channelDest(c *distribution.Channel) []any {
	return []any{&c.ID, &c.SchemeID, &c.Name, &c.Slug, &c.DeviceType, &c.BundleID, &c.GitURL, &c.PasswordHash,
		&c.DownloadFilenameType, &c.Budget.MaxBytes, &c.Budget.MaxGrowthPercent, &c.Budget.Enforce, &c.FeedTokenHash, &c.SparkleSigning, &c.TesterOnly,
		&c.AppBundleID, &c.AppInstallerHours, &c.APTNewestOnly, &c.CreatedAt, &c.UpdatedAt}
}

func scanChannel(row pgx.Row, c *distribution.Channel) error { return row.Scan(channelDest(c)...) }

// channelContextColumns and channelContextFrom select a channel with its scheme and app.
const channelContextColumns = channelColumns + `, ` + schemeColumns + `, ` + appColumns
const channelContextFrom = ` FROM channels c JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id`

func channelContextDest(cc *distribution.ChannelContext) []any {
	return append(append(channelDest(&cc.Channel), schemeDest(&cc.Scheme)...), appDest(&cc.App)...)
}

// ListApps returns a page of apps ordered by id (those of only, when only is not nil), each with
// its schemes and channels.
func (db *Catalog) ListApps(ctx context.Context, p distribution.Page, only []int64) ([]distribution.App, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+appColumns+` FROM apps a WHERE $3::bigint[] IS NULL OR a.id = ANY($3)
		ORDER BY a.id LIMIT $1 OFFSET $2`, p.PerPage, p.Offset(), only)
	if err != nil {
		return nil, dbErr(err)
	}
	apps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.App, error) {
		var a distribution.App
		return a, r.Scan(appDest(&a)...)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return apps, db.nest(ctx, apps)
}

// GetApp returns one app with its schemes and channels, or errs.NotFound.
func (db *Catalog) GetApp(ctx context.Context, id int64) (*distribution.App, error) {
	var a distribution.App
	err := db.Pool.QueryRow(ctx, `SELECT `+appColumns+` FROM apps a WHERE a.id = $1`, id).Scan(appDest(&a)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "app %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	apps := []distribution.App{a}
	if err := db.nest(ctx, apps); err != nil {
		return nil, err
	}
	return &apps[0], nil
}

// nest fills the schemes and channels of apps with two queries, whatever the number of apps.
func (db *Catalog) nest(ctx context.Context, apps []distribution.App) error {
	if len(apps) == 0 {
		return nil
	}
	ids := make([]int64, len(apps))
	byApp := make(map[int64]*distribution.App, len(apps))
	for i := range apps {
		ids[i] = apps[i].ID
		apps[i].Schemes = []distribution.Scheme{}
		byApp[apps[i].ID] = &apps[i]
	}
	schemes, err := db.schemesWhere(ctx, `s.app_id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	schemeIDs := make([]int64, len(schemes))
	for i := range schemes {
		schemeIDs[i] = schemes[i].ID
	}
	channels, err := db.channelsWhere(ctx, `c.scheme_id = ANY($1)`, schemeIDs)
	if err != nil {
		return err
	}
	bySchemeID := map[int64][]distribution.Channel{}
	for _, c := range channels {
		bySchemeID[c.SchemeID] = append(bySchemeID[c.SchemeID], c)
	}
	for _, s := range schemes {
		s.Channels = bySchemeID[s.ID]
		if s.Channels == nil {
			s.Channels = []distribution.Channel{}
		}
		a := byApp[s.AppID]
		a.Schemes = append(a.Schemes, s)
	}
	return nil
}

func (db *Catalog) schemesWhere(ctx context.Context, where string, args ...any) ([]distribution.Scheme, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+schemeColumns+` FROM schemes s WHERE `+where+` ORDER BY s.id`, args...)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Scheme, error) {
		var s distribution.Scheme
		return s, r.Scan(schemeDest(&s)...)
	})
	if out == nil {
		out = []distribution.Scheme{}
	}
	return out, dbErr(err)
}

func (db *Catalog) channelsWhere(ctx context.Context, where string, args ...any) ([]distribution.Channel, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+channelColumns+` FROM channels c WHERE `+where+` ORDER BY c.id`, args...)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Channel, error) {
		var c distribution.Channel
		return c, scanChannel(r, &c)
	})
	if out == nil {
		out = []distribution.Channel{}
	}
	return out, dbErr(err)
}

// CreateApp inserts an app with no schemes.
func (db *Catalog) CreateApp(ctx context.Context, name string) (*distribution.App, error) {
	a := distribution.App{Name: name, Schemes: []distribution.Scheme{}}
	err := db.Pool.QueryRow(ctx, `INSERT INTO apps (name) VALUES ($1) RETURNING id, created_at, updated_at`, name).
		Scan(&a.ID, &a.CreatedAt, &a.UpdatedAt)
	if err != nil {
		return nil, dbErr(err)
	}
	return &a, nil
}

// RenameApp changes an app's name and returns the app, or errs.NotFound.
func (db *Catalog) RenameApp(ctx context.Context, id int64, name string) (*distribution.App, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE apps SET name = $2, updated_at = now() WHERE id = $1`, id, name)
	if err != nil {
		return nil, dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errs.New(errs.NotFound, "app %d not found", id)
	}
	return db.GetApp(ctx, id)
}

// ownedObjects selects every object key owned by the releases and debug files that the condition
// (on apps a, schemes s, channels c) covers.
const ownedObjects = `
	SELECT r.object_key FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE %[1]s
	UNION ALL
	SELECT r.icon_key FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE %[1]s AND r.icon_key IS NOT NULL
	UNION ALL
	SELECT d.object_key FROM debug_files d JOIN channels c ON c.id = d.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE %[1]s`

// DestroyApp deletes an app with its schemes, channels, releases and debug files in one
// transaction, and records every object they owned as 'deleted' in the same transaction. It
// returns those object keys so the caller can delete them after commit; whatever it fails to
// delete, the collector deletes later.
func (db *Catalog) DestroyApp(ctx context.Context, id int64) ([]string, error) {
	return db.deleteOwner(ctx, `SELECT 1 FROM apps WHERE id = $1 FOR UPDATE`, "s.app_id = $1", `DELETE FROM apps WHERE id = $1`,
		id, errs.New(errs.NotFound, "app %d not found", id), nil)
}

// DeleteScheme deletes a scheme with its channels, releases and debug files (as DestroyApp),
// writing emit's events for each release.
func (db *Catalog) DeleteScheme(ctx context.Context, id int64, emit distribution.EventFunc) ([]string, error) {
	return db.deleteOwner(ctx, `SELECT 1 FROM apps a JOIN schemes s ON s.app_id = a.id WHERE s.id = $1 FOR UPDATE OF a`,
		"s.id = $1", `DELETE FROM schemes WHERE id = $1`, id, errs.New(errs.NotFound, "scheme %d not found", id), emit)
}

// DeleteChannel deletes a channel with its releases and debug files (as DestroyApp), writing
// emit's events for each release.
func (db *Catalog) DeleteChannel(ctx context.Context, id int64, emit distribution.EventFunc) ([]string, error) {
	return db.deleteOwner(ctx, `SELECT 1 FROM apps a JOIN schemes s ON s.app_id = a.id JOIN channels c ON c.scheme_id = s.id
		WHERE c.id = $1 FOR UPDATE OF a`, "c.id = $1", `DELETE FROM channels WHERE id = $1`, id,
		errs.New(errs.NotFound, "channel %d not found", id), emit)
}

// emitOwnedReleases writes emit's events for every release a deleted scheme or channel (cond)
// takes along. Only the app's own webhooks outlive the deletion (a channel's are deleted with it),
// so nothing is read when the app has none.
func emitOwnedReleases(ctx context.Context, tx pgx.Tx, cond string, id int64, emit distribution.EventFunc) error {
	var hooked bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks w JOIN schemes s ON s.app_id = w.app_id
		JOIN channels c ON c.scheme_id = s.id WHERE w.enabled AND `+cond+`)`, id).Scan(&hooked); err != nil || !hooked {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT `+releaseContextColumns+releaseContextFrom+` WHERE `+cond+` ORDER BY r.id`, id)
	if err != nil {
		return err
	}
	rcs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.ReleaseContext, error) {
		var rc distribution.ReleaseContext
		return rc, scanReleaseContext(r, &rc)
	})
	if err != nil {
		return err
	}
	for i := range rcs {
		if err := insertEvents(ctx, tx, emit, &rcs[i]); err != nil {
			return err
		}
	}
	return nil
}

// deleteOwner deletes a row that owns releases and debug files, in one transaction: it locks the
// app row first (uploads into its channels lock the same row FOR KEY SHARE, so no release can be
// recorded into something being deleted), records the owned objects as deleted, and deletes the
// row (foreign keys cascade). It returns the object keys.
func (db *Catalog) deleteOwner(ctx context.Context, lock, cond, del string, id int64, notFound error, emit distribution.EventFunc) ([]string, error) {
	var keys []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, lock, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, fmt.Sprintf(ownedObjects, cond), id)
		if err != nil {
			return err
		}
		if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if err := markDeleted(ctx, tx, keys); err != nil {
			return err
		}
		if emit != nil {
			if err := emitOwnedReleases(ctx, tx, cond, id, emit); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, del, id)
		return err
	})
	return keys, err
}

// ListSchemes returns an app's schemes with their channels, or errs.NotFound for an unknown app.
func (db *Catalog) ListSchemes(ctx context.Context, appID int64) ([]distribution.Scheme, error) {
	app, err := db.GetApp(ctx, appID)
	if err != nil {
		return nil, err
	}
	return app.Schemes, nil
}

// GetScheme returns a scheme with its channels, or errs.NotFound.
func (db *Catalog) GetScheme(ctx context.Context, id int64) (*distribution.Scheme, error) {
	schemes, err := db.schemesWhere(ctx, `s.id = $1`, id)
	if err != nil {
		return nil, err
	}
	if len(schemes) == 0 {
		return nil, errs.New(errs.NotFound, "scheme %d not found", id)
	}
	s := &schemes[0]
	if s.Channels, err = db.channelsWhere(ctx, `c.scheme_id = $1`, id); err != nil {
		return nil, err
	}
	return s, nil
}

// CreateScheme inserts a scheme into its app: errs.NotFound for an unknown app, errs.Conflict for
// a name the app already uses.
func (db *Catalog) CreateScheme(ctx context.Context, s *distribution.Scheme) (*distribution.Scheme, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO schemes (app_id, name, new_build_callout, retained_builds)
		VALUES ($1, $2, $3, $4) RETURNING id`, s.AppID, s.Name, s.NewBuildCallout, s.RetainedBuilds).Scan(&id)
	if err := schemeWriteErr(err, s); err != nil {
		return nil, err
	}
	return db.GetScheme(ctx, id)
}

// UpdateScheme saves a scheme's name, callout and retention if the row is still as read (its
// updated_at is s.UpdatedAt; distribution.ErrStale otherwise): errs.NotFound or errs.Conflict.
func (db *Catalog) UpdateScheme(ctx context.Context, s *distribution.Scheme) (*distribution.Scheme, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE schemes SET name = $2, new_build_callout = $3, retained_builds = $4,
		updated_at = clock_timestamp() WHERE id = $1 AND updated_at = $5`, s.ID, s.Name, s.NewBuildCallout, s.RetainedBuilds, s.UpdatedAt)
	if err := schemeWriteErr(err, s); err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, db.staleOrMissing(ctx, "schemes", s.ID, errs.New(errs.NotFound, "scheme %d not found", s.ID))
	}
	return db.GetScheme(ctx, s.ID)
}

// staleOrMissing tells why an update guarded by updated_at changed no row: the row changed since
// it was read (distribution.ErrStale), or it is gone (notFound).
func (db *pool) staleOrMissing(ctx context.Context, table string, id int64, notFound error) error {
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE id = $1)`, id).Scan(&exists); err != nil {
		return dbErr(err)
	}
	if !exists {
		return notFound
	}
	return fmt.Errorf("%s %d: %w", table, id, distribution.ErrStale)
}

func schemeWriteErr(err error, s *distribution.Scheme) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err, "schemes_app_id_name_key"):
		return &errs.Error{Kind: errs.Conflict, Msg: "name is already the name of another scheme of this app",
			Entry: map[string][]string{"name": {"is already the name of another scheme of this app"}}}
	case isForeignKeyViolation(err): // the app is gone
		return errs.New(errs.NotFound, "app %d not found", s.AppID)
	}
	return dbErr(err)
}

// NewSlug returns a random channel key: 32 lowercase hex characters (128 bits), unguessable.
func NewSlug() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ChannelContextBySlug returns the channel with its app and scheme, or errs.NotFound.
func (db *Catalog) ChannelContextBySlug(ctx context.Context, slug string) (*distribution.ChannelContext, error) {
	return db.channelContext(ctx, `c.slug = $1`, slug)
}

// ChannelContextByID returns the channel with its app and scheme, or errs.NotFound.
func (db *Catalog) ChannelContextByID(ctx context.Context, id int64) (*distribution.ChannelContext, error) {
	return db.channelContext(ctx, `c.id = $1`, id)
}

func (db *Catalog) channelContext(ctx context.Context, where string, arg any) (*distribution.ChannelContext, error) {
	var cc distribution.ChannelContext
	err := db.Pool.QueryRow(ctx, `SELECT `+channelContextColumns+channelContextFrom+` WHERE `+where, arg).Scan(channelContextDest(&cc)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &cc, nil
}

// ListChannels returns a scheme's channels, or errs.NotFound for an unknown scheme.
func (db *Catalog) ListChannels(ctx context.Context, schemeID int64) ([]distribution.Channel, error) {
	s, err := db.GetScheme(ctx, schemeID)
	if err != nil {
		return nil, err
	}
	return s.Channels, nil
}

// CreateChannel inserts a channel into its scheme (a random slug when none is given):
// errs.NotFound for an unknown scheme, errs.Conflict for a slug in use.
func (db *Catalog) CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error) {
	return insertChannel(ctx, db.Pool, c)
}

// insertChannel records a channel (a random key when c.Slug is empty) and returns it.
func insertChannel(ctx context.Context, q querier, c *distribution.Channel) (*distribution.Channel, error) {
	slug := c.Slug
	if slug == "" {
		slug = NewSlug()
	}
	var out distribution.Channel
	err := scanChannel(q.QueryRow(ctx, `INSERT INTO channels AS c (scheme_id, name, slug, device_type, bundle_id, git_url,
		password_hash, download_filename_type, max_size_bytes, max_growth_percent, enforce_budget, sparkle_signing, app_bundle_id, appinstaller_hours, apt_newest_only)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING `+channelColumns,
		c.SchemeID, c.Name, slug, c.DeviceType, c.BundleID, c.GitURL, c.PasswordHash, c.DownloadFilenameType,
		c.Budget.MaxBytes, c.Budget.MaxGrowthPercent, c.Budget.Enforce, c.SparkleSigning, appBundleID(c), c.AppInstallerHours, c.APTNewestOnly), &out)
	if err := channelWriteErr(err, c); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdateChannel saves a channel's settings (not its scheme) if the row is still as read (its
// updated_at is c.UpdatedAt; distribution.ErrStale otherwise): errs.NotFound or errs.Conflict.
// Changing the password hash revokes the cookies and links made with the old one.
func (db *Catalog) UpdateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error) {
	var out distribution.Channel
	err := scanChannel(db.Pool.QueryRow(ctx, `UPDATE channels AS c SET name = $2, slug = $3, device_type = $4, bundle_id = $5,
		git_url = $6, password_hash = $7, download_filename_type = $8, max_size_bytes = $10, max_growth_percent = $11,
		enforce_budget = $12, feed_token_hash = $13, sparkle_signing = $14, app_bundle_id = $15, appinstaller_hours = $16, apt_newest_only = $17, updated_at = clock_timestamp()
		WHERE c.id = $1 AND c.updated_at = $9 RETURNING `+channelColumns,
		c.ID, c.Name, c.Slug, c.DeviceType, c.BundleID, c.GitURL, c.PasswordHash, c.DownloadFilenameType, c.UpdatedAt,
		c.Budget.MaxBytes, c.Budget.MaxGrowthPercent, c.Budget.Enforce, c.FeedTokenHash, c.SparkleSigning, appBundleID(c), c.AppInstallerHours, c.APTNewestOnly), &out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, db.staleOrMissing(ctx, "channels", c.ID, errs.New(errs.NotFound, "channel %d not found", c.ID))
	}
	if err := channelWriteErr(err, c); err != nil {
		return nil, err
	}
	return &out, nil
}

// appBundleID is the app_bundle_id a channel is written with: "*" (takes any app) when the
// domain left it unset.
func appBundleID(c *distribution.Channel) string {
	if c.AppBundleID == "" && c.BundleID != "*" {
		return "*"
	}
	return c.AppBundleID
}

func channelWriteErr(err error, c *distribution.Channel) error {
	switch {
	case err == nil:
		return nil
	case isUniqueViolation(err, "channels_slug_key"):
		return &errs.Error{Kind: errs.Conflict, Msg: "slug is already the key of another channel",
			Entry: map[string][]string{"slug": {"is already the key of another channel"}}}
	case isForeignKeyViolation(err):
		return errs.New(errs.NotFound, "scheme %d not found", c.SchemeID)
	}
	return dbErr(err)
}

// InChannelTx runs fn in one transaction (catalog.Apps.CreateChannelIn).
func (db *Catalog) InChannelTx(ctx context.Context, fn func(tx catalog.ChannelTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(channelTx{tx}) })
}

// channelTx is catalog.ChannelTx on one transaction.
type channelTx struct{ tx pgx.Tx }

func (t channelTx) LockApp(ctx context.Context, appID int64) error { return lockApp(ctx, t.tx, appID) }

func (t channelTx) SchemeNamed(ctx context.Context, appID int64, name string) (int64, error) {
	var id int64
	err := t.tx.QueryRow(ctx, `SELECT id FROM schemes WHERE app_id = $1 AND lower(name) = lower($2) ORDER BY id LIMIT 1`, appID, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func (t channelTx) CreateScheme(ctx context.Context, s *distribution.Scheme) (int64, error) {
	var id int64
	err := t.tx.QueryRow(ctx, `INSERT INTO schemes (app_id, name, new_build_callout, retained_builds) VALUES ($1, $2, $3, $4)
		ON CONFLICT (app_id, name) DO UPDATE SET updated_at = schemes.updated_at RETURNING id`,
		s.AppID, s.Name, s.NewBuildCallout, s.RetainedBuilds).Scan(&id)
	return id, schemeWriteErr(err, s)
}

func (t channelTx) LockScheme(ctx context.Context, schemeID int64) error {
	var one int
	err := t.tx.QueryRow(ctx, `SELECT 1 FROM schemes WHERE id = $1 FOR UPDATE`, schemeID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(errs.NotFound, "scheme %d not found", schemeID)
	}
	return err
}

func (t channelTx) ChannelNamed(ctx context.Context, schemeID int64, name string) (bool, error) {
	var taken bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM channels WHERE scheme_id = $1 AND lower(btrim(name)) = lower(btrim($2)))`,
		schemeID, name).Scan(&taken)
	return taken, err
}

func (t channelTx) CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error) {
	return insertChannel(ctx, t.tx, c)
}
