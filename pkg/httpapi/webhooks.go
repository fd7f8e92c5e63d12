package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
)

// webhookView is a webhook as the API shows it: the secret only in the answer that creates it.
type webhookView struct {
	ID        int64    `json:"id"`
	AppID     *int64   `json:"app_id"`
	ChannelID *int64   `json:"channel_id"`
	URL       string   `json:"url"`
	Format    string   `json:"format"`
	Events    []string `json:"events"`
	Enabled   bool     `json:"enabled"`
	Secret    string   `json:"secret,omitempty"`
	// RobotSecretSet says whether a DingTalk or Feishu robot secret is kept (never the secret).
	RobotSecretSet bool   `json:"robot_secret_set"`
	CreatedAt      string `json:"created_at"`
	UpdatedAt      string `json:"updated_at"`
}

func optID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func (s *Server) webhookView(w *distribution.Webhook, withSecret bool) webhookView {
	v := webhookView{ID: w.ID, AppID: optID(w.AppID), ChannelID: optID(w.ChannelID), URL: w.URL, Format: w.Format,
		Events: w.Events, Enabled: w.Enabled, RobotSecretSet: w.RobotSecret != "", CreatedAt: s.timestamp(w.CreatedAt), UpdatedAt: s.timestamp(w.UpdatedAt)}
	if withSecret {
		v.Secret = w.Secret
	}
	return v
}

type webhookAttemptView struct {
	At         string `json:"at"`
	StatusCode int    `json:"status_code"`
	LatencyMS  int64  `json:"latency_ms"`
	Error      string `json:"error"`
}

type webhookDeliveryView struct {
	ID            int64                `json:"id"`
	EventID       string               `json:"event_id"`
	Event         string               `json:"event"`
	State         string               `json:"state"`
	Attempts      int                  `json:"attempts"`
	NextAttemptAt *string              `json:"next_attempt_at"`
	CreatedAt     string               `json:"created_at"`
	FinishedAt    *string              `json:"finished_at"`
	History       []webhookAttemptView `json:"history"`
}

// webhookWithoutSecret is a webhook as every answer but its creation shows it.
func (s *Server) webhookWithoutSecret(w *distribution.Webhook) webhookView {
	return s.webhookView(w, false)
}

func (s *Server) deliveryView(d *distribution.WebhookDelivery) webhookDeliveryView {
	v := webhookDeliveryView{ID: d.ID, EventID: d.EventID, Event: d.Event, State: d.State, Attempts: d.Attempts,
		CreatedAt: s.timestamp(d.CreatedAt), History: []webhookAttemptView{}}
	if d.State == distribution.DeliveryPending {
		t := s.timestamp(d.NextAttemptAt)
		v.NextAttemptAt = &t
	}
	if d.FinishedAt != nil {
		t := s.timestamp(*d.FinishedAt)
		v.FinishedAt = &t
	}
	for _, a := range d.History {
		v.History = append(v.History, webhookAttemptView{At: s.timestamp(a.At), StatusCode: a.StatusCode, LatencyMS: a.Latency.Milliseconds(), Error: a.Error})
	}
	return v
}

// readWebhookInput reads url, format, events (a JSON array, or comma-separated text in a form),
// enabled and robot_secret.
func readWebhookInput(c *gin.Context) (events.WebhookInput, error) {
	var in events.WebhookInput
	err := bind(c, &in)
	return in, err
}

// createWebhook: POST /api/apps/:id/webhooks or /api/channels/:id/webhooks → 201 with the
// secret, shown this once.
func (s *Server) createWebhook(owner string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		ctx := reqCtx(c)
		id, err := pathID(c)
		if err != nil {
			return err
		}
		in, err := readWebhookInput(c)
		if err != nil {
			return err
		}
		var appID, channelID int64
		if owner == "app" {
			appID = id
		} else {
			channelID = id
		}
		w, err := s.svc.Webhooks.CreateWebhook(ctx, appID, channelID, in)
		if err != nil {
			return err
		}
		c.JSON(http.StatusCreated, s.webhookView(w, true))
		return nil
	}
}

// listWebhooks: GET /api/apps/:id/webhooks, /api/channels/:id/webhooks or /api/webhooks.
func (s *Server) listWebhooks(owner string) func(c *gin.Context) error {
	return func(c *gin.Context) error {
		ctx := reqCtx(c)
		var appID, channelID int64
		if owner != "" {
			id, err := pathID(c)
			if err != nil {
				return err
			}
			if owner == "app" {
				if _, err := s.svc.Apps.App(ctx, id); err != nil {
					return err
				}
				appID = id
			} else {
				if _, err := s.svc.Apps.ChannelByID(ctx, id); err != nil {
					return err
				}
				channelID = id
			}
		}
		hooks, err := s.svc.Webhooks.ListWebhooks(ctx, appID, channelID)
		if err != nil {
			return err
		}
		out := make([]webhookView, 0, len(hooks))
		for i := range hooks {
			out = append(out, s.webhookView(&hooks[i], false))
		}
		c.JSON(http.StatusOK, out)
		return nil
	}
}

// getWebhook: GET /api/webhooks/:id.
func (s *Server) getWebhook(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Webhooks.Webhook, s.webhookWithoutSecret)
}

// updateWebhook: PUT/PATCH /api/webhooks/:id changes what is sent.
func (s *Server) updateWebhook(c *gin.Context) error {
	return respond2(c, http.StatusOK, pathID, readWebhookInput, s.svc.Webhooks.UpdateWebhook, s.webhookWithoutSecret)
}

// deleteWebhook: DELETE /api/webhooks/:id.
func (s *Server) deleteWebhook(c *gin.Context) error {
	return respondDeleted(c, pathID, s.svc.Webhooks.DeleteWebhook)
}

// webhookDeliveries: GET /api/webhooks/:id/deliveries → the newest deliveries with every attempt.
func (s *Server) webhookDeliveries(c *gin.Context) error {
	ctx := reqCtx(c)
	id, err := pathID(c)
	if err != nil {
		return err
	}
	limit, err := positiveInt("limit", c.Query("limit"), 50)
	if err != nil {
		return err
	}
	ds, err := s.svc.Webhooks.WebhookDeliveries(ctx, id, min(limit, 500))
	if err != nil {
		return err
	}
	out := make([]webhookDeliveryView, 0, len(ds))
	for i := range ds {
		out = append(out, s.deliveryView(&ds[i]))
	}
	c.JSON(http.StatusOK, out)
	return nil
}

// testWebhook: POST /api/webhooks/:id/test sends a ping now and answers with the delivery (200
// whatever the receiver said; the attempt tells).
func (s *Server) testWebhook(c *gin.Context) error {
	return respond(c, http.StatusOK, pathID, s.svc.Webhooks.TestWebhook, s.deliveryView)
}
