package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const userColumns = `u.id, coalesce(u.subject, ''), u.email, u.name, u.role, u.created_at, u.last_login, u.disabled_at, u.admin_by_groups`

func scanUser(row pgx.Row, u *distribution.User) error {
	return row.Scan(&u.ID, &u.Subject, &u.Email, &u.Name, &u.Role, &u.CreatedAt, &u.LastLogin, &u.DisabledAt, &u.AdminByGroups)
}

// SignInUser: see access.LoginStore. The user's row is locked first, so the role is decided
// from the row the statement updates (a concurrent change in the console is never overwritten
// with a stale one), and a demotion ends the user's sessions in the same transaction.
func (db *People) SignInUser(ctx context.Context, in *distribution.User, inAdminGroups bool) (*distribution.User, error) {
	var u distribution.User
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var wasGroupAdmin bool
		err := tx.QueryRow(ctx, `SELECT role = 'admin' AND admin_by_groups FROM users WHERE subject = $1 FOR UPDATE`, in.Subject).Scan(&wasGroupAdmin)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		err = scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (subject, email, name, role, admin_by_groups, last_login)
			VALUES ($1, $2, $3, CASE WHEN $4 THEN 'admin' ELSE 'viewer' END, $4, now())
			ON CONFLICT (subject) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name, last_login = now(),
				role = CASE
					WHEN $4 AND u.role <> 'admin' THEN 'admin'
					WHEN NOT $4 AND u.role = 'admin' AND u.admin_by_groups THEN
						CASE WHEN EXISTS (SELECT 1 FROM app_members m WHERE m.user_id = u.id) THEN 'developer' ELSE 'viewer' END
					ELSE u.role END,
				admin_by_groups = CASE
					WHEN $4 AND u.role <> 'admin' THEN true
					WHEN NOT $4 AND u.role = 'admin' AND u.admin_by_groups THEN false
					ELSE u.admin_by_groups END
			RETURNING `+userColumns, in.Subject, in.Email, in.Name, inAdminGroups), &u)
		if err != nil || !wasGroupAdmin || inAdminGroups {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE user_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, u.ID)
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// EndSessionsOf: see access.LoginStore.
func (db *People) EndSessionsOf(ctx context.Context, subject string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE user_sessions s SET revoked_at = now() FROM users u
		WHERE u.id = s.user_id AND u.subject = $1 AND s.revoked_at IS NULL`, subject)
	return dbErr(err)
}

// localAdminSubject names the local admin that login links sign in.
const localAdminSubject = "local|admin"

// LocalAdmin returns the local admin, making it on first use.
func (db *People) LocalAdmin(ctx context.Context) (*distribution.User, error) {
	var u distribution.User
	err := scanUser(db.Pool.QueryRow(ctx, `INSERT INTO users AS u (subject, name, role) VALUES ($1, 'Administrator', 'admin')
		ON CONFLICT (subject) DO UPDATE SET subject = EXCLUDED.subject RETURNING `+userColumns, localAdminSubject), &u)
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// CreateUserSession records a console session by the hash of its secret.
func (db *People) CreateUserSession(ctx context.Context, idHash string, userID int64, expires time.Time) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO user_sessions (id, user_id, expires_at) VALUES ($1, $2, $3)`, idHash, userID, expires)
	return dbErr(err)
}

// SessionUser: see access.LoginStore.
func (db *People) SessionUser(ctx context.Context, idHash string) (*distribution.User, error) {
	var u distribution.User
	err := scanUser(db.Pool.QueryRow(ctx, `SELECT `+userColumns+` FROM user_sessions s JOIN users u ON u.id = s.user_id
		WHERE s.id = $1 AND s.revoked_at IS NULL AND s.expires_at > now() AND u.disabled_at IS NULL`, idHash), &u)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "your session has ended; sign in again")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// RevokeUserSession ends a console session.
func (db *People) RevokeUserSession(ctx context.Context, idHash string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE user_sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, idHash)
	return dbErr(err)
}

// CreateLoginLink records a login link by the hash of its secret.
func (db *People) CreateLoginLink(ctx context.Context, idHash string, userID int64, expires time.Time) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO login_links (id, user_id, expires_at) VALUES ($1, $2, $3)`, idHash, userID, expires)
	return dbErr(err)
}

// UseLoginLink marks a link used, once, and returns its user.
func (db *People) UseLoginLink(ctx context.Context, idHash string) (*distribution.User, error) {
	var userID int64
	err := db.Pool.QueryRow(ctx, `UPDATE login_links SET used_at = now() WHERE id = $1 AND used_at IS NULL AND expires_at > now()
		RETURNING user_id`, idHash).Scan(&userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "this login link is used, expired or unknown; ask for another on the sign-in page, or make one with `slipway admin login-link`")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	var u distribution.User
	err = scanUser(db.Pool.QueryRow(ctx, `UPDATE users u SET last_login = now() WHERE id = $1 AND disabled_at IS NULL RETURNING `+userColumns, userID), &u)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "this login link's user is disabled")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// IsAppMember reports whether a user is a member of an app.
func (db *People) IsAppMember(ctx context.Context, appID, userID int64) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM app_members WHERE app_id = $1 AND user_id = $2)`, appID, userID).Scan(&ok)
	return ok, dbErr(err)
}

// ListUsers returns every user, enabled ones first, then by email.
func (db *People) ListUsers(ctx context.Context) ([]distribution.User, error) {
	return db.users(ctx, `SELECT `+userColumns+` FROM users u ORDER BY u.disabled_at IS NOT NULL, lower(u.email), u.id`)
}

// AppMembers returns the members of an app.
func (db *People) AppMembers(ctx context.Context, appID int64) ([]distribution.User, error) {
	return db.users(ctx, `SELECT `+userColumns+` FROM app_members m JOIN users u ON u.id = m.user_id
		WHERE m.app_id = $1 ORDER BY lower(u.email), u.id`, appID)
}

func (db *People) users(ctx context.Context, sql string, args ...any) ([]distribution.User, error) {
	rows, err := db.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.User, error) {
		var u distribution.User
		return u, scanUser(r, &u)
	})
	return out, dbErr(err)
}

// RemoveAppMember removes a user from an app (errs.NotFound when not a member).
func (db *People) RemoveAppMember(ctx context.Context, appID, userID int64) error {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM app_members WHERE app_id = $1 AND user_id = $2`, appID, userID)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "that person is not a member of this app")
	}
	return nil
}

// SetUserAccess sets a user's role and whether they are disabled. Disabling ends their sessions
// at once (SessionUser and Authenticate refuse disabled users; the sessions are revoked too).
func (db *People) SetUserAccess(ctx context.Context, id int64, role string, disabled bool) (*distribution.User, error) {
	var u distribution.User
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		err := scanUser(tx.QueryRow(ctx, `UPDATE users u SET role = $2,
			admin_by_groups = CASE WHEN u.role = $2 THEN u.admin_by_groups ELSE false END,
			disabled_at = CASE WHEN $3 THEN coalesce(u.disabled_at, now()) ELSE NULL END
			WHERE u.id = $1 RETURNING `+userColumns, id, role, disabled), &u)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.NotFound, "there is no such user")
		}
		if err != nil || !disabled {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE user_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`, id)
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// consoleUploadTokenName names the token a user's console uploads are made with: upload
// sessions and releases record the token that made them, and a console user has none of their
// own. Its secret is never shown (nor kept): it cannot be used outside the console.
func consoleUploadTokenName(userID int64) string {
	return fmt.Sprintf("console uploads of user %d", userID)
}

// UserUploadToken returns the user's console upload token, making it on first use.
func (db *People) UserUploadToken(ctx context.Context, userID int64) (*distribution.Token, error) {
	name := consoleUploadTokenName(userID)
	for range 2 {
		var t distribution.Token
		err := db.Pool.QueryRow(ctx, `SELECT id, name, scope, created_at FROM api_tokens
			WHERE user_id = $1 AND name = $2 AND revoked_at IS NULL`, userID, name).Scan(&t.ID, &t.Name, &t.Scope, &t.CreatedAt)
		if err == nil {
			return &t, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, dbErr(err)
		}
		_, made, err := db.NewToken(ctx, distribution.NewToken{Name: name, Scope: distribution.ScopeUpload, UserID: userID,
			By: distribution.Actor{Kind: distribution.ActorUser, UserID: userID}})
		if err == nil {
			return made, nil
		}
		if errs.KindOf(err) != errs.Conflict {
			return nil, err
		}
		// Made at the same moment by another request: read it.
	}
	return nil, errs.New(errs.Conflict, "the console upload token is being made; try again")
}

// RecentUploads returns the newest releases across every app.
func (db *People) RecentUploads(ctx context.Context, limit int) ([]distribution.ReleaseContext, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseContextColumns+releaseContextFrom+` ORDER BY r.created_at DESC, r.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.ReleaseContext, error) {
		var rc distribution.ReleaseContext
		return rc, scanReleaseContext(r, &rc)
	})
	return out, dbErr(err)
}

// GetUser returns a user by id, or errs.NotFound.
func (db *People) GetUser(ctx context.Context, id int64) (*distribution.User, error) {
	return db.oneUser(ctx, `SELECT `+userColumns+` FROM users u WHERE u.id = $1`, id)
}

// UserByEmail returns the user with this email (case-insensitive), or errs.NotFound.
func (db *People) UserByEmail(ctx context.Context, email string) (*distribution.User, error) {
	return db.oneUser(ctx, `SELECT `+userColumns+` FROM users u WHERE lower(u.email) = lower($1) ORDER BY u.id LIMIT 1`, email)
}

func (db *People) oneUser(ctx context.Context, sql string, arg any) (*distribution.User, error) {
	var u distribution.User
	err := scanUser(db.Pool.QueryRow(ctx, sql, arg), &u)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "there is no such user")
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// DeleteUser deletes a user with their sessions, memberships and tokens (the audit log keeps
// their entries, without the name).
func (db *People) DeleteUser(ctx context.Context, id int64) error {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM users WHERE id = $1`, id)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "there is no such user")
	}
	return nil
}

// AddAppMemberByID adds a user to an app, making a viewer a developer when promote is set;
// errs.Conflict when already a member, errs.NotFound when there is no such user.
func (db *People) AddAppMemberByID(ctx context.Context, appID, userID int64, promote bool) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		var ok bool
		err := tx.QueryRow(ctx, `UPDATE users SET role = CASE WHEN role = 'viewer' AND $2 THEN 'developer' ELSE role END
			WHERE id = $1 RETURNING true`, userID, promote).Scan(&ok)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.New(errs.NotFound, "there is no such user")
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO app_members (app_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, appID, userID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.New(errs.Conflict, "that user is already a collaborator of this app")
		}
		return nil
	})
}

// PromoteUser makes a viewer a developer (a collaborator given the developer role).
func (db *People) PromoteUser(ctx context.Context, id int64) error {
	_, err := db.Pool.Exec(ctx, `UPDATE users SET role = 'developer' WHERE id = $1 AND role = 'viewer'`, id)
	return dbErr(err)
}

// ClaimForm: see access.FormStore. Claims made before olderThan are deleted in the same statement
// (an index range on created_at; a handful of rows at a time in practice).
func (db *People) ClaimForm(ctx context.Context, id string, olderThan time.Time) (bool, string, error) {
	if _, err := db.Pool.Exec(ctx, `DELETE FROM console_forms WHERE created_at < $1`, olderThan); err != nil {
		return false, "", dbErr(err)
	}
	tag, err := db.Pool.Exec(ctx, `INSERT INTO console_forms (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, id)
	if err != nil {
		return false, "", dbErr(err)
	}
	if tag.RowsAffected() == 1 {
		return true, "", nil
	}
	var result string
	err = db.Pool.QueryRow(ctx, `SELECT result_url FROM console_forms WHERE id = $1`, id).Scan(&result)
	if errors.Is(err, pgx.ErrNoRows) {
		// Released in between (the first one failed): the next send may try again.
		return false, "", nil
	}
	return false, result, dbErr(err)
}

// FinishForm: see access.FormStore.
func (db *People) FinishForm(ctx context.Context, id, resultURL string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE console_forms SET result_url = $2 WHERE id = $1`, id, resultURL)
	return dbErr(err)
}

// ReleaseForm: see access.FormStore.
func (db *People) ReleaseForm(ctx context.Context, id string) error {
	_, err := db.Pool.Exec(ctx, `DELETE FROM console_forms WHERE id = $1`, id)
	return dbErr(err)
}
