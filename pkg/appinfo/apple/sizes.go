package apple

import (
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

// Component names of Apple breakdowns (besides paths of frameworks and extensions, and the
// main executable's path in its bundle).
const (
	componentAssets        = "Assets.car"
	componentLocalizations = "Localizations"
	componentResources     = "Resources"
)

// ipaCut cuts an .ipa whose main bundle is appDir ("Payload/X.app/") and main executable exec
// (CFBundleExecutable, "" when not declared):
//   - the main executable, appDir+exec: named exec, appinfo.KindExecutable;
//   - Frameworks/F.framework/... and Frameworks/lib.dylib: each its own component
//     ("Frameworks/F.framework"), appinfo.KindFramework;
//   - PlugIns/E.appex, Extensions/E.appex, Watch/W.app, AppClips/C.app: each its own component,
//     appinfo.KindExtension;
//   - Assets.car at the bundle's root: "Assets.car", appinfo.KindAssets (an extension's or a
//     framework's own catalog stays with it);
//   - *.lproj folders at the bundle's root: "Localizations", appinfo.KindLocalization;
//   - everything else in the bundle (Info.plist, nibs, images, _CodeSignature/, the provisioning
//     profile): "Resources", appinfo.KindResources;
//   - outside the bundle: SwiftSupport/ (appinfo.KindOther), Symbols/ and BCSymbolMaps/
//     (appinfo.KindSymbols), each by its name; anything else (iTunesMetadata.plist, other
//     folders of Payload/, __MACOSX/) in appinfo.ComponentOther.
func ipaCut(appDir, exec string) appinfo.Cut {
	return func(name string) (string, string) {
		rest, ok := strings.CutPrefix(name, appDir)
		if !ok {
			top, folder := appinfo.TopFolder(name)
			switch {
			case folder && (top == "Symbols" || top == "BCSymbolMaps"):
				return top, appinfo.KindSymbols
			case folder && top == "SwiftSupport":
				return top, appinfo.KindOther
			}
			return "", ""
		}
		return bundleCut(rest, exec, "", "")
	}
}

// macCut cuts a zipped macOS app whose bundle is appDir ("[folder/]X.app/"), as ipaCut cuts an
// .ipa, with the macOS layout: the executable is Contents/MacOS/exec; frameworks are in
// Contents/Frameworks/; extensions in Contents/PlugIns/, Contents/Extensions/ and
// Contents/XPCServices/ (appinfo.KindExtension); Assets.car and *.lproj in Contents/Resources/.
// Everything outside the bundle is appinfo.ComponentOther.
func macCut(appDir, exec string) appinfo.Cut {
	if exec != "" {
		exec = "Contents/MacOS/" + exec
	}
	return func(name string) (string, string) {
		rest, ok := strings.CutPrefix(name, appDir)
		if !ok {
			return "", ""
		}
		return bundleCut(rest, exec, "Contents/", "Contents/Resources/")
	}
}

// bundleCut names the component of the file rest (a path within the bundle); exec is the main
// executable's path in the bundle ("" when unknown), contents where the bundle's folders are (""
// on iOS, "Contents/" on macOS), resources where Assets.car and the localizations are.
func bundleCut(rest, exec, contents, resources string) (string, string) {
	if exec != "" && rest == exec {
		return rest, appinfo.KindExecutable
	}
	if r, ok := strings.CutPrefix(rest, resources); ok {
		if r == componentAssets {
			return componentAssets, appinfo.KindAssets
		}
		if top, folder := appinfo.TopFolder(r); folder && strings.HasSuffix(top, ".lproj") {
			return componentLocalizations, appinfo.KindLocalization
		}
	}
	if r, ok := strings.CutPrefix(rest, contents); ok {
		top, folder := appinfo.TopFolder(r)
		if folder {
			sub, _ := appinfo.TopFolder(r[len(top)+1:])
			if sub != "" {
				switch {
				case top == "Frameworks" && (strings.HasSuffix(sub, ".framework") || strings.HasSuffix(sub, ".dylib")):
					return contents + top + "/" + sub, appinfo.KindFramework
				case top == "PlugIns" || top == "Extensions" || contents == "" && (top == "Watch" || top == "AppClips") ||
					contents != "" && top == "XPCServices":
					if strings.HasSuffix(sub, ".appex") || strings.HasSuffix(sub, ".app") || strings.HasSuffix(sub, ".xpc") {
						return contents + top + "/" + sub, appinfo.KindExtension
					}
				}
			}
		}
	}
	return componentResources, appinfo.KindResources
}
