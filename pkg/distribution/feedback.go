package distribution

import (
	"encoding/json"
	"time"
)

// Feedback is what a tester reports about one build: text, up to MaxScreenshots screenshots, and
// what their device said about itself. It goes with its build (retention, delete).
type Feedback struct {
	ID        int64
	ReleaseID int64
	AppID     int64
	ChannelID int64
	// Author: a tester (TesterID), a console user (UserID), a token, or an anonymous client on a
	// channel open to anyone, who may leave an email.
	AuthorKind  string // ActorTester, ActorUser, ActorToken, ActorAnonymous
	TesterID    int64
	UserID      int64
	AuthorName  string
	AuthorEmail string
	Text        string
	Device      string
	OSVersion   string
	Locale      string
	// AppState is a JSON object the app sent (its screen, its settings), at most MaxAppState
	// bytes; nil when none.
	AppState json.RawMessage
	// Source is where it came from: FeedbackFromPage or FeedbackFromAPI.
	Source      string
	State       string // FeedbackOpen, FeedbackResolved
	StateBy     string
	StateAt     *time.Time
	CreatedAt   time.Time
	Screenshots []Screenshot

	// Release names the build (filled by listings).
	ReleaseVersion, BuildVersion string
	ReleaseNumber                int
	ChannelSlug, ChannelName     string
	AppName                      string
}

// Screenshot is one screenshot of a report, re-encoded without metadata, with its thumbnail.
type Screenshot struct {
	Position      int // 1-based, in the order sent
	ObjectKey     string
	ThumbKey      string
	ContentType   string // image/png or image/jpeg
	Size          int64
	Width, Height int
}

// Where feedback came from, and its states.
const (
	FeedbackFromPage = "page"
	FeedbackFromAPI  = "api"
	FeedbackOpen     = "open"
	FeedbackResolved = "resolved"
)

// Bounds of one report.
const (
	MaxScreenshots    = 5
	MaxFeedbackText   = 10_000
	MaxFeedbackDevice = 200
	MaxFeedbackLocale = 64
	MaxAppState       = 16 << 10
)

// TesterClientPrefix keys a tester's reports in the counts of feedback limits ("tester:12"), apart
// from clients without credentials, which are keyed by their address; a channel's limit counts
// only the latter.
const TesterClientPrefix = "tester:"

// FeedbackQuery selects an app's feedback for its inbox: newest first, optionally only one
// build's, one tester's, one state, or text containing Search.
type FeedbackQuery struct {
	AppID     int64
	ReleaseID int64
	TesterID  int64
	State     string
	Search    string
	Page      Page
}

// FeedbackTarget names a report in the audit log: "feedback 12 on App 1.3 (4)".
func FeedbackTarget(f *Feedback) AuditTarget {
	return AuditTarget{Kind: TargetFeedback, ID: f.ID, AppID: f.AppID, Name: ReleaseName(f.AppName, f.ReleaseVersion, f.BuildVersion)}
}
