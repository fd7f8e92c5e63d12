package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// writeMail puts mails in the outbox inside tx, the transaction of what causes them: they are
// sent (by the mail sender) only if it commits. A mail whose id is in the outbox already is left
// as it is (a use case retried with the same ids sends each once).
func writeMail(ctx context.Context, tx pgx.Tx, mails []distribution.OutgoingMail) error {
	if len(mails) == 0 {
		return nil
	}
	rows := make([][]any, 0, len(mails))
	for _, m := range mails {
		h, err := json.Marshal(m.Headers)
		if err != nil {
			return err
		}
		if m.Headers == nil {
			h = []byte("{}")
		}
		inline := []byte("[]")
		if len(m.Inline) > 0 {
			if inline, err = json.Marshal(inlineRows(m.Inline)); err != nil {
				return err
			}
		}
		rows = append(rows, []any{m.ID, m.Kind, m.To, m.Subject, m.Text, m.HTML, h, inline})
	}
	// A temporary table and one INSERT … SELECT: COPY cannot say ON CONFLICT, and ten thousand
	// mails are one round trip this way.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS mail_incoming (id text, kind text, recipient text,
		subject text, text_body text, html_body text, headers jsonb, inline jsonb) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"mail_incoming"},
		[]string{"id", "kind", "recipient", "subject", "text_body", "html_body", "headers", "inline"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, html_body, headers, inline)
		SELECT id, kind, recipient, subject, text_body, html_body, headers, inline FROM mail_incoming ON CONFLICT (id) DO NOTHING;
		TRUNCATE mail_incoming`)
	return err
}

// EnqueueMail puts mails in the outbox in a transaction of their own: for a mail that nothing
// else is written with (and for tests). Mail caused by a write goes in that write's transaction
// (writeMail), so that it is sent only if the write commits.
func (m *Mail) EnqueueMail(ctx context.Context, mails []distribution.OutgoingMail) error {
	return m.Tx(ctx, func(tx pgx.Tx) error { return writeMail(ctx, tx, mails) })
}

// LeaseMail takes up to limit due mails for lease and counts their attempt: pending mails whose
// next attempt is due, and mails whose lease ran out (their replica died mid-send, or never
// recorded the outcome): those are due again. A row another replica is leasing at this moment is
// skipped, not waited for (FOR UPDATE SKIP LOCKED), so replicas share the outbox without taking
// one mail twice.
func (m *Mail) LeaseMail(ctx context.Context, limit int, lease time.Duration) ([]distribution.DueMail, error) {
	rows, err := m.Pool.Query(ctx, `WITH due AS (
			SELECT id FROM mail_outbox
			WHERE state IN ('pending', 'sending') AND next_attempt_at <= now()
			  AND (state = 'pending' OR lease_until <= now())
			ORDER BY next_attempt_at, id
			LIMIT $1
			FOR UPDATE SKIP LOCKED)
		UPDATE mail_outbox o SET state = 'sending', lease_until = now() + make_interval(secs => $2), attempts = o.attempts + 1
		FROM due WHERE o.id = due.id
		RETURNING o.id, o.kind, o.recipient, o.subject, o.text_body, o.html_body, o.headers, o.attempts, o.inline`,
		limit, lease.Seconds())
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.DueMail, error) {
		var d distribution.DueMail
		var headers, inline []byte
		if err := r.Scan(&d.ID, &d.Kind, &d.To, &d.Subject, &d.Text, &d.HTML, &headers, &d.Attempt, &inline); err != nil {
			return d, err
		}
		if err := json.Unmarshal(headers, &d.Headers); err != nil {
			return d, err
		}
		var imgs []inlineRow
		if err := json.Unmarshal(inline, &imgs); err != nil {
			return d, err
		}
		for _, i := range imgs {
			d.Inline = append(d.Inline, distribution.MailImage{CID: i.CID, ObjectKey: i.Key, ContentType: i.ContentType})
		}
		return d, nil
	})
	return out, dbErr(err)
}

// FinishMail records a leased mail's attempt: sent (its bodies are cleared: a sent mail's text,
// which may hold a sign-in link, stays in no database dump), pending again at f.Next, or failed.
// It reports false, changing nothing, when the mail is no longer leased with this attempt (the
// lease ran out and another replica took it).
func (m *Mail) FinishMail(ctx context.Context, id string, attempt int, f distribution.MailFinish) (bool, error) {
	var errText *string
	if f.Error != "" {
		errText = &f.Error
	}
	var tag pgconn.CommandTag
	var err error
	switch f.State {
	case distribution.OutboxSent:
		tag, err = m.Pool.Exec(ctx, `UPDATE mail_outbox SET state = 'sent', sent_at = now(), lease_until = NULL, last_error = NULL,
			text_body = '', html_body = '', headers = '{}'
			WHERE id = $1 AND state = 'sending' AND attempts = $2`, id, attempt)
	case distribution.OutboxPending:
		tag, err = m.Pool.Exec(ctx, `UPDATE mail_outbox SET state = 'pending', next_attempt_at = $3, lease_until = NULL, last_error = $4
			WHERE id = $1 AND state = 'sending' AND attempts = $2`, id, attempt, f.Next, errText)
	case distribution.OutboxFailed:
		tag, err = m.Pool.Exec(ctx, `UPDATE mail_outbox SET state = 'failed', lease_until = NULL, last_error = $3
			WHERE id = $1 AND state = 'sending' AND attempts = $2`, id, attempt, errText)
	default:
		return false, fmt.Errorf("FinishMail: state %q", f.State)
	}
	if err != nil {
		return false, dbErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseMail gives back a leased mail that was not attempted (its replica stopped first): due at
// once, its attempt uncounted.
func (m *Mail) ReleaseMail(ctx context.Context, id string, attempt int) error {
	_, err := m.Pool.Exec(ctx, `UPDATE mail_outbox SET state = 'pending', lease_until = NULL, attempts = attempts - 1
		WHERE id = $1 AND state = 'sending' AND attempts = $2`, id, attempt)
	return dbErr(err)
}

// MailCounts counts the outbox's mails waiting to be sent (pending or being sent) and given up.
func (m *Mail) MailCounts(ctx context.Context) (distribution.MailCounts, error) {
	var c distribution.MailCounts
	err := m.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM mail_outbox WHERE state IN ('pending', 'sending')),
		(SELECT count(*) FROM mail_outbox WHERE state = 'failed')`).Scan(&c.Pending, &c.Failed)
	return c, dbErr(err)
}

// PruneMail deletes up to limit mails sent or given up before cutoff, oldest first, and returns
// how many it deleted. Their rows are kept that long so that a use case retried with the same
// mail ids (writeMail) does not send them again.
func (m *Mail) PruneMail(ctx context.Context, cutoff time.Time, limit int) (int64, error) {
	tag, err := m.Pool.Exec(ctx, `DELETE FROM mail_outbox WHERE id IN (
		SELECT id FROM mail_outbox WHERE state IN ('sent', 'failed') AND coalesce(sent_at, created_at) < $1
		ORDER BY coalesce(sent_at, created_at) LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, dbErr(err)
	}
	return tag.RowsAffected(), nil
}

// inlineRow is one of mail_outbox.inline's images.
type inlineRow struct {
	CID         string `json:"cid"`
	Key         string `json:"key"`
	ContentType string `json:"content_type"`
}

func inlineRows(imgs []distribution.MailImage) []inlineRow {
	out := make([]inlineRow, len(imgs))
	for i, m := range imgs {
		out[i] = inlineRow{CID: m.CID, Key: m.ObjectKey, ContentType: m.ContentType}
	}
	return out
}
