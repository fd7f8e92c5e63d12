package android

import (
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Component names of Android breakdowns (besides folders named by their path).
const (
	componentDex  = "Dex"
	componentARSC = "resources.arsc"
)

// androidMaxABIs bounds the ABIs listed in Info.Architectures.
const androidMaxABIs = 16

// apkCut cuts an APK: classes*.dex at the root ("Dex", appinfo.KindCode); lib/<abi>/ per ABI
// (appinfo.KindNative); resources.arsc and res/ (appinfo.KindResources); assets/
// (appinfo.KindAssets); META-INF/, the v1 signature and the manifest of the JAR format
// (appinfo.KindSignature); anything else (AndroidManifest.xml, kotlin/, other root files) in
// appinfo.ComponentOther. An APK Signing Block (v2+ signatures) lies between the entries and the
// central directory, so it counts in appinfo.ComponentOverhead.
func apkCut(name string) (string, string) {
	if abi, ok := abiFolder(name, "lib/"); ok {
		return "lib/" + abi + "/", appinfo.KindNative
	}
	top, folder := appinfo.TopFolder(name)
	switch {
	case !folder && strings.HasPrefix(top, "classes") && strings.HasSuffix(top, ".dex"):
		return componentDex, appinfo.KindCode
	case !folder && top == componentARSC:
		return componentARSC, appinfo.KindResources
	case folder && top == "res":
		return "res/", appinfo.KindResources
	case folder && top == "assets":
		return "assets/", appinfo.KindAssets
	case folder && top == "META-INF":
		return "META-INF/", appinfo.KindSignature
	}
	return "", ""
}

// aabCut cuts an app bundle: each module (a top-level folder holding manifest/AndroidManifest.xml:
// base/ and the feature and asset modules) is one component "<module>/" (appinfo.KindModule),
// except its native libraries, one component per ABI "<module>/lib/<abi>/" (appinfo.KindNative);
// META-INF/ is appinfo.KindSignature, BUNDLE-METADATA/ (mapping files, debug symbols: not
// delivered to devices) appinfo.KindSymbols, and the rest (BundleConfig.pb) appinfo.ComponentOther.
func aabCut(a *zipread.Archive) appinfo.Cut {
	modules := map[string]bool{}
	for _, f := range a.Files() {
		if m, ok := strings.CutSuffix(f.Name, "/manifest/AndroidManifest.xml"); ok && m != "" && !strings.Contains(m, "/") {
			modules[m] = true
		}
	}
	return func(name string) (string, string) {
		top, folder := appinfo.TopFolder(name)
		switch {
		case !folder:
		case modules[top]:
			if abi, ok := abiFolder(name[len(top)+1:], "lib/"); ok {
				return top + "/lib/" + abi + "/", appinfo.KindNative
			}
			return top + "/", appinfo.KindModule
		case top == "META-INF":
			return "META-INF/", appinfo.KindSignature
		case top == "BUNDLE-METADATA":
			return "BUNDLE-METADATA/", appinfo.KindSymbols
		}
		return "", ""
	}
}

// abiFolder returns <abi> when name is a file under dir<abi>/ ("lib/arm64-v8a/libx.so") and the
// ABI's name is a plausible one (letters, digits, '-' and '_', at most 32 bytes).
func abiFolder(name, dir string) (string, bool) {
	rest, ok := strings.CutPrefix(name, dir)
	if !ok {
		return "", false
	}
	abi, file, ok := strings.Cut(rest, "/")
	if !ok || abi == "" || len(abi) > 32 {
		return "", false
	}
	for _, c := range []byte(abi) {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", false
		}
	}
	return abi, file != "" || strings.HasSuffix(name, "/")
}

// androidABIs lists, sorted, the ABIs an APK (prefixes "") or app bundle (each module's prefix)
// carries native libraries for: the <abi> of each lib/<abi>/ folder holding a file.
func androidABIs(a *zipread.Archive, aab bool) []string {
	var out []string
	for _, f := range a.Files() {
		name := f.Name
		if strings.HasSuffix(name, "/") {
			continue
		}
		if aab {
			top, folder := appinfo.TopFolder(name)
			if !folder {
				continue
			}
			name = name[len(top)+1:]
		}
		if abi, ok := abiFolder(name, "lib/"); ok && !slices.Contains(out, abi) {
			out = append(out, abi)
			if len(out) == androidMaxABIs {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
