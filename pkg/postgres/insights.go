package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// ReleaseInsights returns a release's insights snapshot (JSON), or nil when none is recorded.
func (db *Catalog) ReleaseInsights(ctx context.Context, releaseID int64) ([]byte, error) {
	var snapshot []byte
	err := db.Pool.QueryRow(ctx, `SELECT snapshot FROM release_insights WHERE release_id = $1`, releaseID).Scan(&snapshot)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return snapshot, dbErr(err)
}

// SaveReleaseInsights records a release's insights snapshot unless one is recorded already (the
// first writer wins; both computed the same snapshot from the same package). A release deleted
// meanwhile is errs.NotFound.
func (db *Catalog) SaveReleaseInsights(ctx context.Context, releaseID int64, snapshot []byte) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO release_insights (release_id, snapshot) VALUES ($1, $2)
		ON CONFLICT (release_id) DO NOTHING`, releaseID, snapshot)
	if isForeignKeyViolation(err) {
		return errs.New(errs.NotFound, "release %d not found", releaseID)
	}
	return dbErr(err)
}

// PreviousRelease returns the id of the release before version in a channel (the highest version
// below it), or errs.NotFound when there is none.
func (db *Catalog) PreviousRelease(ctx context.Context, channelID int64, version int) (int64, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `SELECT id FROM releases WHERE channel_id = $1 AND version < $2
		ORDER BY version DESC LIMIT 1`, channelID, version).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, errs.New(errs.NotFound, "no release before version %d in this channel", version)
	}
	return id, dbErr(err)
}

// ReleasesWithoutInsights returns up to limit releases with an id above afterID and no insights
// snapshot, in id order, and how many such releases there are in all (after afterID).
func (db *Catalog) ReleasesWithoutInsights(ctx context.Context, afterID int64, limit int) ([]distribution.ReleaseContext, int, error) {
	var total int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM releases r WHERE r.id > $1
		AND NOT EXISTS (SELECT 1 FROM release_insights i WHERE i.release_id = r.id)`, afterID).Scan(&total); err != nil {
		return nil, 0, dbErr(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseContextColumns+releaseContextFrom+` WHERE r.id > $1
		AND NOT EXISTS (SELECT 1 FROM release_insights i WHERE i.release_id = r.id) ORDER BY r.id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, 0, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (distribution.ReleaseContext, error) {
		var rc distribution.ReleaseContext
		return rc, scanReleaseContext(row, &rc)
	})
	return out, total, dbErr(err)
}

// ReleaseInsightsOf returns the recorded snapshots of the releases ids names that have one.
func (db *Catalog) ReleaseInsightsOf(ctx context.Context, ids []int64) (map[int64][]byte, error) {
	rows, err := db.Pool.Query(ctx, `SELECT release_id, snapshot FROM release_insights WHERE release_id = ANY($1)`, ids)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var snapshot []byte
		if err := rows.Scan(&id, &snapshot); err != nil {
			return nil, dbErr(err)
		}
		out[id] = snapshot
	}
	return out, dbErr(rows.Err())
}
