package apple

import (
	"archive/zip"
	"cmp"
	"io"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// maxAppleIconCandidates bounds how many files matching the declared icon names are examined.
const maxAppleIconCandidates = 64

// findIPAInfoPlist returns the name of the main bundle's Info.plist, exactly
// Payload/<X>.app/Info.plist, or "" when the archive has none.
func findIPAInfoPlist(a *zipread.Archive) string {
	for _, f := range a.Files() {
		parts := strings.Split(f.Name, "/")
		if len(parts) == 3 && parts[0] == "Payload" && parts[2] == "Info.plist" &&
			len(parts[1]) > len(".app") && strings.HasSuffix(parts[1], ".app") &&
			!strings.HasPrefix(parts[1], "._") && !zipread.IsMacOSXJunk(f.Name) {
			return f.Name
		}
	}
	return ""
}

// parseIPA reads an iOS or tvOS app: the main bundle's Info.plist, its embedded provisioning
// profile and its largest icon. Extensions (PlugIns/*.appex) and frameworks are ignored.
func parseIPA(a *zipread.Archive) (*appinfo.Info, error) {
	plistName := findIPAInfoPlist(a)
	if plistName == "" {
		for _, f := range a.Files() {
			if strings.HasPrefix(f.Name, "Payload/") {
				return nil, errs.Invalidf("Payload/ holds no .app bundle with an Info.plist")
			}
		}
		return nil, errs.Invalidf("not an .ipa: no Payload/ folder")
	}
	appDir := strings.TrimSuffix(plistName, "Info.plist") // Payload/X.app/
	d, err := readPlistEntry(a, plistName, "Info.plist")
	if err != nil {
		return nil, err
	}
	b, err := readAppleBundle(d, "Info.plist")
	if err != nil {
		return nil, err
	}
	info := &appinfo.Info{
		Platform:       appinfo.IOS,
		Format:         appinfo.FormatIPA,
		Name:           appleFirst(b.Name, strings.TrimSuffix(zipread.Base(appDir), ".app")),
		BundleID:       b.BundleID,
		ReleaseVersion: b.ReleaseVersion,
		BuildVersion:   b.BuildVersion,
		MinOS:          d.str("MinimumOSVersion"),
		Device:         iosDevice(d),
		AppStore:       a.File("iTunesMetadata.plist") != nil,
	}
	if info.Profile, err = readProfileEntry(a, appDir+"embedded.mobileprovision"); err != nil {
		return nil, err
	}
	info.ReleaseType = releaseType(appinfo.IOS, info.AppStore, info.Profile)
	info.Icon = iosIcon(a, appDir, d)
	exec := mainExecutable(d, appDir)
	info.Sizes = appinfo.ZipBreakdown(a, ipaCut(appDir, exec))
	info.Architectures = machOArchitectures(a.File(appDir + exec))
	return info, nil
}

// mainExecutable is the bundle's executable: CFBundleExecutable, else the bundle's name without
// ".app" (what Xcode names it).
func mainExecutable(d plistDict, appDir string) string {
	return appleFirst(d.str("CFBundleExecutable"), strings.TrimSuffix(zipread.Base(appDir), ".app"))
}

// readPlistEntry reads and decodes a property-list entry of at most MaxPlistBytes.
func readPlistEntry(a *zipread.Archive, name, what string) (plistDict, error) {
	data, err := a.ReadName(name, MaxPlistBytes)
	if err != nil {
		return nil, err
	}
	return decodePlist(data, what)
}

// readProfileEntry parses the embedded provisioning profile name, nil when the bundle has none.
func readProfileEntry(a *zipread.Archive, name string) (*appinfo.Profile, error) {
	f := a.File(name)
	if f == nil {
		return nil, nil
	}
	data, err := a.ReadFile(f, MaxProfileBytes)
	if err != nil {
		return nil, err
	}
	return ParseProfile(data)
}

// iosDevice maps UIDeviceFamily (1 iPhone, 2 iPad, 3 Apple TV) to a device family; an app built
// for the tvOS platform is appletv whatever its family says, and a missing family means iPhone.
func iosDevice(d plistDict) string {
	family := d.ints("UIDeviceFamily")
	if slices.Contains(family, 3) || strings.EqualFold(d.str("DTPlatformName"), "appletvos") ||
		slices.ContainsFunc(d.strs("CFBundleSupportedPlatforms"), func(s string) bool { return strings.EqualFold(s, "AppleTVOS") }) {
		return appinfo.DeviceAppleTV
	}
	iphone, ipad := slices.Contains(family, 1), slices.Contains(family, 2)
	switch {
	case iphone && ipad:
		return appinfo.DeviceUniversal
	case ipad:
		return appinfo.DeviceIPad
	}
	return appinfo.DeviceIPhone
}

// iosIconNames lists the icon base names Info.plist declares (CFBundleIcons, CFBundleIcons~ipad,
// CFBundleIconFiles, CFBundleIconFile), without a .png extension. When it declares none, iOS
// looks for Icon.png, so that is the one name.
func iosIconNames(d plistDict) []string {
	var names []string
	for _, key := range []string{"CFBundleIcons", "CFBundleIcons~ipad"} {
		names = append(names, d.dict(key).dict("CFBundlePrimaryIcon").strs("CFBundleIconFiles")...)
	}
	names = append(names, d.strs("CFBundleIconFiles")...)
	names = append(names, d.strs("CFBundleIconFile")...)
	_, declared := d["CFBundleIconFiles"]
	if len(names) == 0 && !declared {
		names = []string{"Icon"}
	}
	for i, n := range names {
		if strings.HasSuffix(strings.ToLower(n), ".png") {
			names[i] = n[:len(n)-len(".png")]
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// iconFileStem strips what iOS appends to a declared icon name: ".png", then "~ipad" or
// "~iphone", then a scale such as "@2x". It returns false for files that are not PNGs.
func iconFileStem(file string) (string, bool) {
	if !strings.HasSuffix(strings.ToLower(file), ".png") {
		return "", false
	}
	s := file[:len(file)-len(".png")]
	s = strings.TrimSuffix(strings.TrimSuffix(s, "~ipad"), "~iphone")
	if i := strings.LastIndexByte(s, '@'); i >= 0 && len(s) > i+2 && s[len(s)-1] == 'x' &&
		strings.Trim(s[i+1:len(s)-1], "0123456789") == "" {
		s = s[:i]
	}
	return s, true
}

// iosIcon returns the largest of the declared icons found directly in the .app folder (not in
// extensions), nil when none is present or usable: an icon is optional, and many modern apps
// keep theirs only in Assets.car, which Slipway does not read.
func iosIcon(a *zipread.Archive, appDir string, d plistDict) *appinfo.Icon {
	names := iosIconNames(d)
	if len(names) == 0 {
		return nil
	}
	var files []*zip.File
	for _, f := range a.Files() {
		rest, ok := strings.CutPrefix(f.Name, appDir)
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		if stem, ok := iconFileStem(rest); ok && slices.Contains(names, stem) {
			files = append(files, f)
			if len(files) == maxAppleIconCandidates {
				break
			}
		}
	}
	return largestPNGIcon(a, files)
}

// largestPNGIcon reads the PNG header of each file to rank them by pixel count (file size breaks
// ties and ranks files whose header is unreadable), then returns the first of the largest few that
// decodes, converted to a standard PNG when Apple-crushed.
func largestPNGIcon(a *zipread.Archive, files []*zip.File) *appinfo.Icon {
	type candidate struct {
		f      *zip.File
		pixels int
	}
	var cands []candidate
	for _, f := range files {
		if f.UncompressedSize64 > appinfo.MaxIconBytes {
			continue
		}
		c := candidate{f: f}
		if head := appleReadHead(a, f, 64); head != nil {
			if w, h, _, ok := applePNGHeader(head); ok {
				c.pixels = w * h
			}
		}
		cands = append(cands, c)
	}
	slices.SortStableFunc(cands, func(x, y candidate) int {
		return cmp.Or(cmp.Compare(y.pixels, x.pixels), cmp.Compare(y.f.UncompressedSize64, x.f.UncompressedSize64))
	})
	for _, c := range cands[:min(len(cands), maxAppleIconAttempts)] {
		data, err := a.ReadFile(c.f, appinfo.MaxIconBytes)
		if err != nil {
			continue
		}
		if icon, err := appleIconFromPNG(data); err == nil {
			return icon
		}
	}
	return nil
}

// appleReadHead returns up to n first bytes of an entry, nil when it cannot be read.
func appleReadHead(a *zipread.Archive, f *zip.File, n int) []byte {
	rc, err := a.Open(f, appinfo.MaxIconBytes)
	if err != nil {
		return nil
	}
	defer rc.Close()
	head := make([]byte, n)
	k, err := io.ReadFull(rc, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil
	}
	return head[:k]
}
