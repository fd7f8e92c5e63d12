// Package appinfo reads the metadata of an uploaded build (iOS/tvOS .ipa, Android .apk and .aab,
// macOS zipped .app, .pkg and .dmg) from an io.ReaderAt, detecting the kind from content, never
// from a file name. It reads only the entries it needs, each bounded in size, so a parse of a
// package held in object storage fetches a small fraction of it.
//
// Every problem with the input is an errs.Invalid error whose message says what was wrong.
package appinfo

import (
	"bytes"
	"encoding/binary"
	"io"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Platform is the platform a package installs on; it matches a channel's device_type.
type Platform string

const (
	IOS     Platform = "ios"
	Android Platform = "android"
	MacOS   Platform = "macos"
)

// Format is the container format of a package.
type Format string

const (
	FormatIPA    Format = "ipa"
	FormatAPK    Format = "apk"
	FormatAAB    Format = "aab"
	FormatMacZip Format = "macos-zip" // a zip holding X.app/Contents/Info.plist
	FormatPKG    Format = "pkg"       // a xar installer package
	FormatDMG    Format = "dmg"       // a disk image: metadata must come from form fields
)

// Device families, as release responses and pages show them.
const (
	DeviceIPhone     = "iphone"
	DeviceIPad       = "ipad"
	DeviceUniversal  = "universal"
	DeviceAppleTV    = "appletv"
	DeviceMac        = "macos"
	DevicePhone      = "phone"
	DeviceTablet     = "tablet"
	DeviceTV         = "tv"
	DeviceWatch      = "watch"
	DeviceAutomotive = "automotive"
)

// Release types derived from Apple packages (decisions.md); Android has none unless the client
// sends one.
const (
	ReleaseDebug      = "debug"
	ReleaseAdhoc      = "adhoc"
	ReleaseEnterprise = "enterprise"
	ReleaseAppStore   = "appstore"
	ReleaseRelease    = "release"
)

// Caps on what one entry may inflate to. Over a cap, the parse fails with errs.Invalid.
const (
	MaxPlistBytes     = 4 << 20  // Info.plist, iTunesMetadata.plist
	MaxProfileBytes   = 2 << 20  // embedded.mobileprovision
	MaxManifestBytes  = 8 << 20  // AndroidManifest.xml (binary or protobuf)
	MaxResourcesBytes = 64 << 20 // resources.arsc, resources.pb
	MaxIconBytes      = 8 << 20  // one icon file (PNG, WebP, ICNS)
	MaxXarTOCBytes    = 16 << 20 // a .pkg's table of contents (zlib-inflated)
)

// Info is the metadata of one package.
type Info struct {
	Platform Platform
	Format   Format
	// Name is the display name, else the bundle name, else the executable (Apple); the label
	// resolved to the default locale (Android).
	Name string
	// BundleID is the bundle identifier (Apple) or package name (Android).
	BundleID string
	// ReleaseVersion is CFBundleShortVersionString or versionName.
	ReleaseVersion string
	// BuildVersion is CFBundleVersion or versionCode.
	BuildVersion string
	// MinOS is the minimum OS version (Apple, e.g. "9.3") or minSdkVersion (Android, e.g. "14").
	MinOS string
	// TargetSDK is Android's targetSdkVersion; empty when not declared and for Apple packages.
	TargetSDK string
	// Device is one of the Device* constants.
	Device string
	// ReleaseType is derived for Apple packages as decisions.md rules; empty for Android and DMG.
	ReleaseType string
	// AppStore is true when an .ipa carries iTunesMetadata.plist.
	AppStore bool
	// Profile is the embedded provisioning profile, nil when the package has none.
	Profile *Profile
	// Icon is the largest icon, nil when the package has none (or only vector/adaptive ones).
	Icon *Icon
}

// Profile is an Apple provisioning profile (embedded.mobileprovision or embedded.provisionprofile).
type Profile struct {
	UUID       string
	Name       string
	TeamID     string // first TeamIdentifier
	TeamName   string // empty when the profile has none (old profiles)
	AppID      string // Entitlements application-identifier (com.apple.application-identifier on macOS)
	Platforms  []string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	Devices    []string // ProvisionedDevices (UDIDs)
	AllDevices bool     // ProvisionsAllDevices (enterprise)
	// GetTaskAllow is the get-task-allow entitlement: a development profile.
	GetTaskAllow bool
	// BetaReportsActive is the beta-reports-active entitlement (App Store / TestFlight).
	BetaReportsActive bool
}

// Expired reports whether the profile has expired at time now.
func (p *Profile) Expired(now time.Time) bool { return !p.ExpiresAt.IsZero() && now.After(p.ExpiresAt) }

// Icon is an icon image, re-encoded as a standard PNG when it was Apple-crushed (CgBI) or ICNS.
type Icon struct {
	Data []byte
	// ContentType is "image/png" or "image/webp".
	ContentType string
	Width       int
	Height      int
}

// Parse detects the kind of package in r (size bytes) and reads its metadata.
func Parse(r io.ReaderAt, size int64) (*Info, error) {
	if size <= 0 {
		return nil, errs.Invalidf("the file is empty")
	}
	switch {
	case zipread.IsZip(r, size):
		a, err := zipread.Open(r, size)
		if err != nil {
			return nil, err
		}
		return parseZip(a)
	case isXar(r, size):
		return parsePKG(r, size)
	case isDMG(r, size):
		return &Info{Platform: MacOS, Format: FormatDMG, Device: DeviceMac}, nil
	}
	return nil, errs.Invalidf("not an iOS, Android or macOS package: %s", sniff(r, size))
}

// parseZip picks the parser for a zip archive from the entries it holds.
func parseZip(a *zipread.Archive) (*Info, error) {
	switch {
	case a.File("AndroidManifest.xml") != nil:
		return parseAPK(a)
	case a.File("base/manifest/AndroidManifest.xml") != nil:
		return parseAAB(a)
	case findIPAInfoPlist(a) != "":
		return parseIPA(a)
	case findMacAppInfoPlist(a) != "":
		return parseMacZip(a)
	}
	return nil, errs.Invalidf("not an iOS, Android or macOS package: %s", a.Describe(5))
}

func isXar(r io.ReaderAt, size int64) bool {
	var magic [4]byte
	if size < 28 {
		return false
	}
	_, err := r.ReadAt(magic[:], 0)
	return err == nil && string(magic[:]) == "xar!"
}

// isDMG looks for the UDIF trailer ("koly" block) in the last 512 bytes of a disk image.
func isDMG(r io.ReaderAt, size int64) bool {
	var trailer [4]byte
	if size < 512 {
		return false
	}
	_, err := r.ReadAt(trailer[:], size-512)
	return err == nil && string(trailer[:]) == "koly"
}

// sniff describes the start of an unrecognised file for an error message.
func sniff(r io.ReaderAt, size int64) string {
	head := make([]byte, min(size, 16))
	n, _ := r.ReadAt(head, 0)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG")):
		return "found a PNG image"
	case bytes.HasPrefix(head, []byte("%PDF")):
		return "found a PDF document"
	case bytes.HasPrefix(head, []byte("MZ")):
		return "found a Windows executable"
	case bytes.HasPrefix(head, []byte("\x1f\x8b")):
		return "found a gzip file"
	case len(head) >= 4 && (binary.BigEndian.Uint32(head) == 0xcafebabe || binary.LittleEndian.Uint32(head) == 0xfeedfacf):
		return "found a bare Mach-O binary"
	case isText(head):
		return "found a text file"
	}
	return "unrecognised file content"
}

func isText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f {
			return false
		}
	}
	return true
}
