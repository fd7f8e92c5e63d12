package harmony

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// ParseApp reads a HarmonyOS .app: its pack.info, then the entry HAP inside it, opened as a zip
// within the zip through ranged reads (see the package doc). Identity and version come from
// pack.info, everything else from the entry HAP.
func ParseApp(a *zipread.Archive) (*appinfo.Info, error) {
	b, err := a.ReadName(packInfoName, MaxPackInfoBytes)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, errs.Invalidf("the .app has no pack.info")
	}
	var pack packInfo
	if err := decodeJSON(packInfoName, b, &pack); err != nil {
		return nil, err
	}
	f, err := entryHAP(a, &pack)
	if err != nil {
		return nil, err
	}
	inner, err := openNested(a, f)
	if err != nil {
		return nil, err
	}
	for _, g := range inner.Files() {
		if isHAPName(g.Name) {
			return nil, errs.Invalidf("the entry HAP %q itself holds a HAP (%q): packages nested more than one level deep are refused", clean(f.Name), clean(g.Name))
		}
	}
	h, err := readHAP(inner)
	if err != nil {
		return nil, within(f.Name, err)
	}
	info, err := h.info(appinfo.FormatHarmonyApp)
	if err != nil {
		return nil, within(f.Name, err)
	}
	pa := pack.Summary.App
	if id := clean(pa.BundleName); id != "" {
		if id != info.BundleID {
			return nil, errs.Invalidf("pack.info names bundle %q but its entry HAP %q is bundle %q", id, clean(f.Name), info.BundleID)
		}
	}
	info.ReleaseVersion = first(clean(pa.Version.Name), info.ReleaseVersion)
	if pa.Version.Code != "" {
		if info.BuildVersion, err = versionCode("pack.info summary.app.version.code", pa.Version.Code); err != nil {
			return nil, err
		}
	}
	info.SetProperty("BundleType", clean(pa.BundleType))
	info.SetProperty("EntryHAP", clean(f.Name))
	var modules []string
	for _, m := range pack.Summary.Modules {
		if len(modules) == maxListItems {
			break
		}
		if s := clean(m.Distro.ModuleName); s != "" && !contains(modules, s) {
			modules = append(modules, s)
		}
	}
	info.SetProperty("Modules", strings.Join(modules, ","))
	info.Sizes = appinfo.ZipBreakdown(a, appCut)
	info.Sizes.Expand(f.Name, appinfo.ZipBreakdown(inner, hapCut))
	return info, nil
}

// entryHAP finds the entry module's HAP: the package pack.info lists with moduleType "entry"
// (one installed with the app first, as app-info chooses), else the only HAP of the archive.
func entryHAP(a *zipread.Archive, pack *packInfo) (*zip.File, error) {
	var named []string
	for _, install := range []bool{true, false} {
		for _, p := range pack.Packages {
			if p.ModuleType == "entry" && p.DeliveryWithInstall == install && p.Name != "" {
				named = append(named, p.Name)
			}
		}
	}
	for _, n := range named {
		if f := a.File(n + ".hap"); f != nil {
			return f, nil
		}
	}
	var haps []*zip.File
	for _, f := range a.Files() {
		if isHAPName(f.Name) && !zipread.IsMacOSXJunk(f.Name) {
			haps = append(haps, f)
		}
	}
	switch {
	case len(named) > 0:
		return nil, errs.Invalidf("pack.info names the entry module %q but the .app has no %q", clean(named[0]), clean(named[0])+".hap")
	case len(haps) == 1:
		return haps[0], nil
	case len(haps) == 0:
		return nil, errs.Invalidf("the .app holds no .hap module")
	}
	return nil, errs.Invalidf("pack.info names no entry module among the .app's %d HAPs", len(haps))
}

// isHAPName reports whether an archive entry is a HAP file.
func isHAPName(name string) bool {
	return strings.HasSuffix(strings.ToLower(name), ".hap") && !strings.HasSuffix(name, "/")
}

// appParseBytes is the bound of an .app's parse (appinfo.Family.NestedBytes): pack.info, decoded,
// and the largest bound of its HAPs' parses. A stored HAP, read in place, is bounded by its own
// directory, surveyed where it lies in the .app (ranged reads, nothing kept); a deflated one, or
// an .app of more HAPs than are worth surveying, by the caps (maxAppParseBytes).
func appParseBytes(a *zipread.Archive) int64 {
	const maxSurveyed = 16
	var pack int64
	if f := a.File(packInfoName); f != nil {
		pack = min(zipread.EntryBound(f.Method, f.CompressedSize64, f.UncompressedSize64), MaxPackInfoBytes)
	}
	var most int64
	n := 0
	for _, f := range a.Files() {
		if !isHAPName(f.Name) {
			continue
		}
		if n++; n > maxSurveyed || f.Method != zip.Store || f.CompressedSize64 != f.UncompressedSize64 {
			return maxAppParseBytes
		}
		raw, err := f.OpenRaw()
		sr, ok := raw.(*io.SectionReader)
		if err != nil || !ok {
			return maxAppParseBytes
		}
		s, err := zipread.SurveyDirectory(sr, sr.Size())
		if err != nil {
			continue // refused when it is opened, before its parse allocates
		}
		most = max(most, min(s.OpenCost(), maxNestedOpenCost)+min(maxHAPParseBytes, 2*s.InflatedBytes+iconDecodeBytes))
	}
	return min(2*pack+most+1<<20, maxAppParseBytes)
}

// openNested opens the HAP entry f of the archive a as a zip archive of its own. A stored entry
// is read in place through a section of the outer reader (its bytes are never copied out, and
// prefetch hints reach the outer reader); a deflated one is inflated into memory when it is at
// most MaxInflatedHAPBytes, and refused otherwise.
func openNested(a *zipread.Archive, f *zip.File) (*zipread.Archive, error) {
	name := clean(f.Name)
	var (
		r    io.ReaderAt
		size int64
		sec  *section
	)
	switch f.Method {
	case zip.Store:
		if f.CompressedSize64 != f.UncompressedSize64 {
			return nil, errs.Invalidf("the entry HAP %q is stored but declares %d stored and %d real bytes", name, f.CompressedSize64, f.UncompressedSize64)
		}
		raw, err := f.OpenRaw()
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the entry HAP %q is unreadable (truncated .app?)", name)
		}
		sr, ok := raw.(*io.SectionReader)
		if !ok {
			return nil, errs.Invalidf("the entry HAP %q cannot be read in place", name)
		}
		outer, off, n := sr.Outer()
		sec = &section{r: outer, off: off, n: n}
		r, size = sec, n
	case zip.Deflate:
		if f.UncompressedSize64 > MaxInflatedHAPBytes {
			return nil, errs.Invalidf("the entry HAP %q is compressed and %d bytes long: a HAP inside an .app is read in place when stored, as the packing tool stores it, and inflated only up to %d bytes", name, f.UncompressedSize64, MaxInflatedHAPBytes)
		}
		b, err := a.ReadFile(f, MaxInflatedHAPBytes)
		if err != nil {
			return nil, err
		}
		r, size = bytes.NewReader(b), int64(len(b))
	default:
		return nil, errs.Invalidf("the entry HAP %q uses unsupported compression method %d", name, f.Method)
	}
	if !zipread.IsZip(r, size) {
		return nil, errs.Invalidf("the entry HAP %q is not a zip archive", name)
	}
	// What opening the HAP's directory costs is bounded (maxNestedOpenCost) before it is opened:
	// the .app's own directory does not list its entries, so the parse's bound counts this cap.
	if s, err := zipread.SurveyDirectory(r, size); err != nil {
		if sec != nil && sec.short {
			return nil, errs.Wrap(errs.Invalid, err, "the entry HAP %q declares %d bytes but the .app ends before them (a truncated upload, or a lying size)", name, size)
		}
		return nil, within(f.Name, err)
	} else if s.OpenCost() > maxNestedOpenCost {
		return nil, errs.Invalidf("the entry HAP %q lists %d files: over the limit for a HAP inside an .app", name, s.Entries)
	}
	inner, err := zipread.Open(r, size)
	if err != nil {
		if sec != nil && sec.short {
			return nil, errs.Wrap(errs.Invalid, err, "the entry HAP %q declares %d bytes but the .app ends before them (a truncated upload, or a lying size)", name, size)
		}
		return nil, within(f.Name, err)
	}
	return inner, nil
}

// section is the part [off, off+n) of r: a stored entry read in place. A short read inside the
// section means the outer file ends before the entry does (its declared size lies), an
// errs.Invalid error.
type section struct {
	r      io.ReaderAt
	off, n int64
	short  bool // a read ended early
}

func (s *section) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errs.Invalidf("negative offset into the entry HAP")
	}
	if off >= s.n {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	atEnd := false
	if int64(len(p)) > s.n-off {
		p, atEnd = p[:s.n-off], true
	}
	k, err := s.r.ReadAt(p, s.off+off)
	if k < len(p) {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			s.short = true
			err = errs.Invalidf("the entry HAP declares %d bytes but the .app ends before them (truncated or lying size)", s.n)
		}
		return k, err
	}
	if atEnd {
		return k, io.EOF
	}
	return k, nil
}

// Prefetch passes a prefetch hint on to the outer reader, in its offsets.
func (s *section) Prefetch(off, n int64) {
	p, ok := s.r.(zipread.Prefetcher)
	if !ok || off < 0 || off >= s.n || n <= 0 {
		return
	}
	p.Prefetch(s.off+off, min(n, s.n-off))
}

// within prefixes an error about the entry HAP with its name, keeping its kind.
func within(name string, err error) error {
	e, ok := errs.AsError(err)
	if !ok {
		return err
	}
	return &errs.Error{Kind: e.Kind, Msg: "in the entry HAP " + quote(name) + ": " + e.Msg, Err: e.Err}
}
