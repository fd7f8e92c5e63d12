package harmony

import (
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

// Component names of HarmonyOS breakdowns (besides folders named by their path and an .app's
// modules named by their file).
const (
	componentBytecode  = "Bytecode"
	componentResources = "Resources"
)

// hapCut cuts a HAP: libs/<abi>/ per ABI (appinfo.KindNative); ets/ and any other .abc file,
// the compiled ArkTS bytecode ("Bytecode", appinfo.KindCode); resources/ and resources.index
// ("Resources", appinfo.KindResources); anything else (module.json, pack.info) in
// appinfo.ComponentOther. A signed HAP's signature block lies between the entries and the
// central directory, so it counts in appinfo.ComponentOverhead.
func hapCut(name string) (string, string) {
	top, folder := appinfo.TopFolder(name)
	switch {
	case folder && top == "libs":
		if abi, _, ok := strings.Cut(name[len("libs/"):], "/"); ok && abi != "" {
			return "libs/" + abi + "/", appinfo.KindNative
		}
	case folder && top == "ets", !strings.HasSuffix(name, "/") && strings.HasSuffix(name, ".abc"):
		return componentBytecode, appinfo.KindCode
	case folder && top == "resources", name == resourcesIndexName:
		return componentResources, appinfo.KindResources
	}
	return "", ""
}

// appCut cuts an .app: each module package (.hap, and .hsp shared packages) is one component
// named by its entry (appinfo.KindModule); anything else (pack.info, the signature) is in
// appinfo.ComponentOther.
func appCut(name string) (string, string) {
	lower := strings.ToLower(name)
	if !strings.HasSuffix(name, "/") && (strings.HasSuffix(lower, ".hap") || strings.HasSuffix(lower, ".hsp")) {
		return name, appinfo.KindModule
	}
	return "", ""
}
