package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

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
		rows = append(rows, []any{m.ID, m.Kind, m.To, m.Subject, m.Text, m.HTML, h})
	}
	// A temporary table and one INSERT … SELECT: COPY cannot say ON CONFLICT, and ten thousand
	// mails are one round trip this way.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS mail_incoming (id text, kind text, recipient text,
		subject text, text_body text, html_body text, headers jsonb) ON COMMIT DELETE ROWS`); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"mail_incoming"},
		[]string{"id", "kind", "recipient", "subject", "text_body", "html_body", "headers"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, html_body, headers)
		SELECT id, kind, recipient, subject, text_body, html_body, headers FROM mail_incoming ON CONFLICT (id) DO NOTHING;
		TRUNCATE mail_incoming`)
	return err
}
