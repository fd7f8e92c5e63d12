package httpapi

import (
	"encoding/json"
	"time"

	"github.com/slipwayhq/slipway/pkg/store"
)

// The JSON views: exactly the fields of api.md, snake_case, no root key.

type appView struct {
	ID      int64        `json:"id"`
	Name    string       `json:"name"`
	Schemes []schemeView `json:"schemes"`
}

type schemeView struct {
	ID       int64         `json:"id"`
	Name     string        `json:"name"`
	Channels []channelView `json:"channels"`
}

type refView struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type channelView struct {
	Slug        string  `json:"slug"`
	Name        string  `json:"name"`
	DeviceType  string  `json:"device_type"`
	BundleID    string  `json:"bundle_id"`
	GitURL      *string `json:"git_url"`
	HasPassword bool    `json:"has_password"`
}

func newAppView(a *store.App) appView {
	v := appView{ID: a.ID, Name: a.Name, Schemes: make([]schemeView, 0, len(a.Schemes))}
	for _, s := range a.Schemes {
		sv := schemeView{ID: s.ID, Name: s.Name, Channels: make([]channelView, 0, len(s.Channels))}
		for i := range s.Channels {
			sv.Channels = append(sv.Channels, newChannelView(&s.Channels[i]))
		}
		v.Schemes = append(v.Schemes, sv)
	}
	return v
}

func newChannelView(c *store.Channel) channelView {
	return channelView{Slug: c.Slug, Name: c.Name, DeviceType: c.DeviceType, BundleID: c.BundleID, GitURL: c.GitURL, HasPassword: c.HasPassword()}
}

// timestampLayout is RFC 3339 with milliseconds and a numeric offset (+00:00, never Z).
const timestampLayout = "2006-01-02T15:04:05.000-07:00"

func (s *Server) timestamp(t time.Time) string { return t.In(s.cfg.Location).Format(timestampLayout) }

// rawJSON embeds stored JSON as is; an empty value renders as {}.
func rawJSON(b []byte) any {
	if len(b) == 0 {
		return map[string]any{}
	}
	return json.RawMessage(b)
}
