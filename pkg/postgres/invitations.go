package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Invitations holds colleagues' invitations and the login links mailed to the colleagues who
// came by one (access.Colleagues).
type Invitations struct{ *pool }

const invitationColumns = `i.id, i.email, i.role, coalesce(i.app_id, 0), coalesce(a.name, ''),
	coalesce(nullif(b.name, ''), b.email, ''), i.created_at, i.expires_at`

const invitationFrom = ` FROM user_invitations i LEFT JOIN apps a ON a.id = i.app_id LEFT JOIN users b ON b.id = i.invited_by`

// openInvitation is the condition of an invitation that may still be accepted.
const openInvitation = `i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()`

func scanInvitation(row pgx.Row, inv *distribution.Invitation) error {
	return row.Scan(&inv.ID, &inv.Email, &inv.Role, &inv.AppID, &inv.AppName, &inv.InvitedBy, &inv.CreatedAt, &inv.ExpiresAt)
}

// CreateInvitation records an invitation by its secret's hash, with its mail (nil: mail is off)
// in the same transaction. An open invitation of the same email to the same place is withdrawn:
// only the newest link works.
func (db *Invitations) CreateInvitation(ctx context.Context, in distribution.Invitation, secretHash string, invitedBy int64,
	m *distribution.OutgoingMail) (*distribution.Invitation, error) {
	var id int64
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE user_invitations i SET revoked_at = now()
			WHERE i.email = $1 AND i.app_id IS NOT DISTINCT FROM $2 AND `+openInvitation, in.Email, nullID(in.AppID)); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO user_invitations (secret_hash, email, role, app_id, invited_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, secretHash, in.Email, in.Role, nullID(in.AppID), nullID(invitedBy),
			in.ExpiresAt).Scan(&id); err != nil {
			return err
		}
		if m == nil {
			return nil
		}
		return writeMail(ctx, tx, []distribution.OutgoingMail{*m})
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return db.invitation(ctx, `i.id = $1`, id)
}

// OpenInvitation returns the open invitation of a secret's hash, or errs.Unauthenticated.
func (db *Invitations) OpenInvitation(ctx context.Context, secretHash string) (*distribution.Invitation, error) {
	return db.invitation(ctx, `i.secret_hash = $1 AND `+openInvitation, secretHash)
}

func (db *Invitations) invitation(ctx context.Context, where string, arg any) (*distribution.Invitation, error) {
	var inv distribution.Invitation
	err := scanInvitation(db.Pool.QueryRow(ctx, `SELECT `+invitationColumns+invitationFrom+` WHERE `+where, arg), &inv)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errInvitationSpent
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &inv, nil
}

var errInvitationSpent = errs.New(errs.Unauthenticated, "this invitation was accepted already, withdrawn or has expired; ask whoever invited you for a new one")

// OpenInvitations returns the invitations still open, newest first: every one (appID 0) or an
// app's.
func (db *Invitations) OpenInvitations(ctx context.Context, appID int64) ([]distribution.Invitation, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+invitationColumns+invitationFrom+` WHERE `+openInvitation+`
		AND ($1 = 0 OR i.app_id = $1) ORDER BY i.created_at DESC, i.id DESC LIMIT 500`, appID)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Invitation, error) {
		var inv distribution.Invitation
		return inv, scanInvitation(r, &inv)
	})
	return out, dbErr(err)
}

// RevokeInvitation withdraws an open invitation (errs.NotFound when none is open by that id).
func (db *Invitations) RevokeInvitation(ctx context.Context, id int64) (*distribution.Invitation, error) {
	inv, err := db.invitation(ctx, `i.id = $1 AND `+openInvitation, id)
	if errs.Is(err, errs.Unauthenticated) {
		return nil, errs.New(errs.NotFound, "no open invitation has that id")
	}
	if err != nil {
		return nil, err
	}
	tag, err := db.Pool.Exec(ctx, `UPDATE user_invitations i SET revoked_at = now() WHERE i.id = $1 AND `+openInvitation, id)
	if err != nil {
		return nil, dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errs.New(errs.NotFound, "no open invitation has that id")
	}
	return inv, nil
}

// AcceptInvitation spends an invitation: the user of its email (made, a viewer, when there is
// none) gets every open invitation of that email at once, the role raised to the highest one
// (never lowered) and the apps' memberships. A disabled user accepts nothing.
func (db *Invitations) AcceptInvitation(ctx context.Context, secretHash string) (*distribution.User, error) {
	var u distribution.User
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var email string
		err := tx.QueryRow(ctx, `SELECT i.email FROM user_invitations i WHERE i.secret_hash = $1 AND `+openInvitation+` FOR UPDATE`,
			secretHash).Scan(&email)
		if errors.Is(err, pgx.ErrNoRows) {
			return errInvitationSpent
		}
		if err != nil {
			return err
		}
		err = scanUser(tx.QueryRow(ctx, `SELECT `+userColumns+` FROM users u WHERE lower(u.email) = $1
			ORDER BY u.disabled_at IS NOT NULL, u.id LIMIT 1 FOR UPDATE`, email), &u)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			err = scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (subject, email) VALUES ($1, $2) RETURNING `+userColumns,
				distribution.InvitedSubject(email), email), &u)
		case err == nil && u.DisabledAt != nil:
			return errs.New(errs.Forbidden, "the account of %s is disabled here; an admin can enable it", email)
		}
		if err != nil {
			return err
		}
		return applyInvitations(ctx, tx, &u, email)
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return &u, nil
}

// applyInvitations gives u every open invitation of email: the highest role among them (when
// above u's) and their apps' memberships; they are spent.
func applyInvitations(ctx context.Context, tx pgx.Tx, u *distribution.User, email string) error {
	return scanUser(tx.QueryRow(ctx, `WITH inv AS (
			UPDATE user_invitations i SET accepted_at = now(), user_id = $1 WHERE i.email = $2 AND `+openInvitation+`
			RETURNING i.role, i.app_id),
		members AS (INSERT INTO app_members (app_id, user_id) SELECT app_id, $1 FROM inv WHERE app_id IS NOT NULL ON CONFLICT DO NOTHING),
		best AS (SELECT role FROM inv ORDER BY `+roleRank("role")+` DESC LIMIT 1)
		UPDATE users u SET last_login = now(),
			role = CASE WHEN `+roleRank("(SELECT role FROM best)")+` > `+roleRank("u.role")+` THEN (SELECT role FROM best) ELSE u.role END,
			admin_by_groups = CASE WHEN `+roleRank("(SELECT role FROM best)")+` > `+roleRank("u.role")+` THEN false ELSE u.admin_by_groups END
		WHERE u.id = $1 RETURNING `+userColumns, u.ID, email), u)
}

// roleRank orders the roles in SQL: admin above developer above viewer (and above no role).
func roleRank(expr string) string {
	return `(CASE ` + expr + ` WHEN 'admin' THEN 3 WHEN 'developer' THEN 2 WHEN 'viewer' THEN 1 ELSE 0 END)`
}

// BindInvited ties a first sign-in with the identity provider (subject, under a verified email)
// to the colleague invited by that email: the user who came by an invitation takes the provider's
// subject (their mailed links stop), or, when the invitation is still open, the user is made
// with it. Nothing happens when the subject is known already or nobody was invited.
func (db *Invitations) BindInvited(ctx context.Context, subject, email string) error {
	return dbErr(db.Tx(ctx, func(tx pgx.Tx) error {
		var known bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE subject = $1)`, subject).Scan(&known); err != nil || known {
			return err
		}
		var u distribution.User
		err := scanUser(tx.QueryRow(ctx, `UPDATE users u SET subject = $1 WHERE u.subject = $2 AND u.disabled_at IS NULL
			RETURNING `+userColumns, subject, distribution.InvitedSubject(email)), &u)
		if errors.Is(err, pgx.ErrNoRows) {
			var invited bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM user_invitations i WHERE i.email = $1 AND `+openInvitation+`)
				AND NOT EXISTS (SELECT 1 FROM users WHERE lower(email) = $1)`, email).Scan(&invited); err != nil || !invited {
				return err
			}
			err = scanUser(tx.QueryRow(ctx, `INSERT INTO users AS u (subject, email) VALUES ($1, $2) RETURNING `+userColumns, subject, email), &u)
		}
		if err != nil {
			return err
		}
		return applyInvitations(ctx, tx, &u, email)
	}))
}

// CreateColleagueLink records a login link for the colleague of email who came by an invitation
// (not one who signs in with the identity provider) and counts the request of client, as
// CreateTesterLink does: false, recording no link, for an address that is no such colleague, or
// past perUser links or perClient requests since since.
func (db *Invitations) CreateColleagueLink(ctx context.Context, idHash, email string, expires time.Time, client string,
	since time.Time, perUser, perClient int) (bool, error) {
	ok := false
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7463, hashtext($1))`, client); err != nil {
			return err
		}
		var userID *int64
		var byClient, byUser int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM tester_link_requests WHERE client = $1 AND requested_at > $2),
			(SELECT id FROM users WHERE subject = $3 AND disabled_at IS NULL),
			(SELECT count(*) FROM login_links l JOIN users u ON u.id = l.user_id WHERE u.subject = $3 AND l.created_at > $2)`,
			client, since, distribution.InvitedSubject(email)).Scan(&byClient, &userID, &byUser); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tester_link_requests (client) VALUES ($1)`, client); err != nil {
			return err
		}
		if byClient >= perClient || userID == nil || byUser >= perUser {
			return nil
		}
		ok = true
		_, err := tx.Exec(ctx, `INSERT INTO login_links (id, user_id, expires_at) VALUES ($1, $2, $3)`, idHash, *userID, expires)
		return err
	})
	return ok, dbErr(err)
}
