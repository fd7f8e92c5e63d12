package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// RetentionPolicy returns the policy of a scheme (schemeID) or a channel (channelID); a scheme's
// keep_builds is its retained_builds (0: not set).
func (db *Releases) RetentionPolicy(ctx context.Context, schemeID, channelID int64) (*distribution.RetentionPolicy, error) {
	return retentionPolicy(ctx, db.Pool, schemeID, channelID)
}

func retentionPolicy(ctx context.Context, q querier, schemeID, channelID int64) (*distribution.RetentionPolicy, error) {
	var p distribution.RetentionPolicy
	err := q.QueryRow(ctx, `SELECT keep_builds, max_age_days, max_bytes, expired_profile_days FROM retention_policies
		WHERE ($1 <> 0 AND scheme_id = $1) OR ($2 <> 0 AND channel_id = $2)`, schemeID, channelID).
		Scan(&p.KeepBuilds, &p.MaxAgeDays, &p.MaxBytes, &p.ExpiredProfileDays)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, dbErr(err)
	}
	if schemeID != 0 {
		var kept int
		err := q.QueryRow(ctx, `SELECT retained_builds FROM schemes WHERE id = $1`, schemeID).Scan(&kept)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errs.New(errs.NotFound, "scheme %d not found", schemeID)
		}
		if err != nil {
			return nil, dbErr(err)
		}
		p.KeepBuilds = nil
		if kept > 0 {
			p.KeepBuilds = &kept
		}
	}
	return &p, nil
}

// SetRetentionPolicy replaces the policy of a scheme or a channel; a scheme's keep_builds is
// saved as its retained_builds.
func (db *Releases) SetRetentionPolicy(ctx context.Context, schemeID, channelID int64, p *distribution.RetentionPolicy) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		keep := p.KeepBuilds
		if schemeID != 0 {
			kept := 0
			if p.KeepBuilds != nil {
				kept = *p.KeepBuilds
			}
			tag, err := tx.Exec(ctx, `UPDATE schemes SET retained_builds = $2, updated_at = clock_timestamp() WHERE id = $1`, schemeID, kept)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errs.New(errs.NotFound, "scheme %d not found", schemeID)
			}
			keep = nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO retention_policies (scheme_id, channel_id, keep_builds, max_age_days, max_bytes, expired_profile_days)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (`+map[bool]string{true: "scheme_id", false: "channel_id"}[schemeID != 0]+`) DO UPDATE SET keep_builds = EXCLUDED.keep_builds,
				max_age_days = EXCLUDED.max_age_days, max_bytes = EXCLUDED.max_bytes,
				expired_profile_days = EXCLUDED.expired_profile_days, updated_at = now()`,
			nullID(schemeID), nullID(channelID), keep, p.MaxAgeDays, p.MaxBytes, p.ExpiredProfileDays)
		if isForeignKeyViolation(err) {
			return errs.New(errs.NotFound, "channel %d not found", channelID)
		}
		if err == nil {
			// Announce the change to the read caches (the trigger watches channels and schemes).
			if channelID != 0 {
				_, err = tx.Exec(ctx, `SELECT pg_notify('slipway_changes', 'c:' || $1::bigint)`, channelID)
			}
		}
		return err
	})
}

// RetentionState reads a channel's policies and releases.
func (db *Releases) RetentionState(ctx context.Context, channelID int64) (*distribution.RetentionState, error) {
	return retentionState(ctx, db.Pool, channelID)
}

func retentionState(ctx context.Context, q querier, channelID int64) (*distribution.RetentionState, error) {
	var schemeID int64
	err := q.QueryRow(ctx, `SELECT scheme_id FROM channels WHERE id = $1`, channelID).Scan(&schemeID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "channel %d not found", channelID)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	st := &distribution.RetentionState{ChannelID: channelID}
	sp, err := retentionPolicy(ctx, q, schemeID, 0)
	if err != nil {
		return nil, err
	}
	cp, err := retentionPolicy(ctx, q, 0, channelID)
	if err != nil {
		return nil, err
	}
	st.Scheme, st.Channel = *sp, *cp
	rows, err := q.Query(ctx, `SELECT id, version, bundle_id, platform, created_at, size, pinned,
		CASE WHEN profile ? 'expires_at' THEN (profile->>'expires_at')::timestamptz END
		FROM releases WHERE channel_id = $1 ORDER BY version DESC`, channelID)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r distribution.RetentionCandidate
		if err := rows.Scan(&r.ID, &r.Version, &r.BundleID, &r.Platform, &r.CreatedAt, &r.Size, &r.Pinned, &r.ProfileExpiresAt); err != nil {
			return nil, dbErr(err)
		}
		st.Releases = append(st.Releases, r)
	}
	return st, dbErr(rows.Err())
}

// ApplyRetention: see lifecycle.RetentionStore. The channel row is locked FOR UPDATE SKIP
// LOCKED, so replicas enforcing at once split the channels between them, and uploads to the
// channel (which lock it to take a version) wait for the few milliseconds it takes.
func (db *Releases) ApplyRetention(ctx context.Context, channelID int64, decide func(*distribution.RetentionState) []distribution.RetentionVictim,
	emit distribution.EventFunc) (deleted []distribution.RetentionVictim, keys []string, skipped bool, err error) {
	err = db.Tx(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM channels WHERE id = $1 FOR UPDATE SKIP LOCKED`, channelID).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM channels WHERE id = $1)`, channelID).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				return errs.New(errs.NotFound, "channel %d not found", channelID)
			}
			skipped = true
			return nil
		}
		if err != nil {
			return err
		}
		st, err := retentionState(ctx, tx, channelID)
		if err != nil {
			return err
		}
		victims := decide(st)
		for _, v := range victims {
			k, err := deleteRelease(ctx, tx, v.ID, distribution.SystemActor("retention"), v.Reason, emit)
			if err != nil {
				return err
			}
			keys = append(keys, k...)
		}
		deleted = victims
		return nil
	})
	if err != nil {
		return nil, nil, false, err
	}
	return deleted, keys, skipped, nil
}

// RetentionChannels lists the channels that have two releases or more (a channel's newest
// release is never deleted), by id.
func (db *Releases) RetentionChannels(ctx context.Context) ([]int64, error) {
	rows, err := db.Pool.Query(ctx, `SELECT channel_id FROM releases GROUP BY channel_id HAVING count(*) > 1 ORDER BY channel_id`)
	if err != nil {
		return nil, dbErr(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	return ids, dbErr(err)
}
