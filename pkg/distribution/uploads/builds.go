package uploads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/feeds"
	// appinfo.Parse (in parse below) knows only the platform families a program imports: every
	// one Slipway reads (Apple, Android, HarmonyOS, Windows, Linux).
	_ "github.com/slipwayhq/slipway/pkg/appinfo/platforms"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/insights"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/metrics"
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
	// ReleaseVersion, BuildVersion and BundleID describe a .dmg, which carries no readable metadata,
	// and a file kept unparsed in a windows or linux channel; they fill what a package leaves empty.
	ReleaseVersion string
	BuildVersion   string
	BundleID       string
	// EdSignature is the CI's Sparkle EdDSA signature of the package (base64 of 64 bytes);
	// TauriSignature the Tauri signer's .sig content.
	EdSignature    string
	TauriSignature string
	// Rollout is the staged-rollout percentage (0-100, "" for 100) and Critical marks a
	// mandatory update ("true"/"1").
	Rollout  string
	Critical string
	// Testers (comma-separated emails) and Groups (comma-separated aliases) receive this build
	// beyond its channel's tester groups, as the firebase CLI's --testers and --groups; Notify
	// "false" records where it went and mails nobody.
	Testers string
	Groups  string
	Notify  string
	// AppID, without a ChannelKey, is the app the build goes into, its scheme and channel found
	// or made as an upload without a channel key makes them (the console's upload box on an
	// app's page). The API has no such field: its uploads name a channel or an app's name.
	AppID int64
	// AllowOtherBundleID says what to do with a build of another app than the one its channel
	// holds (a channel made without a bundle id holds its first build's): "" keeps it
	// with a warning (as Zealot keeps any app in a channel of "*"), "false" refuses it (422 naming
	// both ids), "true" keeps it, the request meaning it.
	AllowOtherBundleID string

	rollout    int
	critical   bool
	distribute distribution.DistributeInput
	// otherApp is AllowOtherBundleID read: otherAppWarn, otherAppRefuse or otherAppAllow.
	otherApp otherAppRule
}

// otherAppRule is what an upload does with a build of another app than its channel holds.
type otherAppRule int

const (
	otherAppWarn otherAppRule = iota
	otherAppRefuse
	otherAppAllow
)

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
	if f.EdSignature, err = distribution.EdSignature(f.EdSignature); err != nil {
		return err
	}
	if f.TauriSignature, err = distribution.TauriSignature(f.TauriSignature); err != nil {
		return err
	}
	if f.rollout, err = distribution.RolloutPercent(f.Rollout); err != nil {
		return err
	}
	if f.critical, err = distribution.FlagField("critical", f.Critical); err != nil {
		return err
	}
	if f.distribute, err = distributeInput(f.Testers, f.Groups, f.Notify); err != nil {
		return err
	}
	if strings.TrimSpace(f.AllowOtherBundleID) != "" {
		allow, err := distribution.FlagField("allow_other_bundle_id", f.AllowOtherBundleID)
		if err != nil {
			return err
		}
		f.otherApp = map[bool]otherAppRule{true: otherAppAllow, false: otherAppRefuse}[allow]
	}
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

// distributeInput reads an upload's testers, groups and notify fields.
func distributeInput(testers, groups, notify string) (distribution.DistributeInput, error) {
	var in distribution.DistributeInput
	split := func(s string) []string {
		var out []string
		for _, e := range strings.Split(s, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
		return out
	}
	emails, err := distribution.NormaliseEmails("testers", split(testers))
	if err != nil {
		return in, err
	}
	in.Testers, in.Groups = emails, split(groups)
	if strings.TrimSpace(notify) != "" {
		n, err := distribution.FlagField("notify", notify)
		if err != nil {
			return in, err
		}
		in.Notify = &n
	}
	return in, nil
}

// BuildStore records releases: each upload in one transaction (InUploadTx), whose steps
// Builds sequences through UploadTx.
type BuildStore interface {
	// InUploadTx runs fn in one transaction, committed when fn returns nil and rolled back
	// otherwise.
	InUploadTx(ctx context.Context, fn func(tx UploadTx) error) error
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
}

// Builds turns a stored package into a release: it parses the package through ranged reads,
// stores its icon, and records the release (POST /api/apps/upload, and completed sessions).
type Builds struct {
	Store BuildStore
	// Channels finds the channel an upload names when its file is no package Slipway reads: a
	// windows or linux channel keeps it as a plain download (nil: such files are refused).
	Channels ChannelFinder
	Objects  *Objects
	// Effects are what a new release sets off: the read cache drops its channel's views, and
	// its release.created events are made and sent.
	Effects distribution.Effects
	Metrics *metrics.Metrics
	// Audit records each new release as the context's actor (the token, the console user).
	Audit *distribution.AuditLog
	// Verifier computes the checksums of releases recorded unverified (woken for each).
	Verifier *Verifier
	// Policy decides whether the context's actor may upload into the app.
	Policy *policy.Policy
	// Parses is the replica's parse-memory budget: every parse, by the proxy path or a
	// session's completion, waits for its bound there (nil: unbounded).
	Parses *appinfo.Budget
	// Testers distributes each new release to its channel's testers and to those the upload
	// names, in the upload's transaction (nil: releases go to nobody).
	Testers Distributor
}

// Distributor distributes a release inside the transaction that records it (testers.Testers).
type Distributor interface {
	DistributeIn(ctx context.Context, tx distribution.DistributionTx, rc *distribution.ReleaseContext,
		in distribution.DistributeInput) (distribution.Distributed, error)
	// Committed follows the commit of a distribution: the mail sender looks at once.
	Committed(d distribution.Distributed)
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
	if err := mayUploadTo(ctx, b.Policy, b.Channels, f.ChannelKey, f.AppID); err != nil {
		return nil, err
	}
	changelog, custom, err := f.check()
	if err != nil {
		return nil, err
	}
	passwordHash, err := distribution.HashPassword(f.Password)
	if err != nil {
		return nil, err
	}
	info, err := b.parse(ctx, obj)
	if errors.Is(err, appinfo.ErrUnrecognised) {
		info, err = b.plainFile(ctx, obj, &f, err)
	}
	if err != nil {
		return nil, err
	}
	switch info.Format {
	case appinfo.FormatDMG:
		if err := f.fillDMG(info); err != nil {
			return nil, err
		}
	case appinfo.FormatOther:
	default:
		// Apple and Android packages keep their rules (decisions.md, Packages).
		if info.Platform == appinfo.HarmonyOS || info.Platform == appinfo.Windows || info.Platform == appinfo.Linux {
			if err := f.fill(info, obj.Filename); err != nil {
				return nil, err
			}
		}
	}
	if links.HarmonyInstallable(string(info.Platform), string(info.Format)) && obj.SHA256 == "" {
		// The HarmonyOS install manifest names the package's SHA-256 (packageHash).
		if obj.SHA256, err = b.Objects.HashStored(ctx, obj); err != nil {
			return nil, err
		}
	}
	name := firstNonEmpty(f.Name, info.Name, info.BundleID)
	if name == "" {
		return nil, errs.Field("name", "is required: the package names no app")
	}
	releaseType := firstNonEmpty(f.ReleaseType, info.ReleaseType)

	snap := insights.FromInfo(info)
	if snap.Sizes == nil { // a format that lists no files: its size is still compared
		snap.Sizes = &insights.Sizes{Download: obj.Size}
	}
	snapJSON, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	up := &upload{
		release: distribution.Release{
			Name: info.Name, BundleID: info.BundleID, ReleaseVersion: info.ReleaseVersion, BuildVersion: info.BuildVersion,
			ReleaseType: releaseType, Source: f.Source, Branch: f.Branch, GitCommit: f.GitCommit, CIURL: f.CIURL,
			Changelog: changelog, CustomFields: custom, Platform: string(info.Platform), Format: string(info.Format),
			Device: info.Device, MinOS: info.MinOS, TargetSDK: info.TargetSDK, Profile: profileSummary(info.Profile),
			Facts: platformFacts(info), Size: obj.Size, SHA256: obj.SHA256, ChecksumState: distribution.ChecksumVerified,
			EdSignature: f.EdSignature, TauriSignature: f.TauriSignature, RolloutPercent: f.rollout, Critical: f.critical, ObjectKey: obj.Key, Filename: downloadName(obj.Filename, name, info),
			UploadedBy: tokenID,
		},
		channelSlug: f.ChannelKey, appName: name, appID: f.AppID, schemeName: distribution.SchemeName(releaseType), info: info,
		idemKey: idemKey, snap: snap, snapJSON: snapJSON, distribute: f.distribute, otherApp: f.otherApp,
	}
	r := &up.release
	// A session's SHA-256 is the client's word; a desktop build's feeds need SHA-512 and SHA-1,
	// which are not computed while the bytes stream in (they would double the upload's CPU
	// time): the Verifier computes them all by one read of the stored object.
	switch {
	case obj.Unverified:
		r.ChecksumState = distribution.ChecksumUnverified
	case distribution.DesktopPlatform(r.Platform):
		r.ChecksumState = distribution.ChecksumPending
	}
	if passwordHash != nil {
		up.passwordHash = *passwordHash
	}
	if info.Profile != nil {
		for _, u := range info.Profile.Devices {
			if udid, err := distribution.NormalizeUDID(u); err == nil {
				up.profileDevices = append(up.profileDevices, udid)
			}
		}
	}
	if info.Icon != nil {
		iconKey, err := b.Objects.StoreBytes(ctx, IconPrefix, info.Icon.Data, info.Icon.ContentType)
		if err != nil {
			return nil, err
		}
		keys = append(keys, iconKey)
		r.IconKey, r.IconType = &iconKey, &info.Icon.ContentType
	}
	rc, err = b.record(ctx, up, keys)
	if err == nil {
		b.Effects.Changed(distribution.Change{ChannelID: rc.Channel.ID})
		b.Effects.Wake()
		if rc.ChecksumState == distribution.ChecksumUnverified || rc.ChecksumState == distribution.ChecksumPending {
			b.Verifier.Wake()
		}
		b.Audit.Record(ctx, "release.upload", distribution.ReleaseTarget(rc),
			map[string]any{"channel_id": rc.Channel.ID, "channel": rc.Channel.Name, "size": rc.Size, "source": rc.Source})
	}
	if first, ok := replayed(err); ok {
		b.Objects.Discard(ctx, keys...)
		return b.Store.GetRelease(ctx, first)
	}
	return rc, err
}

// against compares an upload's build (snap, size bytes) with its channel's newest release so far
// (prev, with its snapshot prevInsights; nil when none), into news, and checks the channel's size
// budget: crossing it is a warning in news, or an error when the channel enforces it.
func against(news *distribution.UploadNews, snap *insights.Snapshot, size int64, c *distribution.Channel,
	prev *distribution.Release, prevInsights []byte) error {
	*news = distribution.UploadNews{BudgetWarnings: BudgetWarnings(c.Budget, size, prev)}
	if c.Budget.Enforce && len(news.BudgetWarnings) > 0 {
		return errs.Invalidf("the build crosses channel %s's size budget, which it enforces: %s. Nothing was kept",
			strconv.Quote(c.Name), strings.Join(news.BudgetWarnings, "; "))
	}
	if prev == nil || prevInsights == nil {
		return nil
	}
	var old insights.Snapshot
	if err := json.Unmarshal(prevInsights, &old); err != nil {
		return nil // an unreadable snapshot: the release's diff endpoint computes it again
	}
	news.Against = prev.ID
	news.Summary = insights.Summary(insights.Compare(&old, snap))
	return nil
}

// parse reads the package's metadata from storage through the cached, tail-seeded reader and
// records how many requests and bytes it took.
func (b *Builds) parse(ctx context.Context, obj *StoredObject) (*appinfo.Info, error) {
	start := time.Now()
	ra := b.Objects.ReaderAt(ctx, obj)
	// The reader's block cache is the parse's too.
	info, err := appinfo.ParseWithin(ctx, b.Parses, ra, obj.Size, min(blob.CacheSize, obj.Size))
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

// plainFile is what becomes of a file no platform family claims (cause): refused, unless the
// upload names a windows or linux channel, which keeps it as Zealot does, as a plain download
// named and versioned by the upload's fields or, failing them, by its file name.
func (b *Builds) plainFile(ctx context.Context, obj *StoredObject, f *ReleaseForm, cause error) (*appinfo.Info, error) {
	if f.ChannelKey == "" || b.Channels == nil {
		return nil, cause
	}
	cc, err := b.Channels.Channel(ctx, f.ChannelKey)
	if err != nil {
		return nil, err
	}
	platform := appinfo.Platform(cc.Channel.DeviceType)
	if platform != appinfo.Windows && platform != appinfo.Linux {
		return nil, cause
	}
	base, fileVersion := splitFileName(obj.Filename)
	info := &appinfo.Info{Platform: platform, Format: appinfo.FormatOther, Device: string(platform),
		Name: firstNonEmpty(f.Name, base), ReleaseVersion: firstNonEmpty(f.ReleaseVersion, fileVersion)}
	info.BundleID = firstNonEmpty(f.BundleID, info.Name)
	info.BuildVersion = firstNonEmpty(f.BuildVersion, info.ReleaseVersion)
	if info.ReleaseVersion == "" {
		e := errs.Invalidf("Slipway cannot read this file's metadata, so this %s channel keeps it as a plain download: send release_version (and build_version), or give the file a name holding its version", platform)
		e.Entry = map[string][]string{"release_version": {"is required for a file Slipway cannot read"}}
		return nil, e
	}
	if info.Name == "" {
		return nil, errs.Field("name", "is required: the file has neither metadata nor a name")
	}
	return info, nil
}

// fileVersion finds a version in a file name: digits with at least one dot ("1.2", "0.9.1-3").
var fileVersion = regexp.MustCompile(`[vV]?(\d+(?:\.\d+)+(?:[-+_][0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?)`)

// splitFileName cuts a file name into the name before its version (extensions and separators
// dropped) and the version ("Field_Tool-0.9.1.tar.gz": "Field_Tool", "0.9.1").
func splitFileName(name string) (base, version string) {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	if name == "." || name == "/" {
		return "", ""
	}
	stem := name
	for range 2 { // "x.tar.gz": both
		ext := path.Ext(stem)
		if ext == "" || len(ext) > 10 || strings.ContainsAny(ext, "0123456789") && ext != ".bz2" && ext != ".7z" {
			break // "tool-0.9.1" ends in ".1", which is no extension
		}
		stem = strings.TrimSuffix(stem, ext)
	}
	if loc := fileVersion.FindStringSubmatchIndex(stem); loc != nil {
		version = stem[loc[2]:loc[3]]
		base = strings.TrimRight(stem[:loc[0]], "-_. ")
	}
	if base == "" {
		base = stem
	}
	return base, version
}

// fill takes from the form, else from the file name, what a parsed package leaves empty (an .exe
// without a version resource names neither its product nor its version): the form never
// overrides the package. A package whose version nothing gives is a 422.
func (f *ReleaseForm) fill(info *appinfo.Info, filename string) error {
	base, fileVersion := splitFileName(filename)
	info.Name = firstNonEmpty(info.Name, f.Name, base)
	info.ReleaseVersion = firstNonEmpty(info.ReleaseVersion, f.ReleaseVersion, fileVersion)
	info.BuildVersion = firstNonEmpty(info.BuildVersion, f.BuildVersion, info.ReleaseVersion)
	info.BundleID = firstNonEmpty(info.BundleID, f.BundleID, info.Name)
	if info.ReleaseVersion == "" {
		e := errs.Invalidf("this %s names no version: send release_version (and build_version), or give the file a name holding its version", info.Format)
		e.Entry = map[string][]string{"release_version": {"is required: the package names no version"}}
		return e
	}
	return nil
}

// Caps of what a release keeps of its platform facts: the parsers bound each entry they read,
// these bound the row (releases.platform_facts holds at most 64 KiB). The few properties of a
// package repository's index (appinfo.IndexProperties, 8 keys) keep up to 4 KiB each: the
// formats that have them (.rpm) have no permissions and one architecture.
const (
	maxFactItems = 100
	maxFactBytes = 256
)

// platformFacts keeps an Info's platform facts, each list and string capped.
func platformFacts(info *appinfo.Info) distribution.PlatformFacts {
	list := func(vs []string) []string {
		var out []string
		for _, v := range vs[:min(len(vs), maxFactItems)] {
			out = append(out, clip(v))
		}
		return out
	}
	f := distribution.PlatformFacts{Architectures: list(info.Architectures), Publisher: clip(info.Publisher),
		Description: clip(info.Description), Permissions: list(info.Permissions), Debuggable: info.Debuggable}
	keys := make([]string, 0, len(info.Properties))
	for k := range info.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys[:min(len(keys), maxFactItems/2)] {
		if f.Properties == nil {
			f.Properties = map[string]string{}
		}
		if appinfo.IndexProperties[k] {
			f.Properties[k] = clipTo(info.Properties[k], appinfo.MaxIndexProperty)
		} else {
			f.Properties[clip(k)] = clip(info.Properties[k])
		}
	}
	return f
}

// clip cuts s to at most maxFactBytes bytes, on a rune boundary.
func clip(s string) string { return clipTo(s, maxFactBytes) }

// clipTo cuts s to at most n bytes, on a rune boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// checkApp learns the app a channel made without a bundle id holds from its first build (the
// channel is locked: the upload takes its version), and decides about a build of another app:
// a warning in news, or a refusal naming both ids when the request said so (rule). The warning
// says how the build is kept apart: never the channel's newest for testers, retention counts
// each app's builds apart.
func checkApp(ctx context.Context, tx UploadTx, ch *distribution.Channel, bundleID string, rule otherAppRule, news *distribution.UploadNews) error {
	if ch.BundleID != "*" || bundleID == "" {
		return nil
	}
	if ch.AppBundleID == "" {
		ch.AppBundleID = bundleID
		return tx.LearnApp(ctx, ch.ID, bundleID)
	}
	held := ch.HeldApp()
	if held == "" || held == bundleID {
		return nil
	}
	if rule == otherAppRefuse {
		e := errs.Invalidf("channel %s holds %s, but this build is %s, another app. Nothing was kept: upload it to that app's own channel, "+
			"or send allow_other_bundle_id=true to keep it here anyway", strconv.Quote(ch.Name), held, bundleID)
		// The console's upload box asks by this field whether to keep the build anyway.
		e.Entry = map[string][]string{"allow_other_bundle_id": {fmt.Sprintf("true keeps this build of %s in a channel of %s", bundleID, held)}}
		return e
	}
	news.Warnings = append(news.Warnings, fmt.Sprintf("channel %s holds %s, but this build is %s, another app: it was kept, "+
		"but testers are not offered it as the channel's newest build, and retention counts it apart from %s's builds", strconv.Quote(ch.Name), held, bundleID, held))
	return nil
}

// electronFeedFiles are the electron-updater feed files of each desktop platform.
var electronFeedFiles = map[string][]string{"macos": {"latest-mac.yml"}, "windows": {"latest.yml"},
	"linux": {"latest-linux.yml", "latest-linux-arm64.yml"}}

// electronWarning warns of a build electron-updater's feeds list but cannot read: its version is
// not semver, and electron-updater throws "Invalid Version" on it ("" when nothing to say). The
// build is kept: Sparkle and Squirrel read such versions.
func electronWarning(r *distribution.Release) string {
	if feeds.Semver(r.ReleaseVersion) || !slices.ContainsFunc(electronFeedFiles[r.Platform], func(f string) bool { return feeds.ElectronOffers(f, r) }) {
		return ""
	}
	return fmt.Sprintf("version %q is not semver (x.y.z): an app that updates with electron-updater (or Tauri) fails on it "+
		"with Invalid Version; version it as 1.2.0 for those", r.ReleaseVersion)
}

// checkChannel refuses a package whose platform or bundle id the channel does not take.
func checkChannel(c *distribution.Channel, info *appinfo.Info) error {
	if c.DeviceType != string(info.Platform) {
		return errs.Invalidf("this channel takes %s builds, but the file is %s build (%s)", platformName(c.DeviceType), distribution.WithArticle(platformName(string(info.Platform))), info.Format)
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
		appinfo.FormatMacZip: ".zip", appinfo.FormatPKG: ".pkg", appinfo.FormatDMG: ".dmg", appinfo.FormatHAP: ".hap",
		appinfo.FormatHarmonyApp: ".app", appinfo.FormatEXE: ".exe", appinfo.FormatEXEZip: ".zip", appinfo.FormatMSI: ".msi",
		appinfo.FormatMSIX: ".msix", appinfo.FormatMSIXBundle: ".msixbundle", appinfo.FormatDeb: ".deb",
		appinfo.FormatRPM: ".rpm", appinfo.FormatAppImage: ".AppImage"}[info.Format]
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

// platformName names a platform in messages ("HarmonyOS", "Windows"), its device_type otherwise.
func platformName(p string) string {
	if n, ok := map[string]string{"ios": "iOS", "android": "Android", "macos": "macOS", "harmonyos": "HarmonyOS",
		"windows": "Windows", "linux": "Linux"}[p]; ok {
		return n + " (" + p + ")"
	}
	return p
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
