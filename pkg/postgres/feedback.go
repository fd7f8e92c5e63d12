package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/feedback"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Feedback holds testers' reports on builds and their screenshots (feedback.Reports).
type Feedback struct{ *pool }

const feedbackColumns = `f.id, f.release_id, f.app_id, f.channel_id, coalesce(f.tester_id, 0), coalesce(f.user_id, 0), f.author_kind,
	f.author_name, f.author_email, f.body, f.device, f.os_version, f.locale, f.app_state, f.source, f.state, f.state_by, f.state_at,
	f.created_at, r.release_version, r.build_version, r.version, c.slug, c.name, a.name,
	coalesce((SELECT json_agg(json_build_object('position', s.position, 'object_key', s.object_key, 'thumb_key', s.thumb_key,
		'content_type', s.content_type, 'size', s.size, 'width', s.width, 'height', s.height) ORDER BY s.position)
		FROM feedback_screenshots s WHERE s.feedback_id = f.id), '[]')`

const feedbackFrom = ` FROM feedback f JOIN releases r ON r.id = f.release_id JOIN channels c ON c.id = f.channel_id JOIN apps a ON a.id = f.app_id`

type screenshotRow struct {
	Position    int    `json:"position"`
	ObjectKey   string `json:"object_key"`
	ThumbKey    string `json:"thumb_key"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
}

func scanFeedback(row pgx.Row, f *distribution.Feedback) error {
	var state []byte
	var shots []byte
	err := row.Scan(&f.ID, &f.ReleaseID, &f.AppID, &f.ChannelID, &f.TesterID, &f.UserID, &f.AuthorKind, &f.AuthorName, &f.AuthorEmail,
		&f.Text, &f.Device, &f.OSVersion, &f.Locale, &state, &f.Source, &f.State, &f.StateBy, &f.StateAt, &f.CreatedAt,
		&f.ReleaseVersion, &f.BuildVersion, &f.ReleaseNumber, &f.ChannelSlug, &f.ChannelName, &f.AppName, &shots)
	if err != nil {
		return err
	}
	if len(state) > 0 {
		f.AppState = json.RawMessage(state)
	}
	var rows []screenshotRow
	if err := json.Unmarshal(shots, &rows); err != nil {
		return err
	}
	f.Screenshots = make([]distribution.Screenshot, len(rows))
	for i, s := range rows {
		f.Screenshots[i] = distribution.Screenshot{Position: s.Position, ObjectKey: s.ObjectKey, ThumbKey: s.ThumbKey,
			ContentType: s.ContentType, Size: s.Size, Width: s.Width, Height: s.Height}
	}
	return nil
}

func collectFeedback(rows pgx.Rows, err error) ([]distribution.Feedback, error) {
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Feedback, error) {
		var f distribution.Feedback
		return f, scanFeedback(r, &f)
	})
	if out == nil {
		out = []distribution.Feedback{}
	}
	return out, dbErr(err)
}

// ReserveFeedbackAttempt counts a report of a client without credentials on a channel, unless the
// client or the channel already reached its limit since since. One channel's reservations are
// serialised (a transaction-scoped advisory lock), so concurrent reports cannot pass a limit
// together; the channel's attempts older than the window go in the same step.
func (db *Feedback) ReserveFeedbackAttempt(ctx context.Context, channelID int64, client string, since time.Time, perClient, perChannel int) (bool, error) {
	var ok bool
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7464, $1::int)`, int32(channelID)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM feedback_attempts WHERE channel_id = $1 AND at < $2`, channelID, since); err != nil {
			return err
		}
		var mine, all int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE client = $2), count(*) FILTER (WHERE NOT starts_with(client, $3))
			FROM feedback_attempts WHERE channel_id = $1`, channelID, client, distribution.TesterClientPrefix).Scan(&mine, &all); err != nil {
			return err
		}
		if mine >= perClient || all >= perChannel {
			return nil
		}
		ok = true
		_, err := tx.Exec(ctx, `INSERT INTO feedback_attempts (channel_id, client) VALUES ($1, $2)`, channelID, client)
		return err
	})
	return ok, err
}

// InFeedbackTx runs fn in one transaction.
func (db *Feedback) InFeedbackTx(ctx context.Context, fn func(tx feedback.Tx) error) error {
	return db.Tx(ctx, func(tx pgx.Tx) error { return fn(feedbackTx{tx}) })
}

// GetFeedback returns one report with its build's names and its screenshots.
func (db *Feedback) GetFeedback(ctx context.Context, id int64) (*distribution.Feedback, error) {
	var f distribution.Feedback
	err := scanFeedback(db.Pool.QueryRow(ctx, `SELECT `+feedbackColumns+feedbackFrom+` WHERE f.id = $1`, id), &f)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "feedback %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &f, nil
}

// ListFeedback returns a page of an app's feedback, newest first, as q filters it, and how many
// match in all.
func (db *Feedback) ListFeedback(ctx context.Context, q distribution.FeedbackQuery) ([]distribution.Feedback, int, error) {
	args := []any{q.AppID}
	where := []string{"f.app_id = $1"}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.ReleaseID != 0 {
		where = append(where, "f.release_id = "+arg(q.ReleaseID))
	}
	if q.TesterID != 0 {
		where = append(where, "f.tester_id = "+arg(q.TesterID))
	}
	if q.State != "" {
		where = append(where, "f.state = "+arg(q.State))
	}
	if q.Search != "" {
		p := arg("%" + escapeLike(q.Search) + "%")
		where = append(where, "(f.body ILIKE "+p+" OR f.author_name ILIKE "+p+" OR f.author_email ILIKE "+p+" OR f.device ILIKE "+p+")")
	}
	cond := " WHERE " + strings.Join(where, " AND ")
	var total int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM feedback f`+cond, args...).Scan(&total); err != nil {
		return nil, 0, dbErr(err)
	}
	p := q.Page
	if p.PerPage <= 0 {
		p = distribution.Page{Page: 1, PerPage: 50}
	}
	limit, offset := arg(p.PerPage), arg(p.Offset())
	out, err := collectFeedback(db.Pool.Query(ctx, `SELECT `+feedbackColumns+feedbackFrom+cond+` ORDER BY f.id DESC LIMIT `+limit+` OFFSET `+offset, args...))
	return out, total, err
}

// TesterFeedback returns a tester's own reports, newest first.
func (db *Feedback) TesterFeedback(ctx context.Context, testerID int64, limit int) ([]distribution.Feedback, error) {
	return collectFeedback(db.Pool.Query(ctx, `SELECT `+feedbackColumns+feedbackFrom+` WHERE f.tester_id = $1 ORDER BY f.id DESC LIMIT $2`,
		testerID, limit))
}

// FeedbackMailRecipients are the addresses of the app's members who chose its feedback by mail.
func (db *Feedback) FeedbackMailRecipients(ctx context.Context, appID int64) ([]string, error) {
	rows, err := db.Pool.Query(ctx, `SELECT DISTINCT lower(u.email) FROM app_members m JOIN users u ON u.id = m.user_id
		WHERE m.app_id = $1 AND m.feedback_mail AND u.email <> '' ORDER BY 1`, appID)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return out, dbErr(err)
}

// SetFeedbackMail records a member's choice; an admin who is not a member becomes one for it.
func (db *Feedback) SetFeedbackMail(ctx context.Context, appID, userID int64, on bool) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO app_members (app_id, user_id, feedback_mail) VALUES ($1, $2, $3)
		ON CONFLICT (app_id, user_id) DO UPDATE SET feedback_mail = EXCLUDED.feedback_mail`, appID, userID, on)
	return dbErr(err)
}

// FeedbackMail reports a member's choice (false for a non-member).
func (db *Feedback) FeedbackMail(ctx context.Context, appID, userID int64) (bool, error) {
	var on bool
	err := db.Pool.QueryRow(ctx, `SELECT feedback_mail FROM app_members WHERE app_id = $1 AND user_id = $2`, appID, userID).Scan(&on)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return on, dbErr(err)
}

// feedbackTx is the transaction of one change to feedback (feedback.Tx).
type feedbackTx struct{ tx pgx.Tx }

func (t feedbackTx) InsertFeedback(ctx context.Context, f *distribution.Feedback) (int64, error) {
	var state any
	if len(f.AppState) > 0 {
		state = []byte(f.AppState)
	}
	var id int64
	err := t.tx.QueryRow(ctx, `INSERT INTO feedback (release_id, app_id, channel_id, tester_id, user_id, author_kind, author_name,
		author_email, body, device, os_version, locale, app_state, source)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`,
		f.ReleaseID, f.AppID, f.ChannelID, nullID(f.TesterID), nullID(f.UserID), f.AuthorKind, f.AuthorName, f.AuthorEmail,
		f.Text, f.Device, f.OSVersion, f.Locale, state, f.Source).Scan(&id)
	if isForeignKeyViolation(err) {
		return 0, errs.New(errs.NotFound, "this build was deleted while the feedback was sent")
	}
	if err != nil {
		return 0, err
	}
	var keys []string
	for _, s := range f.Screenshots {
		if _, err := t.tx.Exec(ctx, `INSERT INTO feedback_screenshots (feedback_id, position, object_key, thumb_key, content_type, size, width, height)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, s.Position, s.ObjectKey, s.ThumbKey, s.ContentType, s.Size, s.Width, s.Height); err != nil {
			return 0, err
		}
		keys = append(keys, s.ObjectKey, s.ThumbKey)
	}
	if len(keys) > 0 {
		if err := claim(ctx, t.tx, keys...); err != nil {
			return 0, err
		}
	}
	return id, nil
}

func (t feedbackTx) SetFeedbackState(ctx context.Context, id int64, state, by string) error {
	tag, err := t.tx.Exec(ctx, `UPDATE feedback SET state = $2, state_by = $3, state_at = now() WHERE id = $1`, id, state, by)
	if err == nil && tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "feedback %d not found", id)
	}
	return err
}

func (t feedbackTx) DeleteFeedback(ctx context.Context, id int64) error {
	tag, err := t.tx.Exec(ctx, `DELETE FROM feedback WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "feedback %d not found", id)
	}
	return err
}

func (t feedbackTx) WriteEvents(ctx context.Context, evs []distribution.Event) error {
	return writeEvents(ctx, t.tx, evs)
}

func (t feedbackTx) WriteMail(ctx context.Context, mails []distribution.OutgoingMail) error {
	return writeMail(ctx, t.tx, mails)
}

func (t feedbackTx) Audit(ctx context.Context, r distribution.AuditRecord) error {
	return insertAudit(ctx, t.tx, r)
}
