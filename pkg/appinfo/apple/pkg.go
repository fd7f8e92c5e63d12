package apple

import (
	"compress/bzip2"
	"compress/zlib"
	"encoding/binary"
	"encoding/xml"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A macOS installer package (.pkg) is a xar archive: a 28-byte (or longer) big-endian header, a
// zlib-compressed XML table of contents, then a heap holding the files' data. A product archive
// (productbuild) has a Distribution file at its root and component packages X.pkg/ holding a
// PackageInfo; a component package (pkgbuild) has PackageInfo at its root. Both name the bundles
// they install, with their identifiers and versions.

const (
	xarHeaderLen    = 28
	maxXarPkgInfos  = 8             // PackageInfo files read when the Distribution names no bundle
	maxXarFileBytes = MaxPlistBytes // a Distribution or PackageInfo file, extracted
	// maxXarArchived bounds a file's archived size: compression overhead on incompressible data
	// is small, so twice the extracted cap plus slack is generous.
	maxXarArchived = 2*maxXarFileBytes + 64<<10
)

// xarLocaleKeyRE matches a Distribution title that is a localization key (SU_TITLE), not a name.
var xarLocaleKeyRE = regexp.MustCompile(`^[A-Z0-9]+_[A-Z0-9_]+$`)

// xarTOC is the part of a xar table of contents Slipway reads.
type xarTOC struct {
	Files []xarFile `xml:"toc>file"`
}

type xarFile struct {
	Name  string    `xml:"name"`
	Type  string    `xml:"type"`
	Data  *xarData  `xml:"data"`
	Files []xarFile `xml:"file"`
}

type xarData struct {
	Length   int64 `xml:"length"` // extracted size
	Offset   int64 `xml:"offset"` // from the start of the heap
	Size     int64 `xml:"size"`   // archived size
	Encoding struct {
		Style string `xml:"style,attr"`
	} `xml:"encoding"`
}

// pkgBundle is a <bundle> element of a Distribution (under pkg-ref/bundle-version) or PackageInfo.
type pkgBundle struct {
	ID           string `xml:"id,attr"`
	Path         string `xml:"path,attr"`
	ShortVersion string `xml:"CFBundleShortVersionString,attr"`
	Version      string `xml:"CFBundleVersion,attr"`
}

type pkgVersioned struct {
	ID      string `xml:"id,attr"`
	Version string `xml:"version,attr"`
}

type pkgOSVersion struct {
	Min string `xml:"min,attr"`
}

// pkgDistribution is the part of a Distribution file (installer-gui-script) Slipway reads.
type pkgDistribution struct {
	Title   string        `xml:"title"`
	Product *pkgVersioned `xml:"product"`
	PkgRefs []struct {
		pkgVersioned
		Bundles []pkgBundle `xml:"bundle-version>bundle"`
	} `xml:"pkg-ref"`
	OSVersions       []pkgOSVersion `xml:"allowed-os-versions>os-version"`
	VolumeOSVersions []pkgOSVersion `xml:"volume-check>allowed-os-versions>os-version"`
}

// pkgInfo is the part of a PackageInfo file (pkg-info) Slipway reads.
type pkgInfo struct {
	Identifier string      `xml:"identifier,attr"`
	Version    string      `xml:"version,attr"`
	Bundles    []pkgBundle `xml:"bundle"`
}

// parsePKG reads a macOS installer package: the bundle it installs (its identifier and versions)
// from the Distribution file, else from the PackageInfo files, and the title. Every read is
// bounded. The release type stays empty: the provisioning profile, if any, is inside the
// compressed payload, which Slipway does not unpack.
func parsePKG(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	toc, heap, err := readXarTOC(r, size)
	if err != nil {
		return nil, err
	}
	var (
		dist     pkgDistribution
		infos    []pkgInfo
		bundles  []pkgBundle
		hasDist  bool
		pkgInfos []*xarFile
	)
	for i := range toc.Files {
		f := &toc.Files[i]
		switch {
		case f.Name == "Distribution" && f.Type != "directory" && !hasDist:
			data, err := readXarFile(r, size, heap, f)
			if err != nil {
				return nil, err
			}
			if err := xml.Unmarshal(data, &dist); err != nil {
				return nil, errs.Wrap(errs.Invalid, err, "the .pkg's Distribution file is not valid XML")
			}
			hasDist = true
		case f.Name == "PackageInfo" && f.Type != "directory":
			pkgInfos = append(pkgInfos, f)
		case f.Type == "directory":
			for j := range f.Files {
				if g := &f.Files[j]; g.Name == "PackageInfo" && g.Type != "directory" {
					pkgInfos = append(pkgInfos, g)
				}
			}
		}
	}
	for _, ref := range dist.PkgRefs {
		bundles = append(bundles, ref.Bundles...)
	}
	if !hasDist && len(pkgInfos) == 0 {
		return nil, errs.Invalidf("the .pkg holds neither a Distribution nor a PackageInfo file")
	}
	if len(bundles) == 0 || !hasDist {
		for _, f := range pkgInfos[:min(len(pkgInfos), maxXarPkgInfos)] {
			data, err := readXarFile(r, size, heap, f)
			if err != nil {
				return nil, err
			}
			var pi pkgInfo
			if err := xml.Unmarshal(data, &pi); err != nil {
				return nil, errs.Wrap(errs.Invalid, err, "the .pkg's PackageInfo file is not valid XML")
			}
			infos = append(infos, pi)
			bundles = append(bundles, pi.Bundles...)
		}
	}
	return pkgInfoFrom(dist, infos, bundles)
}

// pkgInfoFrom assembles an Info: the main bundle (the shallowest .app) gives the identifier and
// versions; without one, the Distribution's <product>, else the first package's identifier and
// version stand in. The name is the title unless it is a localization key, else the app's name.
func pkgInfoFrom(dist pkgDistribution, infos []pkgInfo, bundles []pkgBundle) (*appinfo.Info, error) {
	main := mainPkgBundle(bundles)
	var fallback pkgVersioned
	switch {
	case dist.Product != nil && dist.Product.ID != "":
		fallback = *dist.Product
	case len(infos) > 0:
		fallback = pkgVersioned{ID: infos[0].Identifier, Version: infos[0].Version}
	default:
		for _, ref := range dist.PkgRefs {
			if ref.ID != "" && ref.Version != "" {
				fallback = ref.pkgVersioned
				break
			}
		}
	}
	info := &appinfo.Info{Platform: appinfo.MacOS, Format: appinfo.FormatPKG, Device: appinfo.DeviceMac}
	if main.ID != "" {
		info.BundleID = main.ID
		info.ReleaseVersion = appleFirst(main.ShortVersion, main.Version)
		info.BuildVersion = appleFirst(main.Version, main.ShortVersion)
	}
	info.BundleID = appleFirst(info.BundleID, fallback.ID)
	info.ReleaseVersion = appleFirst(info.ReleaseVersion, fallback.Version)
	info.BuildVersion = appleFirst(info.BuildVersion, fallback.Version)
	if info.BundleID == "" {
		return nil, errs.Invalidf("the .pkg names no bundle or package identifier")
	}
	if info.ReleaseVersion == "" {
		return nil, errs.Invalidf("the .pkg names no version for %s", info.BundleID)
	}
	title := strings.TrimSpace(dist.Title)
	if xarLocaleKeyRE.MatchString(title) {
		title = ""
	}
	app := strings.TrimSuffix(path.Base(path.Clean("/"+main.Path)), ".app")
	if app == "/" || app == "." {
		app = ""
	}
	info.Name = appleFirst(title, app, info.BundleID)
	for _, v := range append(dist.OSVersions, dist.VolumeOSVersions...) {
		if info.MinOS = strings.TrimSpace(v.Min); info.MinOS != "" {
			break
		}
	}
	return info, nil
}

// mainPkgBundle picks the bundle a package is about: the .app nearest the root, else the first
// bundle with an identifier.
func mainPkgBundle(bundles []pkgBundle) pkgBundle {
	var best pkgBundle
	bestDepth := -1
	for _, b := range bundles {
		if b.ID == "" {
			continue
		}
		p := path.Clean("/" + b.Path)
		if !strings.HasSuffix(p, ".app") {
			if best.ID == "" {
				best = b
			}
			continue
		}
		if d := strings.Count(p, "/"); bestDepth < 0 || d < bestDepth {
			best, bestDepth = b, d
		}
	}
	return best
}

// readXarTOC reads the header and the zlib-compressed table of contents (at most MaxXarTOCBytes
// inflated) and returns it with the offset of the heap.
func readXarTOC(r io.ReaderAt, size int64) (*xarTOC, int64, error) {
	var h [xarHeaderLen]byte
	if size < xarHeaderLen {
		return nil, 0, errs.Invalidf("the .pkg is truncated (%d bytes)", size)
	}
	if _, err := r.ReadAt(h[:], 0); err != nil && err != io.EOF {
		return nil, 0, errs.Wrap(errs.Invalid, err, "the .pkg header is unreadable")
	}
	if string(h[:4]) != "xar!" {
		return nil, 0, errs.Invalidf("not a .pkg (xar) archive")
	}
	hlen := int64(binary.BigEndian.Uint16(h[4:]))
	tocLen, tocRaw := binary.BigEndian.Uint64(h[8:]), binary.BigEndian.Uint64(h[16:])
	switch {
	case hlen < xarHeaderLen || hlen > size:
		return nil, 0, errs.Invalidf("the .pkg has a bad xar header length (%d)", hlen)
	case tocRaw > MaxXarTOCBytes:
		return nil, 0, errs.Invalidf("the .pkg's table of contents declares %d bytes, over the %d-byte limit", tocRaw, MaxXarTOCBytes)
	case tocLen == 0 || tocLen > uint64(size-hlen):
		return nil, 0, errs.Invalidf("the .pkg is truncated (its table of contents runs past the end)")
	}
	xarPrefetch(r, hlen, int64(tocLen))
	zr, err := zlib.NewReader(io.NewSectionReader(r, hlen, int64(tocLen)))
	if err != nil {
		return nil, 0, errs.Wrap(errs.Invalid, err, "the .pkg's table of contents is not zlib-compressed")
	}
	data, err := io.ReadAll(io.LimitReader(zr, MaxXarTOCBytes+1))
	switch {
	case err != nil:
		return nil, 0, errs.Wrap(errs.Invalid, err, "the .pkg's table of contents is corrupt")
	case len(data) > MaxXarTOCBytes:
		return nil, 0, errs.Invalidf("the .pkg's table of contents inflates to more than %d bytes", MaxXarTOCBytes)
	}
	var toc xarTOC
	if err := xml.Unmarshal(data, &toc); err != nil {
		return nil, 0, errs.Wrap(errs.Invalid, err, "the .pkg's table of contents is not valid XML")
	}
	return &toc, hlen + int64(tocLen), nil
}

// readXarFile returns the extracted content of a file in the heap, at most maxXarFileBytes.
func readXarFile(r io.ReaderAt, size, heap int64, f *xarFile) ([]byte, error) {
	d := f.Data
	switch {
	case d == nil:
		return nil, errs.Invalidf("the .pkg's %s file has no data", f.Name)
	case d.Length > maxXarFileBytes:
		return nil, errs.Invalidf("the .pkg's %s file declares %d bytes, over the %d-byte limit", f.Name, d.Length, maxXarFileBytes)
	case d.Size > maxXarArchived:
		return nil, errs.Invalidf("the .pkg's %s file is too large (%d bytes archived)", f.Name, d.Size)
	case d.Offset < 0 || d.Size < 0 || d.Length < 0 || d.Offset > size-heap || d.Size > size-heap-d.Offset:
		return nil, errs.Invalidf("the .pkg's %s file lies outside the archive (truncated?)", f.Name)
	}
	xarPrefetch(r, heap+d.Offset, d.Size)
	var src io.Reader = io.NewSectionReader(r, heap+d.Offset, d.Size)
	switch style := d.Encoding.Style; style {
	case "", "application/octet-stream":
	case "application/x-gzip": // xar's "gzip" is a zlib stream
		zr, err := zlib.NewReader(src)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .pkg's %s file is corrupt", f.Name)
		}
		src = zr
	case "application/x-bzip2":
		src = bzip2.NewReader(src)
	default:
		return nil, errs.Invalidf("the .pkg's %s file uses unsupported encoding %.60q", f.Name, style)
	}
	data, err := io.ReadAll(io.LimitReader(src, maxXarFileBytes+1))
	switch {
	case err != nil:
		return nil, errs.Wrap(errs.Invalid, err, "the .pkg's %s file is corrupt", f.Name)
	case len(data) > maxXarFileBytes:
		return nil, errs.Invalidf("the .pkg's %s file inflates to more than %d bytes", f.Name, maxXarFileBytes)
	}
	return data, nil
}

// xarPrefetch hints a remote reader that [off, off+n) is about to be read.
func xarPrefetch(r io.ReaderAt, off, n int64) {
	if p, ok := r.(zipread.Prefetcher); ok && n > 0 {
		p.Prefetch(off, n)
	}
}
