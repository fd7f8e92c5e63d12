// Package events is what Slipway tells the outside world: the events writes record in the outbox
// (Maker), webhooks and their deliveries (Webhooks), the component that delivers what is due
// (Sender), and the component that counts downloads and installs (Counter).
package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Maker makes the events writes record: the canonical envelope (webhook.Envelope as JSON), with
// links to the release page and install URL while the release exists.
type Maker struct {
	Links links.Links
}

// newEventID returns a random event id.
func newEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "evt_" + hex.EncodeToString(b[:])
}

// ReleaseEvents makes a release event of kind (downloads is the count a release.downloaded event
// carries).
func (m *Maker) ReleaseEvents(kind string, downloads int64) distribution.EventFunc {
	return func(rc *distribution.ReleaseContext) ([]distribution.Event, error) {
		env := webhook.Envelope{ID: newEventID(), Event: kind, CreatedAt: time.Now().UTC(), Downloads: downloads,
			App:     &webhook.AppRef{ID: rc.App.ID, Name: rc.App.Name},
			Channel: &webhook.ChannelRef{ID: rc.Channel.ID, Name: rc.Channel.Name, Key: rc.Channel.Slug, SchemeName: rc.Scheme.Name, DeviceType: rc.Channel.DeviceType},
			Release: m.releaseInfo(rc, kind != webhook.EventReleaseDeleted)}
		payload, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		return []distribution.Event{{ID: env.ID, Kind: kind, AppID: rc.App.ID, ChannelID: rc.Channel.ID, Payload: payload}}, nil
	}
}

// releaseInfo is a release as events show it; links only while it exists.
func (m *Maker) releaseInfo(rc *distribution.ReleaseContext, withLinks bool) *webhook.ReleaseInfo {
	info := &webhook.ReleaseInfo{ID: rc.ID, Version: rc.Version, Name: rc.Name, BundleID: rc.BundleID,
		ReleaseVersion: rc.ReleaseVersion, BuildVersion: rc.BuildVersion, ReleaseType: rc.ReleaseType, Branch: rc.Branch,
		GitCommit: rc.GitCommit, Size: rc.Size}
	if n := rc.News; n != nil && (n.Against != 0 || len(n.Summary) > 0 || len(n.BudgetWarnings) > 0) {
		info.Insights = &webhook.InsightsInfo{AgainstReleaseID: n.Against, Summary: n.Summary, BudgetWarnings: n.BudgetWarnings}
	}
	if n := rc.News; n != nil && n.Distributed != nil {
		info.Testers = &webhook.TestersInfo{Testers: n.Distributed.Testers, Notified: n.Distributed.Notified}
	}
	for _, e := range rc.Changelog {
		info.Changelog = append(info.Changelog, e.Message)
	}
	if withLinks && m.Links.Base != "" {
		info.ReleaseURL = m.Links.Release(rc.Channel.Slug, rc.ID)
		info.InstallURL = m.Links.Install(rc.Platform, rc.Channel.Slug, rc.ID, "")
	}
	return info
}

// DebugFileEvents makes the debug_file.created event of a debug file.
func (m *Maker) DebugFileEvents(d *distribution.DebugFile) ([]distribution.Event, error) {
	env := webhook.Envelope{ID: newEventID(), Event: webhook.EventDebugFileCreated, CreatedAt: time.Now().UTC(),
		App: &webhook.AppRef{ID: d.AppID, Name: d.AppName},
		DebugFile: &webhook.DebugFileInfo{ID: d.ID, DeviceType: d.DeviceType, ReleaseVersion: d.ReleaseVersion,
			BuildVersion: d.BuildVersion, Size: d.Size}}
	payload, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return []distribution.Event{{ID: env.ID, Kind: env.Event, AppID: d.AppID, Payload: payload}}, nil
}

// TesterEvent makes a tester event of kind about release rc: tester.invited (the testers invited
// to the app by its distribution; the envelope lists at most webhook.MaxEventTesters of them) or
// tester.installed (the one who installed it).
func (m *Maker) TesterEvent(kind string, rc *distribution.ReleaseContext, testers []distribution.Tester) (distribution.Event, error) {
	env := webhook.Envelope{ID: newEventID(), Event: kind, CreatedAt: time.Now().UTC(), TesterCount: len(testers),
		App:     &webhook.AppRef{ID: rc.App.ID, Name: rc.App.Name},
		Channel: &webhook.ChannelRef{ID: rc.Channel.ID, Name: rc.Channel.Name, Key: rc.Channel.Slug, SchemeName: rc.Scheme.Name, DeviceType: rc.Channel.DeviceType},
		Release: m.releaseInfo(rc, true)}
	for i, t := range testers {
		if i == webhook.MaxEventTesters {
			break
		}
		env.Testers = append(env.Testers, webhook.TesterRef{Email: t.Email, Name: t.Name})
	}
	payload, err := json.Marshal(env)
	if err != nil {
		return distribution.Event{}, err
	}
	return distribution.Event{ID: env.ID, Kind: kind, AppID: rc.App.ID, ChannelID: rc.Channel.ID, Payload: payload}, nil
}

// FeedbackEvents makes the feedback.created event of a report on release rc.
func (m *Maker) FeedbackEvents(f *distribution.Feedback, rc *distribution.ReleaseContext) ([]distribution.Event, error) {
	info := &webhook.FeedbackInfo{ID: f.ID, Text: f.Text, AuthorKind: f.AuthorKind, Device: f.Device, OSVersion: f.OSVersion,
		Locale: f.Locale, Source: f.Source, Screenshots: len(f.Screenshots)}
	if f.AuthorName != "" || f.AuthorEmail != "" {
		info.Author = &webhook.TesterRef{Name: f.AuthorName, Email: f.AuthorEmail}
	}
	if m.Links.Base != "" {
		info.URL = m.Links.Feedback(f.AppID, f.ID)
	}
	env := webhook.Envelope{ID: newEventID(), Event: webhook.EventFeedbackCreated, CreatedAt: time.Now().UTC(),
		App:      &webhook.AppRef{ID: rc.App.ID, Name: rc.App.Name},
		Channel:  &webhook.ChannelRef{ID: rc.Channel.ID, Name: rc.Channel.Name, Key: rc.Channel.Slug, SchemeName: rc.Scheme.Name, DeviceType: rc.Channel.DeviceType},
		Release:  m.releaseInfo(rc, true),
		Feedback: info}
	payload, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return []distribution.Event{{ID: env.ID, Kind: env.Event, AppID: rc.App.ID, ChannelID: rc.Channel.ID, Payload: payload}}, nil
}
