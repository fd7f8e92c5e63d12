package windows

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"image/jpeg"
	"image/png"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// An MSIX or APPX package is a zip with AppxManifest.xml at its root (plus AppxBlockMap.xml,
// AppxSignature.p7x and [Content_Types].xml). A bundle (.msixbundle, .appxbundle) is a zip with
// AppxMetadata/AppxBundleManifest.xml listing its packages, which it holds as entries, stored
// (not compressed) so that they can be read in place.
//
// The manifests are namespaced XML (foundation/windows10, uap, rescap, 2013/bundle, ...); the
// parser matches elements and attributes by local name, so every schema version reads alike.
// encoding/xml does not expand entities a DOCTYPE declares (it fails on them), so an entity bomb
// is an error, and a manifest is read only up to MaxManifestBytes.

const (
	appxManifest       = "AppxManifest.xml"
	appxBundleManifest = "AppxMetadata/AppxBundleManifest.xml"

	appxMaxCapabilities = 256
	appxMaxLogoProbes   = 16
	appxMaxLogoSide     = 4096
)

// appxPackage is the part of AppxManifest.xml the parser reads.
type appxPackage struct {
	XMLName  xml.Name
	Identity struct {
		Name                  string `xml:"Name,attr"`
		Version               string `xml:"Version,attr"`
		Publisher             string `xml:"Publisher,attr"`
		ProcessorArchitecture string `xml:"ProcessorArchitecture,attr"`
	} `xml:"Identity"`
	Properties struct {
		DisplayName          string `xml:"DisplayName"`
		PublisherDisplayName string `xml:"PublisherDisplayName"`
		Logo                 string `xml:"Logo"`
		Description          string `xml:"Description"`
	} `xml:"Properties"`
	TargetDeviceFamilies []appxDeviceFamily `xml:"Dependencies>TargetDeviceFamily"`
	OSMinVersion         string             `xml:"Prerequisites>OSMinVersion"` // Windows 8 manifests
	Capabilities         struct {
		Items []struct {
			Name string `xml:"Name,attr"`
		} `xml:",any"`
	} `xml:"Capabilities"`
	Applications []struct {
		ID             string `xml:"Id,attr"`
		VisualElements struct {
			DisplayName string `xml:"DisplayName,attr"`
			Description string `xml:"Description,attr"`
		} `xml:"VisualElements"`
	} `xml:"Applications>Application"`
}

type appxDeviceFamily struct {
	Name       string `xml:"Name,attr"`
	MinVersion string `xml:"MinVersion,attr"`
}

// appxBundle is the part of AppxBundleManifest.xml the parser reads.
type appxBundle struct {
	XMLName  xml.Name
	Identity struct {
		Name      string `xml:"Name,attr"`
		Version   string `xml:"Version,attr"`
		Publisher string `xml:"Publisher,attr"`
	} `xml:"Identity"`
	Packages []struct {
		Type                 string             `xml:"Type,attr"`
		Architecture         string             `xml:"Architecture,attr"`
		FileName             string             `xml:"FileName,attr"`
		TargetDeviceFamilies []appxDeviceFamily `xml:"Dependencies>TargetDeviceFamily"`
	} `xml:"Packages>Package"`
}

// ParseMSIX reads an MSIX or APPX package: its AppxManifest.xml and its logo.
func ParseMSIX(a *zipread.Archive) (*appinfo.Info, error) {
	m, err := readAppxManifest(a)
	if err != nil {
		return nil, err
	}
	info, err := appxInfo(m)
	if err != nil {
		return nil, err
	}
	info.Icon = appxLogo(a, m.Properties.Logo)
	info.Sizes = appinfo.ZipBreakdown(a, msixCut)
	return info, nil
}

func readAppxManifest(a *zipread.Archive) (*appxPackage, error) {
	f := a.File(appxManifest)
	if f == nil {
		return nil, errs.Invalidf("the package has no AppxManifest.xml")
	}
	b, err := a.ReadFile(f, MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	var m appxPackage
	if err := xml.Unmarshal(b, &m); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the package's AppxManifest.xml is not valid XML")
	}
	if m.XMLName.Local != "Package" {
		return nil, errs.Invalidf("the package's AppxManifest.xml is not a <Package> manifest")
	}
	return &m, nil
}

// appxInfo derives an Info from a package manifest.
func appxInfo(m *appxPackage) (*appinfo.Info, error) {
	id := clean(m.Identity.Name)
	if id == "" {
		return nil, errs.Invalidf("the package's AppxManifest.xml has no Identity Name")
	}
	info := &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSIX, Device: appinfo.DeviceWindows,
		BundleID: id, ReleaseVersion: clean(m.Identity.Version), BuildVersion: clean(m.Identity.Version),
		Publisher: clean(m.Identity.Publisher)}
	info.Architectures = []string{first(strings.ToLower(clean(m.Identity.ProcessorArchitecture)), "neutral")}
	var visualName, visualDesc string
	if len(m.Applications) > 0 {
		visualName, visualDesc = m.Applications[0].VisualElements.DisplayName, m.Applications[0].VisualElements.Description
	}
	info.Name = first(literal(m.Properties.DisplayName), literal(visualName), id)
	info.Description = first(literal(m.Properties.Description), literal(visualDesc))
	info.SetProperty("PublisherDisplayName", literal(m.Properties.PublisherDisplayName))
	info.MinOS, info.Properties = appxFamilies(m.TargetDeviceFamilies, info.Properties)
	if info.MinOS == "" {
		info.MinOS = clean(m.OSMinVersion)
	}
	seen := map[string]bool{}
	for _, c := range m.Capabilities.Items {
		if n := clean(c.Name); n != "" && !seen[n] && len(info.Permissions) < appxMaxCapabilities {
			seen[n] = true
			info.Permissions = append(info.Permissions, n)
		}
	}
	return info, nil
}

// appxFamilies returns the first target device family's minimum version and records the
// families' names in props["TargetDeviceFamily"].
func appxFamilies(fams []appxDeviceFamily, props map[string]string) (string, map[string]string) {
	var names []string
	minOS := ""
	for i, f := range fams {
		if i == 16 {
			break
		}
		if n := clean(f.Name); n != "" {
			names = append(names, n)
		}
		if minOS == "" {
			minOS = clean(f.MinVersion)
		}
	}
	if len(names) > 0 {
		if props == nil {
			props = map[string]string{}
		}
		props["TargetDeviceFamily"] = strings.Join(names, ", ")
	}
	return minOS, props
}

// literal returns a manifest text unless it is an ms-resource: reference into resources.pri,
// which the parser does not read.
func literal(s string) string {
	s = clean(s)
	if strings.HasPrefix(strings.ToLower(s), "ms-resource:") {
		return ""
	}
	return s
}

// ParseMSIXBundle reads an MSIX or APPX bundle: the bundle's identity and packages, and the
// main package (the first application package) read as a zip within the zip, when it is stored,
// for its display name, logo, capabilities and minimum OS version.
func ParseMSIXBundle(a *zipread.Archive) (*appinfo.Info, error) {
	b, err := a.ReadName(appxBundleManifest, MaxBundleManifestBytes)
	if err != nil {
		return nil, err
	}
	var m appxBundle
	if err := xml.Unmarshal(b, &m); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the bundle's AppxBundleManifest.xml is not valid XML")
	}
	if m.XMLName.Local != "Bundle" {
		return nil, errs.Invalidf("the bundle's AppxBundleManifest.xml is not a <Bundle> manifest")
	}
	id := clean(m.Identity.Name)
	if id == "" {
		return nil, errs.Invalidf("the bundle's AppxBundleManifest.xml has no Identity Name")
	}
	info := &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSIXBundle, Device: appinfo.DeviceWindows,
		BundleID: id, Name: id, ReleaseVersion: clean(m.Identity.Version), BuildVersion: clean(m.Identity.Version),
		Publisher: clean(m.Identity.Publisher)}
	var main string
	seen := map[string]bool{}
	for _, p := range m.Packages {
		if p.Type != "" && p.Type != "application" {
			continue
		}
		if arch := strings.ToLower(clean(p.Architecture)); arch != "" && !seen[arch] && len(seen) < 16 {
			seen[arch] = true
			info.Architectures = append(info.Architectures, arch)
		}
		if main == "" {
			main = p.FileName
			info.MinOS, info.Properties = appxFamilies(p.TargetDeviceFamilies, info.Properties)
		}
	}
	if main == "" {
		return nil, errs.Invalidf("the bundle lists no application package")
	}
	f := appxEntry(a, main)
	if f == nil {
		return nil, errs.Invalidf("the bundle's main package %q is missing", clean(main))
	}
	info.SetProperty("MainPackage", clean(main))
	info.Sizes = appinfo.ZipBreakdown(a, msixCut)
	r := storedReaderAt(f)
	if r == nil {
		return info, nil // compressed: reading it would mean inflating it whole
	}
	// What opening the main package's directory costs is bounded (maxNestedOpenCost) before it is
	// opened: the bundle's own directory does not list its entries.
	if s, err := zipread.SurveyDirectory(r, int64(f.UncompressedSize64)); err == nil && s.OpenCost() > maxNestedOpenCost {
		return nil, errs.Invalidf("the bundle's main package %q lists %d files: over the limit for a package inside a bundle", clean(main), s.Entries)
	}
	inner, err := zipread.Open(r, int64(f.UncompressedSize64))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the bundle's main package %q is not a zip archive", clean(main))
	}
	pm, err := readAppxManifest(inner)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the bundle's main package %q is not an MSIX package", clean(main))
	}
	pi, err := appxInfo(pm)
	if err != nil {
		return nil, err
	}
	if pi.BundleID != info.BundleID {
		return nil, errs.Invalidf("the bundle %q holds a package of another app (%q)", info.BundleID, pi.BundleID)
	}
	info.Name, info.Description, info.Permissions = pi.Name, pi.Description, pi.Permissions
	info.MinOS = first(pi.MinOS, info.MinOS)
	for k, v := range pi.Properties {
		info.SetProperty(k, v)
	}
	info.Icon = appxLogo(inner, pm.Properties.Logo)
	info.Sizes.Expand(f.Name, appinfo.ZipBreakdown(inner, msixCut))
	return info, nil
}

// appxEntry finds a package file by the name a manifest uses: zip names in packages are
// percent-encoded and manifests use backslashes; the match ignores case, as Windows does.
func appxEntry(a *zipread.Archive, name string) *zip.File {
	want := strings.ToLower(strings.ReplaceAll(name, `\`, "/"))
	for _, f := range a.Files() {
		if appxName(f.Name) == want {
			return f
		}
	}
	return nil
}

func appxName(zipName string) string {
	if n, err := url.PathUnescape(zipName); err == nil {
		zipName = n
	}
	return strings.ToLower(zipName)
}

// appxLogo returns the largest variant of the logo a manifest names: Assets\StoreLogo.png is
// shipped as Assets/StoreLogo.scale-100.png, .scale-200.png and so on (or in qualifier folders,
// Assets/scale-200/StoreLogo.png). High-contrast variants are used only when nothing else
// exists. A logo that is missing or does not decode is skipped, not an error.
func appxLogo(a *zipread.Archive, logo string) *appinfo.Icon {
	logo = strings.ToLower(path.Clean("/" + strings.ReplaceAll(clean(logo), `\`, "/")))[1:]
	ext := path.Ext(logo)
	if logo == "" || (ext != ".png" && ext != ".jpg" && ext != ".jpeg") {
		return nil
	}
	dir, file := path.Split(logo)
	base := strings.TrimSuffix(file, ext)
	type cand struct {
		f        *zip.File
		area     int
		contrast bool
	}
	var cands []cand
	for _, f := range a.Files() {
		n := appxName(f.Name)
		if !strings.HasPrefix(n, dir) || !strings.HasSuffix(n, ext) || len(n) < len(dir)+len(ext) {
			continue
		}
		mid := strings.Split(n[len(dir):len(n)-len(ext)], "/")
		parts := strings.Split(mid[len(mid)-1], ".")
		if parts[0] != base {
			continue
		}
		quals := append(mid[:len(mid)-1], parts[1:]...)
		ok, contrast := true, false
		for _, q := range quals {
			ok = ok && strings.Contains(q, "-")
			contrast = contrast || strings.Contains(q, "contrast-")
		}
		if ok {
			cands = append(cands, cand{f: f, contrast: contrast})
		}
	}
	if len(cands) > appxMaxLogoProbes {
		cands = cands[:appxMaxLogoProbes]
	}
	for i := range cands {
		cands[i].area = logoArea(a, cands[i].f)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].contrast != cands[j].contrast {
			return !cands[i].contrast
		}
		return cands[i].area > cands[j].area
	})
	for i, c := range cands {
		if i == rsrcIconTries {
			break
		}
		if icon := readLogo(a, c.f); icon != nil {
			return icon
		}
	}
	return nil
}

// logoArea reads a PNG's size from its header; 0 when it is not a PNG (JPEGs are ranked last).
func logoArea(a *zipread.Archive, f *zip.File) int {
	rc, err := a.Open(f, appinfo.MaxIconBytes)
	if err != nil {
		return 0
	}
	defer rc.Close()
	var h [24]byte
	if _, err := io.ReadFull(rc, h[:]); err != nil || string(h[:8]) != "\x89PNG\r\n\x1a\n" || string(h[12:16]) != "IHDR" {
		return 0
	}
	w, ht := binary.BigEndian.Uint32(h[16:]), binary.BigEndian.Uint32(h[20:])
	if w == 0 || ht == 0 || w > appxMaxLogoSide || ht > appxMaxLogoSide || int64(w)*int64(ht) > appinfo.MaxIconPixels {
		return 0
	}
	return int(w * ht)
}

// readLogo reads a logo file as a PNG Icon (a JPEG is re-encoded); nil when it does not decode.
func readLogo(a *zipread.Archive, f *zip.File) *appinfo.Icon {
	b, err := a.ReadFile(f, appinfo.MaxIconBytes)
	if err != nil {
		return nil
	}
	if bytes.HasPrefix(b, []byte("\x89PNG")) {
		// Checked whole (a truncated logo is refused) without its pixels held.
		w, h, err := appinfo.CheckPNG(b, appinfo.MaxIconPixels)
		if err != nil || w > appxMaxLogoSide || h > appxMaxLogoSide {
			return nil
		}
		return &appinfo.Icon{Data: b, ContentType: "image/png", Width: w, Height: h}
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > appxMaxLogoSide || cfg.Height > appxMaxLogoSide ||
		cfg.Width*cfg.Height > appinfo.MaxIconPixels {
		return nil
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return nil
	}
	return &appinfo.Icon{Data: out.Bytes(), ContentType: "image/png", Width: cfg.Width, Height: cfg.Height}
}
