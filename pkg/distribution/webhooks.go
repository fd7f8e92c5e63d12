package distribution

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Webhook sends a channel's (or an app's) events to a URL.
type Webhook struct {
	ID        int64
	AppID     int64 // set for an app's webhook
	ChannelID int64 // set for a channel's webhook
	URL       string
	Format    string
	Events    []string
	// Secret signs every request (webhook.Sign); the API shows it only when the webhook is made.
	Secret string
	// RobotSecret is a DingTalk or Feishu robot's own signing secret (webhook.RobotSigned), given
	// by that service; never shown back.
	RobotSecret string
	Enabled     bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// WebhookDelivery is one event for one webhook: the outbox row and its attempts.
type WebhookDelivery struct {
	ID            int64
	WebhookID     int64
	EventID       string
	Event         string
	Payload       []byte
	State         string // pending, delivered, failed
	Attempts      int
	NextAttemptAt time.Time
	CreatedAt     time.Time
	FinishedAt    *time.Time
	History       []WebhookAttempt
}

// WebhookAttempt is one try to deliver: the HTTP status (0 when none came), latency and error.
type WebhookAttempt struct {
	At         time.Time
	StatusCode int
	Latency    time.Duration
	Error      string
}

// DueDelivery is a leased delivery with what sending it needs.
type DueDelivery struct {
	WebhookDelivery
	URL, Format, Secret, RobotSecret string
}

// Delivery states.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// WebhookStore keeps webhooks and their outbox.
type WebhookStore interface {
	CreateWebhook(ctx context.Context, w *Webhook) (*Webhook, error)
	GetWebhook(ctx context.Context, id int64) (*Webhook, error)
	// ListWebhooks lists the webhooks of an app (appID) or a channel (channelID), or all (both 0).
	ListWebhooks(ctx context.Context, appID, channelID int64) ([]Webhook, error)
	UpdateWebhook(ctx context.Context, w *Webhook) (*Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	// ListDeliveries returns a webhook's newest deliveries with their attempts.
	ListDeliveries(ctx context.Context, webhookID int64, limit int) ([]WebhookDelivery, error)
	// LeaseDeliveries takes up to limit due pending deliveries for lease (no other replica takes
	// them meanwhile) and counts the attempt.
	LeaseDeliveries(ctx context.Context, limit int, lease time.Duration) ([]DueDelivery, error)
	// FinishAttempt records an attempt and moves the delivery to state (pending: due at next).
	FinishAttempt(ctx context.Context, deliveryID int64, a WebhookAttempt, state string, next time.Time) error
	// RecordDelivery records a delivery made at once (the "send test" call) with its attempt.
	RecordDelivery(ctx context.Context, d *WebhookDelivery, a WebhookAttempt) error
}

// WebhookConfig shapes delivery.
type WebhookConfig struct {
	// AllowPrivate lets webhooks target loopback, private and link-local addresses.
	AllowPrivate bool
	// RetryBase is the first retry's delay; each next one doubles, up to maxRetryDelay.
	RetryBase time.Duration
	// MaxAttempts ends a delivery as failed.
	MaxAttempts int
	// Poll is how often a replica looks for due deliveries.
	Poll time.Duration
	// Timeout bounds one attempt.
	Timeout time.Duration
}

const maxRetryDelay = time.Hour

// WebhookInput is what a client sets on a webhook; nil fields are left as they are.
type WebhookInput struct {
	URL, Format *string
	Events      []string
	Enabled     *bool
	// RobotSecret sets a DingTalk or Feishu robot's signing secret ("" removes it).
	RobotSecret *string
}

// httpClient is the client webhooks are sent with (webhook.NewClient: no redirects, and no
// private addresses at dial time unless allowed).
func (s *Service) httpClient() *http.Client {
	s.webhookOnce.Do(func() { s.webhookHTTP = webhook.NewClient(s.Webhooks.AllowPrivate, s.Webhooks.Timeout) })
	return s.webhookHTTP
}

// checkWebhook validates a webhook's URL (including where it points), format and events.
func (s *Service) checkWebhook(ctx context.Context, w *Webhook) error {
	if err := webhook.CheckURL(ctx, w.URL, s.Webhooks.AllowPrivate, nil); err != nil {
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
func (s *Service) CreateWebhook(ctx context.Context, appID, channelID int64, in WebhookInput) (*Webhook, error) {
	if (appID == 0) == (channelID == 0) {
		return nil, errs.Invalidf("a webhook belongs to an app or to a channel")
	}
	w := &Webhook{AppID: appID, ChannelID: channelID, Format: webhook.FormatSlipway, Events: webhook.Events, Enabled: true}
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
	if err := s.checkWebhook(ctx, w); err != nil {
		return nil, err
	}
	secret, err := webhook.NewSecret()
	if err != nil {
		return nil, err
	}
	w.Secret = secret
	return s.Store.CreateWebhook(ctx, w)
}

// Webhook returns a webhook.
func (s *Service) Webhook(ctx context.Context, id int64) (*Webhook, error) {
	return s.Store.GetWebhook(ctx, id)
}

// ListWebhooks lists the webhooks of an app or a channel (or all).
func (s *Service) ListWebhooks(ctx context.Context, appID, channelID int64) ([]Webhook, error) {
	return s.Store.ListWebhooks(ctx, appID, channelID)
}

// UpdateWebhook changes a webhook's URL, format, events or enabled flag.
func (s *Service) UpdateWebhook(ctx context.Context, id int64, in WebhookInput) (*Webhook, error) {
	w, err := s.Store.GetWebhook(ctx, id)
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
	if err := s.checkWebhook(ctx, w); err != nil {
		return nil, err
	}
	return s.Store.UpdateWebhook(ctx, w)
}

// DeleteWebhook deletes a webhook with its deliveries.
func (s *Service) DeleteWebhook(ctx context.Context, id int64) error {
	return s.Store.DeleteWebhook(ctx, id)
}

// WebhookDeliveries returns a webhook's newest deliveries with their attempts.
func (s *Service) WebhookDeliveries(ctx context.Context, id int64, limit int) ([]WebhookDelivery, error) {
	if _, err := s.Store.GetWebhook(ctx, id); err != nil {
		return nil, err
	}
	return s.Store.ListDeliveries(ctx, id, limit)
}

// TestWebhook sends a ping event to a webhook now and records it as a delivery.
func (s *Service) TestWebhook(ctx context.Context, id int64) (*WebhookDelivery, error) {
	w, err := s.Store.GetWebhook(ctx, id)
	if err != nil {
		return nil, err
	}
	env := &webhook.Envelope{ID: newEventID(), Event: webhook.EventPing, CreatedAt: time.Now().UTC()}
	d := &WebhookDelivery{WebhookID: w.ID, EventID: env.ID, Event: env.Event}
	a := s.sendWebhook(ctx, &DueDelivery{WebhookDelivery: *d, URL: w.URL, Format: w.Format, Secret: w.Secret, RobotSecret: w.RobotSecret}, env)
	d.State, d.Attempts, d.History = DeliveryDelivered, 1, []WebhookAttempt{a}
	if a.Error != "" {
		d.State = DeliveryFailed
	}
	d.Payload, _ = json.Marshal(env)
	if err := s.Store.RecordDelivery(ctx, d, a); err != nil {
		return nil, err
	}
	return d, nil
}

// sendWebhook makes one attempt.
func (s *Service) sendWebhook(ctx context.Context, d *DueDelivery, env *webhook.Envelope) WebhookAttempt {
	at := time.Now()
	res, err := webhook.Send(ctx, s.httpClient(), d.URL, d.Format, d.Secret, d.RobotSecret, d.EventID, env, at)
	a := WebhookAttempt{At: at, StatusCode: res.StatusCode, Latency: res.Latency, Error: res.Error}
	if err != nil && a.Error == "" {
		a.Error = err.Error()
	}
	return a
}

// WakeWebhooks makes this replica's RunWebhooks look for due deliveries at once.
func (s *Service) WakeWebhooks() {
	select {
	case s.wake() <- struct{}{}:
	default:
	}
}

func (s *Service) wake() chan struct{} {
	s.wakeOnce.Do(func() { s.webhookWake = make(chan struct{}, 1) })
	return s.webhookWake
}

// RunWebhooks delivers due webhook deliveries until ctx ends; every replica runs it, and leases
// keep two from sending one delivery at the same time. wake makes it look at once (a local
// event was just committed).
func (s *Service) RunWebhooks(ctx context.Context) {
	cfg := s.Webhooks
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		for s.deliverDue(ctx) {
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake():
		}
	}
}

// deliverDue sends one batch of due deliveries and reports whether the batch was full.
func (s *Service) deliverDue(ctx context.Context) bool {
	const batch = 16
	cfg := s.Webhooks
	due, err := s.Store.LeaseDeliveries(ctx, batch, 2*cfg.Timeout+10*time.Second)
	if err != nil {
		if ctx.Err() == nil {
			s.Log.WarnContext(ctx, "leasing webhook deliveries failed", slog.String("error", err.Error()))
		}
		return false
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range due {
		wg.Add(1)
		sem <- struct{}{}
		go func(d *DueDelivery) {
			defer func() { <-sem; wg.Done() }()
			s.deliver(ctx, d)
		}(&due[i])
	}
	wg.Wait()
	return len(due) == batch
}

// deliver makes one attempt of a leased delivery and records it.
func (s *Service) deliver(ctx context.Context, d *DueDelivery) {
	var env webhook.Envelope
	var a WebhookAttempt
	if err := json.Unmarshal(d.Payload, &env); err != nil {
		a = WebhookAttempt{At: time.Now(), Error: "the stored event is unreadable"}
	} else {
		a = s.sendWebhook(ctx, d, &env)
	}
	state, next := DeliveryDelivered, time.Time{}
	outcome := "delivered"
	if a.Error != "" {
		state, next, outcome = DeliveryPending, time.Now().Add(s.retryDelay(d.Attempts)), "retry"
		if d.Attempts >= s.Webhooks.MaxAttempts {
			state, outcome = DeliveryFailed, "failed"
		}
	}
	if s.Metrics != nil {
		s.Metrics.WebhookDeliveries.WithLabelValues(outcome).Inc()
	}
	log := s.Log.With(slog.Int64("webhook_id", d.WebhookID), slog.Int64("delivery_id", d.ID), slog.String("event", d.Event),
		slog.Int("attempt", d.Attempts), slog.Int("status", a.StatusCode))
	switch outcome {
	case "retry":
		log.InfoContext(ctx, "webhook delivery failed; will retry", slog.String("error", a.Error), slog.Time("next_attempt_at", next))
	case "failed":
		log.WarnContext(ctx, "webhook delivery failed for good", slog.String("error", a.Error))
	}
	if err := s.Store.FinishAttempt(context.WithoutCancel(ctx), d.ID, a, state, next); err != nil {
		log.WarnContext(ctx, "recording a webhook attempt failed; the delivery is retried when its lease ends", slog.String("error", err.Error()))
	}
}

// retryDelay is the wait after the n-th failed attempt: RetryBase doubled per attempt, at most an
// hour.
func (s *Service) retryDelay(n int) time.Duration {
	d := float64(s.Webhooks.RetryBase) * math.Pow(2, float64(max(n-1, 0)))
	if d > float64(maxRetryDelay) {
		return maxRetryDelay
	}
	return time.Duration(d)
}
