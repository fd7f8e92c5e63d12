package distribution

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Event is something that happened which webhooks subscribe to. The store writes one outbox row
// per matching webhook in the transaction that makes the event, so a crash after the commit loses
// no event and a rolled-back write sends none.
type Event struct {
	// ID is shared by every webhook that gets the event; receivers deduplicate on it.
	ID        string
	Kind      string
	AppID     int64
	ChannelID int64 // 0 for app-wide events (debug files)
	// Payload is the canonical envelope (webhook.Envelope as JSON), rendered per format at delivery.
	Payload []byte
}

// EventFunc makes the events of a write to a release from the release as the store reads it
// inside the writing transaction.
type EventFunc func(rc *ReleaseContext) ([]Event, error)

// newEventID returns a random event id.
func newEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "evt_" + hex.EncodeToString(b[:])
}

// releaseEvents makes a release event of kind (downloads is the count a release.downloaded event
// carries).
func (s *Service) releaseEvents(kind string, downloads int64) EventFunc {
	return func(rc *ReleaseContext) ([]Event, error) {
		env := webhook.Envelope{ID: newEventID(), Event: kind, CreatedAt: time.Now().UTC(), Downloads: downloads,
			App:     &webhook.AppRef{ID: rc.App.ID, Name: rc.App.Name},
			Channel: &webhook.ChannelRef{ID: rc.Channel.ID, Name: rc.Channel.Name, Key: rc.Channel.Slug, SchemeName: rc.Scheme.Name, DeviceType: rc.Channel.DeviceType},
			Release: s.releaseInfo(rc, kind != webhook.EventReleaseDeleted)}
		payload, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		return []Event{{ID: env.ID, Kind: kind, AppID: rc.App.ID, ChannelID: rc.Channel.ID, Payload: payload}}, nil
	}
}

// releaseInfo is a release as events show it; links only while it exists.
func (s *Service) releaseInfo(rc *ReleaseContext, withLinks bool) *webhook.ReleaseInfo {
	info := &webhook.ReleaseInfo{ID: rc.ID, Version: rc.Version, Name: rc.Name, BundleID: rc.BundleID,
		ReleaseVersion: rc.ReleaseVersion, BuildVersion: rc.BuildVersion, ReleaseType: rc.ReleaseType, Branch: rc.Branch,
		GitCommit: rc.GitCommit, Size: rc.Size}
	for _, e := range rc.Changelog {
		info.Changelog = append(info.Changelog, e.Message)
	}
	if withLinks && s.Links.Base != "" {
		info.ReleaseURL = s.Links.Release(rc.Channel.Slug, rc.ID)
		info.InstallURL = s.Links.Install(rc.Platform, rc.Channel.Slug, rc.ID, "")
	}
	return info
}

// debugFileEvents makes the debug_file.created event of a debug file.
func debugFileEvents(d *DebugFile) ([]Event, error) {
	env := webhook.Envelope{ID: newEventID(), Event: webhook.EventDebugFileCreated, CreatedAt: time.Now().UTC(),
		App: &webhook.AppRef{ID: d.AppID, Name: d.AppName},
		DebugFile: &webhook.DebugFileInfo{ID: d.ID, DeviceType: d.DeviceType, ReleaseVersion: d.ReleaseVersion,
			BuildVersion: d.BuildVersion, Size: d.Size}}
	payload, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return []Event{{ID: env.ID, Kind: env.Event, AppID: d.AppID, Payload: payload}}, nil
}
