package feeds

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// What each updater is offered of a channel's releases (newest first), decided here beside the
// renderers; pkg/httpapi turns the releases chosen into Items (their download URLs) and serves
// the bytes. Every feed offers only releases whose checksums Slipway computed from the stored
// bytes and that are rolled out to someone (Release.InFeeds), and only its own framework's
// artifact. A feed format that has no staged rollout of its own (Squirrel's RELEASES, Tauri's
// static document) offers only builds rolled out to everyone: it cannot offer a build to a share
// of its installs, so it offers it to none until the rollout is complete.

// Kind names a feed.
type Kind string

// The feeds.
const (
	KindAppcast     Kind = "appcast"
	KindElectron    Kind = "electron"
	KindTauri       Kind = "tauri"
	KindTauriStatic Kind = "tauri-static"
	KindSquirrel    Kind = "squirrel"
	// KindAppInstaller is Windows' .appinstaller file.
	KindAppInstaller Kind = "appinstaller"
)

// Key names one rendered feed in a channel view's memo: its kind and what selects its releases
// (an electron file, a Tauri architecture, the release the Tauri endpoint chose), and the feed
// token its links carry.
type Key struct {
	Kind      Kind
	File      string
	Arch      string
	ReleaseID int64
	Token     string
}

// String is the key's memo form.
func (k Key) String() string {
	return fmt.Sprintf("feed\x00%s\x00%s\x00%s\x00%d\x00%s", k.Kind, k.File, k.Arch, k.ReleaseID, k.Token)
}

// RolledOut reports whether a release is offered to every install (no staged rollout left).
func RolledOut(r *distribution.Release) bool { return r.RolloutPercent >= 100 }

// electronFiles are the files of electron-updater's generic provider, by the platform each is for.
var electronFiles = map[string]string{"latest.yml": "windows", "latest-mac.yml": "macos", "latest-linux.yml": "linux",
	"latest-linux-arm64.yml": "linux"}

// electronFormats are the package formats each electron-updater feed offers: on macOS the .zip
// (Squirrel.Mac installs from it), on Windows the NSIS installer (.exe), on Linux the AppImage.
var electronFormats = map[string][]string{"latest-mac.yml": {"macos-zip"}, "latest.yml": {"exe"},
	"latest-linux.yml": {"appimage"}, "latest-linux-arm64.yml": {"appimage"}}

// electronArchs are the architectures a Linux feed takes (a build that names none is taken as
// x86_64, electron-builder's default).
var electronArchs = map[string][]string{"latest-linux.yml": {"x86_64", "amd64", ""}, "latest-linux-arm64.yml": {"aarch64", "arm64"}}

// ElectronPlatform returns the channel platform an electron-updater file is for (false: no such
// file).
func ElectronPlatform(file string) (string, bool) {
	p, ok := electronFiles[file]
	return p, ok
}

// ElectronOffers reports whether an electron-updater feed file offers a release. The file's
// stagingPercentage stages it: electron-updater draws each install's share itself.
func ElectronOffers(file string, r *distribution.Release) bool {
	if !slices.Contains(electronFormats[file], r.Format) {
		return false
	}
	archs, ok := electronArchs[file]
	if !ok {
		return true
	}
	if len(r.Facts.Architectures) == 0 {
		return slices.Contains(archs, "")
	}
	return slices.ContainsFunc(r.Facts.Architectures, func(a string) bool { return slices.Contains(archs, a) })
}

// SquirrelOffers reports whether Squirrel.Windows' RELEASES lists a release: a .nupkg (full or
// delta) with its SHA-1, rolled out to everyone (RELEASES cannot stage).
func SquirrelOffers(r *distribution.Release) bool {
	return strings.HasSuffix(strings.ToLower(r.Filename), ".nupkg") && r.SHA1 != "" && RolledOut(r)
}

// tauriTargets maps the Tauri updater's {{target}} to the channel platform it asks for.
var tauriTargets = map[string]string{"darwin": "macos", "macos": "macos", "windows": "windows", "linux": "linux"}

// TauriTargetPlatform returns the channel platform of a Tauri {{target}} (false: not one Tauri sends).
func TauriTargetPlatform(target string) (string, bool) {
	p, ok := tauriTargets[target]
	return p, ok
}

// tauriArchs are the {{arch}} values the Tauri updater sends.
var tauriArchs = map[string]bool{"x86_64": true, "aarch64": true, "i686": true, "armv7": true}

// TauriArch reports whether arch is one the Tauri updater sends.
func TauriArch(arch string) bool { return tauriArchs[arch] }

// tauriArchWords maps the architectures packages name (pkg/appinfo: Apple's, Windows', Debian's
// and RPM's words) to the Tauri updater's {{arch}}; "*" is a package for every architecture.
var tauriArchWords = map[string]string{
	"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
	"arm64": "aarch64", "arm64e": "aarch64", "aarch64": "aarch64",
	"x86": "i686", "i386": "i686", "i686": "i686",
	"arm": "armv7", "armhf": "armv7", "armv7": "armv7", "armv7hl": "armv7", "armv7l": "armv7",
	"all": "*", "noarch": "*", "neutral": "*",
}

// tauriDefaultArchs are what a build whose package names no architecture Tauri knows is taken
// to run on: a Mac build is universal, a Windows or Linux one x86_64 (the bundlers' default).
var tauriDefaultArchs = map[string][]string{"macos": {"x86_64", "aarch64"}, "windows": {"x86_64"}, "linux": {"x86_64"}}

// tauriFormats are the packages the Tauri updater installs on each platform: on Windows the NSIS
// installer or the MSI, on Linux the AppImage, .deb or .rpm. A Mac build is taken in whatever form
// the channel holds (Tauri's .app.tar.gz is not read as a macOS package; docs/feeds.md).
var tauriFormats = map[string][]string{"windows": {"exe", "msi"}, "linux": {"appimage", "deb", "rpm"}}

// TauriServes reports whether the Tauri updater of platform and arch may be offered release r:
// its framework's artifact (a Windows .nupkg or .msix is Squirrel's or App Installer's, not
// Tauri's) for that architecture, signed: the updater refuses an update whose signature is
// empty, so a build uploaded without tauri_signature is never offered.
func TauriServes(platform string, r *distribution.Release, arch string) bool {
	if r.TauriSignature == "" {
		return false
	}
	if formats, ok := tauriFormats[platform]; ok && (!slices.Contains(formats, r.Format) || strings.HasSuffix(strings.ToLower(r.Filename), ".nupkg")) {
		return false
	}
	known := false
	for _, word := range r.Facts.Architectures {
		switch a := tauriArchWords[strings.ToLower(word)]; a {
		case "":
		case "*", arch:
			return true
		default:
			known = true
		}
	}
	return !known && slices.Contains(tauriDefaultArchs[platform], arch)
}

// TauriPlatformArchs are the architectures of each channel platform the static form can list.
var TauriPlatformArchs = map[string][]string{"macos": {"x86_64", "aarch64"}, "windows": {"x86_64", "aarch64", "i686"},
	"linux": {"x86_64", "aarch64", "i686", "armv7"}}

// TauriPlatformNames are Tauri's names of the channel platforms in the static form's keys.
var TauriPlatformNames = map[string]string{"macos": "darwin", "windows": "windows", "linux": "linux"}

// InRollout reports whether a staged release is offered to an install, by a bucket from 0 to 99
// drawn from the release and the install's identity: stable for one install (it is offered the
// build on every check once it is), independent between releases, and a share of installs near
// the rollout percentage. The Tauri dynamic endpoint stages this way, since Tauri itself does not.
func InRollout(r *distribution.Release, install string) bool {
	if RolledOut(r) {
		return true
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", r.ID, install)))
	return int(binary.BigEndian.Uint32(sum[:4])%100) < r.RolloutPercent
}
