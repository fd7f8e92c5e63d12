package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/testers"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Testers holds testers, their groups, which channels they open, where releases went and what
// testers did with them, their mail choices, sign-in links and sessions.
type Testers struct{ *pool }

const groupColumns = `g.id, g.alias, g.name, g.created_at, (SELECT count(*) FROM tester_group_members m WHERE m.group_id = g.id)`

func scanGroup(row pgx.Row, g *distribution.TesterGroup) error {
	return row.Scan(&g.ID, &g.Alias, &g.Name, &g.CreatedAt, &g.Testers)
}

// CreateGroup records a group; an alias in use is errs.Conflict.
func (db *Testers) CreateGroup(ctx context.Context, alias, name string) (*distribution.TesterGroup, error) {
	var g distribution.TesterGroup
	err := scanGroup(db.Pool.QueryRow(ctx, `WITH g AS (INSERT INTO tester_groups (alias, name) VALUES ($1, $2) RETURNING *)
		SELECT g.id, g.alias, g.name, g.created_at, 0 FROM g`, alias, name), &g)
	if isUniqueViolation(err, "tester_groups_alias_key") {
		return nil, errs.New(errs.Conflict, "a group with the alias %q exists already", alias)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &g, nil
}

// Groups lists every group, by alias.
func (db *Testers) Groups(ctx context.Context) ([]distribution.TesterGroup, error) {
	return collectGroups(db.Pool.Query(ctx, `SELECT `+groupColumns+` FROM tester_groups g ORDER BY g.alias`))
}

// ChannelGroups lists the groups that open a channel.
func (db *Testers) ChannelGroups(ctx context.Context, channelID int64) ([]distribution.TesterGroup, error) {
	return collectGroups(db.Pool.Query(ctx, `SELECT `+groupColumns+` FROM tester_groups g
		JOIN channel_tester_groups cg ON cg.group_id = g.id WHERE cg.channel_id = $1 ORDER BY g.alias`, channelID))
}

func collectGroups(rows pgx.Rows, err error) ([]distribution.TesterGroup, error) {
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.TesterGroup, error) {
		var g distribution.TesterGroup
		return g, scanGroup(r, &g)
	})
	return out, dbErr(err)
}

// GroupsByAlias returns the groups of those aliases (in their order); an unknown one is
// errs.Invalid naming it.
func (db *Testers) GroupsByAlias(ctx context.Context, aliases []string) ([]distribution.TesterGroup, error) {
	return groupsByAlias(ctx, db.Pool, aliases)
}

func groupsByAlias(ctx context.Context, q querier, aliases []string) ([]distribution.TesterGroup, error) {
	if len(aliases) == 0 {
		return nil, nil
	}
	gs, err := collectGroups(q.Query(ctx, `SELECT `+groupColumns+` FROM tester_groups g WHERE g.alias = ANY($1)`, aliases))
	if err != nil {
		return nil, err
	}
	var missing []string
	out := make([]distribution.TesterGroup, 0, len(aliases))
	for _, a := range aliases {
		i := slices.IndexFunc(gs, func(g distribution.TesterGroup) bool { return g.Alias == a })
		if i < 0 {
			missing = append(missing, `"`+a+`"`)
			continue
		}
		out = append(out, gs[i])
	}
	if len(missing) > 0 {
		return nil, errs.Field("groups", "no group with the alias %s; make it first (POST /api/groups)", strings.Join(missing, ", "))
	}
	return out, nil
}

// DeleteGroup deletes a group. The channels it opened stay open to their testers only (and to
// nobody, when it was their last group).
func (db *Testers) DeleteGroup(ctx context.Context, alias string) (*distribution.TesterGroup, error) {
	var g distribution.TesterGroup
	err := scanGroup(db.Pool.QueryRow(ctx, `WITH g AS (DELETE FROM tester_groups WHERE alias = $1 RETURNING *)
		SELECT g.id, g.alias, g.name, g.created_at, 0 FROM g`, alias), &g)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "no group with the alias %q", alias)
	}
	return &g, dbErr(err)
}

// AddToGroup makes the testers that are missing (a name given fills an empty one) and puts every
// one in the group, all or nothing; it returns every tester now in the group.
func (db *Testers) AddToGroup(ctx context.Context, alias string, ts []distribution.TesterInput) ([]distribution.Tester, error) {
	var out []distribution.Tester
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		var gid int64
		if err := tx.QueryRow(ctx, `SELECT id FROM tester_groups WHERE alias = $1 FOR UPDATE`, alias).Scan(&gid); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return errs.New(errs.NotFound, "no group with the alias %q", alias)
			}
			return err
		}
		emails, names := make([]string, len(ts)), make([]string, len(ts))
		for i, t := range ts {
			emails[i], names[i] = t.Email, t.Name
		}
		if err := upsertTesters(ctx, tx, emails, names); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tester_group_members (group_id, tester_id)
			SELECT $1, id FROM testers WHERE email = ANY($2) ON CONFLICT DO NOTHING`, gid, emails); err != nil {
			return err
		}
		var err error
		out, err = collectTesters(tx.Query(ctx, testerSelect+` WHERE t.id IN (SELECT tester_id FROM tester_group_members WHERE group_id = $1)
			ORDER BY t.email`, gid))
		return err
	})
	return out, err
}

// upsertTesters makes the testers of emails that are missing; a name given fills an empty one.
func upsertTesters(ctx context.Context, q querier, emails, names []string) error {
	if len(emails) == 0 {
		return nil
	}
	if names == nil {
		names = make([]string, len(emails))
	}
	// Sorted, so that concurrent batches take the unique index's locks in one order.
	_, err := q.Exec(ctx, `INSERT INTO testers (email, name) SELECT e, n FROM unnest($1::text[], $2::text[]) AS x(e, n) ORDER BY e
		ON CONFLICT (email) DO UPDATE SET name = EXCLUDED.name WHERE testers.name = '' AND EXCLUDED.name <> ''`, emails, names)
	return err
}

// RemoveFromGroup takes a tester out of a group: from now on they reach none of what the group
// opens.
func (db *Testers) RemoveFromGroup(ctx context.Context, alias, email string) (*distribution.Tester, error) {
	var t distribution.Tester
	err := db.Pool.QueryRow(ctx, `DELETE FROM tester_group_members m USING tester_groups g, testers t
		WHERE m.group_id = g.id AND m.tester_id = t.id AND g.alias = $1 AND t.email = $2
		RETURNING t.id, t.email, t.name, t.created_at`, alias, email).Scan(&t.ID, &t.Email, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "%s is not in the group %q", email, alias)
	}
	return &t, dbErr(err)
}

const testerSelect = `SELECT t.id, t.email, t.name, t.created_at,
	coalesce((SELECT array_agg(g.alias ORDER BY g.alias) FROM tester_group_members m JOIN tester_groups g ON g.id = m.group_id
		WHERE m.tester_id = t.id), '{}') FROM testers t`

func collectTesters(rows pgx.Rows, err error) ([]distribution.Tester, error) {
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Tester, error) {
		var t distribution.Tester
		return t, r.Scan(&t.ID, &t.Email, &t.Name, &t.CreatedAt, &t.Groups)
	})
	return out, dbErr(err)
}

// ListTesters lists testers by email: those of a group (alias), or all ("").
func (db *Testers) ListTesters(ctx context.Context, alias string) ([]distribution.Tester, error) {
	if alias == "" {
		return collectTesters(db.Pool.Query(ctx, testerSelect+` ORDER BY t.email`))
	}
	var gid int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM tester_groups WHERE alias = $1`, alias).Scan(&gid); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, errs.New(errs.NotFound, "no group with the alias %q", alias)
		}
		return nil, dbErr(err)
	}
	return collectTesters(db.Pool.Query(ctx, testerSelect+` WHERE t.id IN (SELECT tester_id FROM tester_group_members WHERE group_id = $1)
		ORDER BY t.email`, gid))
}

// TesterByEmail returns the tester of an email (normalised), or errs.NotFound.
func (db *Testers) TesterByEmail(ctx context.Context, email string) (*distribution.Tester, error) {
	ts, err := collectTesters(db.Pool.Query(ctx, testerSelect+` WHERE t.email = $1`, email))
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, errs.New(errs.NotFound, "no tester %s", email)
	}
	return &ts[0], nil
}

// SetChannelGroups makes groups (ids) the ones that open a channel: none makes it open as it was
// before it had any (public, or its password).
func (db *Testers) SetChannelGroups(ctx context.Context, channelID int64, groupIDs []int64) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE channels SET tester_only = $2 WHERE id = $1`, channelID, len(groupIDs) > 0)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.New(errs.NotFound, "channel not found")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM channel_tester_groups WHERE channel_id = $1 AND NOT group_id = ANY($2)`, channelID, groupIDs); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO channel_tester_groups (channel_id, group_id) SELECT $1, unnest($2::bigint[])
			ON CONFLICT DO NOTHING`, channelID, groupIDs)
		return err
	})
}

// mayInstall is the condition that tester $1 may install release $3 of channel $2 (release 0:
// some release of the channel): they are in a group that opens the channel, or the release (one
// of the channel's) was distributed to them by name (recorded, or queued and not yet expanded)
// or to a group they are in now.
const mayInstall = `EXISTS (SELECT 1 FROM channel_tester_groups cg JOIN tester_group_members m ON m.group_id = cg.group_id
		WHERE cg.channel_id = $2 AND m.tester_id = $1)
	OR EXISTS (SELECT 1 FROM release_testers rt JOIN releases r ON r.id = rt.release_id
		WHERE rt.tester_id = $1 AND rt.direct AND r.channel_id = $2 AND ($3 = 0 OR r.id = $3))
	OR EXISTS (SELECT 1 FROM release_tester_groups rg JOIN tester_group_members m ON m.group_id = rg.group_id
		JOIN releases r ON r.id = rg.release_id WHERE m.tester_id = $1 AND r.channel_id = $2 AND ($3 = 0 OR r.id = $3))
	OR EXISTS (SELECT 1 FROM release_distributions d JOIN releases r ON r.id = d.release_id JOIN testers t ON t.email = ANY (d.emails)
		WHERE t.id = $1 AND r.channel_id = $2 AND ($3 = 0 OR r.id = $3))`

// MayInstall reports whether a tester may install a release of a channel (releaseID 0: any).
func (db *Testers) MayInstall(ctx context.Context, testerID, channelID, releaseID int64) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT `+mayInstall, testerID, channelID, releaseID).Scan(&ok)
	return ok, dbErr(err)
}

// ReleaseTesters lists everyone who may install a release, with what they did with it.
func (db *Testers) ReleaseTesters(ctx context.Context, releaseID int64) ([]distribution.ReleaseTester, error) {
	rows, err := db.Pool.Query(ctx, `WITH rel AS (SELECT id, channel_id FROM releases WHERE id = $1),
		who AS (
			SELECT m.tester_id FROM rel JOIN channel_tester_groups cg ON cg.channel_id = rel.channel_id
				JOIN tester_group_members m ON m.group_id = cg.group_id
			UNION SELECT m.tester_id FROM release_tester_groups rg JOIN tester_group_members m ON m.group_id = rg.group_id
				WHERE rg.release_id = $1
			UNION SELECT rt.tester_id FROM release_testers rt WHERE rt.release_id = $1 AND rt.direct)
		SELECT t.id, t.email, t.name, t.created_at, coalesce(rt.direct, false), rt.invited_at, rt.opened_at, rt.installed_at,
			coalesce(rt.mail, 'none')
		FROM who JOIN testers t ON t.id = who.tester_id LEFT JOIN release_testers rt ON rt.release_id = $1 AND rt.tester_id = t.id
		ORDER BY t.email`, releaseID)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.ReleaseTester, error) {
		var rt distribution.ReleaseTester
		var invited *time.Time
		err := r.Scan(&rt.ID, &rt.Email, &rt.Name, &rt.CreatedAt, &rt.Direct, &invited, &rt.OpenedAt, &rt.InstalledAt, &rt.Mail)
		if invited != nil {
			rt.InvitedAt = *invited
		}
		return rt, err
	})
	return out, dbErr(err)
}

// MarkSeen records that a tester opened (installed false) or installed a release, the first
// time only; it reports whether this was the first time.
func (db *Testers) MarkSeen(ctx context.Context, releaseID, testerID int64, installed bool) (bool, error) {
	col := "opened_at"
	if installed {
		col = "installed_at"
	}
	// A tester of the channel's groups who joined after the release went out has no row yet:
	// one is made, as if invited now.
	tag, err := db.Pool.Exec(ctx, `INSERT INTO release_testers (release_id, tester_id, `+col+`) VALUES ($1, $2, now())
		ON CONFLICT (release_id, tester_id) DO UPDATE SET `+col+` = now() WHERE release_testers.`+col+` IS NULL`, releaseID, testerID)
	if isForeignKeyViolation(err) {
		return false, nil
	}
	return tag.RowsAffected() == 1, dbErr(err)
}

// TesterReleases lists the releases a tester may install, newest first (at most limit).
func (db *Testers) TesterReleases(ctx context.Context, testerID int64, limit int) ([]distribution.TesterRelease, error) {
	rows, err := db.Pool.Query(ctx, `WITH ch AS (
			SELECT cg.channel_id FROM channel_tester_groups cg JOIN tester_group_members m ON m.group_id = cg.group_id WHERE m.tester_id = $1),
		rel AS (
			SELECT r.id FROM releases r WHERE r.channel_id IN (SELECT channel_id FROM ch)
			UNION SELECT rt.release_id FROM release_testers rt WHERE rt.tester_id = $1 AND rt.direct
			UNION SELECT rg.release_id FROM release_tester_groups rg JOIN tester_group_members m ON m.group_id = rg.group_id
				WHERE m.tester_id = $1)
		SELECT a.id, a.name, c.id, c.slug, c.name, r.id, r.version, r.release_version, r.build_version, r.platform, r.created_at,
			CASE WHEN rt.installed_at IS NOT NULL THEN 'installed' WHEN rt.opened_at IS NOT NULL THEN 'opened' ELSE 'invited' END
		FROM rel JOIN releases r ON r.id = rel.id JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id
			JOIN apps a ON a.id = s.app_id LEFT JOIN release_testers rt ON rt.release_id = r.id AND rt.tester_id = $1
		ORDER BY r.created_at DESC, r.id DESC LIMIT $2`, testerID, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.TesterRelease, error) {
		var t distribution.TesterRelease
		return t, r.Scan(&t.AppID, &t.AppName, &t.ChannelID, &t.ChannelSlug, &t.ChannelName, &t.ReleaseID, &t.Version,
			&t.ReleaseVersion, &t.BuildVersion, &t.Platform, &t.CreatedAt, &t.State)
	})
	return out, dbErr(err)
}

// TesterApps lists the apps a tester was invited to, with their mail choice.
func (db *Testers) TesterApps(ctx context.Context, testerID int64) ([]distribution.TesterApp, error) {
	rows, err := db.Pool.Query(ctx, `SELECT a.id, a.name, ta.mail FROM tester_apps ta JOIN apps a ON a.id = ta.app_id
		WHERE ta.tester_id = $1 ORDER BY a.name, a.id`, testerID)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.TesterApp, error) {
		var t distribution.TesterApp
		return t, r.Scan(&t.AppID, &t.AppName, &t.Mail)
	})
	return out, dbErr(err)
}

// SetTesterMail sets a tester's mail choice for an app.
func (db *Testers) SetTesterMail(ctx context.Context, testerID, appID int64, mode string) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO tester_apps (tester_id, app_id, mail) VALUES ($1, $2, $3)
		ON CONFLICT (tester_id, app_id) DO UPDATE SET mail = EXCLUDED.mail`, testerID, appID, mode)
	if isForeignKeyViolation(err) {
		return errs.New(errs.NotFound, "no such app or tester")
	}
	return dbErr(err)
}

// CreateTesterLink records a sign-in link (by its secret's hash) and counts the request of
// client: it returns false, recording nothing, when the tester asked for more than perTester
// links or the client for more than perClient requests since since. The client's request is
// counted either way.
func (db *Testers) CreateTesterLink(ctx context.Context, idHash string, testerID int64, expires time.Time, client string,
	since time.Time, perTester, perClient int) (bool, error) {
	ok := false
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		// One client's requests take turns, so that concurrent ones cannot all pass the count.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7463, hashtext($1))`, client); err != nil {
			return err
		}
		var byClient, byTester int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM tester_link_requests WHERE client = $1 AND requested_at > $2),
			(SELECT count(*) FROM tester_links WHERE tester_id = $3 AND created_at > $2)`, client, since, testerID).Scan(&byClient, &byTester); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM tester_link_requests WHERE requested_at < $1`, since); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tester_link_requests (client) VALUES ($1)`, client); err != nil {
			return err
		}
		if byClient >= perClient || testerID == 0 || byTester >= perTester {
			return nil
		}
		ok = true
		_, err := tx.Exec(ctx, `INSERT INTO tester_links (id_hash, tester_id, expires_at) VALUES ($1, $2, $3)`, idHash, testerID, expires)
		return err
	})
	return ok, err
}

// UseTesterLink marks an unused, unexpired link used and returns its tester, once.
func (db *Testers) UseTesterLink(ctx context.Context, idHash string) (*distribution.Tester, error) {
	var t distribution.Tester
	err := db.Pool.QueryRow(ctx, `WITH l AS (UPDATE tester_links SET used_at = now()
			WHERE id_hash = $1 AND used_at IS NULL AND expires_at > now() RETURNING tester_id)
		SELECT t.id, t.email, t.name, t.created_at FROM l JOIN testers t ON t.id = l.tester_id`, idHash).Scan(&t.ID, &t.Email, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "this sign-in link was used already or has expired; ask for a new one")
	}
	return &t, dbErr(err)
}

// CreateTesterSession records a tester's session (by its secret's hash).
func (db *Testers) CreateTesterSession(ctx context.Context, idHash string, testerID int64, expires time.Time) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO tester_sessions (id_hash, tester_id, expires_at) VALUES ($1, $2, $3)`, idHash, testerID, expires)
	return dbErr(err)
}

// SessionTester returns the tester of an active, unexpired session, or errs.Unauthenticated.
func (db *Testers) SessionTester(ctx context.Context, idHash string) (*distribution.Tester, error) {
	var t distribution.Tester
	err := db.Pool.QueryRow(ctx, `SELECT t.id, t.email, t.name, t.created_at FROM tester_sessions s JOIN testers t ON t.id = s.tester_id
		WHERE s.id_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()`, idHash).Scan(&t.ID, &t.Email, &t.Name, &t.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.Unauthenticated, "sign in again")
	}
	return &t, dbErr(err)
}

// RevokeTesterSession ends one session; RevokeTesterSessions every session of a tester.
func (db *Testers) RevokeTesterSession(ctx context.Context, idHash string) error {
	_, err := db.Pool.Exec(ctx, `UPDATE tester_sessions SET revoked_at = now() WHERE id_hash = $1 AND revoked_at IS NULL`, idHash)
	return dbErr(err)
}

// RevokeTesterSessions ends every session of a tester.
func (db *Testers) RevokeTesterSessions(ctx context.Context, testerID int64) error {
	_, err := db.Pool.Exec(ctx, `UPDATE tester_sessions SET revoked_at = now() WHERE tester_id = $1 AND revoked_at IS NULL`, testerID)
	return dbErr(err)
}

// InDistributionTx runs fn in one transaction of a release's distribution.
func (db *Testers) InDistributionTx(ctx context.Context, fn func(tx distribution.DistributionTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(distributionTx{tx}) })
}

// distributionTx is distribution.DistributionTx on a transaction (the upload's embeds it).
type distributionTx struct{ tx pgx.Tx }

func (d distributionTx) GroupsByAlias(ctx context.Context, aliases []string) ([]distribution.TesterGroup, error) {
	return groupsByAlias(ctx, d.tx, aliases)
}

func (d distributionTx) WriteEvents(ctx context.Context, evs []distribution.Event) error {
	return writeEvents(ctx, d.tx, evs)
}

// WriteEventsNow puts events in the outbox in a transaction of their own (a tester's install).
func (db *Testers) WriteEventsNow(ctx context.Context, evs []distribution.Event) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return writeEvents(ctx, tx, evs) })
}

func (d distributionTx) WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error {
	return writeMail(ctx, d.tx, mails)
}

func (d distributionTx) Recipients(ctx context.Context, req distribution.DistributionRequest) ([]distribution.Recipient, error) {
	if err := upsertTesters(ctx, d.tx, req.Emails, nil); err != nil {
		return nil, err
	}
	req = withArrays(req)
	rows, err := d.tx.Query(ctx, recipientsQuery+` SELECT id, email, name, direct, knows_app, mail, already FROM r ORDER BY id`,
		req.Emails, req.ChannelID, req.GroupIDs, req.AppID, req.ReleaseID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Recipient, error) {
		var rc distribution.Recipient
		return rc, r.Scan(&rc.TesterID, &rc.Email, &rc.Name, &rc.Direct, &rc.KnowsApp, &rc.Mail, &rc.Already)
	})
}

func (d distributionTx) RecordDistribution(ctx context.Context, req distribution.DistributionRequest, ds []distribution.Delivery,
	summary []string) error {
	if len(req.GroupIDs) > 0 {
		if _, err := d.tx.Exec(ctx, `INSERT INTO release_tester_groups (release_id, group_id) SELECT $1, unnest($2::bigint[])
			ON CONFLICT DO NOTHING`, req.ReleaseID, req.GroupIDs); err != nil {
			return err
		}
	}
	if summary != nil {
		if _, err := d.tx.Exec(ctx, `INSERT INTO release_mailings (release_id, summary) VALUES ($1, $2)
			ON CONFLICT (release_id) DO NOTHING`, req.ReleaseID, summary); err != nil {
			return err
		}
	}
	if len(ds) == 0 {
		return nil
	}
	ids, direct := make([]int64, len(ds)), make([]bool, len(ds))
	mail, kind := make([]string, len(ds)), make([]string, len(ds))
	for i, x := range ds {
		ids[i], direct[i], mail[i], kind[i] = x.TesterID, x.Direct, x.Mail, x.Kind
	}
	// A tester the release went to before keeps what was mailed then: only "named for this
	// build" can change.
	if _, err := d.tx.Exec(ctx, `INSERT INTO release_testers (release_id, tester_id, direct, mail, mail_kind)
		SELECT $1, t, dr, ml, k FROM unnest($2::bigint[], $3::bool[], $4::text[], $5::text[]) AS x(t, dr, ml, k) ORDER BY t
		ON CONFLICT (release_id, tester_id) DO UPDATE SET direct = release_testers.direct OR EXCLUDED.direct`,
		req.ReleaseID, ids, direct, mail, kind); err != nil {
		return err
	}
	_, err := d.tx.Exec(ctx, `INSERT INTO tester_apps (tester_id, app_id) SELECT unnest($1::bigint[]), $2 ORDER BY 1
		ON CONFLICT DO NOTHING`, ids, req.AppID)
	return err
}

// recipientsQuery selects everyone a distribution reaches ($1 emails, $2 channel, $3 groups, $4
// app, $5 release), one row per tester: direct (named), knows_app (invited to the app before),
// mail (their choice for the app), already (the release went to them before).
const recipientsQuery = `WITH who AS (
		SELECT id, true AS direct FROM testers WHERE email = ANY($1)
		UNION ALL SELECT m.tester_id, false FROM tester_group_members m
			WHERE m.group_id IN (SELECT group_id FROM channel_tester_groups WHERE channel_id = $2) OR m.group_id = ANY($3)),
	one AS (SELECT id, bool_or(direct) AS direct FROM who GROUP BY id),
	r AS (SELECT t.id, t.email, t.name, one.direct, ta.tester_id IS NOT NULL AS knows_app, coalesce(ta.mail, 'every') AS mail,
			rt.tester_id IS NOT NULL AS already
		FROM one JOIN testers t ON t.id = one.id LEFT JOIN tester_apps ta ON ta.tester_id = t.id AND ta.app_id = $4
			LEFT JOIN release_testers rt ON rt.release_id = $5 AND rt.tester_id = t.id)`

func (d distributionTx) QueueDistribution(ctx context.Context, req distribution.DistributionRequest, notify bool,
	summary []string) (distribution.Distributed, error) {
	if err := upsertTesters(ctx, d.tx, req.Emails, nil); err != nil {
		return distribution.Distributed{}, err
	}
	req = withArrays(req)
	if len(req.GroupIDs) > 0 {
		if _, err := d.tx.Exec(ctx, `INSERT INTO release_tester_groups (release_id, group_id) SELECT $1, unnest($2::bigint[])
			ON CONFLICT DO NOTHING`, req.ReleaseID, req.GroupIDs); err != nil {
			return distribution.Distributed{}, err
		}
	}
	var out distribution.Distributed
	err := d.tx.QueryRow(ctx, recipientsQuery+` SELECT count(*) FILTER (WHERE NOT already),
		count(*) FILTER (WHERE NOT already AND $6 AND (NOT knows_app OR mail = 'every')),
		count(*) FILTER (WHERE NOT already AND NOT knows_app) FROM r`,
		req.Emails, req.ChannelID, req.GroupIDs, req.AppID, req.ReleaseID, notify).Scan(&out.Testers, &out.Notified, &out.Invited)
	if err != nil || out.Testers == 0 && len(req.Emails) == 0 {
		return out, err
	}
	_, err = d.tx.Exec(ctx, `INSERT INTO release_distributions (release_id, emails, group_ids, notify, summary) VALUES ($1, $2, $3, $4, $5)`,
		req.ReleaseID, req.Emails, req.GroupIDs, notify, summary)
	out.Queued = err == nil
	return out, err
}

func withArrays(req distribution.DistributionRequest) distribution.DistributionRequest {
	if req.GroupIDs == nil {
		req.GroupIDs = []int64{}
	}
	if req.Emails == nil {
		req.Emails = []string{}
	}
	return req
}

// InQueuedTx runs fn with the oldest queued distribution, locked for its transaction, and deletes
// it when fn succeeds (testers.MailingStore).
func (db *Testers) InQueuedTx(ctx context.Context, fn func(q *distribution.QueuedDistribution, tx distribution.DistributionTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		var q distribution.QueuedDistribution
		err := tx.QueryRow(ctx, `SELECT d.id, d.release_id, s.app_id, r.channel_id, d.emails, d.group_ids, d.notify, coalesce(d.summary, '{}')
			FROM release_distributions d JOIN releases r ON r.id = d.release_id JOIN channels c ON c.id = r.channel_id
			JOIN schemes s ON s.id = c.scheme_id ORDER BY d.id LIMIT 1 FOR UPDATE OF d SKIP LOCKED`).Scan(&q.ID, &q.Request.ReleaseID,
			&q.Request.AppID, &q.Request.ChannelID, &q.Request.Emails, &q.Request.GroupIDs, &q.Notify, &q.Summary)
		if errors.Is(err, pgx.ErrNoRows) {
			return fn(nil, nil)
		}
		if err != nil {
			return err
		}
		if err := fn(&q, distributionTx{tx}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM release_distributions WHERE id = $1`, q.ID)
		return err
	})
}

// InPendingTx runs fn with mails distributions recorded and not yet written, locked for its
// transaction (testers.MailingStore).
func (db *Testers) InPendingTx(ctx context.Context, limit int, fn func(pending []distribution.PendingMail, tx testers.PendingTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT rt.release_id, rt.tester_id, t.email, t.name, rt.mail_kind, coalesce(m.summary, '{}')
			FROM release_testers rt JOIN testers t ON t.id = rt.tester_id LEFT JOIN release_mailings m ON m.release_id = rt.release_id
			WHERE rt.mail = 'pending' ORDER BY rt.release_id, rt.tester_id LIMIT $1 FOR UPDATE OF rt SKIP LOCKED`, limit)
		if err != nil {
			return err
		}
		pending, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.PendingMail, error) {
			var p distribution.PendingMail
			return p, r.Scan(&p.ReleaseID, &p.TesterID, &p.Email, &p.Name, &p.Kind, &p.Summary)
		})
		if err != nil {
			return err
		}
		return fn(pending, pendingTx{distributionTx{tx}})
	})
}

// pendingTx writes pending mails in the transaction that found them.
type pendingTx struct{ distributionTx }

func (p pendingTx) MarkQueued(ctx context.Context, pending []distribution.PendingMail) error {
	rids, tids := make([]int64, len(pending)), make([]int64, len(pending))
	for i, x := range pending {
		rids[i], tids[i] = x.ReleaseID, x.TesterID
	}
	_, err := p.tx.Exec(ctx, `UPDATE release_testers rt SET mail = 'queued' FROM unnest($1::bigint[], $2::bigint[]) AS x(r, t)
		WHERE rt.release_id = x.r AND rt.tester_id = x.t AND rt.mail = 'pending'`, rids, tids)
	return err
}

// WriteMailNow puts one mail in the outbox on its own transaction (a sign-in link).
func (db *Testers) WriteMailNow(ctx context.Context, m distribution.OutgoingMail) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return writeMail(ctx, tx, []distribution.OutgoingMail{m}) })
}

// TesterByID returns a tester, or errs.NotFound.
func (db *Testers) TesterByID(ctx context.Context, id int64) (*distribution.Tester, error) {
	ts, err := collectTesters(db.Pool.Query(ctx, testerSelect+` WHERE t.id = $1`, id))
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, errs.New(errs.NotFound, "no tester %d", id)
	}
	return &ts[0], nil
}

// InDigestTx runs fn with the daily digests due, locked for its transaction (testers.DigestStore).
func (db *Testers) InDigestTx(ctx context.Context, every time.Duration, limit int,
	fn func(due []distribution.Digest, tx testers.DigestTx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		const waiting = `FROM release_testers rt JOIN releases r ON r.id = rt.release_id JOIN channels c ON c.id = r.channel_id
			JOIN schemes s ON s.id = c.scheme_id WHERE rt.tester_id = ta.tester_id AND s.app_id = ta.app_id AND rt.mail = 'digest'`
		rows, err := tx.Query(ctx, `SELECT ta.tester_id, ta.app_id, t.email, t.name, a.name FROM tester_apps ta
			JOIN testers t ON t.id = ta.tester_id JOIN apps a ON a.id = ta.app_id
			WHERE ta.mail = 'daily' AND EXISTS (SELECT 1 `+waiting+`)
				AND coalesce(ta.digest_at, (SELECT min(rt.invited_at) `+waiting+`)) <= now() - make_interval(secs => $1)
			ORDER BY ta.tester_id, ta.app_id LIMIT $2 FOR UPDATE OF ta SKIP LOCKED`, every.Seconds(), limit)
		if err != nil {
			return err
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Digest, error) {
			var d distribution.Digest
			return d, r.Scan(&d.TesterID, &d.AppID, &d.Email, &d.Name, &d.AppName)
		})
		if err != nil || len(due) == 0 {
			return err
		}
		tids, aids := make([]int64, len(due)), make([]int64, len(due))
		at := make(map[[2]int64]int, len(due))
		for i, d := range due {
			tids[i], aids[i] = d.TesterID, d.AppID
			at[[2]int64{d.TesterID, d.AppID}] = i
		}
		rows, err = tx.Query(ctx, `SELECT rt.tester_id, s.app_id, r.id, r.release_version, r.build_version, c.slug, c.name
			FROM unnest($1::bigint[], $2::bigint[]) AS d(tester_id, app_id)
			JOIN release_testers rt ON rt.tester_id = d.tester_id AND rt.mail = 'digest'
			JOIN releases r ON r.id = rt.release_id JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id
			WHERE s.app_id = d.app_id ORDER BY r.created_at, r.id`, tids, aids)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tid, aid int64
			var b distribution.DigestBuild
			if err := rows.Scan(&tid, &aid, &b.ReleaseID, &b.ReleaseVersion, &b.BuildVersion, &b.ChannelSlug, &b.ChannelName); err != nil {
				return err
			}
			i := at[[2]int64{tid, aid}]
			due[i].Builds = append(due[i].Builds, b)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return fn(due, digestTx{distributionTx{tx}})
	})
}

// digestTx records digests in the transaction that found them.
type digestTx struct{ distributionTx }

func (d digestTx) MarkDigested(ctx context.Context, due []distribution.Digest) error {
	var rids, tids, aids, atids []int64
	for _, dg := range due {
		aids, atids = append(aids, dg.AppID), append(atids, dg.TesterID)
		for _, b := range dg.Builds {
			rids, tids = append(rids, b.ReleaseID), append(tids, dg.TesterID)
		}
	}
	if _, err := d.tx.Exec(ctx, `UPDATE release_testers rt SET mail = 'digested' FROM unnest($1::bigint[], $2::bigint[]) AS x(r, t)
		WHERE rt.release_id = x.r AND rt.tester_id = x.t AND rt.mail = 'digest'`, rids, tids); err != nil {
		return err
	}
	_, err := d.tx.Exec(ctx, `UPDATE tester_apps ta SET digest_at = now() FROM unnest($1::bigint[], $2::bigint[]) AS x(t, a)
		WHERE ta.tester_id = x.t AND ta.app_id = x.a`, atids, aids)
	return err
}
