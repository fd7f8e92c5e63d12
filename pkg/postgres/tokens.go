package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

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

// CreateToken makes a token with no owner (the CLI's `slipway token create` on the server),
// audited as the context's actor. See NewToken.
func (db *People) CreateToken(ctx context.Context, name, scope string) (string, *distribution.Token, error) {
	return db.NewToken(ctx, distribution.NewToken{Name: name, Scope: scope, By: distribution.ActorOf(ctx)})
}

// NewToken makes a random token (160 bits) with a name, scope and owner (checked by the domain),
// stores its hash with an audit entry naming who made it, in one transaction, and returns the
// token itself, which cannot be recovered later.
func (db *People) NewToken(ctx context.Context, in distribution.NewToken) (string, *distribution.Token, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	secret := tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
	t := distribution.Token{Name: in.Name, Scope: in.Scope, UserID: in.UserID, ExpiresAt: in.ExpiresAt,
		Apps: nilIfEmpty(in.Apps), Abilities: nilIfEmpty(in.Abilities)}
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO api_tokens (name, scope, token_hash, user_id, expires_at, app_ids, abilities)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
			in.Name, in.Scope, HashToken(secret), nullID(in.UserID), in.ExpiresAt, t.Apps, t.Abilities).Scan(&t.ID, &t.CreatedAt)
		if err != nil {
			return err
		}
		detail := map[string]any{"scope": t.Scope}
		if t.Apps != nil {
			detail["app_ids"] = t.Apps
		}
		if t.Abilities != nil {
			detail["abilities"] = t.Abilities
		}
		if in.ExpiresAt != nil {
			detail["expires_at"] = in.ExpiresAt.UTC().Format(time.RFC3339)
		}
		if in.UserID != 0 {
			detail["owner_id"] = in.UserID
		}
		return insertAudit(ctx, tx, distribution.AuditRecord{Actor: in.By, Action: "token.create",
			Target: distribution.AuditTarget{Kind: distribution.TargetToken, ID: t.ID, Name: in.Name}, Detail: detail})
	})
	switch {
	case isUniqueViolation(err, "api_tokens_active_name_idx"):
		return "", nil, errs.New(errs.Conflict, "a token named %q already exists; revoke it first or pick another name", in.Name)
	case isForeignKeyViolation(err):
		return "", nil, errs.New(errs.Unauthenticated, "the token's owner no longer exists")
	case err != nil:
		return "", nil, dbErr(err)
	}
	return secret, &t, nil
}

// Authenticate returns the active token matching secret, or errs.Unauthenticated. It records the
// time of use at most once a minute per token, to keep reads cheap.
func (db *People) Authenticate(ctx context.Context, secret string) (*distribution.Token, error) {
	if secret == "" {
		return nil, errs.New(errs.Unauthenticated, "an API token is required")
	}
	var t distribution.Token
	// A token owned by a console user never exceeds the user's rights: an admin's keeps its
	// scope, a developer's is at most upload, and a viewer's or a disabled user's does nothing.
	const effective = `CASE WHEN u.id IS NULL OR u.role = 'admin' THEN t.scope WHEN u.role = 'developer' THEN 'upload' END`
	var scope *string
	err := db.Pool.QueryRow(ctx, `
		UPDATE api_tokens t SET last_used_at = now() FROM api_tokens t0 LEFT JOIN users u ON u.id = t0.user_id AND u.disabled_at IS NULL
		WHERE t.id = t0.id AND t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
			AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
			AND (t0.user_id IS NULL OR u.id IS NOT NULL)
		RETURNING t.id, t.name, `+effective+`, coalesce(t.user_id, 0), t.created_at, t.app_ids, t.abilities, coalesce(u.role, '')`, HashToken(secret)).
		Scan(&t.ID, &t.Name, &scope, &t.UserID, &t.CreatedAt, &t.Apps, &t.Abilities, &t.OwnerRole)
	// Recording the use is not worth refusing the request: on a read-only database (a failover
	// under way) the token is read without it, and the reads it opens keep working.
	if errors.Is(err, pgx.ErrNoRows) || isReadOnly(err) {
		err = db.Pool.QueryRow(ctx, `SELECT t.id, t.name, `+effective+`, coalesce(t.user_id, 0), t.created_at, t.app_ids, t.abilities, coalesce(u.role, '') FROM api_tokens t
			LEFT JOIN users u ON u.id = t.user_id AND u.disabled_at IS NULL
			WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
				AND (t.user_id IS NULL OR u.id IS NOT NULL)`,
			HashToken(secret)).Scan(&t.ID, &t.Name, &scope, &t.UserID, &t.CreatedAt, &t.Apps, &t.Abilities, &t.OwnerRole)
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && scope == nil) {
		return nil, errs.New(errs.Unauthenticated, "the API token is invalid, revoked or expired")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	t.Scope = *scope
	return &t, nil
}

// ListTokens returns every token, active ones first, newest first.
func (db *People) ListTokens(ctx context.Context) ([]distribution.Token, error) {
	rows, err := db.Pool.Query(ctx, `SELECT t.id, t.name, t.scope, coalesce(t.user_id, 0), coalesce(nullif(u.name, ''), u.email, ''),
		t.created_at, t.last_used_at, t.revoked_at, t.expires_at, t.app_ids, t.abilities FROM api_tokens t LEFT JOIN users u ON u.id = t.user_id
		ORDER BY t.revoked_at IS NOT NULL, t.created_at DESC, t.id DESC`)
	if err != nil {
		return nil, dbErr(err)
	}
	toks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Token, error) {
		var t distribution.Token
		return t, r.Scan(&t.ID, &t.Name, &t.Scope, &t.UserID, &t.Owner, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt, &t.ExpiresAt, &t.Apps, &t.Abilities)
	})
	return toks, dbErr(err)
}

// RevokeToken revokes the active token with this name, audited as the context's actor (the
// CLI's), or returns errs.NotFound.
func (db *People) RevokeToken(ctx context.Context, name string) error {
	_, err := db.revokeToken(ctx, `name = $1`, name, distribution.ActorOf(ctx))
	if errs.KindOf(err) == errs.NotFound {
		return errs.New(errs.NotFound, "no active token named %q", name)
	}
	return err
}

// RevokeTokenByID revokes an active token, audited as done by by, and returns it, or errs.NotFound.
func (db *People) RevokeTokenByID(ctx context.Context, id int64, by distribution.Actor) (*distribution.Token, error) {
	t, err := db.revokeToken(ctx, `id = $1`, id, by)
	if errs.KindOf(err) == errs.NotFound {
		return nil, errs.New(errs.NotFound, "no active token with id %d", id)
	}
	return t, err
}

func (db *People) revokeToken(ctx context.Context, where string, arg any, by distribution.Actor) (*distribution.Token, error) {
	var t distribution.Token
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = now() WHERE `+where+` AND revoked_at IS NULL
			RETURNING id, name, scope, coalesce(user_id, 0), created_at, last_used_at, revoked_at`, arg).
			Scan(&t.ID, &t.Name, &t.Scope, &t.UserID, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.NotFound, "no such active token")
		}
		if err != nil {
			return err
		}
		return insertAudit(ctx, tx, distribution.AuditRecord{Actor: by, Action: "token.revoke",
			Target: distribution.AuditTarget{Kind: distribution.TargetToken, ID: t.ID, Name: t.Name}})
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return &t, nil
}

// nilIfEmpty stores an empty limit as NULL: no limit.
func nilIfEmpty[T any](xs []T) []T {
	if len(xs) == 0 {
		return nil
	}
	return xs
}

// AppIDsOf resolves apps named by id or by name to their ids, in order: errs.Field("apps") for
// an app that does not exist, or a name that several apps share.
func (db *People) AppIDsOf(ctx context.Context, refs []string) ([]int64, error) {
	ids := make([]int64, 0, len(refs))
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		var found []int64
		rows, err := db.Pool.Query(ctx, `SELECT id FROM apps WHERE id::text = $1 OR name = $1 ORDER BY id::text = $1 DESC, id LIMIT 2`, ref)
		if err == nil {
			found, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return nil, dbErr(err)
		}
		switch {
		case len(found) == 0:
			return nil, errs.Field("apps", "no app has the id or name %q", ref)
		case len(found) > 1 && strconv.FormatInt(found[0], 10) != ref:
			return nil, errs.Field("apps", "several apps are named %q; give the app's id", ref)
		}
		if !slices.Contains(ids, found[0]) {
			ids = append(ids, found[0])
		}
	}
	return ids, nil
}
