package distribution

import (
	"context"
	"errors"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// The small interfaces the domain needs from its database. pkg/store implements them on Postgres;
// unit tests implement the few methods a rule touches. Every method returns *errs.Error for
// conditions a client can act on (not found, conflict, unavailable), classified where they arise.

// ErrStale is returned (wrapped) by UpdateScheme, UpdateChannel and UpdateRelease when the row's
// updated_at is no longer the one the caller read: another edit landed in between. The domain then
// reads the row again and re-applies its changes (retryStale), so that concurrent edits of
// different fields all take effect instead of the last write restoring stale fields.
var ErrStale = errors.New("the row changed since it was read")

// maxEditAttempts bounds how often an edit is re-read and re-applied while other edits of the same
// row keep landing between its read and its write.
const maxEditAttempts = 5

// retryStale runs a read-apply-write edit again while its write finds the row changed (ErrStale).
func retryStale[T any](edit func() (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := edit()
		if !errors.Is(err, ErrStale) {
			return v, err
		}
		if attempt == maxEditAttempts {
			return v, errs.Wrap(errs.Conflict, err, "this record is being changed by other requests at the same time; try again")
		}
	}
}

// AppStore reads and writes apps, schemes and channels.
type AppStore interface {
	ListApps(ctx context.Context, p Page) ([]App, error)
	GetApp(ctx context.Context, id int64) (*App, error)
	CreateApp(ctx context.Context, name string) (*App, error)
	RenameApp(ctx context.Context, id int64, name string) (*App, error)
	// DestroyApp deletes the app with everything in it, records their objects as deleted in the
	// same transaction, and returns those keys.
	DestroyApp(ctx context.Context, id int64) ([]string, error)

	ListSchemes(ctx context.Context, appID int64) ([]Scheme, error)
	GetScheme(ctx context.Context, id int64) (*Scheme, error)
	CreateScheme(ctx context.Context, s *Scheme) (*Scheme, error)
	UpdateScheme(ctx context.Context, s *Scheme) (*Scheme, error)
	// DeleteScheme deletes the scheme with its channels, releases and debug files, and returns
	// their object keys (recorded as deleted).
	DeleteScheme(ctx context.Context, id int64, emit EventFunc) ([]string, error)

	ChannelContextBySlug(ctx context.Context, slug string) (*ChannelContext, error)
	ChannelContextByID(ctx context.Context, id int64) (*ChannelContext, error)
	ListChannels(ctx context.Context, schemeID int64) ([]Channel, error)
	CreateChannel(ctx context.Context, c *Channel) (*Channel, error)
	UpdateChannel(ctx context.Context, c *Channel) (*Channel, error)
	DeleteChannel(ctx context.Context, id int64, emit EventFunc) ([]string, error)
}

// ReleaseStore reads and writes releases.
type ReleaseStore interface {
	GetRelease(ctx context.Context, id int64) (*ReleaseContext, error)
	ListReleases(ctx context.Context, channelID int64, p Page) ([]Release, error)
	CountReleases(ctx context.Context, channelID int64) (int, error)
	// RecentReleases returns up to limit of a channel's newest releases, only those with bundleID
	// unless it is "".
	RecentReleases(ctx context.Context, channelID int64, bundleID string, limit int) ([]Release, error)
	// FindRelease returns the newest release matching bundle id and the non-empty ones of the
	// versions and commit, or errs.NotFound.
	FindRelease(ctx context.Context, channelID int64, bundleID, releaseVersion, buildVersion, gitCommit string) (*Release, error)
	CreateRelease(ctx context.Context, nr *NewRelease, objectKeys []string) (*ReleaseContext, error)
	UpdateRelease(ctx context.Context, r *Release) (*ReleaseContext, error)
	// DeleteRelease deletes a release and returns its object keys (recorded as deleted).
	// emit (nil: none) makes its events from the release as read before the delete.
	DeleteRelease(ctx context.Context, id int64, emit EventFunc) ([]string, error)
	// ReleaseBundleIDs lists the distinct bundle ids of an app's releases on a platform.
	ReleaseBundleIDs(ctx context.Context, appID int64, platform string) ([]string, error)
}

// DebugFileStore reads and writes debug files.
type DebugFileStore interface {
	GetDebugFile(ctx context.Context, id int64) (*DebugFile, error)
	ListDebugFiles(ctx context.Context, appID int64, deviceType string, p Page) ([]DebugFile, error)
	DebugFileVersions(ctx context.Context, appID int64, deviceType, releaseVersion, buildVersion string) ([]DebugFileVersion, error)
	// FindDebugFile returns the newest debug file of a channel's app matching the query, or
	// errs.NotFound.
	FindDebugFile(ctx context.Context, q DebugFileQuery) (*DebugFile, error)
	// CreateDebugFile records a debug file; emit (nil: none) makes its events.
	CreateDebugFile(ctx context.Context, d *DebugFile, meta []DebugFileMetadata, emit func(*DebugFile) ([]Event, error)) (*DebugFile, error)
	// ReplaceDebugFile points a debug file at a new object and returns the old object's key.
	ReplaceDebugFile(ctx context.Context, d *DebugFile, meta []DebugFileMetadata) (string, *DebugFile, error)
	DeleteDebugFile(ctx context.Context, id int64) (string, error)
}

// TokenStore keeps API tokens (only their hashes).
type TokenStore interface {
	CreateToken(ctx context.Context, name, scope string) (string, *Token, error)
	// Authenticate returns the active token matching secret, or errs.Unauthenticated.
	Authenticate(ctx context.Context, secret string) (*Token, error)
	ListTokens(ctx context.Context) ([]Token, error)
	RevokeToken(ctx context.Context, name string) error
	RevokeTokenByID(ctx context.Context, id int64) (*Token, error)
}

// DeviceStore keeps registered devices.
type DeviceStore interface {
	// UpsertDevice creates the device with this UDID or updates the given fields of it; created
	// reports which.
	UpsertDevice(ctx context.Context, d *Device) (dev *Device, created bool, err error)
	ListDevices(ctx context.Context, p Page) ([]Device, error)
	GetDevice(ctx context.Context, udid string) (*Device, error)
	DeleteDevice(ctx context.Context, udid string) error
	// AllDevices lists every device, oldest first (the export).
	AllDevices(ctx context.Context) ([]Device, error)
	// ReleasesForDevice returns the newest iOS releases (at most limit) whose profile lists udid
	// or provisions all devices, with their channels.
	ReleasesForDevice(ctx context.Context, udid string, limit int) ([]ReleaseContext, error)
	// ReleaseHasDevice reports whether a release's profile lists udid.
	ReleaseHasDevice(ctx context.Context, releaseID int64, udid string) (bool, error)
}

// SessionStore keeps upload sessions.
type SessionStore interface {
	// CreateSession records a session and its object as pending, in one transaction.
	CreateSession(ctx context.Context, s *UploadSession) error
	GetSession(ctx context.Context, id string) (*UploadSession, error)
	// SwitchSession moves a session from state from to state to (recording resultID and errMsg),
	// and reports whether it was in from: concurrent completions do the work once.
	SwitchSession(ctx context.Context, id, from, to string, resultID int64, errMsg string) (bool, error)
	// ExpireSessions ends the open sessions past their expiry and hands their objects to the
	// collector (state deleted), in one transaction; it returns how many it ended.
	ExpireSessions(ctx context.Context) (int, error)
}

// ObjectLedger is the bookkeeping the collector works from (see design.md, property 4).
type ObjectLedger interface {
	MarkPending(ctx context.Context, key string) error
	Forget(ctx context.Context, key string) error
	Abandon(ctx context.Context, keys ...string) ([]string, error)
	Collectable(ctx context.Context, grace time.Duration, limit int) ([]string, error)
	Collect(ctx context.Context, key string, grace time.Duration, del func(ctx context.Context, key string) error) (bool, error)
}

// PasswordGuard counts wrong channel passwords per client, shared by all replicas.
type PasswordGuard interface {
	PasswordFailures(ctx context.Context, channelID int64, client string, window time.Duration) (int, time.Time, error)
	RecordPasswordFailure(ctx context.Context, channelID int64, client string, window time.Duration) error
	ClearPasswordFailures(ctx context.Context, channelID int64, client string) error
}

// Store is everything the domain asks of its database.
type Store interface {
	Ping(ctx context.Context) error
	AppStore
	ReleaseStore
	DebugFileStore
	TokenStore
	DeviceStore
	SessionStore
	ObjectLedger
	PasswordGuard
	ChangeFeed
	WebhookStore
	RetentionStore
	DownloadStore
	UserStore
}

// NewRelease is what an upload records.
type NewRelease struct {
	Release
	// ChannelSlug targets an existing channel; empty finds or creates app, scheme and channel.
	ChannelSlug string
	// AppName and SchemeName are used when ChannelSlug is empty.
	AppName    string
	SchemeName string
	// Check validates the package against an existing channel (platform, bundle id pattern).
	Check func(c *Channel) error
	// PasswordHash, when non-empty, becomes the channel's download password.
	PasswordHash string
	// ProfileDevices are the UDIDs the package's provisioning profile lists (canonical form).
	ProfileDevices []string
	// Events (nil: none) makes the upload's events from the release as recorded.
	Events EventFunc
	// IdempotencyKey makes a retried upload by the same token (Release.UploadedBy) return the
	// first release.
	IdempotencyKey string
}

// ErrIdempotentReplay is returned (with the first release's id) when an upload's idempotency key
// was already used by this token.
type ErrIdempotentReplay struct{ ReleaseID int64 }

func (e *ErrIdempotentReplay) Error() string { return "idempotent replay" }

// DebugFileQuery finds a debug file by what crash tools know of a build. Zero fields are not
// compared; AppID 0 searches every app.
type DebugFileQuery struct {
	AppID                        int64
	DeviceType                   string
	ReleaseVersion, BuildVersion string
	// UUID is a Mach-O UUID (upper case) or a mapping file's UUID (lower case), as stored.
	UUID string
	// SHA256 and MD5 are checksums of the archive (hex, lower case).
	SHA256, MD5 string
}
