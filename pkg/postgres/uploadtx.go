package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// uploadTx is the transaction of one upload (uploads.UploadTx, uploads.DebugFileTx): each method
// is a statement or two of SQL. The order of the steps and every rule between them are the
// domain's (uploads.Builds, uploads.DebugFiles); nothing here calls back into it.
type uploadTx struct {
	tx pgx.Tx
}

// InUploadTx runs fn in the one transaction that records an upload: it commits when fn returns
// nil and rolls back otherwise.
func (db *Releases) InUploadTx(ctx context.Context, fn func(tx uploads.UploadTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(&uploadTx{tx: tx}) })
}

// InDebugFileTx runs fn in the one transaction that records (or replaces) a debug file.
func (db *Releases) InDebugFileTx(ctx context.Context, fn func(tx uploads.DebugFileTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(&uploadTx{tx: tx}) })
}

func (u *uploadTx) ReleaseForKey(ctx context.Context, tokenID int64, key string) (int64, error) {
	var id int64
	err := u.tx.QueryRow(ctx, `SELECT release_id FROM upload_idempotency WHERE token_id = $1 AND key = $2`, tokenID, key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func (u *uploadTx) KeepKey(ctx context.Context, tokenID int64, key string, releaseID int64) (int64, error) {
	tag, err := u.tx.Exec(ctx, `INSERT INTO upload_idempotency (token_id, key, release_id) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING`, tokenID, key, releaseID)
	if err != nil || tag.RowsAffected() == 1 {
		return 0, err
	}
	// A concurrent upload with the same key committed first (DO NOTHING waited for it): its
	// release. At READ COMMITTED the next statement of this transaction sees what it committed, so
	// no second connection is taken while this one is held (a pool full of uploads waiting for
	// one would never be released).
	var first int64
	err = u.tx.QueryRow(ctx, `SELECT release_id FROM upload_idempotency WHERE token_id = $1 AND key = $2`, tokenID, key).Scan(&first)
	return first, err
}

func (u *uploadTx) LockChannel(ctx context.Context, slug string) (*distribution.Channel, int64, error) {
	var c distribution.Channel
	var appID int64
	err := u.tx.QueryRow(ctx, `SELECT `+channelColumns+`, a.id FROM channels c JOIN schemes s ON s.id = c.scheme_id
		JOIN apps a ON a.id = s.app_id WHERE c.slug = $1 FOR KEY SHARE OF a`, slug).Scan(append(channelDest(&c), &appID)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errs.New(errs.NotFound, "channel not found: check channel_key")
	}
	if err != nil {
		return nil, 0, err
	}
	return &c, appID, nil
}

func (u *uploadTx) LockAppByID(ctx context.Context, appID int64) (string, error) {
	var name string
	err := u.tx.QueryRow(ctx, `SELECT name FROM apps WHERE id = $1 FOR KEY SHARE`, appID).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errs.New(errs.NotFound, "there is no such app: it may have been deleted")
	}
	return name, err
}

func (u *uploadTx) LockAppName(ctx context.Context, name string) error {
	_, err := u.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7462, hashtext($1))`, name)
	return err
}

func (u *uploadTx) AppNamed(ctx context.Context, name string) (int64, error) {
	var id int64
	err := u.tx.QueryRow(ctx, `SELECT id FROM apps WHERE name = $1 ORDER BY id LIMIT 1 FOR KEY SHARE`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

func (u *uploadTx) CreateApp(ctx context.Context, name string) (int64, error) {
	var id int64
	err := u.tx.QueryRow(ctx, `INSERT INTO apps (name) VALUES ($1) RETURNING id`, name).Scan(&id)
	return id, err
}

func (u *uploadTx) EnsureScheme(ctx context.Context, appID int64, name string) (int64, error) {
	var id int64
	err := u.tx.QueryRow(ctx, `INSERT INTO schemes (app_id, name) VALUES ($1, $2)
		ON CONFLICT (app_id, name) DO UPDATE SET updated_at = schemes.updated_at RETURNING id`, appID, name).Scan(&id)
	return id, err
}

func (u *uploadTx) ChannelFor(ctx context.Context, schemeID int64, deviceType string) (*distribution.Channel, error) {
	var c distribution.Channel
	err := scanChannel(u.tx.QueryRow(ctx, `SELECT `+channelColumns+` FROM channels c WHERE c.scheme_id = $1 AND c.device_type = $2
		ORDER BY c.id LIMIT 1`, schemeID, deviceType), &c)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func (u *uploadTx) CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error) {
	return insertChannel(ctx, u.tx, c)
}

func (u *uploadTx) SetPassword(ctx context.Context, channelID int64, hash string) error {
	_, err := u.tx.Exec(ctx, `UPDATE channels SET password_hash = $2, updated_at = now() WHERE id = $1`, channelID, hash)
	return err
}

func (u *uploadTx) LearnApp(ctx context.Context, channelID int64, bundleID string) error {
	_, err := u.tx.Exec(ctx, `UPDATE channels SET app_bundle_id = $2, updated_at = clock_timestamp() WHERE id = $1 AND app_bundle_id = ''`, channelID, bundleID)
	return err
}

func (u *uploadTx) NewestRelease(ctx context.Context, channelID int64) (*distribution.Release, []byte, error) {
	return newestRelease(ctx, u.tx, channelID)
}

func (u *uploadTx) NextVersion(ctx context.Context, channelID int64) (int, error) {
	var version int
	err := u.tx.QueryRow(ctx, `UPDATE channels SET last_version = last_version + 1 WHERE id = $1 RETURNING last_version`, channelID).Scan(&version)
	return version, err
}

func (u *uploadTx) InsertRelease(ctx context.Context, r *distribution.Release, profileDevices []string) (int64, error) {
	return insertRelease(ctx, u.tx, r, profileDevices)
}

func (u *uploadTx) InsertInsights(ctx context.Context, releaseID int64, snapshot []byte) error {
	_, err := u.tx.Exec(ctx, `INSERT INTO release_insights (release_id, snapshot) VALUES ($1, $2)`, releaseID, snapshot)
	return err
}

func (u *uploadTx) Claim(ctx context.Context, keys ...string) error { return claim(ctx, u.tx, keys...) }

func (u *uploadTx) MarkDeleted(ctx context.Context, keys ...string) error {
	return markDeleted(ctx, u.tx, keys)
}

func (u *uploadTx) Release(ctx context.Context, id int64) (*distribution.ReleaseContext, error) {
	return getRelease(ctx, u.tx, id)
}

func (u *uploadTx) WriteEvents(ctx context.Context, evs []distribution.Event) error {
	return writeEvents(ctx, u.tx, evs)
}

func (u *uploadTx) LockApp(ctx context.Context, appID int64) error { return lockApp(ctx, u.tx, appID) }

func (u *uploadTx) InsertDebugFile(ctx context.Context, d *distribution.DebugFile) (int64, bool, error) {
	var id int64
	err := u.tx.QueryRow(ctx, `INSERT INTO debug_files (app_id, channel_id, device_type, release_version, build_version, sha256, md5, size, object_key, filename)
		VALUES ($1,$2,$3,$4,$5,$6,nullif($7, ''),$8,$9,$10) ON CONFLICT (app_id, sha256) DO NOTHING RETURNING id`,
		d.AppID, d.ChannelID, d.DeviceType, d.ReleaseVersion, d.BuildVersion, d.SHA256, d.MD5, d.Size, d.ObjectKey, d.Filename).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return sameContent(ctx, u.tx, d.AppID, d.SHA256), false, nil
	}
	return id, err == nil, err
}

func (u *uploadTx) LockDebugFile(ctx context.Context, id int64) (string, error) {
	var key string
	err := u.tx.QueryRow(ctx, `SELECT object_key FROM debug_files WHERE id = $1 FOR UPDATE`, id).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errs.New(errs.NotFound, "debug file %d not found", id)
	}
	return key, err
}

func (u *uploadTx) UpdateDebugFile(ctx context.Context, d *distribution.DebugFile) (int64, error) {
	// Under a savepoint: a unique violation rolls back to it, and the debug file with that content
	// is read in this transaction rather than on a second connection.
	sp, err := u.tx.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer sp.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	_, err = sp.Exec(ctx, `UPDATE debug_files SET release_version = $2, build_version = $3, sha256 = $4, size = $5,
		object_key = $6, filename = $7, md5 = nullif($8, ''), updated_at = now() WHERE id = $1`,
		d.ID, d.ReleaseVersion, d.BuildVersion, d.SHA256, d.Size, d.ObjectKey, d.Filename, d.MD5)
	if isUniqueViolation(err, "") {
		if err := sp.Rollback(ctx); err != nil {
			return 0, err
		}
		return sameContent(ctx, u.tx, d.AppID, d.SHA256), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, sp.Commit(ctx)
}

func (u *uploadTx) ReplaceMetadata(ctx context.Context, fileID int64, meta []distribution.DebugFileMetadata) error {
	if _, err := u.tx.Exec(ctx, `DELETE FROM debug_file_metadata WHERE debug_file_id = $1`, fileID); err != nil {
		return err
	}
	for _, m := range meta {
		data := m.Data
		if len(data) == 0 {
			data = json.RawMessage("{}")
		}
		if _, err := u.tx.Exec(ctx, `INSERT INTO debug_file_metadata (debug_file_id, uuid, type, object, data, size) VALUES ($1,$2,$3,$4,$5,$6)`,
			fileID, m.UUID, m.Type, m.Object, data, m.Size); err != nil {
			return err
		}
	}
	return nil
}

// sameContent returns the id of the app's debug file with this content (0 when it cannot be read:
// the answer is a conflict either way).
func sameContent(ctx context.Context, q querier, appID int64, sha string) int64 {
	var id int64
	_ = q.QueryRow(ctx, `SELECT id FROM debug_files WHERE app_id = $1 AND sha256 = $2`, appID, sha).Scan(&id)
	return id
}

func (u *uploadTx) Distribution() distribution.DistributionTx { return distributionTx{u.tx} }
