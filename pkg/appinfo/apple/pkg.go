package apple

import (
	"compress/bzip2"
	"compress/zlib"
	"encoding/binary"
	"encoding/xml"
	"io"
	"path"
	"regexp"
	"strconv"
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

// xarTOC is what Slipway keeps of a xar table of contents: the first Distribution file at the
// root, and the first maxXarPkgInfos PackageInfo files at the root or one directory down (a
// product archive's component packages), in document order.
type xarTOC struct {
	Distribution *xarFile
	PackageInfos []*xarFile
}

// xarFile is a <file> of the table of contents: its name, type and <data>.
type xarFile struct {
	Name string
	Type string
	Data *xarData
}

// xarData is a file's <data>: where its archived bytes are in the heap and how they are encoded.
type xarData struct {
	Length int64  // extracted size
	Offset int64  // from the start of the heap
	Size   int64  // archived size
	Style  string // <encoding style="...">
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
	budget := newXMLBudget()
	toc, heap, err := readXarTOC(r, size, budget)
	if err != nil {
		return nil, err
	}
	var (
		dist    pkgDistribution
		infos   []pkgInfo
		bundles []pkgBundle
	)
	if toc.Distribution != nil {
		data, err := readXarFile(r, size, heap, toc.Distribution)
		if err != nil {
			return nil, err
		}
		if err := decodeXML(data, &dist, fileXMLLimits, budget, "the .pkg's Distribution file"); err != nil {
			return nil, err
		}
	}
	hasDist, pkgInfos := toc.Distribution != nil, toc.PackageInfos
	for _, ref := range dist.PkgRefs {
		bundles = append(bundles, ref.Bundles...)
	}
	if !hasDist && len(pkgInfos) == 0 {
		return nil, errs.Invalidf("the .pkg holds neither a Distribution nor a PackageInfo file")
	}
	if len(bundles) == 0 || !hasDist {
		for _, f := range pkgInfos {
			data, err := readXarFile(r, size, heap, f)
			if err != nil {
				return nil, err
			}
			var pi pkgInfo
			if err := decodeXML(data, &pi, fileXMLLimits, budget, "the .pkg's PackageInfo file"); err != nil {
				return nil, err
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

// readXarTOC reads the header and streams the zlib-compressed table of contents (at most
// MaxXarTOCBytes inflated, within tocXMLLimits and budget) through decodeXarTOC. It returns what
// the TOC says of the files Slipway reads, and the offset of the heap.
func readXarTOC(r io.ReaderAt, size int64, budget *xmlBudget) (*xarTOC, int64, error) {
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
	zipread.Prefetch(r, hlen, int64(tocLen))
	zr, err := zlib.NewReader(io.NewSectionReader(r, hlen, int64(tocLen)))
	if err != nil {
		return nil, 0, errs.Wrap(errs.Invalid, err, "the .pkg's table of contents is not zlib-compressed")
	}
	toc, err := decodeXarTOC(&inflateCap{r: zr, left: MaxXarTOCBytes}, budget)
	if err != nil {
		return nil, 0, err
	}
	return toc, hlen + int64(tocLen), nil
}

// inflateCap reads the inflated TOC, failing once it passes the cap (a zlib bomb) and calling
// any other failure of the stream corrupt.
type inflateCap struct {
	r    io.Reader
	left int64
}

func (c *inflateCap) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errs.Invalidf("the .pkg's table of contents inflates to more than %d bytes", MaxXarTOCBytes)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil && err != io.EOF {
		err = errs.Wrap(errs.Invalid, err, "the .pkg's table of contents is corrupt")
	}
	return n, err
}

// maxXarText bounds the text kept of a <name>, <type> or a number: longer ones match no name
// Slipway looks for, or are not numbers.
const maxXarText = 1 << 10

// xarFrame is an open element of the table of contents being read.
type xarFrame struct {
	name string
	file *xarFile   // the element is a <file> at the root (level 1) or one down (level 2)
	kids []*xarFile // a level-1 file's PackageInfo children
	data *xarData   // the element is a kept file's <data>
}

// decodeXarTOC reads a table of contents token by token, keeping only the files Slipway reads
// (see xarTOC) and of each only its name, type and data; everything else is counted against
// tocXMLLimits and dropped. It stops at the end of the root element. Like xml.Unmarshal into
// <root><toc><file>, the root element may have any name, and a field's text is the text directly
// inside it.
func decodeXarTOC(r io.Reader, budget *xmlBudget) (*xarTOC, error) {
	const what = "the .pkg's table of contents"
	var (
		toc       xarTOC
		stack     []xarFrame
		text      []byte
		textDepth = -1 // depth of the field whose text is being kept, or -1
	)
	keep := func(f *xarFile) {
		if len(toc.PackageInfos) < maxXarPkgInfos {
			toc.PackageInfos = append(toc.PackageInfos, f)
		}
	}
	bt := newBoundedTokens(r, tocXMLLimits, budget, what)
	for {
		tok, err := bt.Token()
		if err == io.EOF {
			return nil, errs.Invalidf("%s is not valid XML (no root element)", what)
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var parent *xarFrame
			if len(stack) > 0 {
				parent = &stack[len(stack)-1]
			}
			fr, name := xarFrame{name: t.Name.Local}, t.Name.Local
			switch {
			case name == "file" && len(stack) == 2 && stack[1].name == "toc":
				fr.file = &xarFile{}
			case name == "file" && len(stack) == 3 && parent.file != nil:
				fr.file = &xarFile{}
			case parent != nil && parent.file != nil && (name == "name" || name == "type"):
				textDepth, text = len(stack), text[:0]
			case parent != nil && parent.file != nil && name == "data":
				parent.file.Data = &xarData{}
				fr.data = parent.file.Data
			case parent != nil && parent.data != nil && (name == "length" || name == "offset" || name == "size"):
				textDepth, text = len(stack), text[:0]
			case parent != nil && parent.data != nil && name == "encoding":
				for _, a := range t.Attr {
					if a.Name.Local == "style" {
						parent.data.Style = a.Value
					}
				}
			}
			stack = append(stack, fr)
		case xml.CharData:
			if len(stack) == textDepth+1 && len(text) <= maxXarText {
				text = append(text, t[:min(len(t), maxXarText+1-len(text))]...)
			}
		case xml.EndElement:
			fr := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			var parent *xarFrame
			if len(stack) > 0 {
				parent = &stack[len(stack)-1]
			}
			if len(stack) == textDepth {
				textDepth = -1
				if err := setXarField(parent, fr.name, text); err != nil {
					return nil, err
				}
			}
			switch f := fr.file; {
			case f == nil:
			case len(stack) == 3: // a file one directory down
				if f.Name == "PackageInfo" && f.Type != "directory" && len(parent.kids) < maxXarPkgInfos {
					parent.kids = append(parent.kids, f)
				}
			case f.Name == "Distribution" && f.Type != "directory" && toc.Distribution == nil:
				toc.Distribution = f
			case f.Name == "PackageInfo" && f.Type != "directory":
				keep(f)
			case f.Type == "directory":
				for _, k := range fr.kids {
					keep(k)
				}
			}
			if len(stack) == 0 {
				return &toc, nil
			}
		}
	}
}

// setXarField stores the text of a file's <name> or <type>, or of its data's <length>, <offset>
// or <size> (parsed as xml.Unmarshal parses an int64: spaces trimmed, empty is 0).
func setXarField(parent *xarFrame, name string, text []byte) error {
	if parent.file != nil {
		switch name {
		case "name":
			parent.file.Name = string(text)
		case "type":
			parent.file.Type = string(text)
		}
		return nil
	}
	s := strings.TrimSpace(string(text))
	var n int64
	if s != "" {
		var err error
		if n, err = strconv.ParseInt(s, 10, 64); err != nil {
			return errs.Invalidf("the .pkg's table of contents has a <%s> that is not a number (%.40q)", name, s)
		}
	}
	switch name {
	case "length":
		parent.data.Length = n
	case "offset":
		parent.data.Offset = n
	case "size":
		parent.data.Size = n
	}
	return nil
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
	zipread.Prefetch(r, heap+d.Offset, d.Size)
	var src io.Reader = io.NewSectionReader(r, heap+d.Offset, d.Size)
	switch style := d.Style; style {
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
	data, err := readAllSized(io.LimitReader(src, maxXarFileBytes+1), d.Length)
	switch {
	case err != nil:
		return nil, errs.Wrap(errs.Invalid, err, "the .pkg's %s file is corrupt", f.Name)
	case len(data) > maxXarFileBytes:
		return nil, errs.Invalidf("the .pkg's %s file inflates to more than %d bytes", f.Name, maxXarFileBytes)
	}
	return data, nil
}

// readAllSized is io.ReadAll with a first buffer of hint bytes (and one for the end), so that
// content of the size declared is read into one allocation; only content longer than it grows
// the buffer.
func readAllSized(r io.Reader, hint int64) ([]byte, error) {
	b := make([]byte, 0, hint+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
