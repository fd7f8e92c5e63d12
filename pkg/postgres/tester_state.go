package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// TesterReleaseState returns what one tester did with one release (the release page shows a
// tester their own state), or nil when the release never went to them.
func (db *Testers) TesterReleaseState(ctx context.Context, releaseID, testerID int64) (*distribution.ReleaseTester, error) {
	var rt distribution.ReleaseTester
	err := db.Pool.QueryRow(ctx, `SELECT t.id, t.email, t.name, t.created_at, rt.direct, rt.invited_at, rt.opened_at, rt.installed_at, rt.mail
		FROM release_testers rt JOIN testers t ON t.id = rt.tester_id WHERE rt.release_id = $1 AND rt.tester_id = $2`, releaseID, testerID).
		Scan(&rt.ID, &rt.Email, &rt.Name, &rt.CreatedAt, &rt.Direct, &rt.InvitedAt, &rt.OpenedAt, &rt.InstalledAt, &rt.Mail)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &rt, nil
}
