package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// FeedbackFacets returns the app's builds with reports (newest first) and its testers with
// reports (by email), at most limit of each, with their counts.
func (db *Feedback) FeedbackFacets(ctx context.Context, appID int64, limit int) (distribution.FeedbackFacets, error) {
	var out distribution.FeedbackFacets
	rows, err := db.Pool.Query(ctx, `SELECT f.release_id, r.release_version, r.build_version, r.version, c.name, count(*)
		FROM feedback f JOIN releases r ON r.id = f.release_id JOIN channels c ON c.id = f.channel_id
		WHERE f.app_id = $1 GROUP BY f.release_id, r.release_version, r.build_version, r.version, c.name
		ORDER BY f.release_id DESC LIMIT $2`, appID, limit)
	if err != nil {
		return out, dbErr(err)
	}
	if out.Builds, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.FeedbackBuild, error) {
		var b distribution.FeedbackBuild
		return b, r.Scan(&b.ReleaseID, &b.ReleaseVersion, &b.BuildVersion, &b.ReleaseNumber, &b.ChannelName, &b.Count)
	}); err != nil {
		return out, dbErr(err)
	}
	rows, err = db.Pool.Query(ctx, `SELECT t.id, t.email, t.name, count(*) FROM feedback f JOIN testers t ON t.id = f.tester_id
		WHERE f.app_id = $1 GROUP BY t.id, t.email, t.name ORDER BY lower(t.email), t.id LIMIT $2`, appID, limit)
	if err != nil {
		return out, dbErr(err)
	}
	out.Testers, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.FeedbackTester, error) {
		var t distribution.FeedbackTester
		return t, r.Scan(&t.TesterID, &t.Email, &t.Name, &t.Count)
	})
	return out, dbErr(err)
}
