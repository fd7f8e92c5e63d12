// Package appinfo reads the metadata of an uploaded build from an io.ReaderAt, detecting the kind
// from content, never from a file name. It reads only the entries it needs, each bounded in size,
// so a parse of a package held in object storage fetches a small fraction of it.
//
// This package holds only what every platform family shares: Info (with Profile and Icon), the
// Platform, Format, Device* and Release* constants, MaxIconBytes, Parse and the family registry
// (family.go), the description of an unrecognised file, and the size breakdown (sizes.go:
// Breakdown, cut from a zip's central directory by ZipBreakdown with each family's rule, at no
// read beyond the directory). It parses nothing itself. Each family
// lives in a folder of its own and registers its parsers from its init function, the way image
// decoders do:
//
//   - apple: .ipa, zipped macOS .app, .pkg (xar) and .dmg detection, with provisioning profiles,
//     property lists, CgBI PNG and ICNS icons; builders in apple/appletest.
//   - android: .apk and .aab; builders in android/androidtest.
//   - harmony: HarmonyOS .hap and .app.
//   - windows: .exe, .msi, .msix/.appx and their bundles, and (a fallback) a zip holding an .exe.
//   - linux: .deb, .rpm and AppImage.
//
// Parse knows only the families whose packages the program imports. Import
// github.com/slipwayhq/slipway/pkg/appinfo/platforms (blank) to register them all; it also
// documents the order in which they claim a file (Family.Priority).
//
// Every problem with the input is an errs.Invalid error whose message says what was wrong.
package appinfo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Platform is the platform a package installs on; it matches a channel's device_type.
type Platform string

const (
	IOS       Platform = "ios"
	Android   Platform = "android"
	MacOS     Platform = "macos"
	HarmonyOS Platform = "harmonyos"
	Windows   Platform = "windows"
	Linux     Platform = "linux"
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

	FormatHAP        Format = "hap"         // a HarmonyOS module package
	FormatHarmonyApp Format = "harmony-app" // a HarmonyOS .app: pack.info and its HAPs
	FormatEXE        Format = "exe"         // a Windows PE executable
	FormatEXEZip     Format = "exe-zip"     // a zip holding a Windows executable (Zealot's rule)
	FormatMSI        Format = "msi"         // a Windows Installer database (compound file)
	FormatMSIX       Format = "msix"        // an MSIX or APPX package (AppxManifest.xml)
	FormatMSIXBundle Format = "msixbundle"  // an MSIX or APPX bundle (AppxBundleManifest.xml)
	FormatDeb        Format = "deb"         // a Debian package
	FormatRPM        Format = "rpm"         // an RPM package
	FormatAppImage   Format = "appimage"    // a type 2 AppImage: ELF runtime + squashfs
	FormatOther      Format = "other"       // kept unparsed (windows and linux channels only)
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
	DeviceWindows    = "windows"
	DeviceLinux      = "linux"
	// HarmonyOS devices are named by its module.json deviceTypes: "phone", "tablet", "2in1",
	// "wearable", "tv", "car", joined with "," when a module declares several.
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

// MaxIconBytes caps what one icon file (PNG, WebP, ICNS, ICO...) may inflate to, in every family.
// Each family caps its own metadata entries (apple.MaxPlistBytes, android.MaxManifestBytes,
// windows.MaxManifestBytes...).
const MaxIconBytes = 8 << 20

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

	// Architectures are the CPU architectures the package runs on, in the platform's own words
	// ("x64", "arm64", "amd64", "aarch64", "noarch", "neutral"); empty when the format does not say.
	Architectures []string
	// Publisher is who made the package: a Windows CompanyName, Manufacturer or Publisher, a
	// HarmonyOS vendor, a Debian Maintainer, an RPM Vendor or Packager.
	Publisher string
	// Description is a one-line summary (a Debian Description's first line, an RPM Summary).
	Description string
	// Permissions the package asks for (Android uses-permission, HarmonyOS requestPermissions,
	// MSIX capabilities), in the order declared, without duplicates.
	Permissions []string
	// Debuggable marks a debug build (HarmonyOS app.json "debug").
	Debuggable bool
	// Properties are further facts of the format, shown on the release page under these names:
	// "ProductCode", "UpgradeCode", "FileVersion", "Release" and the like.
	Properties map[string]string

	// Sizes is what the package is made of (sizes.go): for a zip package, its components and
	// largest files from the central directory; for any other, only Download (the file size).
	// Parse always sets it.
	Sizes *Breakdown
}

// IndexProperties are the properties a parser keeps for a package repository's index (the DNF
// repository of a channel, pkg/repos/rpmmd) more than for people: the release page does not
// show them, and a release keeps them up to MaxIndexProperty bytes (the others are cut shorter).
var IndexProperties = map[string]bool{
	"Description": true, "Provides": true, "Requires": true, "Conflicts": true, "Obsoletes": true,
	"HeaderStart": true, "HeaderEnd": true, "ArchiveSize": true,
	// A .deb's (pkg/repos/apt): the relation fields, which a cut would break, and the extended
	// description.
	"Extended-Description": true, "Depends": true, "Pre-Depends": true, "Recommends": true, "Suggests": true,
	"Enhances": true, "Breaks": true, "Replaces": true, "Built-Using": true,
}

// MaxIndexProperty bounds the value of an IndexProperties entry.
const MaxIndexProperty = 4096

// SetProperty sets one of the format's own facts (Properties) when its value is not empty.
func (info *Info) SetProperty(key, val string) {
	if val == "" {
		return
	}
	if info.Properties == nil {
		info.Properties = map[string]string{}
	}
	info.Properties[key] = val
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
	// Entitlements are the profile's Entitlements dictionary, each value in short text form:
	// "true", "production", a list as "a, b", a dictionary as "{key, key}" (see the apple
	// package for the exact rendering and its caps). They are what the profile allows the app,
	// which is what its signature may claim: the capabilities (push, iCloud, App Groups...).
	Entitlements map[string]string
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

// ErrUnrecognised is the cause (errors.Is) of Parse's error for a file that no registered family
// claims: not a build Slipway reads, as opposed to a package of one that is broken.
// A windows or linux channel keeps such a file as a plain download (decisions.md); a claimed file
// that fails to parse is refused everywhere.
var ErrUnrecognised = errors.New("unrecognised package")

// Parse detects the kind of package in r (size bytes) and reads its metadata.
func Parse(r io.ReaderAt, size int64) (*Info, error) {
	if size <= 0 {
		return nil, errs.Invalidf("the file is empty")
	}
	if zipread.IsZip(r, size) {
		a, err := zipread.Open(r, size)
		if err != nil {
			return nil, err
		}
		if parse := claimZip(a); parse != nil {
			info, err := parse(a)
			return withSizes(info, err, size)
		}
		return nil, unrecognisedZip(a)
	}
	if parse := claimFile(r, size); parse != nil {
		info, err := parse(r, size)
		return withSizes(info, err, size)
	}
	return nil, unrecognisedFile(r, size)
}

// withSizes gives a parsed Info of a package of size bytes, whose parser set no Sizes, its
// Download alone.
func withSizes(info *Info, err error, size int64) (*Info, error) {
	if err == nil && info != nil && info.Sizes == nil {
		info.Sizes = &Breakdown{Download: size}
	}
	return info, err
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

// CleanText makes a text value read from a package safe to keep and show: cut at a NUL, control
// characters and invalid UTF-8 dropped, spaces trimmed, at most max bytes (on a rune boundary).
func CleanText(s string, max int) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if len(s) > 4*max { // (bounds the work below for a huge value)
		s = s[:4*max]
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		s = strings.Map(func(r rune) rune {
			if r == utf8.RuneError || unicode.IsControl(r) {
				return -1
			}
			return r
		}, strings.ToValidUTF8(s, ""))
	}
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return strings.TrimSpace(s)
}
