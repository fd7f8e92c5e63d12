// Package platforms registers every platform family's parsers with appinfo: import it, blank,
// wherever appinfo.Parse must recognise every package Slipway reads (the upload service in
// pkg/distribution does). It has no API; its only job is the imports below.
//
// A family registers from its package's init function. Go runs the init functions of packages
// that do not import one another in the order of their import paths, not in the order of the
// import lines, so this list decides which families exist, not the order of their claims. That
// order is the families' own (appinfo.Family: Fallback ones last, then higher Priority first, then
// by name), which gives today:
//
//  1. android (Priority 2): .apk, .aab. First, as before the split: a zip holding both an
//     AndroidManifest.xml and an iOS Payload/ is an APK.
//  2. apple (Priority 1): .ipa, zipped macOS .app, .pkg, .dmg.
//  3. harmony: HarmonyOS .hap and .app.
//  4. linux: .deb, .rpm, AppImage.
//  5. windows: .exe, .msi, .msix/.appx and bundles.
//  6. windows-exe-zip (Fallback): a zip holding an .exe that no other family claims.
//
// TestOrder checks that list; a new family is added here and there.
package platforms

import (
	_ "github.com/slipwayhq/slipway/pkg/appinfo/android"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/apple"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/harmony"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/linux"
	_ "github.com/slipwayhq/slipway/pkg/appinfo/windows"
)
