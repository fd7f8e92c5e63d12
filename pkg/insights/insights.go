// Package insights answers "what changed in this build?": a Snapshot is what a release keeps of
// its package's metadata to be compared later, Diff compares two of them, and Summary and
// Markdown say the result in short lines (chat messages, the tester page) or as a report (a
// pull-request comment).
//
// The package is pure: no I/O, no database, no clock but Options.Now. A Snapshot is meant to be
// stored as JSON (a JSONB column) and a Diff to be served as JSON, so both carry json tags whose
// names are part of the API: add fields, never rename them. Snapshot.Schema says which version of
// the layout a stored snapshot has.
//
// What a Snapshot holds comes from appinfo.Info (FromInfo): identity and versions, minimum OS and
// target SDK, architectures, permissions, the provisioning profile's entitlements and signing
// facts, and the size breakdown appinfo reads from a zip's central directory (components and
// the largest files). Entitlement values are kept with the team's identifiers replaced by Xcode's
// variables, so that re-signing with another team reports the team change once, not again in
// every entitlement that names the team.
package insights

import (
	"slices"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

// SchemaVersion is the layout version FromInfo writes in Snapshot.Schema.
const SchemaVersion = 1

// Snapshot is what a release keeps of its package's metadata for comparison with other builds.
type Snapshot struct {
	// Schema is the layout version (SchemaVersion when written by FromInfo).
	Schema int `json:"schema"`
	// Platform is the appinfo.Platform ("ios", "android", "macos", "harmonyos", "windows",
	// "linux"); Format the appinfo.Format ("ipa", "apk", "aab", ...).
	Platform string `json:"platform"`
	Format   string `json:"format"`
	// BundleID is the package's identity: a bundle identifier, an Android package name...
	BundleID string `json:"bundle_id"`
	// ReleaseVersion and BuildVersion are the package's versions (CFBundleShortVersionString and
	// CFBundleVersion, versionName and versionCode, ...).
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	// MinOS is the minimum OS version (iOS "15.0", Android API level "24", HarmonyOS
	// "5.0.0(12)"); TargetSDK the SDK the package targets, where the platform says (Android
	// targetSdkVersion, HarmonyOS targetAPIVersion).
	MinOS     string `json:"min_os,omitempty"`
	TargetSDK string `json:"target_sdk,omitempty"`
	// Architectures are the CPU architectures or ABIs, as the platform names them ("arm64-v8a",
	// "x64"), sorted.
	Architectures []string `json:"architectures,omitempty"`
	// Permissions are what the package asks for: Android uses-permission names, HarmonyOS
	// requestPermissions, MSIX capabilities; sorted.
	Permissions []string `json:"permissions,omitempty"`
	// Entitlements are the provisioning profile's entitlements (Apple), key to value in short
	// text form ("true", "production", "a, b"), the team's identifiers in values replaced by
	// "$(AppIdentifierPrefix)", "$(TeamIdentifierPrefix)" and "$(TeamIdentifier)".
	Entitlements map[string]string `json:"entitlements,omitempty"`
	// Signing is the provisioning profile (Apple); nil when the package carries none.
	Signing *Signing `json:"signing,omitempty"`
	// Sizes is the package's size breakdown; nil when unknown.
	Sizes *Sizes `json:"sizes,omitempty"`
}

// Signing is what a snapshot keeps of a provisioning profile.
type Signing struct {
	// TeamID is the profile's first TeamIdentifier; TeamName its TeamName.
	TeamID   string `json:"team_id,omitempty"`
	TeamName string `json:"team_name,omitempty"`
	// Type is the profile's kind (ProfileType): "development", "adhoc", "enterprise",
	// "appstore" or, for macOS, "developer-id".
	Type string `json:"type,omitempty"`
	// ProfileName is the profile's Name.
	ProfileName string `json:"profile_name,omitempty"`
	// ExpiresAt is the profile's ExpirationDate; nil when it has none (or one outside years
	// 1 to 9999, which JSON cannot hold).
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Devices is the number of devices the profile provisions; AllDevices is set when it
	// provisions every device (enterprise, Developer ID).
	Devices    int  `json:"devices"`
	AllDevices bool `json:"all_devices,omitempty"`
}

// Sizes is a package's size breakdown (appinfo.Breakdown), in bytes.
type Sizes struct {
	// Download is the package's file size.
	Download int64 `json:"download"`
	// Install is the sum of its files' uncompressed sizes; 0 when the format does not list its
	// files (only zip packages do).
	Install int64 `json:"install,omitempty"`
	// Files is the number of files in the package.
	Files int `json:"files,omitempty"`
	// Components cut the package by what its files are; their sizes add up to Download and
	// Install.
	Components []Component `json:"components,omitempty"`
	// Largest lists the largest files, largest install size first, at most
	// appinfo.MaxListedFiles; when Files is larger, every file left out is no larger than the
	// last one listed.
	Largest []File `json:"largest,omitempty"`
}

// Component is a part of a package (appinfo.Component).
type Component struct {
	// Name identifies the component in its package, the same from one build to the next
	// ("Frameworks/Alamofire.framework", "lib/arm64-v8a/", "Localizations").
	Name string `json:"name"`
	// Kind is one of the appinfo.Kind* constants ("framework", "native", "overhead", ...).
	Kind string `json:"kind"`
	// Download and Install are the component's compressed and uncompressed bytes.
	Download int64 `json:"download"`
	Install  int64 `json:"install"`
	// Files is the number of files in it.
	Files int `json:"files"`
}

// File is one file of a package, by its path in the archive.
type File struct {
	// Path is the file's path in the package ("Payload/X.app/Frameworks/Y.framework/Y"); a
	// file of a package nested in the package is "<nested package>/<path in it>".
	Path string `json:"path"`
	// Download and Install are its compressed and uncompressed bytes.
	Download int64 `json:"download"`
	Install  int64 `json:"install"`
}

// FromInfo returns the snapshot of a parsed package.
func FromInfo(info *appinfo.Info) *Snapshot {
	if info == nil {
		return nil
	}
	s := &Snapshot{
		Schema:         SchemaVersion,
		Platform:       string(info.Platform),
		Format:         string(info.Format),
		BundleID:       info.BundleID,
		ReleaseVersion: info.ReleaseVersion,
		BuildVersion:   info.BuildVersion,
		MinOS:          info.MinOS,
		TargetSDK:      info.TargetSDK,
		Architectures:  sortedSet(info.Architectures),
		Permissions:    sortedSet(info.Permissions),
	}
	if p := info.Profile; p != nil {
		s.Signing = &Signing{
			TeamID:      p.TeamID,
			TeamName:    p.TeamName,
			Type:        ProfileType(p),
			ProfileName: p.Name,
			Devices:     len(p.Devices),
			AllDevices:  p.AllDevices,
		}
		if validTime(p.ExpiresAt) {
			at := p.ExpiresAt.UTC()
			s.Signing.ExpiresAt = &at
		}
		if len(p.Entitlements) > 0 {
			s.Entitlements = make(map[string]string, len(p.Entitlements))
			prefix, _, _ := strings.Cut(p.AppID, ".")
			for k, v := range p.Entitlements {
				s.Entitlements[k] = teamNeutral(v, prefix, p.TeamID)
			}
		}
	}
	if b := info.Sizes; b != nil {
		s.Sizes = &Sizes{Download: b.Download, Install: b.Install, Files: b.Files}
		for _, c := range b.Components {
			s.Sizes.Components = append(s.Sizes.Components, Component{Name: c.Name, Kind: c.Kind, Download: c.Download, Install: c.Install, Files: c.Files})
		}
		for _, f := range b.Largest {
			s.Sizes.Largest = append(s.Sizes.Largest, File{Path: f.Path, Download: f.Download, Install: f.Install})
		}
	}
	return s
}

// ProfileType is the kind of a provisioning profile: "development" when it allows debugging
// (get-task-allow); for macOS profiles (platform "OSX") "developer-id" when it provisions every
// device, else "appstore"; for the others "adhoc" when it lists devices, "enterprise" when it
// provisions every device, else "appstore". "" for a nil profile.
func ProfileType(p *appinfo.Profile) string {
	switch {
	case p == nil:
		return ""
	case p.GetTaskAllow:
		return "development"
	case slices.Contains(p.Platforms, "OSX"):
		if p.AllDevices {
			return "developer-id"
		}
		return "appstore"
	case len(p.Devices) > 0:
		return "adhoc"
	case p.AllDevices:
		return "enterprise"
	}
	return "appstore"
}

// teamNeutral replaces a team's identifiers in an entitlement value by Xcode's variables:
// "<prefix>." (the application identifier's prefix) by "$(AppIdentifierPrefix)", "<team>." by
// "$(TeamIdentifierPrefix)", and a value (or list item) that is the team identifier by
// "$(TeamIdentifier)".
func teamNeutral(v, prefix, team string) string {
	if prefix != "" {
		v = strings.ReplaceAll(v, prefix+".", "$(AppIdentifierPrefix)")
	}
	if team == "" {
		return v
	}
	if team != prefix {
		v = strings.ReplaceAll(v, team+".", "$(TeamIdentifierPrefix)")
	}
	items := strings.Split(v, ", ")
	for i, item := range items {
		if item == team {
			items[i] = "$(TeamIdentifier)"
		}
	}
	return strings.Join(items, ", ")
}

// sortedSet returns the distinct non-empty strings of s, sorted; nil when there are none.
func sortedSet(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
