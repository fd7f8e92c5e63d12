package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const sessionColumns = `id, token_id, kind, object_key, storage_upload_id, filename, size, sha256, part_size, fields, state,
	coalesce(result_id, 0), coalesce(error, ''), expires_at, created_at`

// CreateSession records an upload session and marks its object pending, in one transaction, so
// the collector knows the object from its first byte. When the token already has maxOpen open
// sessions (0: no cap), it records nothing and returns *uploads.TooManySessionsError.
func (db *Releases) CreateSession(ctx context.Context, s *distribution.UploadSession, maxOpen int) error {
	fields, err := json.Marshal(s.Fields)
	if err != nil {
		return err
	}
	return db.Tx(ctx, func(tx pgx.Tx) error {
		// One token's session starts take turns (a transaction-scoped lock on the token), so
		// concurrent starts cannot all see room under the cap.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('upload_sessions.token', $1))`, s.TokenID); err != nil {
			return err
		}
		open, err := openSessions(ctx, tx, s.TokenID)
		if err != nil {
			return err
		}
		if maxOpen > 0 && open.Count >= maxOpen {
			return &uploads.TooManySessionsError{Open: open}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO storage_objects (key, state) VALUES ($1, 'pending')`, s.ObjectKey); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO upload_sessions (id, token_id, kind, object_key, storage_upload_id, filename, size, sha256,
			part_size, fields, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING created_at`,
			s.ID, s.TokenID, s.Kind, s.ObjectKey, s.StorageUploadID, s.Filename, s.Size, s.SHA256, s.PartSize, fields, s.ExpiresAt).
			Scan(&s.CreatedAt)
	})
}

// OpenSessions counts a token's open upload sessions (open or completing, and not expired: an
// expired one waits for the collector but counts no more).
func (db *Releases) OpenSessions(ctx context.Context, tokenID int64) (uploads.OpenSessions, error) {
	o, err := openSessions(ctx, db.Pool, tokenID)
	return o, dbErr(err)
}

func openSessions(ctx context.Context, q querier, tokenID int64) (uploads.OpenSessions, error) {
	var o uploads.OpenSessions
	var oldest *string
	var next *time.Time
	// The partial index on open sessions' expiry finds them; there are few per token.
	err := q.QueryRow(ctx, `SELECT count(*), (array_agg(id ORDER BY created_at, id))[1], min(expires_at) FROM upload_sessions
		WHERE state IN ('open', 'completing') AND expires_at > now() AND token_id = $1`, tokenID).Scan(&o.Count, &oldest, &next)
	if oldest != nil {
		o.OldestID = *oldest
	}
	if next != nil {
		o.NextExpiry = *next
	}
	return o, err
}

// GetSession returns an upload session, or errs.NotFound.
func (db *Releases) GetSession(ctx context.Context, id string) (*distribution.UploadSession, error) {
	var s distribution.UploadSession
	var fields []byte
	err := db.Pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM upload_sessions WHERE id = $1`, id).Scan(&s.ID, &s.TokenID, &s.Kind,
		&s.ObjectKey, &s.StorageUploadID, &s.Filename, &s.Size, &s.SHA256, &s.PartSize, &fields, &s.State, &s.ResultID, &s.Error,
		&s.ExpiresAt, &s.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "no such upload session")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	if err := json.Unmarshal(fields, &s.Fields); err != nil {
		return nil, err
	}
	return &s, nil
}

// SwitchSession moves a session from one state to another, and reports whether it was in from.
func (db *Releases) SwitchSession(ctx context.Context, id, from, to string, resultID int64, errMsg string) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE upload_sessions SET state = $3, result_id = nullif($4, 0), error = nullif($5, ''),
		updated_at = now() WHERE id = $1 AND state = $2`, id, from, to, resultID, errMsg)
	if err != nil {
		return false, dbErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ExpireSessions ends the sessions still open (or stuck completing) past their expiry and hands
// their objects to the collector, in one transaction.
func (db *Releases) ExpireSessions(ctx context.Context) (int, error) {
	var n int
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE upload_sessions SET state = 'expired', updated_at = now()
			WHERE state IN ('open', 'completing') AND expires_at < now() RETURNING object_key`)
		if err != nil {
			return err
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		n = len(keys)
		_, err = tx.Exec(ctx, `UPDATE storage_objects SET state = 'deleted' WHERE key = ANY($1) AND state = 'pending'`, keys)
		return err
	})
	return n, err
}
