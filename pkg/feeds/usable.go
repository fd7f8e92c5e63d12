package feeds

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

// Usability says whether one update framework can install a build from Slipway's feeds, and
// why not: a build "in the feeds" that no framework accepts (a Mac build without an EdDSA
// signature, with a version electron-updater cannot parse, without a Tauri signature) is not an
// update anyone gets.
type Usability struct {
	// Framework is the updater's name: "Sparkle", "electron-updater", "Tauri", "Squirrel.Windows".
	Framework string
	// Usable: the framework's feed offers the build and the framework accepts it.
	Usable bool
	// Why says why not ("" when usable), in words a user can act on.
	Why string
}

// semverRe is what electron-updater's semver accepts as a version (a leading "v" included).
var semverRe = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// Semver reports whether electron-updater can read version (it throws "Invalid Version" otherwise).
func Semver(version string) bool { return semverRe.MatchString(version) }

// Frameworks says, for each update framework of a desktop build's platform, whether it can use
// the build (nil for a platform without update feeds). The rules are the feeds' own (InFeeds,
// ElectronOffers, TauriServes, SquirrelOffers) and what each framework refuses.
func Frameworks(r *distribution.Release) []Usability {
	var out []Usability
	add := func(name, why string) { out = append(out, Usability{Framework: name, Usable: why == "", Why: why}) }
	feeds := ""
	switch {
	case r.ChecksumState == distribution.ChecksumMismatch:
		feeds = "its stored bytes are not what was declared, so no feed offers it"
	case !r.InFeeds() && r.RolloutPercent == 0:
		feeds = "it is rolled out to 0%, so no feed offers it"
	case !r.InFeeds():
		feeds = "no feed offers it until Slipway has verified its checksums (seconds)"
	}
	first := func(whys ...string) string {
		for _, w := range whys {
			if w != "" {
				return w
			}
		}
		return ""
	}
	electron := func(file, format string) string {
		switch {
		case !ElectronOffers(file, r):
			return fmt.Sprintf("electron-updater installs %s here; this build is a %s", format, r.Format)
		case !Semver(r.ReleaseVersion):
			return fmt.Sprintf("its version %q is not semver (x.y.z): electron-updater throws Invalid Version", r.ReleaseVersion)
		}
		return ""
	}
	tauri := func() string {
		signed := *r
		signed.TauriSignature = "-"
		switch {
		case !slices.ContainsFunc(TauriPlatformArchs[r.Platform], func(arch string) bool { return TauriServes(r.Platform, &signed, arch) }):
			return "it is not a package the Tauri updater installs"
		case r.TauriSignature == "":
			return "it was uploaded without tauri_signature: Tauri refuses an update without one, so its feeds leave this build out"
		}
		return ""
	}
	switch r.Platform {
	case "macos":
		sparkle := ""
		switch {
		case r.EdSignature != "":
		case r.SparkleSign:
			sparkle = "not yet: Slipway signs it with the operator's Sparkle key once it is verified and rolled out above 0%"
		default:
			sparkle = "it has no EdDSA signature, and Sparkle refuses an update without one (upload with ed_signature)"
		}
		add("Sparkle", first(feeds, sparkle))
		add("electron-updater", first(feeds, electron("latest-mac.yml", "the .zip")))
		add("Tauri", first(feeds, tauri()))
	case "windows":
		add("electron-updater", first(feeds, electron("latest.yml", "the NSIS installer (.exe)")))
		add("Tauri", first(feeds, tauri()))
		squirrel := ""
		switch {
		case !SquirrelOffers(&distribution.Release{Filename: r.Filename, SHA1: "-", RolloutPercent: 100}):
			squirrel = "Squirrel installs the .nupkg packages Squirrel --releasify writes; this build is not one"
		case !RolledOut(r):
			squirrel = "Squirrel's RELEASES cannot stage: it lists this build once it is rolled out to 100%"
		}
		add("Squirrel.Windows", first(feeds, squirrel))
		appInstaller := ""
		switch {
		case r.Format != "msix" && r.Format != "msixbundle":
			appInstaller = "App Installer installs MSIX packages and bundles; this build is a " + r.Format
		case !AppInstallerOffers(&distribution.Release{Format: r.Format, BundleID: r.BundleID, Facts: r.Facts, BuildVersion: r.BuildVersion, RolloutPercent: 100}):
			appInstaller = fmt.Sprintf("its manifest's identity (name, publisher, version %q) is not one App Installer can match", r.BuildVersion)
		case !RolledOut(r):
			appInstaller = "the .appinstaller file names one build for every install: it offers this build once it is rolled out to 100%"
		}
		add("App Installer", first(feeds, appInstaller))
	case "linux":
		linux := electron("latest-linux.yml", "the AppImage")
		if linux != "" && electron("latest-linux-arm64.yml", "the AppImage") == "" {
			linux = ""
		}
		add("electron-updater", first(feeds, linux))
		add("Tauri", first(feeds, tauri()))
	}
	return out
}
