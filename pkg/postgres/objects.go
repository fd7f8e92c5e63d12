package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// MarkPending records that an upload is about to stream into key. The row is committed before any
// byte is stored, so an object left by a crash is always known to the collector.
func (db *Releases) MarkPending(ctx context.Context, key string) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO storage_objects (key, state) VALUES ($1, 'pending')`, key)
	return dbErr(err)
}

// Forget removes the bookkeeping row of key: after its object was deleted, or when a committed
// transaction made it a live object (see claim).
func (db *Releases) Forget(ctx context.Context, key string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM storage_objects WHERE key = $1`, key)
	return dbErr(err)
}

// Abandon hands the pending objects among keys to the collector (state 'deleted') and returns
// them: their uploads failed, and they may be deleted now. A key whose pending row is gone is not
// returned: a committed transaction claimed it (the upload may have failed after its commit, when
// the database went away), or the collector already took it; either way it must not be deleted.
func (db *Releases) Abandon(ctx context.Context, keys ...string) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `UPDATE storage_objects SET state = 'deleted' WHERE key = ANY($1) AND state = 'pending'
		RETURNING key`, keys)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, dbErr(err)
}

func markDeleted(ctx context.Context, q querier, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := q.Exec(ctx, `INSERT INTO storage_objects (key, state) SELECT unnest($1::text[]), 'deleted'
		ON CONFLICT (key) DO UPDATE SET state = 'deleted'`, keys)
	return err
}

// claim removes the pending rows of keys inside the transaction that records the rows owning
// them: from its commit on, the objects are live. If a pending row is gone, the collector took the
// object (the upload outlived the grace period), and the transaction must not record it.
func claim(ctx context.Context, tx pgx.Tx, keys ...string) error {
	tag, err := tx.Exec(ctx, `DELETE FROM storage_objects WHERE key = ANY($1) AND state = 'pending'`, keys)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != int64(len(keys)) {
		return errs.New(errs.Unavailable, "the upload took longer than the collector's grace period and its object was collected; retry")
	}
	return nil
}

// Collectable lists up to limit objects the collector may delete: every 'deleted' one, and
// 'pending' ones older than grace (an upload that died with its process).
func (db *Releases) Collectable(ctx context.Context, grace time.Duration, limit int) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT key FROM storage_objects WHERE `+collectableWhere+`
		ORDER BY attempts, created_at LIMIT $2`, grace.Seconds(), limit)
	if err != nil {
		return nil, dbErr(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, dbErr(err)
}

// collectableWhere: deleted objects, and pending ones older than the grace period, except the
// objects of upload sessions still open, which may take as long as their expiry allows.
const collectableWhere = `(state = 'deleted' OR (state = 'pending' AND created_at < now() - make_interval(secs => $1)
	AND NOT EXISTS (SELECT 1 FROM upload_sessions u WHERE u.object_key = storage_objects.key
		AND u.state IN ('open', 'completing') AND u.expires_at > now())))`

// Collect deletes one collectable object with del while holding its bookkeeping row locked, then
// removes the row. The lock orders it against claim: an upload committing at the same moment
// either claims the row first (then Collect skips the key) or finds it gone and fails. It returns
// false when the key was not collectable (any more) or another collector holds it.
func (db *Releases) Collect(ctx context.Context, key string, grace time.Duration, del func(ctx context.Context, key string) error) (bool, error) {
	collected := false
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var k string
		err := tx.QueryRow(ctx, `SELECT key FROM storage_objects WHERE key = $2 AND `+collectableWhere+` FOR UPDATE SKIP LOCKED`,
			grace.Seconds(), key).Scan(&k)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := del(ctx, key); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM storage_objects WHERE key = $1`, key)
		collected = err == nil
		return err
	})
	if err != nil {
		// Record the failure outside the rolled-back transaction so the next run tries others first.
		_, _ = db.Pool.Exec(context.WithoutCancel(ctx), `UPDATE storage_objects SET attempts = attempts + 1, last_error = $2 WHERE key = $1`,
			key, truncateErr(err))
	}
	return collected, err
}

func truncateErr(err error) string {
	s := err.Error()
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}
