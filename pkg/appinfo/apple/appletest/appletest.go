// Package appletest builds synthetic Apple packages (.ipa, zipped macOS .app, .pkg, provisioning
// profiles, CgBI PNG and ICNS icons), for the tests and benchmarks of package apple and of the
// callers of appinfo.Parse (pkg/httpapi, pkg/web, test/...). They make those tests meaningful in a
// clone without the shared real fixtures, and let tests craft what no real package holds (hostile
// input, a 256 MiB upload) without storing it. Android's builders are in package androidtest.
package appletest

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"howett.net/plist"
)

// Entry is an extra entry of a synthetic zip archive.
type Entry struct {
	Name string
	Data []byte
	// Store writes the entry uncompressed instead of deflated.
	Store bool
}

// IconFile is a PNG icon placed in a synthetic bundle.
type IconFile struct {
	// Name is the file name in the .app folder, e.g. "AppIcon60x60@2x.png". The part before "@",
	// "~" or ".png" is what Info.plist declares.
	Name string
	// Size is the width and height in pixels.
	Size int
	// CgBI writes the icon Apple-crushed, as Xcode does, instead of as a standard PNG.
	CgBI bool
}

// IPAOptions describes a synthetic .ipa. Zero values get working defaults.
type IPAOptions struct {
	AppName      string // X in Payload/X.app, also CFBundleName and CFBundleExecutable; "Demo"
	DisplayName  string // CFBundleDisplayName, omitted when empty
	BundleID     string // "com.example.demo"
	Version      string // CFBundleShortVersionString, "1.0"
	Build        string // CFBundleVersion, "1"
	MinOS        string // MinimumOSVersion, "13.0"
	DeviceFamily []int  // UIDeviceFamily, [1, 2]
	PlatformName string // DTPlatformName, "iphoneos" ("appletvos" for tvOS)
	// InfoPlist adds or overrides Info.plist keys (a nil value deletes the key).
	InfoPlist map[string]any
	// RawInfoPlist, when set, is written as Info.plist verbatim.
	RawInfoPlist []byte
	// BinaryPlist writes Info.plist in binary form instead of XML.
	BinaryPlist bool
	// Profile adds Payload/X.app/embedded.mobileprovision; RawProfile adds these bytes instead.
	Profile    *ProfileOptions
	RawProfile []byte
	// Icons are placed in the .app folder and declared in CFBundleIcons.
	Icons []IconFile
	// AppStore adds iTunesMetadata.plist at the root, as App Store downloads carry.
	AppStore bool
	// Extra entries are appended after the app.
	Extra []Entry
	// FillerBytes adds that many bytes of incompressible, stored entries (at most 16 MiB each)
	// inside the app before its other files, to make large uploads without holding them in memory.
	FillerBytes int64
}

// BuildIPA returns a synthetic .ipa; it panics on options it cannot encode.
func BuildIPA(o IPAOptions) []byte {
	var buf bytes.Buffer
	if err := WriteIPA(&buf, o); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// WriteIPA streams a synthetic .ipa to w, so a benchmark can write a package of any size to a
// file without holding it in memory.
func WriteIPA(w io.Writer, o IPAOptions) error {
	o.AppName = appleOr(o.AppName, "Demo")
	app := "Payload/" + o.AppName + ".app/"
	info := map[string]any{
		"CFBundleName":               o.AppName,
		"CFBundleExecutable":         o.AppName,
		"CFBundleIdentifier":         appleOr(o.BundleID, "com.example.demo"),
		"CFBundleShortVersionString": appleOr(o.Version, "1.0"),
		"CFBundleVersion":            appleOr(o.Build, "1"),
		"CFBundlePackageType":        "APPL",
		"MinimumOSVersion":           appleOr(o.MinOS, "13.0"),
		"DTPlatformName":             appleOr(o.PlatformName, "iphoneos"),
		"CFBundleSupportedPlatforms": []string{"iPhoneOS"},
		"UIDeviceFamily":             o.DeviceFamily,
	}
	if o.DeviceFamily == nil {
		info["UIDeviceFamily"] = []int{1, 2}
	}
	if o.DisplayName != "" {
		info["CFBundleDisplayName"] = o.DisplayName
	}
	if names := appleIconNames(o.Icons); len(names) > 0 {
		info["CFBundleIcons"] = map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": names}}
	}
	entries := []Entry{{Name: "Payload/"}, {Name: app}}
	plistData, err := appleEncodeInfo(info, o.InfoPlist, o.RawInfoPlist, o.BinaryPlist)
	if err != nil {
		return err
	}
	entries = append(entries,
		Entry{Name: app + "Info.plist", Data: plistData},
		Entry{Name: app + "PkgInfo", Data: []byte("APPL????")},
		Entry{Name: app + o.AppName, Data: appleFakeMachO()},
	)
	if p := appleProfileBytes(o.Profile, o.RawProfile); p != nil {
		entries = append(entries, Entry{Name: app + "embedded.mobileprovision", Data: p})
	}
	for _, ic := range o.Icons {
		data := StandardPNG(ic.Size, ic.Size)
		if ic.CgBI {
			data = CgBIPNG(ic.Size, ic.Size)
		}
		entries = append(entries, Entry{Name: app + ic.Name, Data: data, Store: true})
	}
	if o.AppStore {
		entries = append(entries, Entry{Name: "iTunesMetadata.plist", Data: appleMustPlist(map[string]any{"itemName": o.AppName}, plist.XMLFormat)})
	}
	entries = append(entries, o.Extra...)

	zw := zip.NewWriter(w)
	if err := appleWriteFiller(zw, app+"Frameworks/Filler.framework/", o.FillerBytes); err != nil {
		return err
	}
	if err := appleWriteEntries(zw, entries); err != nil {
		return err
	}
	return zw.Close()
}

// MacZipOptions describes a synthetic zipped macOS app. Zero values get working defaults.
type MacZipOptions struct {
	Folder      string // optional folder holding the app, e.g. "build/"
	AppName     string // X in X.app, also CFBundleName and CFBundleExecutable; "Demo"
	DisplayName string
	BundleID    string // "com.example.mac"
	Version     string // "1.0"
	Build       string // "1"
	MinOS       string // LSMinimumSystemVersion, "11.0"
	InfoPlist   map[string]any
	// Profile adds Contents/embedded.provisionprofile.
	Profile *ProfileOptions
	// IconSizes are the PNG images of Contents/Resources/AppIcon.icns (named by CFBundleIconFile
	// "AppIcon"); no icon file when empty and LegacyIcon is false.
	IconSizes []int
	// LegacyIcon adds a non-PNG (is32) image to the .icns.
	LegacyIcon bool
	// MacOSXJunk adds __MACOSX/ resource-fork entries, as Finder's Compress does.
	MacOSXJunk bool
	Extra      []Entry
}

// BuildMacZip returns a synthetic zip of a macOS .app; it panics on options it cannot encode.
func BuildMacZip(o MacZipOptions) []byte {
	o.AppName = appleOr(o.AppName, "Demo")
	app := o.Folder + o.AppName + ".app/"
	info := map[string]any{
		"CFBundleName":               o.AppName,
		"CFBundleExecutable":         o.AppName,
		"CFBundleIdentifier":         appleOr(o.BundleID, "com.example.mac"),
		"CFBundleShortVersionString": appleOr(o.Version, "1.0"),
		"CFBundleVersion":            appleOr(o.Build, "1"),
		"CFBundlePackageType":        "APPL",
		"LSMinimumSystemVersion":     appleOr(o.MinOS, "11.0"),
		"CFBundleSupportedPlatforms": []string{"MacOSX"},
	}
	if o.DisplayName != "" {
		info["CFBundleDisplayName"] = o.DisplayName
	}
	hasIcon := len(o.IconSizes) > 0 || o.LegacyIcon
	if hasIcon {
		info["CFBundleIconFile"] = "AppIcon"
	}
	plistData, err := appleEncodeInfo(info, o.InfoPlist, nil, false)
	if err != nil {
		panic(err)
	}
	entries := []Entry{
		{Name: app}, {Name: app + "Contents/"},
		{Name: app + "Contents/Info.plist", Data: plistData},
		{Name: app + "Contents/MacOS/" + o.AppName, Data: appleFakeMachO()},
	}
	if o.Profile != nil {
		entries = append(entries, Entry{Name: app + "Contents/embedded.provisionprofile", Data: BuildProfile(*o.Profile)})
	}
	if hasIcon {
		entries = append(entries, Entry{Name: app + "Contents/Resources/AppIcon.icns", Data: BuildICNS(o.IconSizes, o.LegacyIcon)})
	}
	if o.MacOSXJunk {
		entries = append(entries,
			Entry{Name: "__MACOSX/"},
			Entry{Name: "__MACOSX/" + app + "Contents/._Info.plist", Data: []byte("\x00\x05\x16\x07junk")},
			Entry{Name: "__MACOSX/Other.app/Contents/Info.plist", Data: []byte("not a plist")},
		)
	}
	return BuildZip(append(entries, o.Extra...)...)
}

// ProfileOptions describes a synthetic provisioning profile. Zero values get working defaults.
type ProfileOptions struct {
	Name     string // "Synthetic Profile"
	UUID     string // "00000000-0000-4000-8000-000000000001"
	TeamID   string // "TEAM123456"
	TeamName string // omitted when empty
	AppID    string // TeamID + ".com.example.demo"
	// Platform is "iOS" (default) or "OSX"; a macOS profile writes the application identifier
	// as com.apple.application-identifier.
	Platform          string
	Devices           []string
	AllDevices        bool
	GetTaskAllow      bool
	BetaReportsActive bool
	// Entitlements adds entitlements to (or overrides those of) the profile's.
	Entitlements map[string]any
	CreatedAt    time.Time // 2024-01-01
	ExpiresAt    time.Time // 2025-01-01
}

// BuildProfile returns a provisioning profile: an XML property list wrapped, as Apple's are, in a
// DER-encoded CMS SignedData envelope. The envelope is structurally plausible but not signed.
func BuildProfile(o ProfileOptions) []byte {
	team := appleOr(o.TeamID, "TEAM123456")
	platform := appleOr(o.Platform, "iOS")
	ent := map[string]any{"com.apple.developer.team-identifier": team}
	appID := appleOr(o.AppID, team+".com.example.demo")
	if platform == "OSX" {
		ent["com.apple.application-identifier"] = appID
	} else {
		ent["application-identifier"] = appID
	}
	if o.GetTaskAllow || platform != "OSX" {
		ent["get-task-allow"] = o.GetTaskAllow
	}
	if o.BetaReportsActive {
		ent["beta-reports-active"] = true
	}
	for k, v := range o.Entitlements {
		ent[k] = v
	}
	p := map[string]any{
		"AppIDName":      "Synthetic",
		"Name":           appleOr(o.Name, "Synthetic Profile"),
		"UUID":           appleOr(o.UUID, "00000000-0000-4000-8000-000000000001"),
		"TeamIdentifier": []string{team},
		"Platform":       []string{platform},
		"Entitlements":   ent,
		"CreationDate":   appleOrTime(o.CreatedAt, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)),
		"ExpirationDate": appleOrTime(o.ExpiresAt, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
		"Version":        1,
	}
	if o.TeamName != "" {
		p["TeamName"] = o.TeamName
	}
	if len(o.Devices) > 0 {
		p["ProvisionedDevices"] = o.Devices
	}
	if o.AllDevices {
		p["ProvisionsAllDevices"] = true
	}
	return CMS(appleMustPlist(p, plist.XMLFormat))
}

// CMS wraps content in a DER CMS SignedData envelope (OID 1.2.840.113549.1.7.2) with the content
// as an OCTET STRING and a fake signer, the shape of a .mobileprovision file.
func CMS(content []byte) []byte {
	oidSigned := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02}
	oidData := []byte{0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01}
	encap := appleDER(0x30, oidData, appleDER(0xa0, appleDER(0x04, content)))
	signer := appleDER(0x31, appleDER(0x30, appleDER(0x02, []byte{1}), appleDER(0x04, bytes.Repeat([]byte{0x5a}, 256))))
	signed := appleDER(0x30, appleDER(0x02, []byte{1}), appleDER(0x31), encap, signer)
	return appleDER(0x30, oidSigned, appleDER(0xa0, signed))
}

// appleDER encodes one DER tag-length-value.
func appleDER(tag byte, parts ...[]byte) []byte {
	body := bytes.Join(parts, nil)
	n := len(body)
	out := []byte{tag}
	switch {
	case n < 0x80:
		out = append(out, byte(n))
	case n < 0x100:
		out = append(out, 0x81, byte(n))
	case n < 0x10000:
		out = append(out, 0x82, byte(n>>8), byte(n))
	default:
		out = append(out, 0x83, byte(n>>16), byte(n>>8), byte(n))
	}
	return append(out, body...)
}

// BuildZip returns a zip archive of the entries in order; names ending in "/" are folders.
func BuildZip(entries ...Entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if err := appleWriteEntries(zw, entries); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func appleWriteEntries(zw *zip.Writer, entries []Entry) error {
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
		if e.Store || strings.HasSuffix(e.Name, "/") {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if strings.HasSuffix(e.Name, "/") {
			continue // a folder has no content
		}
		if _, err := w.Write(e.Data); err != nil {
			return err
		}
	}
	return nil
}

// appleWriteFiller writes n bytes of pseudo-random (incompressible, deterministic) data as stored
// entries of at most 16 MiB under dir.
func appleWriteFiller(zw *zip.Writer, dir string, n int64) error {
	const part = 16 << 20
	rng := rand.NewChaCha8([32]byte{'s', 'l', 'i', 'p', 'w', 'a', 'y'})
	chunk := make([]byte, 1<<20)
	for i := 0; n > 0; i++ {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%sblob-%04d.bin", dir, i), Method: zip.Store})
		if err != nil {
			return err
		}
		for left := min(n, part); left > 0; {
			c := chunk[:min(left, int64(len(chunk)))]
			_, _ = rng.Read(c)
			if _, err := w.Write(c); err != nil {
				return err
			}
			left -= int64(len(c))
			n -= int64(len(c))
		}
	}
	return nil
}

// appleEncodeInfo merges extra keys into info and encodes it, unless raw is given.
func appleEncodeInfo(info, extra map[string]any, raw []byte, binary bool) ([]byte, error) {
	if raw != nil {
		return raw, nil
	}
	for k, v := range extra {
		if v == nil {
			delete(info, k)
		} else {
			info[k] = v
		}
	}
	format := plist.XMLFormat
	if binary {
		format = plist.BinaryFormat
	}
	return plist.MarshalIndent(info, format, "\t")
}

func appleMustPlist(v any, format int) []byte {
	b, err := plist.MarshalIndent(v, format, "\t")
	if err != nil {
		panic(err)
	}
	return b
}

func appleProfileBytes(o *ProfileOptions, raw []byte) []byte {
	if raw != nil {
		return raw
	}
	if o != nil {
		return BuildProfile(*o)
	}
	return nil
}

// appleIconNames returns the distinct names Info.plist declares for icon files ("AppIcon60x60" for
// "AppIcon60x60@2x~ipad.png").
func appleIconNames(icons []IconFile) []string {
	var names []string
	seen := map[string]bool{}
	for _, ic := range icons {
		n := strings.TrimSuffix(ic.Name, ".png")
		if i := strings.IndexAny(n, "@~"); i >= 0 {
			n = n[:i]
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// appleFakeMachO returns the start of a 64-bit Mach-O header, enough for an executable placeholder.
func appleFakeMachO() []byte {
	return append([]byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0x00, 0x00, 0x01}, make([]byte, 56)...)
}

func appleOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func appleOrTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
