// Package webhook is what Slipway's webhooks send: the event envelope, its rendering for chat
// services, the signature, and an HTTP client that refuses private addresses (SSRF).
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Events webhooks subscribe to, and the ping a "send test" call sends.
const (
	EventReleaseCreated    = "release.created"
	EventReleaseDeleted    = "release.deleted"
	EventReleaseDownloaded = "release.downloaded"
	EventDebugFileCreated  = "debug_file.created"
	EventTesterInvited     = "tester.invited"
	EventTesterInstalled   = "tester.installed"
	EventFeedbackCreated   = "feedback.created"
	EventPing              = "ping"
)

// Events are the events a webhook may subscribe to.
var Events = []string{EventReleaseCreated, EventReleaseDeleted, EventReleaseDownloaded, EventDebugFileCreated,
	EventTesterInvited, EventTesterInstalled, EventFeedbackCreated}

// ValidEvent reports whether a webhook may subscribe to s.
func ValidEvent(s string) bool { return slices.Contains(Events, s) }

// Formats of the request body: Slipway's own JSON, or a chat service's incoming-webhook message.
const (
	FormatSlipway  = "slipway"
	FormatSlack    = "slack"
	FormatTeams    = "teams"
	FormatDiscord  = "discord"
	FormatDingTalk = "dingtalk"
	FormatFeishu   = "feishu"
	FormatWeCom    = "wecom"
)

// Formats lists every format.
var Formats = []string{FormatSlipway, FormatSlack, FormatTeams, FormatDiscord, FormatDingTalk, FormatFeishu, FormatWeCom}

// ValidFormat reports whether s is a format.
func ValidFormat(s string) bool { return slices.Contains(Formats, s) }

// Envelope is an event as Slipway's own format sends it; the chat formats are made from it.
type Envelope struct {
	ID        string         `json:"id"`
	Event     string         `json:"event"`
	CreatedAt time.Time      `json:"created_at"`
	App       *AppRef        `json:"app,omitempty"`
	Channel   *ChannelRef    `json:"channel,omitempty"`
	Release   *ReleaseInfo   `json:"release,omitempty"`
	DebugFile *DebugFileInfo `json:"debug_file,omitempty"`
	// Downloads is what a release.downloaded event counts: downloads and installs since the
	// previous such event of the release (a replica sends one per release per flush).
	Downloads int64 `json:"downloads,omitempty"`
	// Testers are the testers a tester.invited event invited (their first build of the app; at
	// most MaxEventTesters, TesterCount counting all) or the one a tester.installed event names.
	Testers     []TesterRef `json:"testers,omitempty"`
	TesterCount int         `json:"tester_count,omitempty"`
	// Feedback is the report a feedback.created event carries.
	Feedback *FeedbackInfo `json:"feedback,omitempty"`
}

// FeedbackInfo is a tester's report in an event: its text, who sent it from what device, and
// how many screenshots it has (the API serves them: GET /api/feedback/{id}).
type FeedbackInfo struct {
	ID          int64      `json:"id"`
	Text        string     `json:"text"`
	Author      *TesterRef `json:"author,omitempty"`
	AuthorKind  string     `json:"author_kind"`
	Device      string     `json:"device,omitempty"`
	OSVersion   string     `json:"os_version,omitempty"`
	Locale      string     `json:"locale,omitempty"`
	Source      string     `json:"source"`
	Screenshots int        `json:"screenshots"`
	// URL is the report in the console.
	URL string `json:"url,omitempty"`
}

// maxFeedbackChat bounds the text of a report a chat message shows.
const maxFeedbackChat = 600

// MaxEventTesters bounds the testers one event lists.
const MaxEventTesters = 100

// TesterRef names a tester.
type TesterRef struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

// AppRef names an app.
type AppRef struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// ChannelRef names a channel.
type ChannelRef struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Key        string `json:"key"`
	SchemeName string `json:"scheme_name"`
	DeviceType string `json:"device_type"`
}

// ReleaseInfo is a release in an event.
type ReleaseInfo struct {
	ID             int64    `json:"id"`
	Version        int      `json:"version"`
	Name           string   `json:"name"`
	BundleID       string   `json:"bundle_id"`
	ReleaseVersion string   `json:"release_version"`
	BuildVersion   string   `json:"build_version"`
	ReleaseType    string   `json:"release_type,omitempty"`
	Branch         string   `json:"branch,omitempty"`
	GitCommit      string   `json:"git_commit,omitempty"`
	Changelog      []string `json:"changelog,omitempty"`
	Size           int64    `json:"size"`
	ReleaseURL     string   `json:"release_url,omitempty"`
	InstallURL     string   `json:"install_url,omitempty"`
	// Insights is what changed since the channel's previous build (release.created only).
	Insights *InsightsInfo `json:"insights,omitempty"`
	// Testers is who the release went to (release.created, in a channel with tester groups or
	// an upload naming testers): how many testers, and how many were mailed now.
	Testers *TestersInfo `json:"testers,omitempty"`
}

// InsightsInfo is what a release.created event says changed: the summary of the diff against the
// channel's previous build (GET /api/releases/{id}/diff has it all) and the size budgets crossed.
type InsightsInfo struct {
	// AgainstReleaseID is the release compared with (0, left out: none).
	AgainstReleaseID int64 `json:"against_release_id,omitempty"`
	// Summary is the diff in short lines, the most alarming first ("+3.2 MB (+4.1%)", "new
	// permission: android.permission.CAMERA").
	Summary []string `json:"summary,omitempty"`
	// BudgetWarnings say which of the channel's size budgets the build crosses.
	BudgetWarnings []string `json:"budget_warnings,omitempty"`
}

// DebugFileInfo is a debug file in an event.
type DebugFileInfo struct {
	ID             int64  `json:"id"`
	DeviceType     string `json:"device_type"`
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	Size           int64  `json:"size"`
}

// discordLimit is Discord's maximum message length, in characters.
const discordLimit = 2000

// Render returns the request body of env in format. In the chat formats, every value that comes
// from a user or a package is escaped for that format (escape.go), so that it can neither mention
// anyone nor add a link; the release-page link is Slipway's own.
func Render(format string, env *Envelope) ([]byte, error) {
	if format == FormatSlipway {
		return json.Marshal(env)
	}
	if !ValidFormat(format) {
		return nil, fmt.Errorf("unknown webhook format %q", format)
	}
	title, text, link := summary(env, escaperFor(format))
	link = safeLink(link)
	label := "Open the release page"
	if env.Event == EventFeedbackCreated {
		label = "Open the feedback"
	}
	var body any
	switch format {
	case FormatSlack:
		msg := "*" + title + "*\n" + text
		if link != "" {
			msg += "\n<" + escapeSlack(link) + "|" + label + ">"
		}
		body = map[string]string{"text": msg}
	case FormatTeams:
		card := map[string]any{"@type": "MessageCard", "@context": "https://schema.org/extensions", "summary": title, "title": title, "text": text}
		if link != "" {
			card["potentialAction"] = []any{map[string]any{"@type": "OpenUri", "name": label,
				"targets": []any{map[string]string{"os": "default", "uri": link}}}}
		}
		body = card
	case FormatDiscord:
		msg := "**" + title + "**\n" + text
		if link != "" {
			msg += "\n" + link
		}
		// allowed_mentions with an empty parse list: the message pings no one, whatever it says.
		body = map[string]any{"content": truncateRunes(msg, discordLimit), "allowed_mentions": map[string][]string{"parse": {}}}
	case FormatDingTalk:
		md := "### " + title + "\n\n" + text
		if link != "" {
			md += "\n\n[" + label + "](" + link + ")"
		}
		body = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"title": title, "text": md}}
	case FormatFeishu:
		msg := title + "\n" + text
		if link != "" {
			msg += "\n" + link
		}
		body = map[string]any{"msg_type": "text", "content": map[string]string{"text": msg}}
	case FormatWeCom:
		md := "**" + title + "**\n" + text
		if link != "" {
			md += "\n[" + label + "](" + link + ")"
		}
		body = map[string]any{"msgtype": "markdown", "markdown": map[string]string{"content": md}}
	default:
		return nil, fmt.Errorf("unknown webhook format %q", format)
	}
	return json.Marshal(body)
}

// summary is the human message of an event: a title, a line or more of text, and a link. Every
// value from a user or a package (names, versions, branch, changelog, platform) goes through esc;
// the link, Slipway's own, does not.
func summary(env *Envelope, esc escaper) (title, text, link string) {
	app := "an app"
	if env.App != nil {
		app = esc(env.App.Name)
	}
	where := ""
	if env.Channel != nil {
		where = fmt.Sprintf(" (%s, channel %s)", esc(platformName(env.Channel.DeviceType)), esc(env.Channel.Name))
	}
	version := ""
	if r := env.Release; r != nil {
		version = fmt.Sprintf("%s (%s)", esc(r.ReleaseVersion), esc(r.BuildVersion))
		link = r.ReleaseURL
	}
	switch env.Event {
	case EventReleaseCreated:
		title = "New build of " + app + where
		text = "Version " + version
		if r := env.Release; r != nil {
			if r.Branch != "" {
				text += " from " + esc(r.Branch)
			}
			if in := r.Insights; in != nil {
				if line := insightsLine(in.Summary); line != "" {
					text += "\n" + esc(line)
				}
				for _, w := range in.BudgetWarnings {
					text += "\n⚠ Size budget: " + esc(w)
				}
			}
			for _, line := range r.Changelog {
				text += "\n• " + esc(line)
			}
		}
	case EventReleaseDeleted:
		title = "Build deleted: " + app + where
		text = "Version " + version + " was deleted"
		link = ""
	case EventReleaseDownloaded:
		title = fmt.Sprintf("%s downloaded", app)
		text = fmt.Sprintf("Version %s%s: %d new download(s) or install(s)", version, where, env.Downloads)
	case EventDebugFileCreated:
		title = "Debug file uploaded for " + app
		if d := env.DebugFile; d != nil {
			text = fmt.Sprintf("Version %s (%s), %s", esc(d.ReleaseVersion), esc(d.BuildVersion), esc(platformName(d.DeviceType)))
		}
	case EventTesterInvited:
		title = fmt.Sprintf("Testers invited to %s%s", app, where)
		text = fmt.Sprintf("%d tester(s) invited to version %s: %s", env.TesterCount, version, testerList(esc, env.Testers, env.TesterCount))
	case EventTesterInstalled:
		title = fmt.Sprintf("%s installed by a tester", app)
		text = fmt.Sprintf("Version %s%s installed by %s", version, where, testerList(esc, env.Testers, len(env.Testers)))
	case EventFeedbackCreated:
		title = fmt.Sprintf("Feedback on %s %s%s", app, version, where)
		if f := env.Feedback; f != nil {
			from := "someone without an account"
			if f.Author != nil && (f.Author.Name != "" || f.Author.Email != "") {
				from = esc(firstNonEmpty(f.Author.Name, f.Author.Email))
			}
			text = "From " + from
			if f.Device != "" || f.OSVersion != "" {
				text += " on " + esc(strings.TrimSpace(f.Device+" "+f.OSVersion))
			}
			if f.Screenshots > 0 {
				text += fmt.Sprintf(", %d screenshot(s)", f.Screenshots)
			}
			text += ":\n" + esc(truncateRunes(f.Text, maxFeedbackChat))
			link = f.URL
		}
	case EventPing:
		title = "Test message from Slipway"
		text = "This webhook works."
	default:
		title, text = "Slipway event "+esc(env.Event), ""
	}
	return title, text, link
}

// testerList names a few testers for a chat message, escaped: "ada@example.com, bob@… and 8 more".
func testerList(esc escaper, ts []TesterRef, total int) string {
	const shown = 5
	var names []string
	for i, t := range ts {
		if i == shown {
			break
		}
		names = append(names, esc(t.Email))
	}
	s := strings.Join(names, ", ")
	if total > len(names) {
		s += fmt.Sprintf(" and %d more", total-len(names))
	}
	return s
}

// maxInsightsItems and maxInsightsLine bound the line of a chat message that says what changed.
const (
	maxInsightsItems = 4
	maxInsightsLine  = 300
)

// insightsLine says a diff's summary in one line of a chat message: "+3.2 MB (+4.1%), new
// permission: android.permission.CAMERA", its first items only.
func insightsLine(summary []string) string {
	items := summary
	if len(items) > maxInsightsItems {
		items = append(slices.Clip(items[:maxInsightsItems]), fmt.Sprintf("and %d more", len(summary)-maxInsightsItems))
	}
	return truncateRunes(strings.Join(items, ", "), maxInsightsLine)
}

func platformName(t string) string {
	switch t {
	case "ios":
		return "iOS"
	case "macos":
		return "macOS"
	case "android":
		return "Android"
	case "harmonyos":
		return "HarmonyOS"
	}
	if t == "" {
		return "unknown platform"
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// truncateRunes cuts s to at most n characters, ending with an ellipsis when cut.
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Headers every delivery carries.
const (
	SignatureHeader = "Slipway-Signature"
	EventHeader     = "Slipway-Event"
	DeliveryHeader  = "Slipway-Delivery"
)

// Sign returns the signature header of body sent at timestamp: "t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<unix seconds>.<body>">". The timestamp is signed too, so a receiver that
// checks it (Verify) refuses a captured request replayed later.
func Sign(secret []byte, timestamp time.Time, body []byte) string {
	ts := strconv.FormatInt(timestamp.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify checks a signature header against body, refusing timestamps further than tolerance
// from now: what a receiver does.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return errors.New("malformed signature header")
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return errors.New("malformed signature header")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("signature timestamp outside the tolerance (replayed or clock skew)")
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("signature mismatch")
}

// NewSecret returns a new webhook secret.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "whsec_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// TestersInfo is who a release went to: how many testers anew, and how many were mailed now.
type TestersInfo struct {
	Testers  int `json:"testers"`
	Notified int `json:"notified"`
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
