// Package apple reads Apple packages for appinfo.Parse: an iOS or tvOS .ipa, a zipped macOS .app,
// a macOS installer .pkg (xar) and a .dmg disk image (detected only). Its init function registers
// the family "apple" with appinfo; import it (or pkg/appinfo/platforms) for that side effect.
//
// What lives where:
//   - apple.go: the family's registration, its caps and the .pkg and .dmg magic checks.
//   - ipa.go: the .ipa (Payload/X.app/Info.plist, embedded.mobileprovision, declared PNG icons).
//   - macos.go: the zipped .app (X.app/Contents/Info.plist, embedded.provisionprofile, .icns icon).
//   - pkg.go: the .pkg's xar header, table of contents (streamed token by token, keeping only the
//     files read), Distribution and PackageInfo files.
//   - xmlbound.go: the .pkg's XML read within limits on elements, depth and token size, and one
//     element budget per parse, so that a few KB that inflate to megabytes of elements cost
//     milliseconds, not the gigabytes and seconds that decoding them whole took.
//   - plist.go: bounded XML and binary property-list decoding (howett.net/plist after shape checks).
//   - profile.go: ParseProfile (provisioning profiles) and the release type rule.
//   - png.go, icns.go: icons: Apple-crushed (CgBI) PNGs re-encoded as standard PNGs, .icns files.
//   - sizes.go: how an .ipa and a zipped .app are cut into components (ipaCut, macCut).
//   - macho.go: the main executable's architectures from its Mach-O header.
//   - appletest: builders of synthetic Apple packages for tests and benchmarks.
//
// How each appinfo.Info field is derived:
//   - Platform: appinfo.IOS for an .ipa, appinfo.MacOS otherwise. Format: the container.
//     Device: UIDeviceFamily (appinfo.DeviceIPhone, DeviceIPad, DeviceUniversal, DeviceAppleTV)
//     for an .ipa, appinfo.DeviceMac otherwise.
//   - .ipa and zipped .app: Name is CFBundleDisplayName, else CFBundleName, else
//     CFBundleExecutable, else the .app folder's name. BundleID, ReleaseVersion, BuildVersion:
//     CFBundleIdentifier, CFBundleShortVersionString, CFBundleVersion, each version standing in
//     for the other when one is missing. MinOS: MinimumOSVersion (.ipa), LSMinimumSystemVersion
//     (.app). AppStore: the .ipa carries iTunesMetadata.plist. Profile: the embedded provisioning
//     profile. ReleaseType: from AppStore and the profile, as decisions.md rules (releaseType).
//     Icon: the largest declared PNG in the .app folder (.ipa), the largest PNG of the .icns file
//     CFBundleIconFile names (.app), re-encoded as a standard PNG when Apple-crushed.
//     Profile.Entitlements: the profile's Entitlements dictionary rendered as text (profile.go).
//     Architectures: the CPU types of the main executable (CFBundleExecutable, else the bundle's
//     name) read from its Mach-O header, each slice of a universal one, as Apple names them
//     ("arm64", "armv7", "x86_64"), sorted; empty when the header cannot be read. This costs one
//     small read of the executable's first bytes (macho.go), the only read the parse makes for a
//     fact the directory does not give. Sizes: the central directory cut by ipaCut or macCut
//     (sizes.go): main executable, each framework, each extension, Assets.car, localizations,
//     other resources, and for an .ipa what lies outside Payload/.
//   - .pkg: the main bundle (the .app nearest the root) gives BundleID and versions, else the
//     Distribution's <product>, else the first PackageInfo; Name is the Distribution's title
//     unless it is a localization key, else the app's name, else BundleID; MinOS is the first
//     allowed-os-versions minimum. No ReleaseType, Profile or Icon. Sizes: Download alone (its
//     table of contents lists the files, but inside a payload Slipway does not open).
//   - .dmg: no readable metadata; only Platform, Format and Device are set, and the upload
//     supplies the rest as form fields.
package apple

import (
	"io"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Caps on what one metadata entry may inflate to (icons: appinfo.MaxIconBytes). Over a cap, the
// parse fails with errs.Invalid.
const (
	MaxPlistBytes   = 4 << 20 // Info.plist, iTunesMetadata.plist, a .pkg's Distribution or PackageInfo
	MaxProfileBytes = 2 << 20 // embedded.mobileprovision, embedded.provisionprofile
	// MaxXarTOCBytes bounds a .pkg's table of contents (zlib-inflated). A real one lists a few
	// dozen files at under 1 KB each; 4 MiB keeps the XML decoder's CPU per parse near 80 ms.
	MaxXarTOCBytes = 4 << 20
	// MaxParseBytes is the most one parse allocates (appinfo.Family.MaxParseBytes): the plists
	// and the profile, each with what is decoded from it, or a .pkg's table of contents and
	// its XML files; and one icon read whole and converted.
	MaxParseBytes = 3*(2*MaxPlistBytes+MaxProfileBytes) + 2*maxPKGXMLBytes + appinfo.MaxIconBytes + iconDecodeBytes
)

// Family registration: an .ipa or zipped .app by its Info.plist, a .pkg by its xar magic, a
// .dmg by its UDIF trailer. Priority 1 keeps the order appinfo had before the families moved to
// folders of their own: after Android (2), before every other family (0).
func init() {
	appinfo.Register(appinfo.Family{Name: "apple", Takes: "an iOS .ipa, or a macOS .app in a .zip, a .dmg or a .pkg", Priority: 1,
		Platform: func(a *zipread.Archive) appinfo.Platform {
			if a != nil && findIPAInfoPlist(a) != "" {
				return appinfo.IOS
			}
			return appinfo.MacOS // a zipped .app, a .pkg or a .dmg
		},
		MaxParseBytes: MaxParseBytes, DecodeBytes: iconDecodeBytes,
		ClaimZip: func(a *zipread.Archive) appinfo.ZipParser {
			switch {
			case findIPAInfoPlist(a) != "":
				return parseIPA
			case findMacAppInfoPlist(a) != "":
				return parseMacZip
			}
			return nil
		},
		ClaimFile: func(r io.ReaderAt, size int64) appinfo.FileParser {
			switch {
			case isXar(r, size):
				return parsePKG
			case isDMG(r, size):
				return func(io.ReaderAt, int64) (*appinfo.Info, error) {
					return &appinfo.Info{Platform: appinfo.MacOS, Format: appinfo.FormatDMG, Device: appinfo.DeviceMac}, nil
				}
			}
			return nil
		}})
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
