package postgres

import (
	"context"
	"errors"
	"fmt"
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
//
// A row can go between the insert that makes sure it exists and the lock that holds it (a right
// password clears a client's count; another client's attempt prunes stale rows): the lock then
// finds nothing and the attempt would go uncounted, so the transaction starts again.
func (db *Catalog) ReservePasswordAttempt(ctx context.Context, channelID int64, client string, perClient, perChannel access.AttemptLimit) (time.Duration, error) {
	for attempt := 1; ; attempt++ {
		left, err := db.reservePasswordAttempt(ctx, channelID, client, perClient, perChannel)
		if !errors.Is(err, errRowGone) {
			return left, err
		}
		if attempt == maxReserveAttempts {
			return 0, dbErr(fmt.Errorf("password attempts at channel %d: %w %d times", channelID, err, attempt))
		}
	}
}

// errRowGone ends a reservation whose rows went before it could lock them (it is tried again).
var errRowGone = errors.New("a password_failures row went while it was being locked")

// maxReserveAttempts bounds the retries of a reservation whose rows keep going.
const maxReserveAttempts = 5

func (db *Catalog) reservePasswordAttempt(ctx context.Context, channelID int64, client string, perClient, perChannel access.AttemptLimit) (time.Duration, error) {
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
		if _, ok := next[client]; !ok {
			return errRowGone
		}
		if _, ok := next[channelWide]; !ok {
			return errRowGone
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
// It locks the rows in the order a reservation does (the channel's first), so the two never wait
// for each other in a circle, and it clears the client's row rather than deleting it: an attempt
// waiting for the lock then counts from zero, as the next attempt after a right password should.
func (db *Catalog) ForgivePasswordAttempt(ctx context.Context, channelID int64, client string) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM password_failures WHERE channel_id = $1 AND client IN ($2, $3)
			ORDER BY client FOR UPDATE`, channelID, client, channelWide); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE password_failures SET
			failures = CASE WHEN client = $3 THEN greatest(failures - 1, 0) ELSE 0 END,
			last_at = CASE WHEN client = $3 THEN last_at ELSE 'epoch' END
			WHERE channel_id = $1 AND client IN ($2, $3)`, channelID, client, channelWide)
		return err
	})
}
