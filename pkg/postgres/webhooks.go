package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// insertEvents writes the events emit makes of v into the outbox, one row per enabled webhook of
// the event's channel or app that subscribes to it, inside tx.
func insertEvents[T any](ctx context.Context, tx pgx.Tx, emit func(T) ([]distribution.Event, error), v T) error {
	if emit == nil {
		return nil
	}
	evs, err := emit(v)
	if err != nil {
		return err
	}
	return writeEvents(ctx, tx, evs)
}

// writeEvents writes events into the outbox, one row per enabled webhook of the event's channel
// or app that subscribes to it.
func writeEvents(ctx context.Context, tx pgx.Tx, evs []distribution.Event) error {
	for _, e := range evs {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (webhook_id, event_id, event, payload)
			SELECT w.id, $1, $2, $3 FROM webhooks w
			WHERE w.enabled AND $2 = ANY (w.events) AND (w.channel_id = $4 OR w.app_id = $5)
			ON CONFLICT (webhook_id, event_id) DO NOTHING`, e.ID, e.Kind, e.Payload, e.ChannelID, e.AppID); err != nil {
			return err
		}
	}
	return nil
}

const webhookColumns = `id, coalesce(app_id, 0), coalesce(channel_id, 0), url, format, events, secret, robot_secret, enabled, created_at, updated_at`

func scanWebhook(row pgx.Row, w *distribution.Webhook) error {
	return row.Scan(&w.ID, &w.AppID, &w.ChannelID, &w.URL, &w.Format, &w.Events, &w.Secret, &w.RobotSecret, &w.Enabled, &w.CreatedAt, &w.UpdatedAt)
}

func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// CreateWebhook records a webhook of an app or a channel (errs.NotFound when it is gone).
func (db *Events) CreateWebhook(ctx context.Context, w *distribution.Webhook) (*distribution.Webhook, error) {
	var out distribution.Webhook
	err := scanWebhook(db.Pool.QueryRow(ctx, `INSERT INTO webhooks (app_id, channel_id, url, format, events, secret, robot_secret, enabled)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+webhookColumns,
		nullID(w.AppID), nullID(w.ChannelID), w.URL, w.Format, w.Events, w.Secret, w.RobotSecret, w.Enabled), &out)
	if isForeignKeyViolation(err) {
		if w.AppID != 0 {
			return nil, errs.New(errs.NotFound, "app %d not found", w.AppID)
		}
		return nil, errs.New(errs.NotFound, "channel %d not found", w.ChannelID)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &out, nil
}

// GetWebhook returns a webhook or errs.NotFound.
func (db *Events) GetWebhook(ctx context.Context, id int64) (*distribution.Webhook, error) {
	var w distribution.Webhook
	err := scanWebhook(db.Pool.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id), &w)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "webhook %d not found", id)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &w, nil
}

// ListWebhooks lists the webhooks of an app or a channel (or all, both 0), oldest first.
func (db *Events) ListWebhooks(ctx context.Context, appID, channelID int64) ([]distribution.Webhook, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks
		WHERE ($1 = 0 OR app_id = $1) AND ($2 = 0 OR channel_id = $2) ORDER BY id`, appID, channelID)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := []distribution.Webhook{}
	for rows.Next() {
		var w distribution.Webhook
		if err := scanWebhook(rows, &w); err != nil {
			return nil, dbErr(err)
		}
		out = append(out, w)
	}
	return out, dbErr(rows.Err())
}

// UpdateWebhook saves a webhook's URL, format, events, robot secret and enabled flag.
func (db *Events) UpdateWebhook(ctx context.Context, w *distribution.Webhook) (*distribution.Webhook, error) {
	var out distribution.Webhook
	err := scanWebhook(db.Pool.QueryRow(ctx, `UPDATE webhooks SET url = $2, format = $3, events = $4, enabled = $5, robot_secret = $6,
		updated_at = now() WHERE id = $1 RETURNING `+webhookColumns, w.ID, w.URL, w.Format, w.Events, w.Enabled, w.RobotSecret), &out)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "webhook %d not found", w.ID)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &out, nil
}

// DeleteWebhook deletes a webhook and its deliveries.
func (db *Events) DeleteWebhook(ctx context.Context, id int64) error {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "webhook %d not found", id)
	}
	return nil
}

const deliveryColumns = `d.id, d.webhook_id, d.event_id, d.event, d.payload, d.state, d.attempts, d.next_attempt_at, d.created_at, d.finished_at`

func deliveryDest(d *distribution.WebhookDelivery) []any {
	return []any{&d.ID, &d.WebhookID, &d.EventID, &d.Event, &d.Payload, &d.State, &d.Attempts, &d.NextAttemptAt, &d.CreatedAt, &d.FinishedAt}
}

// ListDeliveries returns a webhook's newest deliveries with their attempts.
func (db *Events) ListDeliveries(ctx context.Context, webhookID int64, limit int) ([]distribution.WebhookDelivery, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.webhook_id = $1
		ORDER BY d.id DESC LIMIT $2`, webhookID, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	out := []distribution.WebhookDelivery{}
	index := map[int64]int{}
	ids := []int64{}
	for rows.Next() {
		var d distribution.WebhookDelivery
		if err := rows.Scan(deliveryDest(&d)...); err != nil {
			rows.Close()
			return nil, dbErr(err)
		}
		d.History = []distribution.WebhookAttempt{}
		index[d.ID] = len(out)
		ids = append(ids, d.ID)
		out = append(out, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, dbErr(err)
	}
	arows, err := db.Pool.Query(ctx, `SELECT delivery_id, attempted_at, status_code, latency_ms, error FROM webhook_attempts
		WHERE delivery_id = ANY ($1) ORDER BY id`, ids)
	if err != nil {
		return nil, dbErr(err)
	}
	defer arows.Close()
	for arows.Next() {
		var id int64
		var a distribution.WebhookAttempt
		var ms int
		if err := arows.Scan(&id, &a.At, &a.StatusCode, &ms, &a.Error); err != nil {
			return nil, dbErr(err)
		}
		a.Latency = time.Duration(ms) * time.Millisecond
		d := &out[index[id]]
		d.History = append(d.History, a)
	}
	return out, dbErr(arows.Err())
}

// LeaseDeliveries takes due pending deliveries of enabled webhooks for lease, oldest first; rows
// another replica is leasing are skipped (FOR UPDATE SKIP LOCKED), and a lease that ran out (its
// replica died mid-send) makes the row due again.
func (db *Events) LeaseDeliveries(ctx context.Context, limit int, lease time.Duration) ([]distribution.DueDelivery, error) {
	rows, err := db.Pool.Query(ctx, `WITH due AS (
			SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
			WHERE d.state = 'pending' AND d.next_attempt_at <= now() AND (d.leased_until IS NULL OR d.leased_until < now()) AND w.enabled
			ORDER BY d.next_attempt_at, d.id LIMIT $1 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET leased_until = now() + $2::interval, attempts = d.attempts + 1
		FROM due, webhooks w WHERE d.id = due.id AND w.id = d.webhook_id
		RETURNING `+deliveryColumns+`, w.url, w.format, w.secret, w.robot_secret`, limit, lease.String())
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	var out []distribution.DueDelivery
	for rows.Next() {
		var d distribution.DueDelivery
		if err := rows.Scan(append(deliveryDest(&d.WebhookDelivery), &d.URL, &d.Format, &d.Secret, &d.RobotSecret)...); err != nil {
			return nil, dbErr(err)
		}
		out = append(out, d)
	}
	return out, dbErr(rows.Err())
}

// FinishAttempt records an attempt and moves the delivery on, ending its lease.
func (db *Events) FinishAttempt(ctx context.Context, id int64, a distribution.WebhookAttempt, state string, next time.Time) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error)
			VALUES ($1, $2, $3, $4, $5)`, id, a.At, a.StatusCode, a.Latency.Milliseconds(), a.Error); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = $2, leased_until = NULL,
			next_attempt_at = CASE WHEN $2 = 'pending' THEN $3 ELSE next_attempt_at END,
			finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE now() END WHERE id = $1`, id, state, next)
		return err
	})
}

// RecordDelivery records a delivery already made (a test ping) with its one attempt.
func (db *Events) RecordDelivery(ctx context.Context, d *distribution.WebhookDelivery, a distribution.WebhookAttempt) error {
	return db.Tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO webhook_deliveries (webhook_id, event_id, event, payload, state, attempts, finished_at)
			VALUES ($1, $2, $3, $4, $5, $6, now()) RETURNING id, created_at, next_attempt_at, finished_at`,
			d.WebhookID, d.EventID, d.Event, d.Payload, d.State, d.Attempts).Scan(&d.ID, &d.CreatedAt, &d.NextAttemptAt, &d.FinishedAt); err != nil {
			if isForeignKeyViolation(err) {
				return errs.New(errs.NotFound, "webhook %d not found", d.WebhookID)
			}
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error)
			VALUES ($1, $2, $3, $4, $5)`, d.ID, a.At, a.StatusCode, a.Latency.Milliseconds(), a.Error)
		return err
	})
}

// AddDownloads adds download counts and writes each release's release.downloaded events, in one
// transaction; releases deleted since they were counted are skipped.
func (db *Events) AddDownloads(ctx context.Context, counts map[int64]int64, emit func(rc *distribution.ReleaseContext, n int64) ([]distribution.Event, error)) error {
	ids := make([]int64, 0, len(counts))
	ns := make([]int64, 0, len(counts))
	for id, n := range counts {
		ids, ns = append(ids, id), append(ns, n)
	}
	return db.Tx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO release_downloads AS d (release_id, downloads)
			SELECT v.id, v.n FROM unnest($1::bigint[], $2::bigint[]) AS v(id, n) JOIN releases r ON r.id = v.id
			ORDER BY v.id
			ON CONFLICT (release_id) DO UPDATE SET downloads = d.downloads + EXCLUDED.downloads
			RETURNING d.release_id`, ids, ns)
		if err != nil {
			return err
		}
		counted, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || emit == nil {
			return err
		}
		hooked, err := db.hasWebhooksFor(ctx, tx, webhook.EventReleaseDownloaded)
		if err != nil || !hooked {
			return err
		}
		for _, id := range counted {
			rc, err := getRelease(ctx, tx, id)
			if err != nil {
				return err
			}
			n := counts[id]
			if err := insertEvents(ctx, tx, func(rc *distribution.ReleaseContext) ([]distribution.Event, error) { return emit(rc, n) }, rc); err != nil {
				return err
			}
		}
		return nil
	})
}

// hasWebhooksFor reports whether any enabled webhook subscribes to event, so that a flush of
// download counts reads releases only when someone listens.
func (db *Events) hasWebhooksFor(ctx context.Context, q querier, event string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE enabled AND $1 = ANY (events))`, event).Scan(&ok)
	return ok, err
}
