// Package android reads Android packages for appinfo.Parse: an .apk and an .aab (app bundle). Its
// init function registers the family "android" with appinfo; import it (or pkg/appinfo/platforms)
// for that side effect.
//
// What lives where:
//   - android.go: the family's registration and caps, the manifest model and the rules shared by
//     both formats (which attributes are read, default-locale resolution, the device family).
//   - apk.go, axml.go, arsc.go: the APK's binary XML manifest and resources.arsc.
//   - aab.go: the app bundle's aapt2 protobuf manifest and resources.pb.
//   - icon.go: the launcher icon.
//   - sizes.go: how an APK and an app bundle are cut into components, and their ABIs.
//   - androidtest: builders of synthetic APKs and app bundles for tests and benchmarks.
//
// How each appinfo.Info field is derived (Platform appinfo.Android, Format the container):
//   - BundleID: the manifest's package attribute (a valid Android package name, or the parse fails).
//   - Name: android:label of <application>, resolved to the default locale, else BundleID.
//   - ReleaseVersion, BuildVersion: android:versionName and android:versionCode.
//   - MinOS, TargetSDK: <uses-sdk> android:minSdkVersion and android:targetSdkVersion.
//   - Device: appinfo.DeviceWatch, DeviceTV or DeviceAutomotive when a <uses-feature> declares
//     one, else appinfo.DevicePhone.
//   - Icon: the largest PNG or WebP file android:icon (else android:roundIcon) resolves to, as
//     stored; adaptive (XML) icons are skipped.
//   - Permissions: the android:name of every <uses-permission> (and uses-permission-sdk-23) under
//     <manifest>, in order, without repeats, at most 512, each at most 256 bytes.
//   - Architectures: the ABIs of lib/<abi>/ folders holding a file (in an app bundle, of every
//     module's lib/<abi>/), sorted: read from the directory, no entry opened.
//   - Sizes: the central directory cut by apkCut or aabCut (sizes.go).
//   - Nothing else: no ReleaseType (the client may send one) or Profile.
//
// The APK's binary XML (AXML) and resources.arsc, and the AAB's aapt2 protobuf documents, are
// decoded by small bounded readers in this package. github.com/shogo82148/androidbinary supplies
// the resource-configuration model and Android's matching rules (ResTableConfig.Match and
// IsBetterThan), which pick a string's default-locale value. Its decoders are not used, because
// on uploads they are unsafe or wrong (each checked against v1.0.5):
//   - XMLFile renders the manifest to text XML keyed by attribute *name*; Android identifies
//     manifest attributes by resource id, and obfuscated manifests blank the names (fixture
//     98d2e837b8f3: versionName, label and minSdkVersion all come out empty);
//   - NewTableFile allocates from declared counts before reading (a 48-byte table declaring
//     2^28 strings allocates 2.3 GB), loops forever on a zero-size chunk, and dereferences nil on a
//     truncated package chunk: out-of-memory and hangs are not recoverable with recover();
//   - it misreads sparse and 16-bit-offset type chunks (aapt2 optimize, bundletool), which real
//     release builds use, and it offers no way to list every density of an icon resource.
package android

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	ab "github.com/shogo82148/androidbinary"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Caps on what one metadata entry may inflate to (icons: appinfo.MaxIconBytes). Over a cap, the
// parse fails with errs.Invalid.
const (
	MaxManifestBytes  = 8 << 20  // AndroidManifest.xml (binary or protobuf)
	MaxResourcesBytes = 64 << 20 // resources.arsc, resources.pb
	// MaxParseBytes is the most one parse allocates (appinfo.Family.MaxParseBytes): the manifest
	// and the resource table, each with what is decoded from it, and one icon read whole.
	MaxParseBytes = 2*MaxManifestBytes + MaxResourcesBytes + MaxResourcesBytes/2 + 2*appinfo.MaxIconBytes
)

// Family registration: an APK by its AndroidManifest.xml, an app bundle by its base module's.
// Priority 2 keeps the order appinfo had before the families moved to folders of their own:
// Android first, so a zip holding both an AndroidManifest.xml and an iOS Payload/ is an APK.
func init() {
	appinfo.Register(appinfo.Family{Name: "android", Takes: "an Android .apk or .aab", Priority: 2, Platform: func(*zipread.Archive) appinfo.Platform { return appinfo.Android },
		MaxParseBytes: MaxParseBytes, DecodeBytes: 1 << 20, ZipParseBytes: parseBytes,
		ClaimZip: func(a *zipread.Archive) appinfo.ZipParser {
			switch {
			case a.File("AndroidManifest.xml") != nil:
				return parseAPK
			case a.File("base/manifest/AndroidManifest.xml") != nil:
				return parseAAB
			}
			return nil
		}})
}

// parseBytes is the bound of an APK's or app bundle's parse from the entries it reads
// (appinfo.Family.ZipParseBytes): the manifest, and what is decoded from it; the resource table,
// and its index; and an icon, read whole, no larger than the largest entry within the icon cap
// (the icon's path comes from the table, so any entry may be it).
func parseBytes(a *zipread.Archive) int64 {
	size := func(name string, max int64) int64 {
		if f := a.File(name); f != nil {
			return min(zipread.EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64), max)
		}
		return 0
	}
	m, r := size("AndroidManifest.xml", MaxManifestBytes), size("resources.arsc", MaxResourcesBytes)
	if a.File("AndroidManifest.xml") == nil {
		m, r = size("base/manifest/AndroidManifest.xml", MaxManifestBytes), size("base/resources.pb", MaxResourcesBytes)
	}
	var icon int64
	for _, f := range a.Files() {
		icon = max(icon, min(zipread.EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64), appinfo.MaxIconBytes))
	}
	return 2*m + r + r/2 + 2*icon + 1<<20
}

// androidNS is the namespace URI of the android: attributes.
const androidNS = "http://schemas.android.com/apk/res/android"

// Framework attribute resource ids (android.R.attr). Android's package parser looks manifest
// attributes up by these ids, not by name, so a manifest whose attribute names were blanked or
// renamed still installs; the decoders do the same and fall back to the name only for attributes
// without an id. `package` has no framework id: it is always looked up by name.
const (
	androidAttrLabel            = 0x01010001
	androidAttrIcon             = 0x01010002
	androidAttrName             = 0x01010003
	androidAttrMinSdkVersion    = 0x0101020c
	androidAttrVersionCode      = 0x0101021b
	androidAttrVersionName      = 0x0101021c
	androidAttrTargetSdkVersion = 0x01010270
	androidAttrRoundIcon        = 0x0101052c
)

// Res_value data types (ResourceTypes.h) the decoders interpret.
const (
	androidTypeNull       = uint8(ab.TypeNull)
	androidTypeReference  = uint8(ab.TypeReference)
	androidTypeString     = uint8(ab.TypeString)
	androidTypeDynamicRef = 0x07
	androidTypeIntDec     = uint8(ab.TypeIntDec)
	androidTypeIntHex     = uint8(ab.TypeIntHex)
	androidTypeIntBoolean = uint8(ab.TypeIntBoolean)
)

// Limits on work a hostile package can cause.
const (
	androidMaxText       = 1024 // bytes kept of a decoded label, version or path
	androidMaxRefDepth   = 8    // resource references followed in a chain
	androidMaxConfigs    = 4096 // values kept for one resource id
	androidMaxIconProbes = 32   // icon files whose header is read
	// androidMaxPermissions bounds the uses-permission names kept (real apps declare a few dozen;
	// Android itself defines a few hundred); androidMaxPermissionText bounds one name.
	androidMaxPermissions    = 512
	androidMaxPermissionText = 256
	// androidMaxLookupWork bounds the steps (type chunks or protobuf fields visited) all resource
	// lookups of one parse may take: each lookup rescans its part of the table, and references
	// can fan out. Real packages need a few thousand.
	androidMaxLookupWork = 1 << 24
)

// androidValueKind says what an attribute or resource value holds.
type androidValueKind uint8

const (
	androidNone   androidValueKind = iota
	androidString                  // str
	androidInt                     // num, a 32-bit integer
	androidBool                    // num != 0
	androidRef                     // num, a resource id 0xPPTTEEEE
	androidOther                   // a float, color, dimension...: not used here
)

// androidValue is a manifest attribute value or a resource value, whatever the container format.
type androidValue struct {
	kind androidValueKind
	str  string
	num  uint32
}

// androidElem is a manifest element the parsers read.
type androidElem uint8

const (
	androidElemOther androidElem = iota
	androidElemManifest
	androidElemUsesSDK
	androidElemUsesFeature
	androidElemApplication
	androidElemUsesPermission
)

// androidElemOf classifies an element by depth (the root is 1) and name.
func androidElemOf(depth int, name string) androidElem {
	switch {
	case depth == 1 && name == "manifest":
		return androidElemManifest
	case depth != 2:
		return androidElemOther
	case name == "uses-sdk":
		return androidElemUsesSDK
	case name == "uses-feature":
		return androidElemUsesFeature
	case name == "application":
		return androidElemApplication
	case name == "uses-permission" || name == "uses-permission-sdk-23" || name == "uses-permission-sdk-m":
		return androidElemUsesPermission
	}
	return androidElemOther
}

// androidField is what an attribute provides.
type androidField uint8

const (
	androidFieldNone androidField = iota
	androidFieldPackage
	androidFieldVersionCode
	androidFieldVersionName
	androidFieldMinSDK
	androidFieldTargetSDK
	androidFieldLabel
	androidFieldIcon
	androidFieldRoundIcon
	androidFieldFeature
	androidFieldPermission
	androidFieldCount
)

// androidFieldOf identifies an attribute of elem by its resource id when it has one (as Android
// does), else by namespace and name.
func androidFieldOf(elem androidElem, id uint32, ns, name string) androidField {
	is := func(wantID uint32, wantName string) bool {
		if id != 0 {
			return id == wantID
		}
		return ns == androidNS && name == wantName
	}
	switch elem {
	case androidElemManifest:
		switch {
		case ns == "" && name == "package":
			return androidFieldPackage
		case is(androidAttrVersionCode, "versionCode"):
			return androidFieldVersionCode
		case is(androidAttrVersionName, "versionName"):
			return androidFieldVersionName
		}
	case androidElemUsesSDK:
		switch {
		case is(androidAttrMinSdkVersion, "minSdkVersion"):
			return androidFieldMinSDK
		case is(androidAttrTargetSdkVersion, "targetSdkVersion"):
			return androidFieldTargetSDK
		}
	case androidElemUsesFeature:
		if is(androidAttrName, "name") {
			return androidFieldFeature
		}
	case androidElemUsesPermission:
		if is(androidAttrName, "name") {
			return androidFieldPermission
		}
	case androidElemApplication:
		switch {
		case is(androidAttrLabel, "label"):
			return androidFieldLabel
		case is(androidAttrIcon, "icon"):
			return androidFieldIcon
		case is(androidAttrRoundIcon, "roundIcon"):
			return androidFieldRoundIcon
		}
	}
	return androidFieldNone
}

// androidManifest collects what the parsers need from a manifest, whatever its encoding. The
// decoders feed it element by element; the first value of each field wins.
type androidManifest struct {
	rootSeen   bool // an element at depth 1 has been seen
	hasRoot    bool // ... and it was <manifest>
	fields     [androidFieldCount]androidValue
	watch      bool
	tv         bool
	automotive bool
	// permissions are the uses-permission names, in order, without duplicates, at most
	// androidMaxPermissions.
	permissions []string
}

// want reports whether the decoder should decode the value of an attribute for field f.
func (m *androidManifest) want(f androidField) bool {
	switch f {
	case androidFieldNone:
		return false
	case androidFieldFeature:
		return true
	case androidFieldPermission:
		return len(m.permissions) < androidMaxPermissions
	}
	return m.fields[f].kind == androidNone
}

// maxText is the most bytes of an attribute's text kept for field f.
func (f androidField) maxText() int {
	switch f {
	case androidFieldFeature:
		return 64 // only compared with the few feature names that set the device
	case androidFieldPermission:
		return androidMaxPermissionText
	}
	return androidMaxText
}

// set records the value of field f.
func (m *androidManifest) set(f androidField, v androidValue) {
	if f == androidFieldPermission {
		// A permission is named by a literal string; a reference names nothing Android grants.
		if s := androidText(v.str); v.kind == androidString && s != "" && len(m.permissions) < androidMaxPermissions && !slices.Contains(m.permissions, s) {
			m.permissions = append(m.permissions, s)
		}
		return
	}
	if f != androidFieldFeature {
		m.fields[f] = v
		return
	}
	switch v.str {
	case "android.hardware.type.watch":
		m.watch = true
	case "android.software.leanback", "android.hardware.type.television":
		m.tv = true
	case "android.hardware.type.automotive":
		m.automotive = true
	}
}

// root records the first element at depth 1, which must be <manifest>.
func (m *androidManifest) root(elem androidElem) {
	if !m.rootSeen {
		m.rootSeen, m.hasRoot = true, elem == androidElemManifest
	}
}

// device is the device family: a watch, TV or car declaration wins over the phone default.
func (m *androidManifest) device() string {
	switch {
	case m.watch:
		return appinfo.DeviceWatch
	case m.tv:
		return appinfo.DeviceTV
	case m.automotive:
		return appinfo.DeviceAutomotive
	}
	return appinfo.DevicePhone
}

// androidResEntry is one configuration's value of a resource.
type androidResEntry struct {
	cfg ab.ResTableConfig
	// extra is set when the configuration has qualifiers cfg cannot express (locale script,
	// round screen, HDR...): such a value is never the default one.
	extra bool
	val   androidValue
}

// androidResources looks resource ids up in a resource table (resources.arsc or resources.pb).
type androidResources interface {
	// lookup returns the values of id in every configuration (at most androidMaxConfigs), or an
	// errs.Invalid error when the table is malformed where it was read.
	lookup(id uint32) ([]androidResEntry, error)
}

// androidDefault picks the value a device with default settings would use: the best match for an
// empty configuration by Android's rules; failing that an English value, else the first.
func androidDefault(entries []androidResEntry) *androidResEntry {
	var zero ab.ResTableConfig
	var best *androidResEntry
	for i := range entries {
		e := &entries[i]
		if e.extra || !e.cfg.Match(&zero) {
			continue
		}
		if best == nil || e.cfg.IsBetterThan(&best.cfg, &zero) {
			best = e
		}
	}
	if best != nil {
		return best
	}
	for i := range entries {
		if entries[i].cfg.Language == [2]uint8{'e', 'n'} {
			return &entries[i]
		}
	}
	if len(entries) > 0 {
		return &entries[0]
	}
	return nil
}

// androidResolveText turns a value into text, following references through res with the default
// configuration. It returns "" for a value that is absent, unresolvable or not textual.
func androidResolveText(v androidValue, res androidResources) (string, error) {
	for range androidMaxRefDepth {
		switch v.kind {
		case androidString:
			return androidText(v.str), nil
		case androidInt:
			return strconv.FormatInt(int64(int32(v.num)), 10), nil
		case androidBool:
			return strconv.FormatBool(v.num != 0), nil
		case androidRef:
			if res == nil {
				return "", nil
			}
			entries, err := res.lookup(v.num)
			if err != nil {
				return "", err
			}
			e := androidDefault(entries)
			if e == nil {
				return "", nil
			}
			v = e.val
		default:
			return "", nil
		}
	}
	return "", nil
}

// androidText cleans text from a package for storage and display: valid UTF-8, no control
// characters or NULs, trimmed, at most androidMaxText bytes.
func androidText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t' || r == '\r':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > androidMaxText {
		cut := androidMaxText
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// androidValidPackage reports whether s can be an Android package name: dot-separated segments
// of ASCII letters, digits and underscores. (Android also wants each segment to start with a
// letter; this looser check keeps anything installable and rejects anything unsafe to store.)
func androidValidPackage(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return false
		}
		for _, c := range []byte(seg) {
			if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				return false
			}
		}
	}
	return true
}

// androidInfo builds the Info of a decoded manifest, resolving references through res (nil when
// the package has no resource table). The icon is read separately (androidIcon).
func androidInfo(format appinfo.Format, m *androidManifest, res androidResources) (*appinfo.Info, error) {
	pkgText := androidText(m.fields[androidFieldPackage].str)
	switch {
	case pkgText == "":
		return nil, errs.Invalidf("the manifest has no package attribute")
	case !androidValidPackage(pkgText):
		return nil, errs.Invalidf("the manifest's package attribute %q is not a valid Android package name", pkgText)
	}
	info := &appinfo.Info{Platform: appinfo.Android, Format: format, BundleID: pkgText, Device: m.device()}
	for _, f := range []struct {
		field androidField
		dst   *string
	}{
		{androidFieldLabel, &info.Name},
		{androidFieldVersionName, &info.ReleaseVersion},
		{androidFieldVersionCode, &info.BuildVersion},
		{androidFieldMinSDK, &info.MinOS},
		{androidFieldTargetSDK, &info.TargetSDK},
	} {
		s, err := androidResolveText(m.fields[f.field], res)
		if err != nil {
			return nil, err
		}
		*f.dst = s
	}
	if info.Name == "" {
		info.Name = info.BundleID // no label, or one that cannot be resolved
	}
	info.Permissions = m.permissions
	return info, nil
}
