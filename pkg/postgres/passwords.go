package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution/access"
)

// channelWide is the password_failures row that counts a channel's attempts from every client.
// No client address can be spelt so.
const channelWide = "*"

// ReservePasswordAttempt counts an attempt at a channel's password before the password is checked:
// the client's count and the channel's count (all clients together) each go up by one, in one
// transaction that holds both rows, so concurrent attempts are counted one after the other and
// none of them is checked without being counted. When either count says the attempt comes too
// soon, nothing is counted and the time left is returned instead.
func (db *Catalog) ReservePasswordAttempt(ctx context.Context, channelID int64, client string, perClient, perChannel access.AttemptLimit) (time.Duration, error) {
	var left time.Duration
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		// The rows exist before they are locked; '*' first, as the SELECT below locks them.
		if _, err := tx.Exec(ctx, `INSERT INTO password_failures (channel_id, client, failures, last_at)
			VALUES ($1, $3, 0, 'epoch'), ($1, $2, 0, 'epoch') ON CONFLICT DO NOTHING`, channelID, client, channelWide); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT client, failures, last_at, clock_timestamp() FROM password_failures
			WHERE channel_id = $1 AND client IN ($2, $3) ORDER BY client FOR UPDATE`, channelID, client, channelWide)
		if err != nil {
			return err
		}
		next := map[string]int{}
		var now time.Time
		for rows.Next() {
			var who string
			var n int
			var last time.Time
			if err := rows.Scan(&who, &n, &last, &now); err != nil {
				rows.Close()
				return err
			}
			limit := perClient
			if who == channelWide {
				limit = perChannel
			}
			l, c := limit.Left(n, last, now)
			left, next[who] = max(left, l), c
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// Rows whose last attempt is older than the client window count nothing (Left starts
		// them afresh), so they go: guesses from ever-new addresses cannot grow the table. Holding
		// the channel-wide row serialises this with every other attempt at the channel.
		if _, err := tx.Exec(ctx, `DELETE FROM password_failures WHERE channel_id = $1 AND client NOT IN ($2, $3)
			AND last_at < $4`, channelID, client, channelWide, now.Add(-perClient.Window)); err != nil {
			return err
		}
		if left > 0 {
			return nil // nothing counted: the transaction only inserted empty rows and pruned stale ones
		}
		_, err = tx.Exec(ctx, `UPDATE password_failures SET
			failures = CASE WHEN client = $3 THEN $5::int ELSE $4::int END, last_at = $6
			WHERE channel_id = $1 AND client IN ($2, $3)`, channelID, client, channelWide, next[client], next[channelWide], now)
		return err
	})
	return left, dbErr(err)
}

// FailPasswordAttempt follows a wrong password: the waits count from when it was known wrong, so
// both rows' last attempt moves to now (the attempt itself was counted when it was reserved).
func (db *Catalog) FailPasswordAttempt(ctx context.Context, channelID int64, client string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE password_failures SET last_at = greatest(last_at, clock_timestamp())
		WHERE channel_id = $1 AND client IN ($2, $3)`, channelID, client, channelWide)
	return dbErr(err)
}

// ForgivePasswordAttempt follows a right password: the client's count is cleared, and the
// attempt it reserved is taken off the channel's count (the others' wrong guesses stay counted).
func (db *Catalog) ForgivePasswordAttempt(ctx context.Context, channelID int64, client string) error {
	_, err := db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM password_failures WHERE channel_id = $1 AND client = $2)
		UPDATE password_failures SET failures = greatest(failures - 1, 0) WHERE channel_id = $1 AND client = $3`,
		channelID, client, channelWide)
	return dbErr(err)
}
