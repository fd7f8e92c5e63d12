package events

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// WebhookStore keeps webhooks and shows their outbox.
type WebhookStore interface {
	CreateWebhook(ctx context.Context, w *distribution.Webhook) (*distribution.Webhook, error)
	GetWebhook(ctx context.Context, id int64) (*distribution.Webhook, error)
	// ListWebhooks lists the webhooks of an app (appID) or a channel (channelID), or all (both 0).
	ListWebhooks(ctx context.Context, appID, channelID int64) ([]distribution.Webhook, error)
	UpdateWebhook(ctx context.Context, w *distribution.Webhook) (*distribution.Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	// ListDeliveries returns a webhook's newest deliveries with their attempts.
	ListDeliveries(ctx context.Context, webhookID int64, limit int) ([]distribution.WebhookDelivery, error)
	// RecordDelivery records a delivery made at once (the "send test" call) with its attempt.
	RecordDelivery(ctx context.Context, d *distribution.WebhookDelivery, a distribution.WebhookAttempt) error
}

// WebhookInput is what a client sets on a webhook; nil fields are left as they are.
type WebhookInput struct {
	URL    *string `param:"url"`
	Format *string `param:"format"`
	// Events are the event names the webhook subscribes to (nil: leave them; empty: every event).
	Events  []string `param:"events,names"`
	Enabled *bool    `param:"enabled"`
	// RobotSecret sets a DingTalk or Feishu robot's signing secret ("" removes it).
	RobotSecret *string `param:"robot_secret"`
}

// Webhooks runs the use cases of webhooks: making, changing and deleting them, their delivery
// history, and sending a test event at once.
type Webhooks struct {
	Store WebhookStore
	// Client sends webhooks (webhook.NewClient: no redirects, and no private addresses at dial
	// time unless allowed); the Sender shares it.
	Client *http.Client
	// AllowPrivate lets webhooks target loopback, private and link-local addresses.
	AllowPrivate bool
	// Audit records each change as the context's actor, naming the webhook by what it serves
	// (Names: catalog.Apps), never by its URL, which may hold a secret. Nil: not recorded.
	Audit *distribution.AuditLog
	Names WebhookNames
	// Policy decides who may read and change webhooks (their URLs may hold a chat service's
	// secret).
	Policy *policy.Policy
}

// may checks the context's actor may manage webhooks.
func (wh *Webhooks) may(ctx context.Context) error {
	return wh.Policy.Authorize(ctx, policy.ManageWebhooks, policy.Installation)
}

// WebhookNames names the app or channel a webhook serves (catalog.Apps).
type WebhookNames interface {
	App(ctx context.Context, id int64) (*distribution.App, error)
	ChannelByID(ctx context.Context, id int64) (*distribution.ChannelContext, error)
}

// audit records a change to a webhook: "App · Beta webhook (slack)".
func (wh *Webhooks) audit(ctx context.Context, action string, w *distribution.Webhook) {
	if wh.Audit == nil {
		return
	}
	t := distribution.AuditTarget{Kind: distribution.TargetWebhook, ID: w.ID, Name: "webhook (" + w.Format + ")"}
	if wh.Names != nil && w.ChannelID != 0 {
		if cc, err := wh.Names.ChannelByID(ctx, w.ChannelID); err == nil {
			t.AppID, t.Name = cc.App.ID, cc.App.Name+" · "+cc.Channel.Name+" webhook ("+w.Format+")"
		}
	} else if wh.Names != nil && w.AppID != 0 {
		if a, err := wh.Names.App(ctx, w.AppID); err == nil {
			t.AppID, t.Name = a.ID, a.Name+" webhook ("+w.Format+")"
		}
	}
	wh.Audit.Record(ctx, action, t, map[string]any{"webhook_id": w.ID})
}

// checkWebhook validates a webhook's URL (including where it points), format and events.
func (wh *Webhooks) checkWebhook(ctx context.Context, w *distribution.Webhook) error {
	if err := webhook.CheckURL(ctx, w.URL, wh.AllowPrivate, nil); err != nil {
		var ue *webhook.URLError
		if errors.As(err, &ue) {
			return errs.Field("url", "%s", strings.TrimPrefix(ue.Reason, "url: "))
		}
		return errs.Field("url", "is not a valid webhook URL")
	}
	if !webhook.ValidFormat(w.Format) {
		return errs.Field("format", "must be one of %s", strings.Join(webhook.Formats, ", "))
	}
	if len(w.Events) == 0 {
		return errs.Field("events", "must name at least one of %s", strings.Join(webhook.Events, ", "))
	}
	switch {
	case w.RobotSecret != "" && !webhook.RobotSigned(w.Format):
		return errs.Field("robot_secret", "is only for the dingtalk and feishu formats (their robots' own signing secret)")
	case len(w.RobotSecret) > 255 || !utf8.ValidString(w.RobotSecret) || strings.ContainsAny(w.RobotSecret, "\r\n"):
		return errs.Field("robot_secret", "must be the robot's secret as the chat service shows it: one line, at most 255 bytes")
	}
	seen := map[string]bool{}
	for _, e := range w.Events {
		if !webhook.ValidEvent(e) {
			return errs.Field("events", "unknown event %s; events are %s", quote(e), strings.Join(webhook.Events, ", "))
		}
		seen[e] = true
	}
	w.Events = w.Events[:0]
	for _, e := range webhook.Events {
		if seen[e] {
			w.Events = append(w.Events, e)
		}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + s + `"`
}

// CreateWebhook adds a webhook to an app (appID) or a channel (channelID); the returned webhook
// carries its secret, shown once.
func (wh *Webhooks) CreateWebhook(ctx context.Context, appID, channelID int64, in WebhookInput) (*distribution.Webhook, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	if (appID == 0) == (channelID == 0) {
		return nil, errs.Invalidf("a webhook belongs to an app or to a channel")
	}
	w := &distribution.Webhook{AppID: appID, ChannelID: channelID, Format: webhook.FormatSlipway, Events: webhook.Events, Enabled: true}
	if in.URL == nil {
		return nil, errs.Field("url", "is required")
	}
	w.URL = strings.TrimSpace(*in.URL)
	if in.Format != nil {
		w.Format = strings.ToLower(strings.TrimSpace(*in.Format))
	}
	if in.Events != nil {
		w.Events = in.Events
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.RobotSecret != nil {
		w.RobotSecret = strings.TrimSpace(*in.RobotSecret)
	}
	if err := wh.checkWebhook(ctx, w); err != nil {
		return nil, err
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return nil, err
	}
	w.Secret = secret
	made, err := wh.Store.CreateWebhook(ctx, w)
	if err == nil {
		wh.audit(ctx, "webhook.create", made)
	}
	return made, err
}

// Webhook returns a webhook.
func (wh *Webhooks) Webhook(ctx context.Context, id int64) (*distribution.Webhook, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	return wh.Store.GetWebhook(ctx, id)
}

// ListWebhooks lists the webhooks of an app or a channel (or all).
func (wh *Webhooks) ListWebhooks(ctx context.Context, appID, channelID int64) ([]distribution.Webhook, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	return wh.Store.ListWebhooks(ctx, appID, channelID)
}

// UpdateWebhook changes a webhook's URL, format, events or enabled flag.
func (wh *Webhooks) UpdateWebhook(ctx context.Context, id int64, in WebhookInput) (*distribution.Webhook, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	w, err := wh.Store.GetWebhook(ctx, id)
	if err != nil {
		return nil, err
	}
	if in.URL != nil {
		w.URL = strings.TrimSpace(*in.URL)
	}
	if in.Format != nil {
		w.Format = strings.ToLower(strings.TrimSpace(*in.Format))
	}
	if in.Events != nil {
		w.Events = in.Events
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.RobotSecret != nil {
		w.RobotSecret = strings.TrimSpace(*in.RobotSecret)
	} else if !webhook.RobotSigned(w.Format) {
		w.RobotSecret = "" // a format without robot signatures keeps no robot secret
	}
	if err := wh.checkWebhook(ctx, w); err != nil {
		return nil, err
	}
	out, err := wh.Store.UpdateWebhook(ctx, w)
	if err == nil {
		action := "webhook.update"
		if in.Enabled != nil && in.URL == nil && in.Format == nil && in.Events == nil && in.RobotSecret == nil {
			action = map[bool]string{true: "webhook.enable", false: "webhook.disable"}[*in.Enabled]
		}
		wh.audit(ctx, action, out)
	}
	return out, err
}

// DeleteWebhook deletes a webhook with its deliveries.
func (wh *Webhooks) DeleteWebhook(ctx context.Context, id int64) error {
	if err := wh.may(ctx); err != nil {
		return err
	}
	w, err := wh.Store.GetWebhook(ctx, id)
	if err != nil {
		return err
	}
	if err := wh.Store.DeleteWebhook(ctx, id); err != nil {
		return err
	}
	wh.audit(ctx, "webhook.delete", w)
	return nil
}

// WebhookDeliveries returns a webhook's newest deliveries with their attempts.
func (wh *Webhooks) WebhookDeliveries(ctx context.Context, id int64, limit int) ([]distribution.WebhookDelivery, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	if _, err := wh.Store.GetWebhook(ctx, id); err != nil {
		return nil, err
	}
	return wh.Store.ListDeliveries(ctx, id, limit)
}

// TestWebhook sends a ping event to a webhook now and records it as a delivery.
func (wh *Webhooks) TestWebhook(ctx context.Context, id int64) (*distribution.WebhookDelivery, error) {
	if err := wh.may(ctx); err != nil {
		return nil, err
	}
	w, err := wh.Store.GetWebhook(ctx, id)
	if err != nil {
		return nil, err
	}
	env := &webhook.Envelope{ID: newEventID(), Event: webhook.EventPing, CreatedAt: time.Now().UTC()}
	d := &distribution.WebhookDelivery{WebhookID: w.ID, EventID: env.ID, Event: env.Event}
	a := send(ctx, wh.Client, &distribution.DueDelivery{WebhookDelivery: *d, URL: w.URL, Format: w.Format, Secret: w.Secret, RobotSecret: w.RobotSecret}, env)
	d.State, d.Attempts, d.History = distribution.DeliveryDelivered, 1, []distribution.WebhookAttempt{a}
	if a.Error != "" {
		d.State = distribution.DeliveryFailed
	}
	d.Payload, _ = json.Marshal(env)
	if err := wh.Store.RecordDelivery(ctx, d, a); err != nil {
		return nil, err
	}
	wh.audit(ctx, "webhook.test", w)
	return d, nil
}

// send makes one attempt with client.
func send(ctx context.Context, client *http.Client, d *distribution.DueDelivery, env *webhook.Envelope) distribution.WebhookAttempt {
	at := time.Now()
	res, err := webhook.Send(ctx, client, d.URL, d.Format, d.Secret, d.RobotSecret, d.EventID, env, at)
	a := distribution.WebhookAttempt{At: at, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Error}
	if err != nil && a.Error == "" {
		a.Error = err.Error()
	}
	return a
}
