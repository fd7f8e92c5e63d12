package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// tokenPrefix makes Slipway tokens recognisable to secret scanners and humans.
const tokenPrefix = "slw_"

// HashToken returns the stored form of a token.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateToken makes a random token (160 bits) with a name and scope (checked by the domain),
// stores its hash and returns the token itself, which cannot be recovered later.
func (db *DB) CreateToken(ctx context.Context, name, scope string) (string, *distribution.Token, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	secret := tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	t := distribution.Token{Name: name, Scope: scope}
	err := db.Pool.QueryRow(ctx, `INSERT INTO api_tokens (name, scope, token_hash) VALUES ($1, $2, $3) RETURNING id, created_at`,
		name, scope, HashToken(secret)).Scan(&t.ID, &t.CreatedAt)
	if isUniqueViolation(err, "api_tokens_active_name_idx") {
		return "", nil, errs.New(errs.Conflict, "a token named %q already exists; revoke it first or pick another name", name)
	}
	if err != nil {
		return "", nil, dbErr(err)
	}
	return secret, &t, nil
}

// Authenticate returns the active token matching secret, or errs.Unauthenticated. It records the
// time of use at most once a minute per token, to keep reads cheap.
func (db *DB) Authenticate(ctx context.Context, secret string) (*distribution.Token, error) {
	if secret == "" {
		return nil, errs.New(errs.Unauthenticated, "an API token is required")
	}
	var t distribution.Token
	err := db.Pool.QueryRow(ctx, `
		UPDATE api_tokens SET last_used_at = now()
		WHERE token_hash = $1 AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
		RETURNING id, name, scope, created_at`, HashToken(secret)).Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		err = db.Pool.QueryRow(ctx, `SELECT id, name, scope, created_at FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL`,
			HashToken(secret)).Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedAt)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "the API token is invalid or revoked")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &t, nil
}

// ListTokens returns every token, active ones first, newest first.
func (db *DB) ListTokens(ctx context.Context) ([]distribution.Token, error) {
	rows, err := db.Pool.Query(ctx, `SELECT id, name, scope, created_at, last_used_at, revoked_at FROM api_tokens
		ORDER BY revoked_at IS NOT NULL, created_at DESC, id DESC`)
	if err != nil {
		return nil, dbErr(err)
	}
	toks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Token, error) {
		var t distribution.Token
		return t, r.Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	})
	return toks, dbErr(err)
}

// RevokeToken revokes the active token with this name, or returns errs.NotFound.
func (db *DB) RevokeToken(ctx context.Context, name string) error {
	tag, err := db.Pool.Exec(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE name = $1 AND revoked_at IS NULL`, name)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "no active token named %q", name)
	}
	return nil
}

// RevokeTokenByID revokes an active token and returns it, or errs.NotFound.
func (db *DB) RevokeTokenByID(ctx context.Context, id int64) (*distribution.Token, error) {
	var t distribution.Token
	err := db.Pool.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL
		RETURNING id, name, scope, created_at, last_used_at, revoked_at`, id).
		Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "no active token with id %d", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &t, nil
}
