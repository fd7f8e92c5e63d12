package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const sessionColumns = `id, token_id, kind, object_key, storage_upload_id, filename, size, sha256, part_size, fields, state,
	coalesce(result_id, 0), coalesce(error, ''), expires_at, created_at`

// CreateSession records an upload session and marks its object pending, in one transaction, so
// the collector knows the object from its first byte.
func (db *DB) CreateSession(ctx context.Context, s *distribution.UploadSession) error {
	fields, err := json.Marshal(s.Fields)
	if err != nil {
		return err
	}
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO storage_objects (key, state) VALUES ($1, 'pending')`, s.ObjectKey); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO upload_sessions (id, token_id, kind, object_key, storage_upload_id, filename, size, sha256,
			part_size, fields, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING created_at`,
			s.ID, s.TokenID, s.Kind, s.ObjectKey, s.StorageUploadID, s.Filename, s.Size, s.SHA256, s.PartSize, fields, s.ExpiresAt).
			Scan(&s.CreatedAt)
	})
}

// GetSession returns an upload session, or errs.NotFound.
func (db *DB) GetSession(ctx context.Context, id string) (*distribution.UploadSession, error) {
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
func (db *DB) SwitchSession(ctx context.Context, id, from, to string, resultID int64, errMsg string) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE upload_sessions SET state = $3, result_id = nullif($4, 0), error = nullif($5, ''),
		updated_at = now() WHERE id = $1 AND state = $2`, id, from, to, resultID, errMsg)
	if err != nil {
		return false, dbErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ExpireSessions ends the sessions still open (or stuck completing) past their expiry and hands
// their objects to the collector, in one transaction.
func (db *DB) ExpireSessions(ctx context.Context) (int, error) {
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
