package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// PasswordFailures returns how many wrong passwords client gave for a channel within window,
// and when the last one was.
func (db *DB) PasswordFailures(ctx context.Context, channelID int64, client string, window time.Duration) (int, time.Time, error) {
	var n int
	var last time.Time
	err := db.Pool.QueryRow(ctx, `SELECT failures, last_at FROM password_failures
		WHERE channel_id = $1 AND client = $2 AND last_at > now() - make_interval(secs => $3)`,
		channelID, client, window.Seconds()).Scan(&n, &last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	return n, last, dbErr(err)
}

// RecordPasswordFailure counts a wrong password, restarting the count after window.
func (db *DB) RecordPasswordFailure(ctx context.Context, channelID int64, client string, window time.Duration) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO password_failures (channel_id, client, failures, last_at) VALUES ($1, $2, 1, now())
		ON CONFLICT (channel_id, client) DO UPDATE SET
		  failures = CASE WHEN password_failures.last_at > now() - make_interval(secs => $3) THEN password_failures.failures + 1 ELSE 1 END,
		  last_at = now()`, channelID, client, window.Seconds())
	return dbErr(err)
}

// ClearPasswordFailures forgets a client's failures after a right password.
func (db *DB) ClearPasswordFailures(ctx context.Context, channelID int64, client string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM password_failures WHERE channel_id = $1 AND client = $2`, channelID, client)
	return dbErr(err)
}
