package distribution

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// The audit trail: every actor (a person in the console, a token through the API or the CLI, the
// system's own retention and collector) writes the same rows, through one function,
// AuditLog.Record, or, for a change recorded inside a store transaction (a release deletion), in
// that transaction from the same AuditRecord. The actor travels with the request's context: the
// edges set it (httpapi when a token is let in, the console for its signed-in user, each
// background component for itself, the CLI), and the use cases read it (ActorOf).

// Audit target kinds: what a row's target names, for its link.
const (
	TargetApp      = "app"
	TargetScheme   = "scheme"
	TargetChannel  = "channel"
	TargetRelease  = "release"
	TargetWebhook  = "webhook"
	TargetToken    = "token"
	TargetUser     = "user"
	TargetDevice   = "device"
	TargetSession  = "session"
	TargetDebug    = "debug_file"
	TargetFeedback = "feedback"
)

// AuditTarget is what an action was done to: its kind and id (for a link while it exists), its
// name as it was (kept when it is gone), and its app (the audit page filters by app).
type AuditTarget struct {
	Kind  string
	ID    int64
	Name  string
	AppID int64
}

// ReleaseTarget names a release as the public pages do: "App 1.3 (4)".
func ReleaseTarget(rc *ReleaseContext) AuditTarget {
	return AuditTarget{Kind: TargetRelease, ID: rc.ID, AppID: rc.App.ID, Name: ReleaseName(rc.App.Name, rc.ReleaseVersion, rc.BuildVersion)}
}

// ReleaseName is "App 1.3 (4)".
func ReleaseName(app, releaseVersion, buildVersion string) string {
	return fmt.Sprintf("%s %s (%s)", app, releaseVersion, buildVersion)
}

// ChannelTarget names a channel with its app: "App · Beta".
func ChannelTarget(cc *ChannelContext) AuditTarget {
	return AuditTarget{Kind: TargetChannel, ID: cc.Channel.ID, AppID: cc.App.ID, Name: cc.App.Name + " · " + cc.Channel.Name}
}

// AppTarget names an app.
func AppTarget(a *App) AuditTarget {
	return AuditTarget{Kind: TargetApp, ID: a.ID, AppID: a.ID, Name: a.Name}
}

// AuditRecord is one row of the audit log: who (Actor), did what (Action, such as
// "release.delete"), to what (Target), with details (no secrets).
type AuditRecord struct {
	Actor  Actor
	Action string
	Target AuditTarget
	Detail map[string]any
}

// AuditEntry is one row of the audit log as read back.
type AuditEntry struct {
	ID int64
	At time.Time
	AuditRecord
	// ChannelSlug is a release target's channel key (its page, or its tombstone, is there);
	// AppExists whether the target's app is still there (links only to what is).
	ChannelSlug string
	AppExists   bool
}

// AuditFilter selects audit rows: by app, actor (a label's words: a user's name, a token's name,
// "retention"), action (exact, or a prefix ending in "."), newest first, before an id (paging).
type AuditFilter struct {
	AppID    int64
	Actor    string
	Action   string
	BeforeID int64
	Limit    int
	// TargetKind and TargetIDs select rows about these targets only (a page of builds).
	TargetKind string
	TargetIDs  []int64
}

// AuditStore writes and reads audit rows (pkg/postgres).
type AuditStore interface {
	WriteAudit(ctx context.Context, r AuditRecord) error
	AuditEntries(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

// AuditLog writes the audit trail. Record is the one function every caller uses to write a row.
type AuditLog struct {
	Store AuditStore
	Log   *slog.Logger
}

// Record writes an audit row for a change already made, as ctx's actor (ActorOf) unless the
// record names one. A failure is logged, never returned: the change stands.
func (l *AuditLog) Record(ctx context.Context, action string, target AuditTarget, detail map[string]any) {
	l.RecordAs(ctx, ActorOf(ctx), action, target, detail)
}

// RecordAs is Record for an actor named explicitly (a console user the handler holds).
func (l *AuditLog) RecordAs(ctx context.Context, a Actor, action string, target AuditTarget, detail map[string]any) {
	if l == nil || l.Store == nil {
		return
	}
	if err := l.Store.WriteAudit(context.WithoutCancel(ctx), AuditRecord{Actor: a, Action: action, Target: target, Detail: detail}); err != nil && l.Log != nil {
		l.Log.WarnContext(ctx, "writing the audit log failed", "action", action, "error", err.Error())
	}
}

// Uploaders names who uploaded each of a channel's builds (release id → actor), from their
// "release.upload" rows; a build uploaded before the audit trail named actors is missing.
func (l *AuditLog) Uploaders(ctx context.Context, releaseIDs []int64) (map[int64]Actor, error) {
	out := map[int64]Actor{}
	if l == nil || l.Store == nil || len(releaseIDs) == 0 {
		return out, nil
	}
	rows, err := l.Store.AuditEntries(ctx, AuditFilter{Action: "release.upload", TargetKind: TargetRelease, TargetIDs: releaseIDs, Limit: 500})
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if _, ok := out[r.Target.ID]; !ok {
			out[r.Target.ID] = r.Actor
		}
	}
	return out, nil
}

// Tombstone is what a deleted release leaves for its public page: what it was, when and why it
// went (by retention, or by whom), and its channel's newest release (NewestID, 0: none).
type Tombstone struct {
	ReleaseID                             int64
	ChannelID                             int64
	ChannelSlug, ChannelName              string
	AppName, ReleaseVersion, BuildVersion string
	DeletedAt                             time.Time
	By                                    Actor
	// Reason is the retention rule that deleted it (keep_builds, max_age, ...), "" otherwise.
	Reason string
	// NewestID is the channel's newest release now (0: none), with its versions.
	NewestID                                 int64
	NewestReleaseVersion, NewestBuildVersion string
}

// ByRetention reports whether retention deleted the release.
func (t *Tombstone) ByRetention() bool { return t.By.Kind == ActorSystem && t.By.Name == "retention" }
