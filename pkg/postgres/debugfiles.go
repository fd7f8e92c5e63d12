package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const debugFileColumns = `d.id, d.app_id, a.name, d.channel_id, d.device_type, d.release_version, d.build_version, d.sha256, coalesce(d.md5, ''), d.size,
	d.object_key, d.filename, d.created_at, d.updated_at`

func scanDebugFile(row pgx.Row, d *distribution.DebugFile) error {
	return row.Scan(&d.ID, &d.AppID, &d.AppName, &d.ChannelID, &d.DeviceType, &d.ReleaseVersion, &d.BuildVersion, &d.SHA256, &d.MD5,
		&d.Size, &d.ObjectKey, &d.Filename, &d.CreatedAt, &d.UpdatedAt)
}

// GetDebugFile returns a debug file with its metadata, or errs.NotFound.
func (db *Releases) GetDebugFile(ctx context.Context, id int64) (*distribution.DebugFile, error) {
	var d distribution.DebugFile
	err := scanDebugFile(db.Pool.QueryRow(ctx, `SELECT `+debugFileColumns+` FROM debug_files d JOIN apps a ON a.id = d.app_id WHERE d.id = $1`, id), &d)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "debug file %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	files := []distribution.DebugFile{d}
	if err := db.loadMetadata(ctx, files); err != nil {
		return nil, err
	}
	return &files[0], nil
}

// ListDebugFiles returns a page of an app's debug files of one device type, newest first.
func (db *Releases) ListDebugFiles(ctx context.Context, appID int64, deviceType string, p distribution.Page) ([]distribution.DebugFile, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+debugFileColumns+` FROM debug_files d JOIN apps a ON a.id = d.app_id
		WHERE d.app_id = $1 AND d.device_type = $2 ORDER BY d.id DESC LIMIT $3 OFFSET $4`, appID, deviceType, p.PerPage, p.Offset())
	if err != nil {
		return nil, dbErr(err)
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.DebugFile, error) {
		var d distribution.DebugFile
		return d, scanDebugFile(r, &d)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	if files == nil {
		files = []distribution.DebugFile{}
	}
	return files, db.loadMetadata(ctx, files)
}

// DebugFileVersions lists the versions of an app's debug files of one device type, optionally
// only those with releaseVersion (and buildVersion), newest upload first.
func (db *Releases) DebugFileVersions(ctx context.Context, appID int64, deviceType, releaseVersion, buildVersion string) ([]distribution.DebugFileVersion, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, release_version, build_version, created_at FROM debug_files
		WHERE app_id = $1 AND device_type = $2 AND ($3 = '' OR release_version = $3) AND ($4 = '' OR build_version = $4)
		ORDER BY id DESC LIMIT 10000`, appID, deviceType, releaseVersion, buildVersion)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.DebugFileVersion, error) {
		var v distribution.DebugFileVersion
		return v, r.Scan(&v.ID, &v.ReleaseVersion, &v.BuildVersion, &v.CreatedAt)
	})
	return out, dbErr(err)
}

func (db *Releases) loadMetadata(ctx context.Context, files []distribution.DebugFile) error {
	if len(files) == 0 {
		return nil
	}
	ids := make([]int64, len(files))
	idx := map[int64]int{}
	for i := range files {
		ids[i], idx[files[i].ID] = files[i].ID, i
		files[i].Metadata = []distribution.DebugFileMetadata{}
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, debug_file_id, uuid, type, object, data, size, created_at, updated_at
		FROM debug_file_metadata WHERE debug_file_id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return dbErr(err)
	}
	metas, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.DebugFileMetadata, error) {
		var m distribution.DebugFileMetadata
		return m, r.Scan(&m.ID, &m.DebugFileID, &m.UUID, &m.Type, &m.Object, &m.Data, &m.Size, &m.CreatedAt, &m.UpdatedAt)
	})
	if err != nil {
		return dbErr(err)
	}
	for _, m := range metas {
		f := &files[idx[m.DebugFileID]]
		f.Metadata = append(f.Metadata, m)
	}
	return nil
}

// lockApp locks an app row FOR KEY SHARE so it cannot be destroyed while a row is added to it.
func lockApp(ctx context.Context, tx pgx.Tx, appID int64) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM apps WHERE id = $1 FOR KEY SHARE`, appID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.New(errs.NotFound, "the app was deleted")
	}
	return err
}

// DeleteDebugFile removes a debug file and records its object as deleted; it returns the key.
func (db *Releases) DeleteDebugFile(ctx context.Context, id int64) (string, error) {
	var key string
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM debug_files WHERE id = $1 RETURNING object_key`, id).Scan(&key)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.NotFound, "debug file %d not found", id)
		}
		if err != nil {
			return err
		}
		return markDeleted(ctx, tx, []string{key})
	})
	return key, err
}

// ReleaseBundleIDs returns the distinct bundle ids of an app's releases on a platform, which tell
// which dSYM of an upload is the app's own ("main").
func (db *Releases) ReleaseBundleIDs(ctx context.Context, appID int64, platform string) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT r.bundle_id FROM releases r JOIN channels c ON c.id = r.channel_id
		JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1 AND r.platform = $2`, appID, platform)
	if err != nil {
		return nil, dbErr(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, dbErr(err)
}

// FindDebugFile returns the newest debug file matching the non-zero fields of q, or
// errs.NotFound.
func (db *Releases) FindDebugFile(ctx context.Context, q uploads.DebugFileQuery) (*distribution.DebugFile, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `SELECT d.id FROM debug_files d
		WHERE ($1 = 0 OR d.app_id = $1) AND ($2 = '' OR d.device_type = $2)
		  AND ($3 = '' OR d.release_version = $3) AND ($4 = '' OR d.build_version = $4)
		  AND ($5 = '' OR EXISTS (SELECT 1 FROM debug_file_metadata m WHERE m.debug_file_id = d.id AND m.uuid = $5))
		  AND ($6 = '' OR d.sha256 = $6) AND ($7 = '' OR d.md5 = $7)
		ORDER BY d.id DESC LIMIT 1`, q.AppID, q.DeviceType, q.ReleaseVersion, q.BuildVersion, q.UUID, q.SHA256, q.MD5).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "no debug file matches")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return db.GetDebugFile(ctx, id)
}
