// Package catalog is what Slipway distributes: apps, their schemes and channels (Apps), and the
// releases in them (Releases), with the update-check reads (latest, versions, version_exist)
// answered from the read cache's channel views.
package catalog

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Apps, schemes and channels: the management use cases. Changes arrive as pointers, so that PUT
// and PATCH (which Zealot treats alike) change only the fields a client sent.

// AppStore reads and writes apps, schemes and channels.
type AppStore interface {
	// ListApps returns a page of apps ordered by id: those of only, when only is not nil.
	ListApps(ctx context.Context, p distribution.Page, only []int64) ([]distribution.App, error)
	GetApp(ctx context.Context, id int64) (*distribution.App, error)
	CreateApp(ctx context.Context, name string) (*distribution.App, error)
	RenameApp(ctx context.Context, id int64, name string) (*distribution.App, error)
	// DestroyApp deletes the app with everything in it, records their objects as deleted in the
	// same transaction, and returns those keys.
	DestroyApp(ctx context.Context, id int64) ([]string, error)

	ListSchemes(ctx context.Context, appID int64) ([]distribution.Scheme, error)
	GetScheme(ctx context.Context, id int64) (*distribution.Scheme, error)
	CreateScheme(ctx context.Context, s *distribution.Scheme) (*distribution.Scheme, error)
	UpdateScheme(ctx context.Context, s *distribution.Scheme) (*distribution.Scheme, error)
	// DeleteScheme deletes the scheme with its channels, releases and debug files, and returns
	// their object keys (recorded as deleted).
	DeleteScheme(ctx context.Context, id int64, emit distribution.EventFunc) ([]string, error)

	ChannelContextBySlug(ctx context.Context, slug string) (*distribution.ChannelContext, error)
	ChannelContextByID(ctx context.Context, id int64) (*distribution.ChannelContext, error)
	ListChannels(ctx context.Context, schemeID int64) ([]distribution.Channel, error)
	CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error)
	UpdateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error)
	DeleteChannel(ctx context.Context, id int64, emit distribution.EventFunc) ([]string, error)
	// CountReleases counts a channel's releases (a channel with builds keeps its device type).
	CountReleases(ctx context.Context, channelID int64) (int, error)
	// SetFeedToken records the SHA-256 (hex) of the channel's feed token.
	SetFeedToken(ctx context.Context, channelID int64, hash string) error
	// InChannelTx runs fn in one transaction: it commits when fn returns nil.
	InChannelTx(ctx context.Context, fn func(tx ChannelTx) error) error
}

// ChannelTx is what making a channel with its scheme (CreateChannelIn) asks of the database in
// its one transaction. A method's error ends the transaction (rolled back).
type ChannelTx interface {
	// LockApp holds the app's row FOR KEY SHARE until the commit (errs.NotFound: it is gone).
	LockApp(ctx context.Context, appID int64) error
	// SchemeNamed returns the app's oldest scheme whose name is name, in any letter case (0: none).
	SchemeNamed(ctx context.Context, appID int64, name string) (int64, error)
	// CreateScheme records a scheme, or returns the one of exactly that name a concurrent
	// transaction recorded first (the schema keeps a scheme's name unique within its app).
	CreateScheme(ctx context.Context, s *distribution.Scheme) (int64, error)
	// LockScheme holds the scheme's row FOR UPDATE until the commit: channels made in one scheme
	// take turns, so a name checked free stays free until the insert.
	LockScheme(ctx context.Context, schemeID int64) error
	// ChannelNamed reports whether the scheme has a channel of that name, in any letter case.
	ChannelNamed(ctx context.Context, schemeID int64, name string) (bool, error)
	// CreateChannel records a channel (a random key when c.Slug is empty) and returns it.
	CreateChannel(ctx context.Context, c *distribution.Channel) (*distribution.Channel, error)
}

// Apps runs the use cases of apps, schemes and channels.
type Apps struct {
	Store AppStore
	// Effects are what a change sets off: the read cache drops what it changed, a deletion's
	// objects are deleted after the commit, and its release.deleted events are made and sent.
	Effects distribution.Effects
	// Audit records each change as the context's actor (nil: not recorded).
	Audit *distribution.AuditLog
	// Policy decides whether the context's actor may read or change what a use case touches.
	Policy *policy.Policy
	// Access sets and reads which tester groups open a channel (testers.Testers; nil: channels
	// take no tester_groups).
	Access ChannelAccess
}

// ChannelAccess sets and reads which tester groups open a channel.
type ChannelAccess interface {
	SetChannelGroups(ctx context.Context, cc *distribution.ChannelContext, aliases []string) error
	ChannelGroups(ctx context.Context, channelID int64) ([]distribution.TesterGroup, error)
}

// withGroups fills a channel's TesterGroups (the aliases of the groups that open it).
func (a *Apps) withGroups(ctx context.Context, c *distribution.Channel) error {
	if a.Access == nil || !c.TesterOnly {
		return nil
	}
	gs, err := a.Access.ChannelGroups(ctx, c.ID)
	if err != nil {
		return err
	}
	c.TesterGroups = make([]string, len(gs))
	for i, g := range gs {
		c.TesterGroups[i] = g.Alias
	}
	return nil
}

// may asks the policy whether the context's actor may take act on an app.
func (a *Apps) may(ctx context.Context, act policy.Action, appID int64) error {
	return a.Policy.Authorize(ctx, act, policy.OnApp(appID))
}

// schemeFor reads a scheme and checks the context's actor may take act on its app.
func (a *Apps) schemeFor(ctx context.Context, act policy.Action, id int64) (*distribution.Scheme, error) {
	sc, err := a.Store.GetScheme(ctx, id)
	if err != nil {
		return nil, err
	}
	return sc, a.may(ctx, act, sc.AppID)
}

// channelFor reads a channel with its app and scheme and checks the context's actor may take act
// on its app.
func (a *Apps) channelFor(ctx context.Context, act policy.Action, id int64) (*distribution.ChannelContext, error) {
	cc, err := a.Store.ChannelContextByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return cc, a.may(ctx, act, cc.App.ID)
}

// ListApps returns a page of the apps the context's actor may see (a token limited to apps sees
// only those), with their schemes and channels, ordered by id.
func (a *Apps) ListApps(ctx context.Context, p distribution.Page) ([]distribution.App, error) {
	if err := a.Policy.Authorize(ctx, policy.ReadCatalog, policy.AppListing); err != nil {
		return nil, err
	}
	only, limited := a.Policy.ListedApps(ctx)
	if limited && len(only) == 0 {
		return []distribution.App{}, nil
	}
	return a.Store.ListApps(ctx, p, only)
}

// App returns one app with its schemes and channels.
func (a *Apps) App(ctx context.Context, id int64) (*distribution.App, error) {
	if err := a.may(ctx, policy.ReadCatalog, id); err != nil {
		return nil, err
	}
	return a.Store.GetApp(ctx, id)
}

// CreateApp creates an app with no schemes.
func (a *Apps) CreateApp(ctx context.Context, name string) (*distribution.App, error) {
	if err := a.Policy.Authorize(ctx, policy.CreateApp, policy.Installation); err != nil {
		return nil, err
	}
	name, err := requiredName("name", name)
	if err != nil {
		return nil, err
	}
	app, err := a.Store.CreateApp(ctx, name)
	if err == nil {
		a.Audit.Record(ctx, "app.create", distribution.AppTarget(app), nil)
	}
	return app, err
}

// RenameApp renames an app.
func (a *Apps) RenameApp(ctx context.Context, id int64, name string) (*distribution.App, error) {
	if err := a.may(ctx, policy.ManageApp, id); err != nil {
		return nil, err
	}
	name, err := requiredName("name", name)
	if err != nil {
		return nil, err
	}
	defer a.Effects.Changed(distribution.Change{AppID: id})
	old, err := a.Store.GetApp(ctx, id)
	if err != nil {
		return nil, err
	}
	app, err := a.Store.RenameApp(ctx, id, name)
	if err == nil && old.Name != app.Name {
		a.Audit.Record(ctx, "app.rename", distribution.AppTarget(app), map[string]any{"from": old.Name})
	}
	return app, err
}

// DestroyApp deletes an app with everything in it. The rows go in one transaction which records
// their objects as deleted; the objects are deleted after the commit, and any that fail stay
// recorded for the collector.
func (a *Apps) DestroyApp(ctx context.Context, id int64) error {
	if err := a.may(ctx, policy.DeleteApp, id); err != nil {
		return err
	}
	defer a.Effects.Changed(distribution.Change{AppID: id})
	app, err := a.Store.GetApp(ctx, id)
	if err != nil {
		return err
	}
	if err := a.Effects.Deleted(ctx)(a.Store.DestroyApp(ctx, id)); err != nil {
		return err
	}
	a.Audit.Record(ctx, "app.delete", distribution.AppTarget(app), nil)
	return nil
}

// schemeTarget names a scheme with its app: "App · Adhoc".
func (a *Apps) schemeTarget(ctx context.Context, sc *distribution.Scheme) distribution.AuditTarget {
	t := distribution.AuditTarget{Kind: distribution.TargetScheme, ID: sc.ID, AppID: sc.AppID, Name: sc.Name}
	if a.Audit == nil {
		return t
	}
	if app, err := a.Store.GetApp(ctx, sc.AppID); err == nil {
		t.Name = app.Name + " · " + sc.Name
	}
	return t
}

// requiredName trims a name and checks it is 1 to 255 characters of valid text.
func requiredName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errs.Field(field, "can't be blank")
	case !utf8.ValidString(name) || utf8.RuneCountInString(name) > 255:
		return "", errs.Field(field, "must be valid text of at most 255 characters")
	}
	return name, nil
}

// SchemeChanges are the fields of a scheme a client sets; nil leaves a field as it is.
type SchemeChanges struct {
	Name            *string `param:"name"`
	NewBuildCallout *bool   `param:"new_build_callout"`
	RetainedBuilds  *int    `param:"retained_builds"`
}

// maxRetainedBuilds bounds retained_builds to something a channel could hold.
const maxRetainedBuilds = 100_000

func (ch SchemeChanges) apply(sc *distribution.Scheme) error {
	if ch.Name != nil {
		name, err := requiredName("name", *ch.Name)
		if err != nil {
			return err
		}
		sc.Name = name
	}
	if ch.NewBuildCallout != nil {
		sc.NewBuildCallout = *ch.NewBuildCallout
	}
	if ch.RetainedBuilds != nil {
		if *ch.RetainedBuilds < 0 || *ch.RetainedBuilds > maxRetainedBuilds {
			return errs.Field("retained_builds", "must be between 0 (keep every build) and %d", maxRetainedBuilds)
		}
		sc.RetainedBuilds = *ch.RetainedBuilds
	}
	return nil
}

// Schemes returns an app's schemes with their channels.
func (a *Apps) Schemes(ctx context.Context, appID int64) ([]distribution.Scheme, error) {
	if err := a.may(ctx, policy.ReadCatalog, appID); err != nil {
		return nil, err
	}
	return a.Store.ListSchemes(ctx, appID)
}

// Scheme returns one scheme with its channels.
func (a *Apps) Scheme(ctx context.Context, id int64) (*distribution.Scheme, error) {
	return a.schemeFor(ctx, policy.ReadCatalog, id)
}

// CreateScheme adds a scheme to an app. The name is required; new_build_callout defaults to
// true and retained_builds to 0 (keep every build), as in Zealot.
func (a *Apps) CreateScheme(ctx context.Context, appID int64, ch SchemeChanges) (*distribution.Scheme, error) {
	if err := a.may(ctx, policy.ManageApp, appID); err != nil {
		return nil, err
	}
	if ch.Name == nil {
		return nil, errs.Field("name", "can't be blank")
	}
	sc := &distribution.Scheme{AppID: appID, NewBuildCallout: true}
	if err := ch.apply(sc); err != nil {
		return nil, err
	}
	made, err := a.Store.CreateScheme(ctx, sc)
	if err == nil {
		a.Audit.Record(ctx, "scheme.create", a.schemeTarget(ctx, made), nil)
	}
	return made, err
}

// UpdateScheme changes the fields of a scheme that ch sets.
func (a *Apps) UpdateScheme(ctx context.Context, id int64, ch SchemeChanges) (*distribution.Scheme, error) {
	return distribution.RetryStale(func() (*distribution.Scheme, error) {
		sc, err := a.schemeFor(ctx, policy.ManageApp, id)
		if err != nil {
			return nil, err
		}
		from := sc.Name
		if err := ch.apply(sc); err != nil {
			return nil, err
		}
		defer a.Effects.Changed(distribution.Change{SchemeID: id})
		out, err := a.Store.UpdateScheme(ctx, sc)
		if err == nil {
			if out.Name != from {
				a.Audit.Record(ctx, "scheme.rename", a.schemeTarget(ctx, out), map[string]any{"from": from})
			} else {
				a.Audit.Record(ctx, "scheme.update", a.schemeTarget(ctx, out), nil)
			}
		}
		return out, err
	})
}

// DeleteScheme deletes a scheme with its channels, releases and debug files, and their objects.
func (a *Apps) DeleteScheme(ctx context.Context, id int64) error {
	defer a.Effects.Changed(distribution.Change{SchemeID: id})
	defer a.Effects.Wake()
	sc, err := a.schemeFor(ctx, policy.ManageApp, id)
	if err != nil {
		return err
	}
	t := a.schemeTarget(ctx, sc)
	if err := a.Effects.Deleted(ctx)(a.Store.DeleteScheme(ctx, id, a.Effects.ReleaseEvents(webhook.EventReleaseDeleted))); err != nil {
		return err
	}
	a.Audit.Record(ctx, "scheme.delete", t, nil)
	return nil
}

// DeviceTypes are the channel device types Zealot allows.
var DeviceTypes = []string{"ios", "android", "macos", "harmonyos", "windows", "linux"}

// DownloadFilenameTypes name downloaded files: the uploaded file's name, or one made of the
// app's name, version and upload time.
var DownloadFilenameTypes = []string{"original", "version_datetime"}

var bundleIDRe = regexp.MustCompile(`^[A-Za-z0-9._*-]{1,255}$`)

// ChannelChanges are the fields of a channel a client sets; nil leaves a field as it is. An empty
// Password clears the channel's password; an empty GitURL clears it too.
type ChannelChanges struct {
	Name                 *string `param:"name"`
	Slug                 *string `param:"slug"`
	DeviceType           *string `param:"device_type"`
	BundleID             *string `param:"bundle_id"`
	Password             *string `param:"password"`
	GitURL               *string `param:"git_url"`
	DownloadFilenameType *string `param:"download_filename_type"`
	// MaxSizeBytes and MaxGrowthPercent set the size budget ("" clears one); EnforceBudget says
	// whether crossing it refuses an upload.
	MaxSizeBytes     *string `param:"max_size_bytes,number"`
	MaxGrowthPercent *string `param:"max_growth_percent,number"`
	EnforceBudget    *bool   `param:"enforce_budget"`
	// SparkleSigning switches Slipway's Sparkle signing of the channel's macOS builds on or off
	// (an admin's decision: policy.ConfigureSigning).
	SparkleSigning *bool `param:"sparkle_signing"`
	// AppInstallerHours is how often Windows' App Installer checks the channel's .appinstaller
	// file when the app starts (0 to 255 hours; 0: at every start).
	AppInstallerHours *string `param:"appinstaller_hours,number"`
	// APTNewestOnly: the channel's APT repository lists only the newest version of each package
	// and architecture (false: every build the channel offers).
	APTNewestOnly *bool `param:"apt_newest_only"`
	// TesterGroups, when sent, are the aliases of the tester groups that open the channel to
	// their testers only (empty: open as before, to its link or its password).
	TesterGroups []string `param:"tester_groups,names"`
}

// authorizeSigning asks the policy when ch changes a channel's Sparkle signing (was: its setting
// so far) on the app appID.
func (a *Apps) authorizeSigning(ctx context.Context, ch ChannelChanges, was bool, appID int64) error {
	if ch.SparkleSigning == nil || *ch.SparkleSigning == was {
		return nil
	}
	return a.Policy.Authorize(ctx, policy.ConfigureSigning, policy.OnApp(appID))
}

// maxBudgetPercent bounds a channel's maximum growth.
const maxBudgetPercent = 1_000_000

// applyBudget validates the size budget fields of ch and writes them into b.
func (ch ChannelChanges) applyBudget(b *distribution.SizeBudget) error {
	if ch.MaxSizeBytes != nil {
		b.MaxBytes = nil
		if *ch.MaxSizeBytes != "" {
			n, err := strconv.ParseInt(*ch.MaxSizeBytes, 10, 64)
			if err != nil || n <= 0 {
				return errs.Field("max_size_bytes", "must be a positive number of bytes, or empty (null) for none")
			}
			b.MaxBytes = &n
		}
	}
	if ch.MaxGrowthPercent != nil {
		b.MaxGrowthPercent = nil
		if *ch.MaxGrowthPercent != "" {
			f, err := strconv.ParseFloat(*ch.MaxGrowthPercent, 64)
			if err != nil || !(f > 0 && f <= maxBudgetPercent) {
				return errs.Field("max_growth_percent", "must be a percentage above 0 (at most %d), or empty (null) for none", maxBudgetPercent)
			}
			b.MaxGrowthPercent = &f
		}
	}
	if ch.EnforceBudget != nil {
		b.Enforce = *ch.EnforceBudget
	}
	return nil
}

// signingDetail is the audit detail of a change of Sparkle signing ("" when none).
func signingDetail(ch ChannelChanges, was bool) string {
	if ch.SparkleSigning == nil || *ch.SparkleSigning == was {
		return ""
	}
	return map[bool]string{true: "on", false: "off"}[*ch.SparkleSigning]
}

// apply validates ch and writes it into c. hasReleases forbids changing the device type of a
// channel whose builds are of the old one.
func (ch ChannelChanges) apply(c *distribution.Channel, hasReleases bool) error {
	if err := ch.applyBudget(&c.Budget); err != nil {
		return err
	}
	if ch.Name != nil {
		name, err := requiredName("name", *ch.Name)
		if err != nil {
			return err
		}
		c.Name = name
	}
	if ch.Slug != nil {
		slug := strings.TrimSpace(*ch.Slug)
		if !distribution.ValidSlug(slug) {
			return errs.Field("slug", "must be 1 to 64 letters, digits, '-' or '_' (it is the channel key in URLs)")
		}
		c.Slug = slug
	}
	if ch.DeviceType != nil {
		dt := strings.ToLower(strings.TrimSpace(*ch.DeviceType))
		if !slices.Contains(DeviceTypes, dt) {
			return errs.Field("device_type", "must be one of %s", strings.Join(DeviceTypes, ", "))
		}
		if hasReleases && dt != c.DeviceType {
			return errs.Field("device_type", "cannot change: the channel holds %s builds; create another channel", c.DeviceType)
		}
		c.DeviceType = dt
	}
	if ch.BundleID != nil {
		id := strings.TrimSpace(*ch.BundleID)
		if id == "" {
			id = "*"
		}
		if !bundleIDRe.MatchString(id) {
			return errs.Field("bundle_id", "must be * (any), a bundle id or package name, or a pattern such as com.example.*")
		}
		// A bundle id given is chosen: a channel given "*" takes any app and learns none.
		c.BundleID, c.AppBundleID = id, "*"
	}
	if ch.GitURL != nil {
		u := strings.TrimSpace(*ch.GitURL)
		switch {
		case u == "":
			c.GitURL = nil
		case len(u) > 2048 || links.GitRepo(u) == "":
			return errs.Field("git_url", "must be the repository's address (https://host/org/repo or git@host:org/repo.git), at most 2048 characters")
		default:
			c.GitURL = &u
		}
	}
	if ch.DownloadFilenameType != nil {
		t := strings.TrimSpace(*ch.DownloadFilenameType)
		if !slices.Contains(DownloadFilenameTypes, t) {
			return errs.Field("download_filename_type", "must be one of %s", strings.Join(DownloadFilenameTypes, ", "))
		}
		c.DownloadFilenameType = t
	}
	if ch.SparkleSigning != nil {
		c.SparkleSigning = *ch.SparkleSigning
	}
	if ch.AppInstallerHours != nil {
		n, err := strconv.Atoi(strings.TrimSpace(*ch.AppInstallerHours))
		if err != nil || n < 0 || n > distribution.MaxAppInstallerHours {
			return errs.Field("appinstaller_hours", "must be a number of hours from 0 (check at every start) to %d", distribution.MaxAppInstallerHours)
		}
		c.AppInstallerHours = n
	}
	if ch.APTNewestOnly != nil {
		c.APTNewestOnly = *ch.APTNewestOnly
	}
	if ch.Password != nil {
		hash, err := distribution.HashPassword(*ch.Password)
		if err != nil {
			return err
		}
		c.PasswordHash = hash
		// The feed token opens the channel's feeds as the password does, so it goes with the old
		// password: an admin makes a new one for the new password (shown once).
		c.FeedTokenHash = ""
	}
	return nil
}

// newAppBundleID is the AppBundleID of a channel created with ch: one made without a bundle id
// (none given, or an empty one) learns its first build's (""); one given an id, a pattern or "*"
// chose it ("*").
func newAppBundleID(ch ChannelChanges) string {
	if ch.BundleID == nil || strings.TrimSpace(*ch.BundleID) == "" {
		return ""
	}
	return "*"
}

// Channels returns a scheme's channels.
func (a *Apps) Channels(ctx context.Context, schemeID int64) ([]distribution.Channel, error) {
	if _, err := a.schemeFor(ctx, policy.ReadCatalog, schemeID); err != nil {
		return nil, err
	}
	return a.Store.ListChannels(ctx, schemeID)
}

// ChannelByID returns a channel with its app and scheme.
func (a *Apps) ChannelByID(ctx context.Context, id int64) (*distribution.ChannelContext, error) {
	cc, err := a.channelFor(ctx, policy.ReadCatalog, id)
	if err != nil {
		return nil, err
	}
	return cc, a.withGroups(ctx, &cc.Channel)
}

// Channel returns the channel a channel key names, with its app and scheme. A channel key opens
// its channel to whoever holds it (Zealot's SDKs and the release pages read by key); a protected
// channel's gate is its password (access.Passwords).
func (a *Apps) Channel(ctx context.Context, key string) (*distribution.ChannelContext, error) {
	key, err := distribution.CheckChannelKey(key)
	if err != nil {
		return nil, err
	}
	return a.Store.ChannelContextBySlug(ctx, key)
}

// CreateChannel adds a channel to a scheme. name and device_type are required; slug defaults to
// a random unguessable key, bundle_id to * and download_filename_type to original.
func (a *Apps) CreateChannel(ctx context.Context, schemeID int64, ch ChannelChanges) (*distribution.Channel, error) {
	sc, err := a.schemeFor(ctx, policy.ManageApp, schemeID)
	if err != nil {
		return nil, err
	}
	if err := a.authorizeSigning(ctx, ch, false, sc.AppID); err != nil {
		return nil, err
	}
	if ch.Name == nil {
		return nil, errs.Field("name", "can't be blank")
	}
	if ch.DeviceType == nil {
		return nil, errs.Field("device_type", "must be one of %s", strings.Join(DeviceTypes, ", "))
	}
	c := &distribution.Channel{SchemeID: schemeID, BundleID: "*", DownloadFilenameType: "original", AppInstallerHours: distribution.DefaultAppInstallerHours}
	if err := ch.apply(c, false); err != nil {
		return nil, err
	}
	c.AppBundleID = newAppBundleID(ch)
	made, err := a.Store.CreateChannel(ctx, c)
	if err == nil {
		var detail map[string]any
		if s := signingDetail(ch, false); s != "" {
			detail = map[string]any{"sparkle_signing": s}
		}
		a.auditChannel(ctx, "channel.create", made.ID, detail)
	}
	return made, err
}

// CreateChannelIn makes a channel in the app's scheme named schemeName, making the scheme too
// when the app has none of that name (in any letter case), in one transaction: a refused channel
// leaves no scheme behind. Channel names are unique within a scheme here, as the console asks
// (the API, as Zealot, allows two of one name): the scheme's row is locked while the name is
// checked and the channel recorded, so two such requests at once make one channel.
func (a *Apps) CreateChannelIn(ctx context.Context, appID int64, schemeName string, ch ChannelChanges) (*distribution.Channel, error) {
	if err := a.may(ctx, policy.ManageApp, appID); err != nil {
		return nil, err
	}
	if err := a.authorizeSigning(ctx, ch, false, appID); err != nil {
		return nil, err
	}
	sc := &distribution.Scheme{AppID: appID, NewBuildCallout: true}
	if err := (SchemeChanges{Name: &schemeName}).apply(sc); err != nil {
		return nil, errs.Field("scheme", "can't be blank")
	}
	if ch.Name == nil {
		return nil, errs.Field("name", "can't be blank")
	}
	if ch.DeviceType == nil {
		return nil, errs.Field("device_type", "must be one of %s", strings.Join(DeviceTypes, ", "))
	}
	c := &distribution.Channel{BundleID: "*", DownloadFilenameType: "original", AppInstallerHours: distribution.DefaultAppInstallerHours}
	if err := ch.apply(c, false); err != nil {
		return nil, err
	}
	c.AppBundleID = newAppBundleID(ch)
	var made *distribution.Channel
	madeScheme := false
	err := a.Store.InChannelTx(ctx, func(tx ChannelTx) error {
		if err := tx.LockApp(ctx, appID); err != nil {
			return err
		}
		schemeID, err := tx.SchemeNamed(ctx, appID, sc.Name)
		if err == nil && schemeID == 0 {
			schemeID, err = tx.CreateScheme(ctx, sc)
			madeScheme = true
		}
		if err != nil {
			return err
		}
		if err := tx.LockScheme(ctx, schemeID); err != nil {
			return err
		}
		taken, err := tx.ChannelNamed(ctx, schemeID, c.Name)
		if err != nil {
			return err
		}
		if taken {
			return errs.Field("name", "is already the name of a channel of the scheme %s; choose another name", sc.Name)
		}
		c.SchemeID = schemeID
		made, err = tx.CreateChannel(ctx, c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if madeScheme {
		if s, err := a.Store.GetScheme(ctx, made.SchemeID); err == nil {
			a.Audit.Record(ctx, "scheme.create", a.schemeTarget(ctx, s), nil)
		}
	}
	var detail map[string]any
	if s := signingDetail(ch, false); s != "" {
		detail = map[string]any{"sparkle_signing": s}
	}
	a.auditChannel(ctx, "channel.create", made.ID, detail)
	return made, nil
}

// auditChannel records a change to a channel, named with its app.
func (a *Apps) auditChannel(ctx context.Context, action string, id int64, detail map[string]any) {
	if a.Audit == nil {
		return
	}
	if cc, err := a.Store.ChannelContextByID(ctx, id); err == nil {
		a.Audit.Record(ctx, action, distribution.ChannelTarget(cc), detail)
	}
}

// UpdateChannel changes the fields of a channel that ch sets. A changed (or cleared) password
// revokes the password cookies and install links given out with the old one, and the channel's
// feed token.
func (a *Apps) UpdateChannel(ctx context.Context, id int64, ch ChannelChanges) (*distribution.Channel, error) {
	return distribution.RetryStale(func() (*distribution.Channel, error) {
		cc, err := a.channelFor(ctx, policy.ManageApp, id)
		if err != nil {
			return nil, err
		}
		if err := a.authorizeSigning(ctx, ch, cc.Channel.SparkleSigning, cc.App.ID); err != nil {
			return nil, err
		}
		c := cc.Channel
		hasReleases := false
		if ch.DeviceType != nil {
			n, err := a.Store.CountReleases(ctx, id)
			if err != nil {
				return nil, err
			}
			hasReleases = n > 0
		}
		if err := ch.apply(&c, hasReleases); err != nil {
			return nil, err
		}
		if ch.TesterGroups != nil && a.Access == nil {
			return nil, errs.Field("tester_groups", "tester groups are not available here")
		}
		defer a.Effects.Changed(distribution.Change{ChannelID: id})
		if ch.TesterGroups != nil {
			// The groups first: an unknown alias refuses the whole change.
			if err := a.Access.SetChannelGroups(ctx, cc, ch.TesterGroups); err != nil {
				return nil, err
			}
			c.TesterOnly = len(ch.TesterGroups) > 0
		}
		out, err := a.Store.UpdateChannel(ctx, &c)
		if err == nil {
			err = a.withGroups(ctx, out)
		}
		if err == nil {
			// What changed, never the password itself.
			detail := map[string]any{}
			if out.Name != cc.Channel.Name {
				detail["from"] = cc.Channel.Name
			}
			if out.Slug != cc.Channel.Slug {
				detail["key"] = out.Slug
			}
			if ch.Password != nil {
				detail["password"] = map[bool]string{true: "removed", false: "changed"}[*ch.Password == ""]
			}
			if s := signingDetail(ch, cc.Channel.SparkleSigning); s != "" {
				detail["sparkle_signing"] = s
			}
			if out.AppInstallerHours != cc.Channel.AppInstallerHours {
				detail["appinstaller_hours"] = out.AppInstallerHours
			}
			if out.APTNewestOnly != cc.Channel.APTNewestOnly {
				detail["apt_newest_only"] = out.APTNewestOnly
			}
			a.auditChannel(ctx, "channel.update", id, detail)
		}
		return out, err
	})
}

// DeleteChannel deletes a channel with its releases and debug files, and their objects.
func (a *Apps) DeleteChannel(ctx context.Context, id int64) error {
	defer a.Effects.Changed(distribution.Change{ChannelID: id})
	defer a.Effects.Wake()
	cc, err := a.channelFor(ctx, policy.ManageApp, id)
	if err != nil {
		return err
	}
	if err := a.Effects.Deleted(ctx)(a.Store.DeleteChannel(ctx, id, a.Effects.ReleaseEvents(webhook.EventReleaseDeleted))); err != nil {
		return err
	}
	a.Audit.Record(ctx, "channel.delete", distribution.ChannelTarget(cc), nil)
	return nil
}

// RotateFeedToken makes a new feed token for a channel and returns it (shown once: only its hash
// is kept). The update feeds of a password-protected channel answer only to it (updaters send no
// cookies); the old token stops working at once, on every replica.
func (a *Apps) RotateFeedToken(ctx context.Context, id int64) (string, error) {
	if _, err := a.channelFor(ctx, policy.RotateFeedToken, id); err != nil {
		return "", err
	}
	token, hash := distribution.NewFeedToken()
	if err := a.Store.SetFeedToken(ctx, id, hash); err != nil {
		return "", err
	}
	a.Effects.Changed(distribution.Change{ChannelID: id})
	a.auditChannel(ctx, "channel.feed_token", id, map[string]any{"channel_id": id})
	return token, nil
}
