package uploads

import (
	"context"
	"errors"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Recording an upload is one unit of work: the steps below run in one transaction of the store's
// (BuildStore.InUploadTx), in this order, and either all take effect or none does. The store runs
// each step's SQL; what the steps are, their order and every rule between them are here, so they
// can be read in one place and tested without a database.

// UploadTx is what recording an upload asks of the database inside its transaction. A method's
// error ends the transaction (rolled back).
type UploadTx interface {
	// ReleaseForKey returns the release a token's earlier upload with this idempotency key
	// recorded (0: none).
	ReleaseForKey(ctx context.Context, tokenID int64, key string) (int64, error)
	// KeepKey records that the token's upload with key recorded releaseID. When a concurrent
	// upload with the same key committed first, it records nothing and returns that upload's
	// release (0 otherwise).
	KeepKey(ctx context.Context, tokenID int64, key string, releaseID int64) (int64, error)

	// LockChannel returns the channel a key names with its app's id, and locks the app's row FOR
	// KEY SHARE until the commit: an app being destroyed is destroyed after this release, or is
	// gone already and the upload fails (errs.NotFound).
	LockChannel(ctx context.Context, slug string) (*distribution.Channel, int64, error)
	// LockAppByID returns the name of the app an upload goes into (ReleaseForm.AppID) and locks its
	// row FOR KEY SHARE until the commit (errs.NotFound when it is gone).
	LockAppByID(ctx context.Context, appID int64) (string, error)
	// LockAppName makes the auto-creating uploads of one app name take turns until the commit, so
	// that concurrent ones create one app, one scheme and one channel.
	LockAppName(ctx context.Context, name string) error
	// AppNamed returns the oldest app of that name and locks its row FOR KEY SHARE (0: none).
	AppNamed(ctx context.Context, name string) (int64, error)
	// CreateApp records an app with no schemes and returns its id.
	CreateApp(ctx context.Context, name string) (int64, error)
	// EnsureScheme returns the app's scheme of that name, recording it when missing (the schema
	// keeps a scheme's name unique within its app).
	EnsureScheme(ctx context.Context, appID int64, name string) (int64, error)
	// ChannelFor returns the scheme's oldest channel of a device type (nil: none).
	ChannelFor(ctx context.Context, schemeID int64, deviceType string) (*distribution.Channel, error)
	// CreateChannel records a channel (a random key when c.Slug is empty) and returns it.
	CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error)
	// LearnApp records bundleID as the app a channel made without a bundle id holds (its
	// AppBundleID), unless it has learned one already.
	LearnApp(ctx context.Context, channelID int64, bundleID string) error
	// SetPassword makes hash the channel's download password.
	SetPassword(ctx context.Context, channelID int64, hash string) error

	// NewestRelease returns the channel's newest release and its insights snapshot (nil, nil when
	// the channel has none; a nil snapshot when that release has none recorded).
	NewestRelease(ctx context.Context, channelID int64) (*distribution.Release, []byte, error)
	// NextVersion takes the channel's next release number. The channel's row stays locked until
	// the commit, so concurrent uploads to one channel take distinct numbers in turn.
	NextVersion(ctx context.Context, channelID int64) (int, error)
	// InsertRelease records r (its ChannelID and Version set) with the UDIDs its provisioning
	// profile lists, and returns its id.
	InsertRelease(ctx context.Context, r *distribution.Release, profileDevices []string) (int64, error)
	// InsertInsights records a release's insights snapshot (insights.Snapshot as JSON).
	InsertInsights(ctx context.Context, releaseID int64, snapshot []byte) error
	// Release reads a release with its channel, scheme and app.
	Release(ctx context.Context, id int64) (*distribution.ReleaseContext, error)

	OwnerTx
}

// OwnerTx is what a transaction recording the owner of stored objects (a release, a debug file)
// asks of the database besides the owner's own rows.
type OwnerTx interface {
	// Claim takes keys off the ledger of pending objects: from the commit on, they are live. A key
	// whose pending row is gone was collected (the upload outlived the collector's grace period):
	// errs.Unavailable, and the owner must not be recorded.
	Claim(ctx context.Context, keys ...string) error
	// MarkDeleted records keys as deleted, for the collector and DeleteObjects after the commit.
	MarkDeleted(ctx context.Context, keys ...string) error
	// Distribution is the upload's transaction as distributing its release needs it.
	Distribution() distribution.DistributionTx
	// WriteEvents puts events in the outbox: one delivery for each enabled webhook of the event's
	// channel or app that subscribes to its kind.
	WriteEvents(ctx context.Context, evs []distribution.Event) error
}

// errReplay ends the transaction of an upload whose idempotency key was used already by its
// token: nothing is recorded, and the upload answers the first one's release.
type errReplay struct{ releaseID int64 }

func (e *errReplay) Error() string { return "idempotent replay" }

// upload is what an upload records: the release as parsed, and where it goes.
type upload struct {
	release distribution.Release
	// channelSlug names an existing channel; empty finds or creates the app appName (or takes
	// the app appID), its scheme schemeName and its channel of the package's platform.
	channelSlug, appName, schemeName string
	appID                            int64
	// info is the parsed package, which a named channel must take (checkChannel).
	info *appinfo.Info
	// passwordHash, when not empty, becomes the channel's download password.
	passwordHash string
	// profileDevices are the UDIDs the provisioning profile lists (canonical form).
	profileDevices []string
	// idemKey makes a retried upload by the same token (release.UploadedBy) answer the first one.
	idemKey string
	// snap is the package's insights snapshot, recorded as snapJSON and compared with the
	// channel's newest release before it (against).
	snap     *insights.Snapshot
	snapJSON []byte
	// distribute names who the release goes to beyond its channel's tester groups.
	distribute distribution.DistributeInput
	// otherApp is what to do with a build of another app than its channel holds.
	otherApp otherAppRule
}

// record records up in one transaction and claims keys (the package and icon objects): the
// release with its channel's next version, the channel (and app and scheme) when the upload makes
// them, the idempotency key, the insights snapshot and the release.created events. Concurrent
// uploads to one channel get distinct versions; concurrent auto-creating uploads of one name make
// one app, scheme and channel. It returns the release with what the upload learned (News), or
// *errReplay.
func (b *Builds) record(ctx context.Context, up *upload, keys []string) (*distribution.ReleaseContext, error) {
	news := &distribution.UploadNews{}
	var rc *distribution.ReleaseContext
	err := b.Store.InUploadTx(ctx, func(tx UploadTx) error {
		token := up.release.UploadedBy
		if up.idemKey != "" {
			first, err := tx.ReleaseForKey(ctx, token, up.idemKey)
			if err != nil {
				return err
			}
			if first != 0 {
				return &errReplay{first}
			}
		}
		ch, appID, err := up.channel(ctx, tx)
		if err != nil {
			return err
		}
		if up.passwordHash != "" {
			if err := tx.SetPassword(ctx, ch.ID, up.passwordHash); err != nil {
				return err
			}
		}
		prev, prevInsights, err := tx.NewestRelease(ctx, ch.ID)
		if err != nil {
			return err
		}
		if err := against(news, up.snap, up.release.Size, ch, prev, prevInsights); err != nil {
			return err
		}
		if err := checkApp(ctx, tx, ch, up.release.BundleID, up.otherApp, news); err != nil {
			return err
		}
		if w := electronWarning(&up.release); w != "" {
			news.Warnings = append(news.Warnings, w)
		}
		r := up.release
		r.ChannelID = ch.ID
		r.SparkleSign = b.signs(ctx, ch, appID, &r)
		if r.Version, err = tx.NextVersion(ctx, ch.ID); err != nil {
			return err
		}
		id, err := tx.InsertRelease(ctx, &r, up.profileDevices)
		if err != nil {
			return err
		}
		if up.idemKey != "" {
			first, err := tx.KeepKey(ctx, token, up.idemKey, id)
			if err != nil {
				return err
			}
			if first != 0 { // a concurrent retry with the same key committed first: answer it
				return &errReplay{first}
			}
		}
		if up.snapJSON != nil {
			if err := tx.InsertInsights(ctx, id, up.snapJSON); err != nil {
				return err
			}
		}
		if err := tx.Claim(ctx, keys...); err != nil {
			return err
		}
		// Read back inside the transaction: once it has committed, nothing may fail the upload.
		if rc, err = tx.Release(ctx, id); err != nil {
			return err
		}
		rc.News = news
		if b.Testers != nil {
			if !up.distribute.Empty() {
				if err := b.Policy.Authorize(ctx, policy.Distribute, policy.OnApp(rc.App.ID)); err != nil {
					return err
				}
			}
			d, err := b.Testers.DistributeIn(ctx, tx.Distribution(), rc, up.distribute)
			if err != nil {
				return err
			}
			if rc.Channel.TesterOnly || !up.distribute.Empty() {
				news.Distributed = &d
			}
		} else if !up.distribute.Empty() {
			return errs.Field("testers", "testers are not available here")
		}
		if events := b.Effects.ReleaseEvents(webhook.EventReleaseCreated); events != nil {
			evs, err := events(rc)
			if err != nil {
				return err
			}
			return tx.WriteEvents(ctx, evs)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if b.Testers != nil && news.Distributed != nil {
		b.Testers.Committed(*news.Distributed)
	}
	return rc, nil
}

// signs decides whether Slipway signs release r with the operator's Sparkle key once it is
// verified and rolled out: only a macOS package that came without a signature, in a channel an
// admin switched signing on for, uploaded by an actor the policy lets have builds of the app
// signed (never an upload token that reaches every app).
func (b *Builds) signs(ctx context.Context, ch *distribution.Channel, appID int64, r *distribution.Release) bool {
	if !ch.SparkleSigning || r.Platform != "macos" || r.EdSignature != "" {
		return false
	}
	return b.Policy.Allowed(ctx, policy.SignRelease, policy.OnApp(appID))
}

// channel returns the channel the upload goes into, with its app's id: the one its key names,
// which must take the package (its app row locked), or the app's channel of the package's
// platform, found or created with the app (unless the upload names its app) and the scheme, one
// upload of the name at a time.
func (up *upload) channel(ctx context.Context, tx UploadTx) (*distribution.Channel, int64, error) {
	if up.channelSlug != "" {
		ch, appID, err := tx.LockChannel(ctx, up.channelSlug)
		if err != nil {
			return nil, 0, err
		}
		if err := checkChannel(ch, up.info); err != nil {
			return nil, 0, err
		}
		return ch, appID, nil
	}
	appID, err := up.app(ctx, tx)
	if err != nil {
		return nil, 0, err
	}
	schemeID, err := tx.EnsureScheme(ctx, appID, up.schemeName)
	if err != nil {
		return nil, 0, err
	}
	platform := up.release.Platform
	ch, err := tx.ChannelFor(ctx, schemeID, platform)
	if err != nil || ch != nil {
		return ch, appID, err
	}
	// A channel an upload makes is named after its platform and takes any bundle id (api.md); it
	// holds the app of this, its first build (checkApp).
	ch, err = tx.CreateChannel(ctx, &distribution.Channel{SchemeID: schemeID, Name: platform, DeviceType: platform,
		BundleID: "*", AppBundleID: up.release.BundleID, DownloadFilenameType: "original", AppInstallerHours: distribution.DefaultAppInstallerHours})
	return ch, appID, err
}

// app returns the app an upload without a channel key goes into: the one it names (its row
// locked, then its name's turn taken, as the uploads that find it by name take it), or the
// oldest of its name, made when there is none.
func (up *upload) app(ctx context.Context, tx UploadTx) (int64, error) {
	if up.appID != 0 {
		name, err := tx.LockAppByID(ctx, up.appID)
		if err != nil {
			return 0, err
		}
		return up.appID, tx.LockAppName(ctx, name)
	}
	if err := tx.LockAppName(ctx, up.appName); err != nil {
		return 0, err
	}
	appID, err := tx.AppNamed(ctx, up.appName)
	if err == nil && appID == 0 {
		appID, err = tx.CreateApp(ctx, up.appName)
	}
	return appID, err
}

// replayed reports whether err is an upload's replay, and of which release.
func replayed(err error) (int64, bool) {
	var r *errReplay
	if errors.As(err, &r) {
		return r.releaseID, true
	}
	return 0, false
}
