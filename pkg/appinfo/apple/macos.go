package apple

import (
	"bytes"
	"path"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// findMacAppInfoPlist returns the name of <folder/>X.app/Contents/Info.plist for the top-most
// .app in the archive (the one nearest the root, not nested in another bundle), or "".
func findMacAppInfoPlist(a *zipread.Archive) string {
	const suffix = ".app/Contents/Info.plist"
	best, bestDepth := "", 0
	for _, f := range a.Files() {
		if !strings.HasSuffix(f.Name, suffix) || zipread.IsMacOSXJunk(f.Name) {
			continue
		}
		appDir := strings.TrimSuffix(f.Name, "Contents/Info.plist") // ends in X.app/
		app := zipread.Base(appDir)
		parent := strings.TrimSuffix(appDir, app+"/")
		if app == ".app" || strings.HasPrefix(app, "._") || strings.Contains(parent, ".app/") {
			continue
		}
		if depth := strings.Count(f.Name, "/"); best == "" || depth < bestDepth {
			best, bestDepth = f.Name, depth
		}
	}
	return best
}

// parseMacZip reads a zipped macOS app: X.app/Contents/Info.plist, the embedded provisioning
// profile and the largest PNG image of the .icns icon that CFBundleIconFile names.
func parseMacZip(a *zipread.Archive) (*appinfo.Info, error) {
	plistName := findMacAppInfoPlist(a)
	if plistName == "" {
		return nil, errs.Invalidf("the zip holds no <name>.app/Contents/Info.plist")
	}
	appDir := strings.TrimSuffix(plistName, "Contents/Info.plist") // [folder/]X.app/
	d, err := readPlistEntry(a, plistName, "Info.plist")
	if err != nil {
		return nil, err
	}
	b, err := readAppleBundle(d, "Info.plist")
	if err != nil {
		return nil, err
	}
	info := &appinfo.Info{
		Platform:       appinfo.MacOS,
		Format:         appinfo.FormatMacZip,
		Name:           appleFirst(b.Name, strings.TrimSuffix(zipread.Base(appDir), ".app")),
		BundleID:       b.BundleID,
		ReleaseVersion: b.ReleaseVersion,
		BuildVersion:   b.BuildVersion,
		MinOS:          d.str("LSMinimumSystemVersion"),
		Device:         appinfo.DeviceMac,
	}
	if info.Profile, err = readProfileEntry(a, appDir+"Contents/embedded.provisionprofile"); err != nil {
		return nil, err
	}
	info.ReleaseType = releaseType(appinfo.MacOS, false, info.Profile)
	info.Icon = macIcon(a, appDir, d)
	exec := mainExecutable(d, appDir)
	info.Sizes = appinfo.ZipBreakdown(a, macCut(appDir, exec))
	info.Architectures = machOArchitectures(a.File(appDir + "Contents/MacOS/" + exec))
	return info, nil
}

// macIcon reads the icon file named by CFBundleIconFile (else CFBundleIconName) from
// Contents/Resources, adding the .icns extension the key may omit. Nil when absent or unusable.
func macIcon(a *zipread.Archive, appDir string, d plistDict) *appinfo.Icon {
	name := appleFirst(d.str("CFBundleIconFile"), d.str("CFBundleIconName"))
	if name == "" {
		return nil
	}
	if path.Ext(name) == "" {
		name += ".icns"
	}
	data, err := a.ReadName(appDir+"Contents/Resources/"+name, appinfo.MaxIconBytes)
	if err != nil || data == nil {
		return nil
	}
	if bytes.HasPrefix(data, applePNGSig) {
		icon, _ := appleIconFromPNG(data)
		return icon
	}
	icon, _ := icnsIcon(data)
	return icon
}
