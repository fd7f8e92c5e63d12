package httpapi

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/links"
)

// The JSON views own the wire names: the fields of api.md, snake_case, no root key, plus the
// fields Zealot 6's serializers add (a channel's id and download_filename_type, a scheme's
// new_build_callout and retained_builds) so that its management clients find them.

type appView struct {
	ID      int64        `json:"id"`
	Name    string       `json:"name"`
	Schemes []schemeView `json:"schemes"`
}

type schemeView struct {
	ID              int64         `json:"id"`
	Name            string        `json:"name"`
	NewBuildCallout bool          `json:"new_build_callout"`
	RetainedBuilds  int           `json:"retained_builds"`
	Channels        []channelView `json:"channels"`
}

type refView struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type channelView struct {
	ID                   int64   `json:"id"`
	Slug                 string  `json:"slug"`
	Name                 string  `json:"name"`
	DeviceType           string  `json:"device_type"`
	BundleID             string  `json:"bundle_id"`
	GitURL               *string `json:"git_url"`
	HasPassword          bool    `json:"has_password"`
	DownloadFilenameType string  `json:"download_filename_type"`
	// The size budget: null when not set.
	MaxSizeBytes     *int64   `json:"max_size_bytes"`
	MaxGrowthPercent *float64 `json:"max_growth_percent"`
	EnforceBudget    bool     `json:"enforce_budget"`
	// SparkleSigning: Slipway signs the channel's macOS builds with the operator's Sparkle key.
	SparkleSigning bool `json:"sparkle_signing"`
	// TesterOnly: the channel is open to the testers of its tester groups only (and the app's members).
	TesterOnly bool `json:"tester_only"`
	// AppInstallerHours is how often Windows' App Installer checks the channel's .appinstaller
	// file when the app starts (0: at every start).
	AppInstallerHours int `json:"appinstaller_hours"`
	// APTNewestOnly: the channel's APT repository lists only the newest version of each package
	// and architecture.
	APTNewestOnly bool `json:"apt_newest_only"`
	// TesterGroups are the aliases of those groups (sent when the channel is tester-only).
	TesterGroups []string `json:"tester_groups,omitempty"`
}

func newAppView(a *distribution.App) appView {
	v := appView{ID: a.ID, Name: a.Name, Schemes: make([]schemeView, 0, len(a.Schemes))}
	for i := range a.Schemes {
		v.Schemes = append(v.Schemes, newSchemeView(&a.Schemes[i]))
	}
	return v
}

func newSchemeView(s *distribution.Scheme) schemeView {
	v := schemeView{ID: s.ID, Name: s.Name, NewBuildCallout: s.NewBuildCallout, RetainedBuilds: s.RetainedBuilds,
		Channels: make([]channelView, 0, len(s.Channels))}
	for i := range s.Channels {
		v.Channels = append(v.Channels, newChannelView(&s.Channels[i]))
	}
	return v
}

func newChannelView(c *distribution.Channel) channelView {
	return channelView{ID: c.ID, Slug: c.Slug, Name: c.Name, DeviceType: c.DeviceType, BundleID: c.BundleID, GitURL: c.GitURL,
		HasPassword: c.HasPassword(), DownloadFilenameType: c.DownloadFilenameType,
		MaxSizeBytes: c.Budget.MaxBytes, MaxGrowthPercent: c.Budget.MaxGrowthPercent, EnforceBudget: c.Budget.Enforce,
		SparkleSigning: c.SparkleSigning, TesterOnly: c.TesterOnly, TesterGroups: c.TesterGroups, AppInstallerHours: c.AppInstallerHours, APTNewestOnly: c.APTNewestOnly}
}

// shortReleaseView is the short Release form (versions, latest, version_exist).
type shortReleaseView struct {
	Version        int                  `json:"version"`
	AppName        string               `json:"app_name"`
	BundleID       string               `json:"bundle_id"`
	ReleaseVersion string               `json:"release_version"`
	BuildVersion   string               `json:"build_version"`
	Source         string               `json:"source"`
	Branch         string               `json:"branch"`
	GitCommit      string               `json:"git_commit"`
	CIURL          string               `json:"ci_url"`
	Size           int64                `json:"size"`
	IconURL        string               `json:"icon_url"`
	InstallURL     string               `json:"install_url"`
	Changelog      []changelogEntryView `json:"changelog"`
	CreatedAt      string               `json:"created_at"`
}

type changelogEntryView struct {
	Message string `json:"message"`
	Author  string `json:"author,omitempty"`
	Email   string `json:"email,omitempty"`
	Date    string `json:"date,omitempty"`
}

type customFieldView struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

// releaseView is the full Release form (upload response, and the release endpoints).
type releaseView struct {
	ID int64 `json:"id"`
	shortReleaseView
	ReleaseURL    string            `json:"release_url"`
	QRCodeURL     string            `json:"qrcode_url"`
	TextChangelog string            `json:"text_changelog"`
	CustomFields  []customFieldView `json:"custom_fields"`
	App           refView           `json:"app"`
	Scheme        refView           `json:"scheme"`
	Channel       channelView       `json:"channel"`
	// Slipway's extra fields: retention's pin, and downloads and iOS installs counted so far.
	Pinned        bool  `json:"pinned"`
	DownloadCount int64 `json:"download_count"`
	// The checksums Slipway computed ("" until verified), and the update feeds' fields.
	ChecksumState  string `json:"checksum_state"`
	ChecksumError  string `json:"checksum_error"`
	SHA256         string `json:"sha256"`
	SHA512         string `json:"sha512"`
	SHA1           string `json:"sha1"`
	EdSignature    string `json:"ed_signature"`
	TauriSignature string `json:"tauri_signature"`
	RolloutPercent int    `json:"rollout_percent"`
	Critical       bool   `json:"critical"`
	// Package is what the package itself says.
	Package packageView `json:"package"`
	// Insights is what changed since the channel's previous build and the size budgets crossed:
	// only in an upload's answer, which is when a CI job can act on them.
	Insights *uploadInsightsView `json:"insights,omitempty"`
	// Warnings say what the upload kept that its uploader should look at (a build of another app
	// than its channel holds): the upload's answer only, an empty list when nothing.
	Warnings *[]string `json:"warnings,omitempty"`
	// Testers is who an upload's release went to (the upload's answer only).
	Testers *distributedView `json:"testers,omitempty"`
}

// packageView is a release's package facts: its platform and format, and what the platform's
// package says beyond the shared fields; empty lists and strings where the format says nothing.
type packageView struct {
	Platform      string            `json:"platform"`
	Format        string            `json:"format"`
	Device        string            `json:"device"`
	MinOS         string            `json:"min_os"`
	TargetSDK     string            `json:"target_sdk"`
	Architectures []string          `json:"architectures"`
	Publisher     string            `json:"publisher"`
	Description   string            `json:"description"`
	Permissions   []string          `json:"permissions"`
	Debuggable    bool              `json:"debuggable"`
	Properties    map[string]string `json:"properties"`
	SHA256        string            `json:"sha256"`
	// HarmonyManifestURL is the HarmonyOS install manifest of a .hap (else absent).
	HarmonyManifestURL string `json:"harmony_manifest_url,omitempty"`
}

func (s *Server) packageView(rc *distribution.ReleaseContext) packageView {
	f := &rc.Facts
	v := packageView{Platform: rc.Platform, Format: rc.Format, Device: rc.Device, MinOS: rc.MinOS, TargetSDK: rc.TargetSDK,
		Architectures: orEmpty(f.Architectures), Publisher: f.Publisher, Description: f.Description,
		Permissions: orEmpty(f.Permissions), Debuggable: f.Debuggable, Properties: f.Properties}
	if rc.ChecksumState == distribution.ChecksumVerified || rc.ChecksumState == distribution.ChecksumPending {
		v.SHA256 = rc.SHA256 // never the uploader's word: only what Slipway computed from the bytes
	}
	if v.Properties == nil {
		v.Properties = map[string]string{}
	}
	if links.HarmonyInstallable(rc.Platform, rc.Format) {
		v.HarmonyManifestURL = s.links.Manifest(rc.Channel.Slug, rc.ID, "")
	}
	return v
}

func orEmpty(vs []string) []string {
	if vs == nil {
		return []string{}
	}
	return vs
}

// channelListingView is the envelope of versions and latest: the channel with its app and scheme.
type channelListingView struct {
	AppName  string  `json:"app_name"`
	BundleID string  `json:"bundle_id"`
	GitURL   *string `json:"git_url"`
	App      refView `json:"app"`
	Scheme   refView `json:"scheme"`
	Releases any     `json:"releases"`
}

// appName renders "<app> <scheme> <channel>", as Zealot does.
func appName(app, scheme, channel string) string {
	return strings.TrimSpace(app + " " + scheme + " " + channel)
}

func (s *Server) shortRelease(r *distribution.Release, cc *distribution.ChannelContext) shortReleaseView {
	changelog := make([]changelogEntryView, len(r.Changelog))
	for i, e := range r.Changelog {
		changelog[i] = changelogEntryView(e)
	}
	return shortReleaseView{
		Version: r.Version, AppName: appName(cc.App.Name, cc.Scheme.Name, cc.Channel.Name), BundleID: r.BundleID,
		ReleaseVersion: r.ReleaseVersion, BuildVersion: r.BuildVersion, Source: r.Source, Branch: r.Branch,
		GitCommit: r.GitCommit, CIURL: r.CIURL, Size: r.Size, IconURL: s.links.Icon(r.ID, r.IconKey != nil),
		InstallURL: s.links.Install(r.Platform, cc.Channel.Slug, r.ID, ""), Changelog: changelog, CreatedAt: s.timestamp(r.CreatedAt),
	}
}

func (s *Server) shortReleases(rels []distribution.Release, cc *distribution.ChannelContext) []shortReleaseView {
	out := make([]shortReleaseView, 0, len(rels))
	for i := range rels {
		out = append(out, s.shortRelease(&rels[i], cc))
	}
	return out
}

func (s *Server) fullRelease(rc *distribution.ReleaseContext) releaseView {
	custom := make([]customFieldView, len(rc.CustomFields))
	for i, f := range rc.CustomFields {
		custom[i] = customFieldView(f)
	}
	v := releaseView{
		ID: rc.ID, shortReleaseView: s.shortRelease(&rc.Release, rc.ChannelContext()), ReleaseURL: s.links.Release(rc.Channel.Slug, rc.ID),
		QRCodeURL:     s.links.QRCode(rc.Channel.Slug, rc.ID, "thumb"),
		TextChangelog: distribution.TextChangelog(rc.Changelog), CustomFields: custom,
		App: refView{ID: rc.App.ID, Name: rc.App.Name}, Scheme: refView{ID: rc.Scheme.ID, Name: rc.Scheme.Name},
		Channel: newChannelView(&rc.Channel), Pinned: rc.Pinned, DownloadCount: rc.Downloads, Package: s.packageView(rc),
		Insights:      newUploadInsightsView(rc.News),
		ChecksumState: rc.ChecksumState, ChecksumError: rc.ChecksumError, EdSignature: rc.EdSignature, TauriSignature: rc.TauriSignature,
		RolloutPercent: rc.RolloutPercent, Critical: rc.Critical,
	}
	if rc.News != nil {
		w := orEmpty(rc.News.Warnings)
		v.Warnings = &w
	}
	if rc.News != nil && rc.News.Distributed != nil {
		d := newDistributedView(*rc.News.Distributed)
		v.Testers = &d
	}
	switch rc.ChecksumState {
	case distribution.ChecksumVerified:
		v.SHA256, v.SHA512, v.SHA1 = rc.SHA256, rc.SHA512, rc.SHA1
	case distribution.ChecksumPending:
		v.SHA256 = rc.SHA256 // computed as the upload streamed in
	}
	return v
}

func (s *Server) listing(cc *distribution.ChannelContext, releases any) channelListingView {
	return channelListingView{
		AppName: appName(cc.App.Name, cc.Scheme.Name, cc.Channel.Name), BundleID: cc.Channel.BundleID, GitURL: cc.Channel.GitURL,
		App: refView{ID: cc.App.ID, Name: cc.App.Name}, Scheme: refView{ID: cc.Scheme.ID, Name: cc.Scheme.Name}, Releases: releases,
	}
}

// deviceView is a device, with the columns Zealot renders for one.
type deviceView struct {
	ID        int64  `json:"id"`
	UDID      string `json:"udid"`
	Name      string `json:"name"`
	Model     string `json:"model"`
	Platform  string `json:"platform"`
	DeviceID  string `json:"device_id"`
	Status    string `json:"status"`
	Product   string `json:"product"`
	OSVersion string `json:"os_version"`
	Serial    string `json:"serial"`
	Source    string `json:"source"`
	// Verified is false for a device registered by a profile answer whose signer does not chain
	// to Apple's device CA, until an admin approves it (it is left out of the export until then).
	Verified  bool   `json:"verified"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func (s *Server) deviceView(d *distribution.Device) deviceView {
	return deviceView{ID: d.ID, UDID: d.UDID, Name: d.Name, Model: d.Model, Platform: d.Platform, DeviceID: d.DeviceID,
		Status: d.Status, Product: d.Product, OSVersion: d.OSVersion, Serial: d.Serial, Source: d.Source, Verified: !d.Unverified,
		CreatedAt: s.timestamp(d.CreatedAt), UpdatedAt: s.timestamp(d.UpdatedAt)}
}

// tokenView is a token's record; Token (the secret) is set only in the answer that created it.
type tokenView struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Scope      string  `json:"scope"`
	UserID     *int64  `json:"user_id"` // the owner (a console user), null for a token made by the command line
	CreatedAt  string  `json:"created_at"`
	LastUsedAt *string `json:"last_used_at"`
	RevokedAt  *string `json:"revoked_at"`
	// AppIDs and Abilities are the token's limits, absent when it has none.
	AppIDs    []int64  `json:"app_ids,omitempty"`
	Abilities []string `json:"abilities,omitempty"`
	Token     string   `json:"token,omitempty"`
}

func (s *Server) tokenView(t *distribution.Token) tokenView {
	v := tokenView{ID: t.ID, Name: t.Name, Scope: t.Scope, CreatedAt: s.timestamp(t.CreatedAt),
		LastUsedAt: s.optTimestamp(t.LastUsedAt), RevokedAt: s.optTimestamp(t.RevokedAt), AppIDs: t.Apps, Abilities: t.Abilities}
	if t.UserID != 0 {
		v.UserID = &t.UserID
	}
	return v
}

// timestampLayout is RFC 3339 with milliseconds and a numeric offset (+00:00, never Z).
const timestampLayout = "2006-01-02T15:04:05.000-07:00"

func (s *Server) timestamp(t time.Time) string { return t.In(s.cfg.Location).Format(timestampLayout) }

func (s *Server) optTimestamp(t *time.Time) *string {
	if t == nil {
		return nil
	}
	v := s.timestamp(*t)
	return &v
}

// rawJSON embeds stored JSON as is; an empty value renders as {}.
func rawJSON(b []byte) any {
	if len(b) == 0 {
		return map[string]any{}
	}
	return json.RawMessage(b)
}

// deleted is the body of successful deletions, spelled as the specification spells it.
var deleted = map[string]string{"mesage": "OK"}
