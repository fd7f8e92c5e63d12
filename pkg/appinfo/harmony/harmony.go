// Package harmony reads the metadata of HarmonyOS packages: a module package (.hap) and an app
// package (.app, the set of HAPs uploaded to AppGallery). It registers the family "harmony"
// with appinfo, which hands it the zips it claims; it reads through ranged reads only.
//
// # Claims
//
// A zip whose directory has module.json and pack.info or resources.index is a HAP
// (appinfo.FormatHAP). A zip whose directory has pack.info and at least one *.hap entry (and no
// module.json) is an .app (appinfo.FormatHarmonyApp). Both are appinfo.HarmonyOS. FA-model
// packages (config.json, API 8 and older) are not claimed.
//
// # Fields
//
// module.json of a built HAP is plain JSON holding the project's app.json5 merged in as its
// "app" object (bundleName, versionCode, …) and its module.json5 as "module"; the build keeps
// each resource reference by name and adds its numeric id beside it ("label":
// "$string:app_name", "labelId": 16777216, as in the fixture). Resources are resolved by id,
// else by name and type, else a reference by number ("$string:16777216"). From module.json:
//
//   - BundleID: app.bundleName (else pack.info summary.app.bundleName). It must be letters,
//     digits, '_', '.' or '-', start with a letter and be at most 128 bytes.
//   - ReleaseVersion: app.versionName; BuildVersion: app.versionCode (else pack.info
//     summary.app.version name and code).
//   - MinOS: app.minAPIVersion and TargetSDK: app.targetAPIVersion, in the human form
//     DevEco Studio and Huawei's documentation use. The number is the version M.F.S and the API
//     level N written as (M×10000 + F×100 + S)×1000 + N: 50000012 is "5.0.0(12)", 50100018 is
//     "5.1.0(18)". Sources: Huawei's compatibility guide computes the version part "M*10000 +
//     F*100 + S" (deviceInfo.distributionOSApiVersion, 50002 for 5.0.2(14)); OpenHarmony takes
//     the API level as the number modulo 1000 (API_VERSION_MOD = 1000 in its window, bundle and
//     file managers; hvigor's apiTransform "appends the three-digit API number after the
//     platform prefix"). A number under 1000 (an OpenHarmony module) is a bare API level,
//     written as is ("12"); one ending in 000 is written "M.F.S".
//   - Device: module.deviceTypes joined with "," ("phone,tablet,2in1").
//   - Permissions: the names of module.requestPermissions.
//   - Publisher: app.vendor. Debuggable: app.debug. Description: app.description, resolved.
//   - Architectures: the ABIs under libs/ ("arm64-v8a", "x86_64").
//   - Name: app.labelId (else the reference app.label, by name and type) resolved through
//     resources.index, in its base configuration (else English, else the first); else the main
//     ability's label; else the bundle name (as app-info does). A label that is not a "$string:"
//     reference is the name itself.
//   - Icon: app.iconId / app.icon resolved through resources.index, else the main ability's
//     icon, else resources/base/media/<name>.png, else resources/base/media/app_icon.png (the
//     file app-info takes). Of a media resource's values, light before dark and the highest
//     screen density first are tried. A PNG is kept as is, a WebP too (as for Android), a JPEG
//     is re-encoded as PNG; Width and Height come from the header. A layered image (the
//     adaptive launcher icon, a JSON file naming a foreground and a background "$media:" id)
//     is composed: the foreground drawn centred over the background and encoded as PNG, which
//     is what the launcher shows before masking. The app icon comes first because it is what
//     app-info and Zealot show and what the fixture's README lists; the layered ability icon is
//     the fallback. A missing or broken icon is no error.
//   - Properties: BundleType, APIReleaseType, CompileSdkVersion, CompileSdkType, Module,
//     ModuleType; for an .app also EntryHAP and Modules (the module names of pack.info).
//   - Sizes: the central directory cut by hapCut (sizes.go): libs per ABI, bytecode, resources,
//     other; for an .app, by appCut: one component per module package, and its largest files
//     list the entry HAP's own files (read in place already) under its name.
//
// An .app takes BundleID, ReleaseVersion and BuildVersion from its pack.info (summary.app) and
// the rest from its entry HAP: the package pack.info lists with moduleType "entry" (installed
// with the app first), else its only HAP. The entry HAP's bundle must be the pack.info's.
//
// # Nested HAPs
//
// The entry HAP is a zip inside the zip. When stored (method 0, as the packing tool writes
// it), it is opened in place: an io.SectionReader-like view of the outer reader from the
// entry's data offset, so reading it costs ranged reads of its end records, directory and the
// few entries needed, like any package, and prefetch hints pass through. When deflated, it is
// inflated into memory only up to MaxInflatedHAPBytes (a hand-zipped small .app still parses;
// a large one would mean streaming through the whole entry) and refused beyond. Nesting goes
// one level deep: an entry HAP that itself holds a .hap is refused.
//
// # resources.index
//
// The compiled resource table, written by restool; no Go library reads it, so it is decoded
// here (resindex.go). The layout was read off the fixture's index and checked against
// OpenHarmony's resource manager (openharmony/global_resource_management,
// frameworks/resmgr: res_desc.h, hap_parser_v1.cpp, hap_parser_v2.cpp, hap_resource_v2.cpp and
// the index builders of its malformed_index_test.cpp). Two layouts exist, told apart by the
// version text (anything else starting "Restool" is read as V1, as the resource manager does):
//
//	"Restool 5.008" (V1, restool 5, the fixture's):
//	  header   version[128] fileSize:u32 configCount:u32
//	  configs  configCount × { "KEYS" idssOffset:u32 qualifierCount:u32 {type:u32 value:u32}* }
//	  ids      at each idssOffset: "IDSS" count:u32, count × { id:u32 itemOffset:u32 }
//	  items    size:u32 type:u32 id:u32 valueLen:u16 value nameLen:u16 name (NUL-terminated,
//	           the NUL counted in the length)
//	"RestoolV2 6.0.0.001" (V2, restool 6, from API 20):
//	  header   version[128] fileSize:u32 configCount:u32 dataOffset:u32
//	  configs  configCount × { "KEYS" configId:u32 qualifierCount:u32 {type:u32 value:u32}* }
//	  ids      "IDSS" length:u32 typeCount:u32 idCount:u32, typeCount × { type:u32 length:u32
//	           count:u32, count × { id:u32 infoOffset:u32 nameLen:u32 name } }
//	  data     at each infoOffset: id:u32 length:u32 valueCount:u32,
//	           valueCount × { configId:u32 valueOffset:u32 }; at valueOffset: len:u16 text
//
// No real V2 index was at hand, so the V2 decoder follows the resource manager's source and
// tests; it reads a value's text up to len bytes or a NUL, whichever comes first.
//
// Numbers are little-endian, offsets from the start of the file. A configuration is a
// qualifier folder: qualifiers are typed (0 language, 1 region, 2 screen density in dpi, 3
// direction, 4 device type, 5 script, 6 colour mode, 0 being dark, 7 MCC, 8 MNC, 10 input
// device) and language, script and region values are their letters packed most significant
// byte first ("en" is 0x656e). Resource ids are 0x01000000 upwards for an app; the types read
// here are 9 (string: the text) and 19 (media: the file's path, module name first, as in
// "entry/resources/base/media/app_icon.png"). The file is read whole, at most
// MaxResourcesIndexBytes; every count, length and offset is checked against the bytes present
// before anything is allocated for it, configurations are capped (4096) and the V1 id tables
// must fit in the file together, so work and memory stay in proportion to the real file. A
// malformed index is an errs.Invalid error; a HAP without one falls back as above.
//
// Every problem with the input is an errs.Invalid error whose message says what was wrong.
package harmony

import (
	"strconv"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Caps on what one parse reads. Over a cap, the parse fails with errs.Invalid.
const (
	// MaxModuleJSONBytes bounds module.json; real ones are a few KiB.
	MaxModuleJSONBytes = 2 << 20
	// MaxPackInfoBytes bounds pack.info, which lists every module of an .app.
	MaxPackInfoBytes = 2 << 20
	// MaxResourcesIndexBytes bounds resources.index, read whole: real ones are KiB to a few
	// MiB (every string of every language).
	MaxResourcesIndexBytes = 16 << 20
	// MaxInflatedHAPBytes bounds a deflated entry HAP of an .app, which is inflated into
	// memory (a stored one is read in place, whatever its size).
	MaxInflatedHAPBytes = 32 << 20
	// maxNestedOpenCost bounds what opening the entry HAP's directory may cost (zipread.Survey's
	// OpenCost): about 40,000 files, ten times a large HAP's.
	maxNestedOpenCost = 16 << 20
	// maxHAPParseBytes is the most a HAP's parse allocates: its JSON files and resources.index,
	// each with what is decoded from it, and one icon read whole and decoded.
	maxHAPParseBytes = 2*(2*MaxModuleJSONBytes+MaxResourcesIndexBytes) + appinfo.MaxIconBytes + iconDecodeBytes
	// maxAppParseBytes is the most an .app's parse allocates: pack.info, the entry HAP inflated
	// and its directory opened, and the HAP's parse.
	maxAppParseBytes = 2*MaxPackInfoBytes + MaxInflatedHAPBytes + maxNestedOpenCost + maxHAPParseBytes
)

const (
	moduleJSONName     = "module.json"
	packInfoName       = "pack.info"
	resourcesIndexName = "resources.index"
	// maxTextLen bounds every text value kept from a package.
	maxTextLen = 1024
	// maxListItems bounds the permissions, device types and module names kept.
	maxListItems = 256
	// maxArchitectures bounds the ABIs listed.
	maxArchitectures = 16
)

// Family registration: a HAP by its module.json, an .app by its pack.info and HAPs.
func init() {
	appinfo.Register(appinfo.Family{Name: "harmony", Takes: "a HarmonyOS .hap or .app", ClaimZip: Claim, Platform: func(*zipread.Archive) appinfo.Platform { return appinfo.HarmonyOS },
		MaxParseBytes: maxHAPParseBytes, DecodeBytes: iconDecodeBytes,
		NestedBytes: func(a *zipread.Archive) int64 {
			if Claim(a) == nil || a.File(moduleJSONName) != nil && (a.File(packInfoName) != nil || a.File(resourcesIndexName) != nil) {
				return 0 // a HAP: bounded by its own entries
			}
			return appParseBytes(a)
		}})
}

// Claim returns the parser for a HarmonyOS package, nil when the zip is none: ParseHAP for a
// zip with module.json and pack.info or resources.index at its root, ParseApp for one with
// pack.info and at least one .hap entry. It looks at the directory only.
func Claim(a *zipread.Archive) appinfo.ZipParser {
	if a.File(moduleJSONName) != nil && (a.File(packInfoName) != nil || a.File(resourcesIndexName) != nil) {
		return ParseHAP
	}
	if a.File(packInfoName) == nil {
		return nil
	}
	for _, f := range a.Files() {
		if isHAPName(f.Name) {
			return ParseApp
		}
	}
	return nil
}

// clean makes a text value read from a package safe to keep (appinfo.CleanText).
func clean(s string) string { return appinfo.CleanText(s, maxTextLen) }

// quote quotes a name for a message, cleaned.
func quote(s string) string { return strconv.Quote(clean(s)) }

// first returns the first non-empty value.
func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// contains reports whether list holds s.
func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// joinList cleans the items of list, drops empty and repeated ones, and joins at most
// maxListItems of them with sep.
func joinList(list []string, sep string) string {
	var out []string
	for _, v := range list {
		if len(out) == maxListItems {
			break
		}
		if s := clean(v); s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}
