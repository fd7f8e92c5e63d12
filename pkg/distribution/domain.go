package distribution

import (
	"encoding/json"
	"time"
)

// The domain's types. They carry no JSON or SQL tags: the store maps them to rows and the HTTP
// layer's views map them to wire names, so neither format leaks into the other.

// App is an application; it nests its schemes, each scheme its channels.
type App struct {
	ID        int64
	Name      string
	CreatedAt time.Time
	UpdatedAt time.Time
	Schemes   []Scheme
}

// Scheme groups an app's channels (for instance "Adhoc" or "AppStore").
type Scheme struct {
	ID    int64
	AppID int64
	Name  string
	// NewBuildCallout asks the release pages to point out a newer build (Zealot's field).
	NewBuildCallout bool
	// RetainedBuilds is how many builds each channel keeps (0: all); enforced by retention.
	RetainedBuilds int
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Channels       []Channel
}

// Channel is where releases of one platform land; its Slug is the channel key.
type Channel struct {
	ID           int64
	SchemeID     int64
	Name         string
	Slug         string
	DeviceType   string
	BundleID     string
	GitURL       *string
	PasswordHash *string
	// DownloadFilenameType names downloaded files (see DownloadFilenameTypes).
	DownloadFilenameType string
	// Budget is the channel's size budget; its zero value sets none.
	Budget SizeBudget
	// FeedTokenHash is the SHA-256 (hex) of the channel's feed token ("" when none was made).
	FeedTokenHash string
	// SparkleSigning: an admin allowed Slipway to sign this channel's macOS builds with the
	// operator's Sparkle key (those uploaded without a signature, by uploaders who may have them
	// signed; Release.SparkleSign).
	SparkleSigning bool
	// TesterOnly: the channel is open to the testers of its tester groups only (and to the
	// app's members and admins). It stays set when its last group is deleted: only setting its
	// groups to none opens it again.
	TesterOnly bool
	// AppInstallerHours is how often Windows' App Installer looks for a newer build of the
	// channel's MSIX app when it starts (OnLaunch HoursBetweenUpdateChecks, 0 to 255; 0: at every
	// start).
	AppInstallerHours int
	// APTNewestOnly: the channel's APT repository lists only the newest version of each package
	// and architecture, not every build the channel offers.
	APTNewestOnly bool
	// TesterGroups are the aliases of the groups that open a TesterOnly channel (nil: not read).
	TesterGroups []string
	// AppBundleID is the app the channel holds while its BundleID is "*": "" when it
	// was made without a bundle id and has no build yet (its first build's is learned), "*" when
	// it takes any app (its bundle id was chosen), else the bundle id its first build taught it.
	AppBundleID string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DefaultAppInstallerHours is a new channel's Channel.AppInstallerHours: Windows' own default.
const DefaultAppInstallerHours = 24

// MaxAppInstallerHours is the most Channel.AppInstallerHours may be (the schema's unsigned byte).
const MaxAppInstallerHours = 255

// HeldApp is the bundle id of the one app the channel holds: learned from its first build by a
// channel made without a bundle id. "" when it takes any app or has learned none yet.
func (c *Channel) HeldApp() string {
	if c.BundleID != "*" || c.AppBundleID == "*" {
		return ""
	}
	return c.AppBundleID
}

// SizeBudget bounds the builds of a channel: a maximum download size and a maximum growth over
// the channel's previous build, each optional. Crossing one is a warning (the upload's answer, the
// release.created event), or refuses the upload when Enforce is set.
type SizeBudget struct {
	// MaxBytes is the largest package size allowed (nil: none).
	MaxBytes *int64
	// MaxGrowthPercent is the largest growth of the package size over the previous build's, in
	// percent (nil: none).
	MaxGrowthPercent *float64
	// Enforce refuses an upload that crosses the budget instead of warning.
	Enforce bool
}

// Set reports whether the budget bounds anything.
func (b SizeBudget) Set() bool { return b.MaxBytes != nil || b.MaxGrowthPercent != nil }

// AwaitsSignature reports whether Slipway signs r with the operator's Sparkle key: it was marked
// at upload (SparkleSign), it has no signature, and it is rolled out to someone (a build at
// rollout 0 waits: nobody should trust it yet).
func (r *Release) AwaitsSignature() bool {
	return r.SparkleSign && r.Platform == "macos" && r.EdSignature == "" && r.RolloutPercent > 0
}

// HasPassword reports whether downloads from the channel need a password.
func (c *Channel) HasPassword() bool { return c.PasswordHash != nil && *c.PasswordHash != "" }

// Protected reports a channel that is not open to anyone with its link: it has a password, or it
// is open to its testers only. Its objects never go through the CDN, its pages and QR codes are
// not cached publicly, and its feeds answer only to its feed token.
func (c *Channel) Protected() bool { return c.HasPassword() || c.TesterOnly }

// ChannelContext is a channel with the app and scheme it belongs to, as listings render them.
type ChannelContext struct {
	Channel Channel
	App     App // without schemes
	Scheme  Scheme
}

// Release is one uploaded build in a channel.
type Release struct {
	ID             int64
	ChannelID      int64
	Version        int
	Name           string // the app name parsed from the package
	BundleID       string
	ReleaseVersion string
	BuildVersion   string
	ReleaseType    string
	Source         string
	Branch         string
	GitCommit      string
	CIURL          string
	Changelog      []ChangelogEntry
	CustomFields   []CustomField
	Platform       string
	Format         string
	Device         string
	MinOS          string
	TargetSDK      string
	Profile        *ProfileSummary
	// Facts are what the package says beyond the fields every platform shares.
	Facts  PlatformFacts
	Size   int64
	SHA256 string
	// SHA512 and SHA1 (hex) are computed by Slipway from the stored bytes, as SHA256 is once
	// ChecksumState is ChecksumVerified; the update feeds carry them.
	SHA512 string
	SHA1   string
	// ChecksumState says whether the checksums were computed from the stored bytes (verified),
	// are still to be (unverified: a resumable upload's SHA-256 is the client's word until the
	// verifier reads the object) or did not match what the client declared (mismatch, with
	// ChecksumError): such a release is out of the feeds and its downloads are refused.
	ChecksumState string
	ChecksumError string
	// EdSignature is the package's Sparkle EdDSA (Ed25519) signature, base64 ("" when none).
	EdSignature string
	// SparkleSign: the release was uploaded without a signature to a channel with Sparkle signing
	// on, by an uploader allowed to have it signed; the verifier signs it once it is verified and
	// rolled out to someone (RolloutPercent above 0).
	SparkleSign bool
	// TauriSignature is the Tauri updater's signature of the package (the .sig file's content).
	TauriSignature string
	// RolloutPercent is the share of installs a staged rollout offers the update to (100: all);
	// Critical marks a mandatory update. The feeds say both in their own terms.
	RolloutPercent int
	Critical       bool
	ObjectKey      string
	Filename       string
	IconKey        *string
	IconType       *string
	// UploadedBy is the id of the token that uploaded the build (0: unknown or since revoked and
	// deleted); an upload token may edit its own uploads.
	UploadedBy int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// Pinned releases are never deleted by retention.
	Pinned bool
	// Downloads counts package downloads and iOS installs (see DownloadCounter); it lags the
	// truth by up to one flush interval, and by the read cache's TTL where read from a view.
	Downloads int64
}

// PlatformFacts are a package's facts beyond the fields every platform shares, as appinfo.Info
// reads them: the zero value for a file kept unparsed and for releases uploaded before.
type PlatformFacts struct {
	// Architectures are the CPU architectures in the platform's own words ("x64", "arm64", "noarch").
	Architectures []string
	// Publisher is a Windows CompanyName, Manufacturer or Publisher, a HarmonyOS vendor, a Debian
	// Maintainer, an RPM Vendor or Packager.
	Publisher string
	// Description is a one-line summary.
	Description string
	// Permissions are what the package asks for (HarmonyOS requestPermissions, MSIX capabilities).
	Permissions []string
	// Debuggable marks a debug build (HarmonyOS).
	Debuggable bool
	// Properties are the format's own facts by name ("ProductCode", "UpgradeCode", "FileVersion").
	Properties map[string]string
}

// Checksum states of a release (Release.ChecksumState).
const (
	ChecksumVerified = "verified"
	// ChecksumPending: the SHA-256 was computed as the upload streamed in; SHA-512 and SHA-1
	// (a desktop build's feeds need them) are still to be computed by the Verifier.
	ChecksumPending    = "pending"
	ChecksumUnverified = "unverified"
	ChecksumMismatch   = "mismatch"
)

// DesktopPlatform reports whether a platform's builds update themselves through the desktop
// update feeds (macOS, Windows, Linux), whose checksums (SHA-512, SHA-1) the Verifier computes.
func DesktopPlatform(platform string) bool {
	return platform == "macos" || platform == "windows" || platform == "linux"
}

// InFeeds reports whether the update feeds may offer the release: its checksums were computed
// from the stored bytes and it is rolled out to someone.
func (r *Release) InFeeds() bool {
	return r.ChecksumState == ChecksumVerified && r.SHA512 != "" && r.RolloutPercent > 0
}

// ChangelogEntry is one changelog line; the JSON form may carry author, email and date.
type ChangelogEntry struct {
	Message string
	Author  string
	Email   string
	Date    string
}

// CustomField is a title, value and icon-font class shown on the release page.
type CustomField struct {
	Name  string
	Value string
	Icon  string
}

// ProfileSummary is what Slipway keeps of an Apple provisioning profile.
type ProfileSummary struct {
	Name        string
	TeamID      string
	TeamName    string
	ExpiresAt   time.Time
	DeviceCount int
	AllDevices  bool
	Development bool
}

// ReleaseContext is a release with the channel, scheme and app it belongs to.
type ReleaseContext struct {
	Release
	Channel Channel
	Scheme  Scheme
	App     App // without schemes
	// News is what the upload that recorded the release learned; set only on the
	// release an upload returns and hands its release.created event, never read from the store.
	News *UploadNews
}

// UploadNews is what an upload learned comparing its build with its channel's newest release
// before it: the summary of what changed, and the size budget it crossed.
type UploadNews struct {
	// Against is the id of the release compared with (0: none: the channel's first build, or
	// one whose insights were not recorded yet).
	Against int64
	// Summary says what changed in short lines (insights.Summary); empty when nothing did.
	Summary []string
	// BudgetWarnings say which of the channel's size budgets the build crosses.
	BudgetWarnings []string
	// Warnings say what the upload kept that its uploader should look at: a build of another
	// app than its channel holds.
	Warnings []string
	// Distributed is who the build went to (nil: testers are not set up in this service).
	Distributed *Distributed
}

// Distributed is what a distribution did: how many testers a release went to anew, and how
// many of them were mailed now (an invitation or a new-build mail; a daily digest's come later).
type Distributed struct {
	Testers  int
	Notified int
	// Invited is how many of them were new to the app (the tester.invited event's count).
	Invited int
	// Queued: the distribution waits for the mailing component to expand it.
	Queued bool
}

// ChannelContext returns the release's channel with its app and scheme.
func (rc *ReleaseContext) ChannelContext() *ChannelContext {
	return &ChannelContext{Channel: rc.Channel, App: rc.App, Scheme: rc.Scheme}
}

// DebugFile is an uploaded debug archive (dSYMs or an Android mapping archive) of an app.
type DebugFile struct {
	ID             int64
	AppID          int64
	AppName        string
	ChannelID      int64
	DeviceType     string
	ReleaseVersion string
	BuildVersion   string
	SHA256         string
	// MD5 is the archive's MD5, which Zealot's clients look debug files up by ("" when unknown).
	MD5       string
	Size      int64
	ObjectKey string
	Filename  string
	CreatedAt time.Time
	UpdatedAt time.Time
	Metadata  []DebugFileMetadata
}

// DebugFileMetadata is one record of what a debug file holds: a Mach-O slice of a dSYM, or the
// file list of an Android archive. Data is a JSON object kept as given.
type DebugFileMetadata struct {
	ID          int64
	DebugFileID int64
	UUID        string
	Type        string
	Object      string
	Data        json.RawMessage
	Size        int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// DebugFileVersion is a debug file's id, versions and upload time, for picking the one to download.
type DebugFileVersion struct {
	ID             int64
	ReleaseVersion string
	BuildVersion   string
	CreatedAt      time.Time
}

// Token scopes: upload may upload apps and debug files (and edit its own uploads, sync devices);
// admin may do everything (the policy's rules, pkg/distribution/policy).
const (
	ScopeUpload = "upload"
	ScopeAdmin  = "admin"
)

// Token is an API token's record. The token itself is shown once and never stored.
type Token struct {
	ID    int64
	Name  string
	Scope string
	// UserID is the token's owner, a console user, or 0 for a token made by the command line on
	// the server. An owned token never exceeds its owner's rights and dies with them; a token
	// made with a token belongs to the same owner.
	UserID int64
	// Owner names the owner in listings (their name or email; empty without one).
	Owner string
	// OwnerRole is the owner's role now, as authentication reads it (empty without an owner):
	// the policy lets the token do only what its owner may.
	OwnerRole  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// ExpiresAt, when set, is when the token stops working (refused as a revoked one is).
	ExpiresAt *time.Time
	// Apps, when not empty, are the ids of the only apps the token may act on; empty: any app.
	Apps []int64
	// Abilities, when not empty, are the only kinds of thing the token may do (AbilityRead,
	// AbilityUpload, AbilityDevices), within its scope; empty: all its scope allows.
	Abilities []string
}

// Token abilities: what a token limited to abilities may do, within its scope (the policy's
// rules, pkg/distribution/policy). read: list and read apps, releases, debug files; upload:
// upload builds and debug files, edit releases (its own, for an upload token), use its upload
// sessions; devices: read and register devices (and approve or delete them, for an admin token).
const (
	AbilityRead    = "read"
	AbilityUpload  = "upload"
	AbilityDevices = "devices"
)

// Abilities lists every ability, in the order they are shown.
var Abilities = []string{AbilityRead, AbilityUpload, AbilityDevices}

// NewToken is a token to make: its name, scope and owner (0: none), and who makes it (the audit
// row's actor).
type NewToken struct {
	Name, Scope string
	// Apps and Abilities limit the token (Token.Apps, Token.Abilities); empty: no limit.
	Apps      []int64
	Abilities []string
	// ExpiresAt, when set, is when the token stops working; nil: never.
	ExpiresAt *time.Time
	UserID    int64
	By        Actor
}

// Device is an Apple device known by its UDID: synced from the developer portal (fastlane's
// zealot_sync_devices), registered over the API, or collected by the UDID profile service.
type Device struct {
	ID       int64
	UDID     string
	Name     string
	Model    string
	Platform string
	// DeviceID and Status are the Apple developer portal's, when synced from it.
	DeviceID string
	Status   string
	// Product (e.g. iPhone15,2), OSVersion and Serial come from a profile-service answer.
	Product   string
	OSVersion string
	Serial    string
	// Source is how the device became known: "api" or "profile".
	Source string
	// Unverified is set for a device registered by a profile answer whose signer does not chain
	// to Apple's device CA, until an admin approves it: it is left out of the portal export.
	Unverified bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Page selects a page of a listing: Page is 1-based.
type Page struct {
	Page    int
	PerPage int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.PerPage }

// UploadSession is a resumable upload (POST /api/uploads): its parts go straight into object
// storage, and completing it records the release or debug file as an upload does.
type UploadSession struct {
	ID      string
	TokenID int64
	// Kind is SessionApp or SessionDebugFile.
	Kind            string
	ObjectKey       string
	StorageUploadID string
	Filename        string
	Size            int64
	// SHA256 is the client's checksum of the file ("" when it gave none): the service never reads
	// the whole file on this path, so it records what the client declared.
	SHA256   string
	PartSize int64
	// Fields are the upload's form fields (channel_key, changelog, ...), kept until completion.
	Fields map[string]string
	State  string
	// ResultID is the release or debug file a completed session made.
	ResultID int64
	// Error says why a failed session's package was refused.
	Error     string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// Session kinds and states.
const (
	SessionApp       = "app"
	SessionDebugFile = "debug_file"

	SessionOpen       = "open"
	SessionCompleting = "completing"
	SessionCompleted  = "completed"
	SessionAborted    = "aborted"
	SessionExpired    = "expired"
	SessionFailed     = "failed"
)

// User is a person who signs in to the console.
type User struct {
	ID int64
	// Subject is the identity provider's issuer and subject ("iss|sub"); "" for local users.
	Subject   string
	Email     string
	Name      string
	Role      string
	CreatedAt time.Time
	LastLogin *time.Time
	// DisabledAt is when an admin disabled the user: they can neither sign in nor use their tokens.
	DisabledAt *time.Time
	// AdminByGroups: the admin role was given by the identity provider's admin groups at a
	// sign-in, and the next sign-in outside them takes it back. A role given in the console is not.
	AdminByGroups bool
}

// Console roles.
const (
	RoleAdmin     = "admin"
	RoleDeveloper = "developer"
	RoleViewer    = "viewer"
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

// RetentionPolicy is a scheme's or channel's retention settings. A nil field inherits (channel →
// scheme → the replica's defaults); 0 turns the rule off.
type RetentionPolicy struct {
	// KeepBuilds keeps the newest N builds of each channel (a scheme's is Zealot's retained_builds).
	KeepBuilds *int `param:"keep_builds,nullable"`
	// MaxAgeDays deletes builds older than this many days.
	MaxAgeDays *int `param:"max_age_days,nullable"`
	// MaxBytes deletes the oldest builds while the channel's packages total more.
	MaxBytes *int64 `param:"max_bytes,nullable"`
	// ExpiredProfileDays deletes iOS builds whose provisioning profile expired this many days ago.
	ExpiredProfileDays *int `param:"expired_profile_days,nullable"`
}

// RetentionRules are a channel's effective rules; 0 is off.
type RetentionRules struct {
	KeepBuilds         int   `json:"keep_builds"`
	MaxAgeDays         int   `json:"max_age_days"`
	MaxBytes           int64 `json:"max_bytes"`
	ExpiredProfileDays int   `json:"expired_profile_days"`
}

// Off reports whether no rule applies.
func (r RetentionRules) Off() bool { return r == RetentionRules{} }

// RetentionCandidate is what the rules look at of a release.
type RetentionCandidate struct {
	ID      int64
	Version int
	// BundleID is the build's app: the rules count each app's builds of a channel apart.
	BundleID         string
	Platform         string
	CreatedAt        time.Time
	Size             int64
	Pinned           bool
	ProfileExpiresAt *time.Time
}

// RetentionVictim is a release the rules delete, and the first rule that chose it.
type RetentionVictim struct {
	RetentionCandidate
	Reason string
}

// Retention reasons.
const (
	ReasonKeepBuilds     = "keep_builds"
	ReasonMaxAge         = "max_age"
	ReasonMaxBytes       = "max_bytes"
	ReasonExpiredProfile = "expired_profile"
)

// RetentionState is a channel's policies and releases, as the store reads them.
type RetentionState struct {
	ChannelID int64
	Scheme    RetentionPolicy
	Channel   RetentionPolicy
	// Releases, newest (highest version) first.
	Releases []RetentionCandidate
}

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

// Change names what a write changed: a channel, a scheme or an app (the non-zero field).
type Change struct {
	ChannelID, SchemeID, AppID int64
}

// Kinds of ObjectOwner.
const (
	OwnerRelease    = "release"    // a release's package
	OwnerIcon       = "icon"       // a release's icon
	OwnerDebugFile  = "debug_file" // a debug file
	OwnerScreenshot = "screenshot" // a feedback screenshot or its thumbnail
	OwnerLedger     = "ledger"     // storage_objects: an upload in progress, or an object the collector is to delete
	OwnerSession    = "session"    // an open resumable upload session
)

// ObjectOwner is a row that names an object key: reconciliation (`slipway gc --reconcile`)
// compares them with what the bucket holds.
type ObjectOwner struct {
	Key  string
	Kind string // OwnerRelease, OwnerIcon, ...
	// ID is the release's, debug file's or feedback's id (0 for the ledger and sessions).
	ID int64
}

// Expected reports whether the row's object must exist: releases' packages and icons, debug
// files and screenshots. Ledger rows and open sessions may name objects not (or no longer) stored.
func (o ObjectOwner) Expected() bool {
	return o.Kind == OwnerRelease || o.Kind == OwnerIcon || o.Kind == OwnerDebugFile || o.Kind == OwnerScreenshot
}
