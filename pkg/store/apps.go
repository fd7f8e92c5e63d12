package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// App is an application; it nests its schemes, each scheme its channels.
type App struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Schemes   []Scheme
}

// Scheme groups an app's channels (for instance "Adhoc" or "AppStore").
type Scheme struct {
	ID       int64
	AppID    int64
	Name     string
	Channels []Channel
}

// Channel is where releases of one platform land; its Slug is the channel key.
type Channel struct {
	ID           int64
	SchemeID     int64
	Name         string
	Slug         string
	DeviceType   string
	BundleID     string
	GitURL       *string
	PasswordHash *string
	CreatedAt    time.Time
}

// HasPassword reports whether downloads from the channel need a password.
func (c *Channel) HasPassword() bool { return c.PasswordHash != nil && *c.PasswordHash != "" }

// Page selects a page of a listing: Page is 1-based.
type Page struct {
	Page    int
	PerPage int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.PerPage }

const channelColumns = `c.id, c.scheme_id, c.name, c.slug, c.device_type, c.bundle_id, c.git_url, c.password_hash, c.created_at`

func scanChannel(row pgx.Row, c *Channel) error {
	return row.Scan(&c.ID, &c.SchemeID, &c.Name, &c.Slug, &c.DeviceType, &c.BundleID, &c.GitURL, &c.PasswordHash, &c.CreatedAt)
}

// ListApps returns a page of apps ordered by id, each with its schemes and channels.
func (db *DB) ListApps(ctx context.Context, p Page) ([]App, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, name, created_at, updated_at FROM apps ORDER BY id LIMIT $1 OFFSET $2`, p.PerPage, p.Offset())
	if err != nil {
		return nil, dbErr(err)
	}
	apps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (App, error) {
		var a App
		return a, r.Scan(&a.ID, &a.Name, &a.CreatedAt, &a.UpdatedAt)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return apps, db.nest(ctx, apps)
}

// GetApp returns one app with its schemes and channels, or errs.NotFound.
func (db *DB) GetApp(ctx context.Context, id int64) (*App, error) {
	var a App
	err := db.Pool.QueryRow(ctx, `SELECT id, name, created_at, updated_at FROM apps WHERE id = $1`, id).
		Scan(&a.ID, &a.Name, &a.CreatedAt, &a.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "app %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	apps := []App{a}
	if err := db.nest(ctx, apps); err != nil {
		return nil, err
	}
	return &apps[0], nil
}

// nest fills the schemes and channels of apps with two queries, whatever the number of apps.
func (db *DB) nest(ctx context.Context, apps []App) error {
	if len(apps) == 0 {
		return nil
	}
	ids := make([]int64, len(apps))
	byApp := make(map[int64]*App, len(apps))
	for i := range apps {
		ids[i] = apps[i].ID
		apps[i].Schemes = []Scheme{}
		byApp[apps[i].ID] = &apps[i]
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, app_id, name FROM schemes WHERE app_id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return dbErr(err)
	}
	schemes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Scheme, error) {
		var s Scheme
		return s, r.Scan(&s.ID, &s.AppID, &s.Name)
	})
	if err != nil {
		return dbErr(err)
	}
	schemeIDs := make([]int64, len(schemes))
	for i := range schemes {
		schemeIDs[i] = schemes[i].ID
	}
	rows, err = db.Pool.Query(ctx, `SELECT `+channelColumns+` FROM channels c WHERE c.scheme_id = ANY($1) ORDER BY c.id`, schemeIDs)
	if err != nil {
		return dbErr(err)
	}
	channels, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Channel, error) {
		var c Channel
		return c, scanChannel(r, &c)
	})
	if err != nil {
		return dbErr(err)
	}
	bySchemeID := map[int64][]Channel{}
	for _, c := range channels {
		bySchemeID[c.SchemeID] = append(bySchemeID[c.SchemeID], c)
	}
	for _, s := range schemes {
		s.Channels = bySchemeID[s.ID]
		if s.Channels == nil {
			s.Channels = []Channel{}
		}
		a := byApp[s.AppID]
		a.Schemes = append(a.Schemes, s)
	}
	return nil
}

// CreateApp inserts an app with no schemes.
func (db *DB) CreateApp(ctx context.Context, name string) (*App, error) {
	a := App{Name: name, Schemes: []Scheme{}}
	err := db.Pool.QueryRow(ctx, `INSERT INTO apps (name) VALUES ($1) RETURNING id, created_at, updated_at`, name).
		Scan(&a.ID, &a.CreatedAt, &a.UpdatedAt)
	return &a, dbErr(err)
}

// RenameApp changes an app's name and returns the app, or errs.NotFound.
func (db *DB) RenameApp(ctx context.Context, id int64, name string) (*App, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE apps SET name = $2, updated_at = now() WHERE id = $1`, id, name)
	if err != nil {
		return nil, dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errs.New(errs.NotFound, "app %d not found", id)
	}
	return db.GetApp(ctx, id)
}

// DestroyApp deletes an app with its schemes, channels, releases and debug files in one
// transaction, and records every object they owned as 'deleted' in the same transaction. It
// returns those object keys so the caller can delete them after commit; whatever it fails to
// delete, the collector deletes later.
func (db *DB) DestroyApp(ctx context.Context, id int64) ([]string, error) {
	var keys []string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		// Lock the app row first: uploads into its channels lock the same row (KEY SHARE) so a
		// release cannot be recorded into an app being destroyed.
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM apps WHERE id = $1 FOR UPDATE`, id).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.NotFound, "app %d not found", id)
		}
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT r.object_key FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1
			UNION ALL
			SELECT r.icon_key FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1 AND r.icon_key IS NOT NULL
			UNION ALL
			SELECT object_key FROM debug_files WHERE app_id = $1`, id)
		if err != nil {
			return err
		}
		if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if err := markDeleted(ctx, tx, keys); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM apps WHERE id = $1`, id)
		return err
	})
	return keys, err
}

// NewSlug returns a random channel key: 32 lowercase hex characters (128 bits), unguessable.
func NewSlug() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ChannelBySlug returns the channel with this key, or errs.NotFound.
func (db *DB) ChannelBySlug(ctx context.Context, slug string) (*Channel, error) {
	return channelBySlug(ctx, db.Pool, slug)
}

func channelBySlug(ctx context.Context, q querier, slug string) (*Channel, error) {
	var c Channel
	err := scanChannel(q.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels c WHERE c.slug = $1`, slug), &c)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &c, nil
}

// ChannelContext is a channel with the app and scheme it belongs to, as listings render them.
type ChannelContext struct {
	Channel Channel
	App     App // without schemes
	Scheme  Scheme
}

// ChannelContextBySlug returns the channel with its app and scheme, or errs.NotFound.
func (db *DB) ChannelContextBySlug(ctx context.Context, slug string) (*ChannelContext, error) {
	var cc ChannelContext
	c := &cc.Channel
	err := db.Pool.QueryRow(ctx, `
		SELECT `+channelColumns+`, s.id, s.app_id, s.name, a.id, a.name, a.created_at, a.updated_at
		FROM channels c JOIN schemes s ON s.id = c.scheme_id JOIN apps a ON a.id = s.app_id
		WHERE c.slug = $1`, slug).
		Scan(&c.ID, &c.SchemeID, &c.Name, &c.Slug, &c.DeviceType, &c.BundleID, &c.GitURL, &c.PasswordHash, &c.CreatedAt,
			&cc.Scheme.ID, &cc.Scheme.AppID, &cc.Scheme.Name, &cc.App.ID, &cc.App.Name, &cc.App.CreatedAt, &cc.App.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &cc, nil
}
