package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// WriteAudit writes one audit row (distribution.AuditLog.Record is its one caller in the domain).
func (db *Audit) WriteAudit(ctx context.Context, r distribution.AuditRecord) error {
	return dbErr(insertAudit(ctx, db.Pool, r))
}

// insertAudit writes an audit row with q: the pool, or the transaction of the change it records.
func insertAudit(ctx context.Context, q querier, r distribution.AuditRecord) error {
	detail := r.Detail
	if detail == nil {
		detail = map[string]any{}
	}
	b, err := json.Marshal(detail)
	if err != nil {
		return err
	}
	a := r.Actor
	if a.Kind == "" {
		a.Kind = distribution.ActorSystem
	}
	_, err = q.Exec(ctx, `INSERT INTO audit_log (user_id, action, target, detail, actor_kind, actor_name, token_id, target_kind, target_id, app_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		nullID(a.UserID), r.Action, r.Target.Name, b, a.Kind, a.Name, nullID(a.TokenID), r.Target.Kind, nullID(r.Target.ID), nullID(r.Target.AppID))
	return err
}

// AuditEntries returns audit rows newest first, filtered (see distribution.AuditFilter).
func (db *Audit) AuditEntries(ctx context.Context, f distribution.AuditFilter) ([]distribution.AuditEntry, error) {
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.AppID > 0 {
		where = append(where, "a.app_id = "+arg(f.AppID))
	}
	if s := strings.TrimSpace(f.Actor); s != "" {
		// A user's current name or email, the name recorded, or the kind ("token", "system").
		p := arg("%" + escapeLike(s) + "%")
		where = append(where, "(a.actor_name ILIKE "+p+" OR u.name ILIKE "+p+" OR u.email ILIKE "+p+" OR a.actor_kind = "+arg(strings.ToLower(s))+")")
	}
	if s := strings.TrimSpace(f.Action); s != "" {
		if strings.HasSuffix(s, ".") {
			where = append(where, "starts_with(a.action, "+arg(s)+")")
		} else {
			where = append(where, "a.action = "+arg(s))
		}
	}
	if f.TargetKind != "" {
		where = append(where, "a.target_kind = "+arg(f.TargetKind))
	}
	if len(f.TargetIDs) > 0 {
		where = append(where, "a.target_id = ANY("+arg(f.TargetIDs)+")")
	}
	if f.BeforeID > 0 {
		where = append(where, "a.id < "+arg(f.BeforeID))
	}
	limit := f.Limit
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	// The link facts: a release's channel key (its page answers while it exists, and its tombstone
	// after), whether the app is still there.
	sql := `SELECT a.id, a.at, a.action, a.target, a.detail, a.actor_kind, coalesce(nullif(a.actor_name, ''), nullif(u.name, ''), u.email, ''),
		coalesce(a.user_id, 0), coalesce(a.token_id, 0), a.target_kind, coalesce(a.target_id, 0), coalesce(a.app_id, 0),
		coalesce(rc.slug, tc.slug, ''), EXISTS (SELECT 1 FROM apps p WHERE p.id = a.app_id)
		FROM audit_log a LEFT JOIN users u ON u.id = a.user_id
		LEFT JOIN releases r ON a.target_kind = 'release' AND r.id = a.target_id LEFT JOIN channels rc ON rc.id = r.channel_id
		LEFT JOIN release_tombstones t ON a.target_kind = 'release' AND t.release_id = a.target_id LEFT JOIN channels tc ON tc.id = t.channel_id`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY a.id DESC LIMIT " + arg(limit)
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.AuditEntry, error) {
		var e distribution.AuditEntry
		var detail []byte
		err := r.Scan(&e.ID, &e.At, &e.Action, &e.Target.Name, &detail, &e.Actor.Kind, &e.Actor.Name,
			&e.Actor.UserID, &e.Actor.TokenID, &e.Target.Kind, &e.Target.ID, &e.Target.AppID, &e.ChannelSlug, &e.AppExists)
		if err == nil && len(detail) > 0 {
			_ = json.Unmarshal(detail, &e.Detail)
		}
		return e, err
	})
	return out, dbErr(err)
}

// escapeLike escapes LIKE's wildcards in s.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// insertTombstone records a deleted release for its public page, inside the deletion's tx.
func insertTombstone(ctx context.Context, tx pgx.Tx, rc *distribution.ReleaseContext, by distribution.Actor, reason string) error {
	kind := by.Kind
	if kind == "" {
		kind = distribution.ActorSystem
	}
	_, err := tx.Exec(ctx, `INSERT INTO release_tombstones (release_id, channel_id, app_name, release_version, build_version, actor_kind, actor_name, reason)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (release_id) DO NOTHING`,
		rc.ID, rc.Channel.ID, rc.App.Name, rc.ReleaseVersion, rc.BuildVersion, kind, by.Name, reason)
	return err
}

// ReleaseTombstone returns what a deleted release left, with its channel's newest release id (0
// when it has none), or errs.NotFound.
func (db *Audit) ReleaseTombstone(ctx context.Context, id int64) (*distribution.Tombstone, error) {
	var t distribution.Tombstone
	err := db.Pool.QueryRow(ctx, `SELECT t.release_id, t.channel_id, c.slug, c.name, t.app_name, t.release_version, t.build_version,
		t.deleted_at, t.actor_kind, t.actor_name, t.reason, coalesce(n.id, 0), coalesce(n.release_version, ''), coalesce(n.build_version, '')
		FROM release_tombstones t JOIN channels c ON c.id = t.channel_id
		LEFT JOIN LATERAL (SELECT r.id, r.release_version, r.build_version FROM releases r WHERE r.channel_id = t.channel_id
			ORDER BY r.version DESC LIMIT 1) n ON true
		WHERE t.release_id = $1`, id).Scan(
		&t.ReleaseID, &t.ChannelID, &t.ChannelSlug, &t.ChannelName, &t.AppName, &t.ReleaseVersion, &t.BuildVersion,
		&t.DeletedAt, &t.By.Kind, &t.By.Name, &t.Reason, &t.NewestID, &t.NewestReleaseVersion, &t.NewestBuildVersion)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "release %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &t, nil
}
