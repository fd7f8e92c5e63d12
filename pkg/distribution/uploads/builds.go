package uploads

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/metrics"

	// appinfo.Parse (in parse below) knows only the platform families a program imports. The
	// HarmonyOS, Windows and Linux parsers (pkg/appinfo/platforms) join once releases, channels
	// and pages carry their facts (issue 22); until then their packages are refused as before.
	_ "github.com/slipwayhq/slipway/pkg/appinfo/android"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/apple"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// ReleaseForm holds an upload's form fields (api.md, "Upload an app").
type ReleaseForm struct {
	ChannelKey   string
	Name         string
	ReleaseType  string
	Source       string
	Changelog    string
	Branch       string
	GitCommit    string
	CIURL        string
	CustomFields string
	Password     string
	// ReleaseVersion, BuildVersion and BundleID describe a .dmg, which carries no readable metadata.
	ReleaseVersion string
	BuildVersion   string
	BundleID       string
}

// validate checks the fields that do not depend on the package and normalises them.
func (f *ReleaseForm) validate() (err error) {
	for name, v := range map[string]*string{"name": &f.Name, "source": &f.Source, "branch": &f.Branch, "git_commit": &f.GitCommit,
		"channel_key": &f.ChannelKey, "release_version": &f.ReleaseVersion, "build_version": &f.BuildVersion, "bundle_id": &f.BundleID} {
		if *v, err = distribution.ShortText(name, *v); err != nil {
			return err
		}
	}
	if f.ReleaseType, err = distribution.NormReleaseType(f.ReleaseType); err != nil {
		return err
	}
	if f.Source == "" {
		f.Source = "api"
	}
	f.Branch = distribution.CleanBranch(f.Branch)
	f.CIURL, err = distribution.WebURL("ci_url", f.CIURL)
	return err
}

// check validates and normalises the fields that do not depend on the package, and parses the
// changelog and custom fields: everything an upload can refuse before reading its file.
func (f *ReleaseForm) check() ([]distribution.ChangelogEntry, []distribution.CustomField, error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	if len(f.Password) > distribution.MaxPasswordBytes {
		return nil, nil, errs.Field("password", "must be at most %d bytes", distribution.MaxPasswordBytes)
	}
	changelog, err := distribution.ParseChangelog(f.Changelog)
	if err != nil {
		return nil, nil, err
	}
	custom, err := distribution.ParseCustomFields(f.CustomFields)
	return changelog, custom, err
}

// BuildStore records releases.
type BuildStore interface {
	// CreateRelease records a release in one transaction: finds or creates its app, scheme and
	// channel (or checks the channel nr names), takes the next version, claims objectKeys from
	// the ledger and writes the release's events.
	CreateRelease(ctx context.Context, nr *distribution.NewRelease, objectKeys []string) (*distribution.ReleaseContext, error)
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
}

// Builds turns a stored package into a release: it parses the package through ranged reads,
// stores its icon, and records the release (POST /api/apps/upload, and completed sessions).
type Builds struct {
	Store   BuildStore
	Objects *Objects
	// Effects are what a new release sets off: the read cache drops its channel's views, and
	// its release.created events are made and sent.
	Effects distribution.Effects
	Metrics *metrics.Metrics
	// Audit records each new release as the context's actor (the token, the console user).
	Audit *distribution.AuditLog
}

// CreateRelease parses the stored package and records it as a release: in the channel named by
// ChannelKey (which must take this platform and bundle id), or in the app, scheme and channel it
// finds or creates. The package object is discarded on any error. idemKey, when set, makes a
// retry by the same token return the first release. Objects of a replayed upload are discarded.
func (b *Builds) CreateRelease(ctx context.Context, obj *StoredObject, f ReleaseForm, tokenID int64, idemKey string) (rc *distribution.ReleaseContext, err error) {
	keys := []string{obj.Key}
	defer func() {
		if err != nil {
			b.Objects.Discard(ctx, keys...)
		}
	}()
	changelog, custom, err := f.check()
	if err != nil {
		return nil, err
	}
	passwordHash, err := distribution.HashPassword(f.Password)
	if err != nil {
		return nil, err
	}
	info, err := b.parse(ctx, obj)
	if err != nil {
		return nil, err
	}
	if info.Format == appinfo.FormatDMG {
		if err := f.fillDMG(info); err != nil {
			return nil, err
		}
	}
	name := firstNonEmpty(f.Name, info.Name, info.BundleID)
	if name == "" {
		return nil, errs.Field("name", "is required: the package names no app")
	}
	releaseType := firstNonEmpty(f.ReleaseType, info.ReleaseType)

	nr := &distribution.NewRelease{
		Release: distribution.Release{
			Name: info.Name, BundleID: info.BundleID, ReleaseVersion: info.ReleaseVersion, BuildVersion: info.BuildVersion,
			ReleaseType: releaseType, Source: f.Source, Branch: f.Branch, GitCommit: f.GitCommit, CIURL: f.CIURL,
			Changelog: changelog, CustomFields: custom, Platform: string(info.Platform), Format: string(info.Format),
			Device: info.Device, MinOS: info.MinOS, TargetSDK: info.TargetSDK, Profile: profileSummary(info.Profile),
			Size: obj.Size, SHA256: obj.SHA256, ObjectKey: obj.Key, Filename: downloadName(obj.Filename, name, info),
			UploadedBy: tokenID,
		},
		ChannelSlug: f.ChannelKey, AppName: name, SchemeName: distribution.SchemeName(releaseType),
		Check: func(c *distribution.Channel) error { return checkChannel(c, info) }, IdempotencyKey: idemKey,
		Events: b.Effects.ReleaseEvents(webhook.EventReleaseCreated),
	}
	if passwordHash != nil {
		nr.PasswordHash = *passwordHash
	}
	if info.Profile != nil {
		for _, u := range info.Profile.Devices {
			if udid, err := distribution.NormalizeUDID(u); err == nil {
				nr.ProfileDevices = append(nr.ProfileDevices, udid)
			}
		}
	}
	if info.Icon != nil {
		iconKey, err := b.Objects.StoreBytes(ctx, IconPrefix, info.Icon.Data, info.Icon.ContentType)
		if err != nil {
			return nil, err
		}
		keys = append(keys, iconKey)
		nr.IconKey, nr.IconType = &iconKey, &info.Icon.ContentType
	}
	rc, err = b.Store.CreateRelease(ctx, nr, keys)
	if err == nil {
		b.Effects.Changed(distribution.Change{ChannelID: rc.Channel.ID})
		b.Effects.Wake()
		b.Audit.Record(ctx, "release.upload", distribution.ReleaseTarget(rc),
			map[string]any{"channel_id": rc.Channel.ID, "channel": rc.Channel.Name, "size": rc.Size, "source": rc.Source})
	}
	var replay *distribution.ErrIdempotentReplay
	if errors.As(err, &replay) {
		b.Objects.Discard(ctx, keys...)
		return b.Store.GetRelease(ctx, replay.ReleaseID)
	}
	return rc, err
}

// parse reads the package's metadata from storage through the cached, tail-seeded reader and
// records how many requests and bytes it took.
func (b *Builds) parse(ctx context.Context, obj *StoredObject) (*appinfo.Info, error) {
	start := time.Now()
	ra := b.Objects.ReaderAt(ctx, obj)
	info, err := appinfo.Parse(ra, obj.Size)
	if b.Metrics != nil {
		st := ra.Stats()
		b.Metrics.ParseGETs.Observe(float64(st.GETs))
		b.Metrics.ParseBytes.Observe(float64(st.Bytes))
		format := "unknown"
		if info != nil {
			format = string(info.Format)
		}
		b.Metrics.ParseDuration.WithLabelValues(format).Observe(time.Since(start).Seconds())
	}
	if err != nil && errs.KindOf(err) == errs.Internal {
		// A reader failure (storage went away mid-parse) is not the package's fault.
		return nil, storageErr(b.Metrics, "get", err)
	}
	return info, err
}

// fillDMG takes a disk image's metadata from the form, where it must be.
func (f *ReleaseForm) fillDMG(info *appinfo.Info) error {
	var missing []string
	for name, v := range map[string]string{"bundle_id": f.BundleID, "release_version": f.ReleaseVersion, "build_version": f.BuildVersion} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		e := errs.Invalidf("a .dmg carries no readable metadata: send bundle_id, release_version and build_version as form fields")
		e.Entry = map[string][]string{}
		for _, m := range missing {
			e.Entry[m] = []string{"is required for a .dmg"}
		}
		return e
	}
	info.BundleID, info.ReleaseVersion, info.BuildVersion = f.BundleID, f.ReleaseVersion, f.BuildVersion
	info.ReleaseType = ""
	return nil
}

// checkChannel refuses a package whose platform or bundle id the channel does not take.
func checkChannel(c *distribution.Channel, info *appinfo.Info) error {
	if c.DeviceType != string(info.Platform) {
		return errs.Invalidf("this channel takes %s builds, but the file is %s build (%s)", c.DeviceType, distribution.WithArticle(string(info.Platform)), info.Format)
	}
	if !distribution.MatchBundleID(c.BundleID, info.BundleID) {
		return errs.Invalidf("this channel takes bundle ids matching %q, but the package is %q", c.BundleID, info.BundleID)
	}
	return nil
}

func profileSummary(p *appinfo.Profile) *distribution.ProfileSummary {
	if p == nil {
		return nil
	}
	return &distribution.ProfileSummary{Name: p.Name, TeamID: p.TeamID, TeamName: p.TeamName, ExpiresAt: p.ExpiresAt,
		DeviceCount: len(p.Devices), AllDevices: p.AllDevices, Development: p.GetTaskAllow}
}

// downloadName is the file name offered on download: the client's, else one made from the app.
func downloadName(clientName, appName string, info *appinfo.Info) string {
	if clientName != "" {
		return clientName
	}
	ext := map[appinfo.Format]string{appinfo.FormatIPA: ".ipa", appinfo.FormatAPK: ".apk", appinfo.FormatAAB: ".aab",
		appinfo.FormatMacZip: ".zip", appinfo.FormatPKG: ".pkg", appinfo.FormatDMG: ".dmg"}[info.Format]
	base := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '"' || r < 0x20 {
			return '_'
		}
		return r
	}, appName)
	if info.ReleaseVersion != "" {
		base += "-" + info.ReleaseVersion
	}
	return base + ext
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
