package debuginfo

import (
	"archive/zip"
	"fmt"
	"path"
	"strings"

	"howett.net/plist"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// entry is a zip entry with its name normalised to forward slashes.
type entry struct {
	f    *zip.File
	name string
	idx  int // position in the central directory
}

// bundle is a .dSYM folder found in the archive, before its files are read.
type bundle struct {
	path   string // "dSYMs/App.app.dSYM"
	plist  *entry // Contents/Info.plist
	machos []entry
}

// androidFiles are the Android files found outside dSYM bundles.
type androidFiles struct {
	mapping, rTxt, manifest *entry
}

const dwarfDir = "contents/resources/dwarf/"

// scan sorts the archive's regular files into dSYM bundles and Android files, reading nothing.
func (p *parser) scan() ([]*bundle, androidFiles, error) {
	var bundles []*bundle
	byPath := map[string]*bundle{}
	var android androidFiles
	seen := map[string]bool{}
	for i, f := range p.za.Files() {
		name := strings.ReplaceAll(f.Name, `\`, "/")
		if strings.HasSuffix(name, "/") || !f.Mode().IsRegular() || zipread.IsMacOSXJunk(name) || seen[name] {
			continue // folders, symlinks, macOS resource forks, repeated names (the first one counts)
		}
		seen[name] = true
		e := entry{f: f, name: name, idx: i}
		if bpath, rest, ok := splitBundle(name); ok {
			b := byPath[bpath]
			if b == nil {
				if len(bundles) == lim.bundles {
					return nil, android, errs.Invalidf("the archive holds more than %d .dSYM bundles", lim.bundles)
				}
				b = &bundle{path: bpath}
				byPath[bpath] = b
				bundles = append(bundles, b)
			}
			lower := strings.ToLower(rest)
			switch {
			case lower == "contents/info.plist":
				if b.plist == nil {
					b.plist = &e
				}
			case strings.HasPrefix(lower, dwarfDir):
				obj := rest[len(dwarfDir):]
				if strings.Contains(obj, "/") || strings.HasPrefix(obj, ".") {
					continue // sub-folders and hidden files such as .DS_Store
				}
				if len(b.machos) == lim.machOFiles {
					return nil, android, errs.Invalidf("%s holds more than %d files under Contents/Resources/DWARF/", quote(bpath), lim.machOFiles)
				}
				b.machos = append(b.machos, e)
			}
			continue
		}
		base := path.Base(name)
		lower := strings.ToLower(base)
		switch {
		case strings.Contains(lower, "mapping") && strings.HasSuffix(lower, ".txt"):
			// Prefer a file named exactly mapping.txt over e.g. "old-mapping.txt".
			if android.mapping == nil || (lower == "mapping.txt" && strings.ToLower(path.Base(android.mapping.name)) != "mapping.txt") {
				android.mapping = &e
			}
		case base == "R.txt":
			if android.rTxt == nil {
				android.rTxt = &e
			}
		case base == "AndroidManifest.xml":
			if android.manifest == nil {
				android.manifest = &e
			}
		}
	}
	return bundles, android, nil
}

// splitBundle splits an entry name at its first folder named *.dSYM (any letter case), returning
// the bundle's path and the rest of the name; ok is false outside any bundle.
func splitBundle(name string) (bundlePath, rest string, ok bool) {
	start := 0
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		dir := name[start:i]
		if len(dir) > len(".dSYM") && strings.EqualFold(dir[len(dir)-len(".dSYM"):], ".dSYM") {
			return name[:i], name[i+1:], true
		}
		start = i + 1
	}
	return "", "", false
}

// dsyms reads each bundle's Info.plist and Mach-O headers. Bundles without a Mach-O are dropped.
func (p *parser) dsyms(bundles []*bundle) ([]DSYM, error) {
	var out []DSYM
	for _, b := range bundles {
		if len(b.machos) == 0 {
			continue
		}
		d := DSYM{Name: path.Base(b.path), Path: b.path}
		if b.plist != nil {
			if err := p.info(*b.plist, &d); err != nil {
				return nil, err
			}
		}
		for _, e := range b.machos {
			s, err := p.machO(e)
			if err != nil {
				return nil, err
			}
			d.Slices = append(d.Slices, s...)
		}
		out = append(out, d)
	}
	main := false
	for i := range out {
		if strings.HasSuffix(strings.ToLower(out[i].Name), ".app.dsym") {
			out[i].Main, main = true, true
		}
	}
	if !main && len(out) > 0 {
		out[0].Main = true
	}
	return out, nil
}

// machO reads the slices of one Mach-O file.
func (p *parser) machO(e entry) ([]Slice, error) {
	rc, err := p.open(e, lim.dwarfFile)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	s, err := readMachO(rc, e.name)
	if err != nil {
		return nil, err
	}
	for i := range s {
		s[i].Object = path.Base(e.name)
	}
	return s, nil
}

// info fills a DSYM's identifier and versions from its Info.plist (XML, binary or OpenStep).
func (p *parser) info(e entry, d *DSYM) error {
	data, err := p.readAll(e, lim.infoPlist)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := decodePlist(data, &m); err != nil {
		return errs.Wrap(errs.Invalid, err, "%s is not a valid property list", quote(e.name))
	}
	d.Identifier = strings.TrimPrefix(plistString(m["CFBundleIdentifier"]), "com.apple.xcode.dsym.")
	d.ReleaseVersion = plistString(m["CFBundleShortVersionString"])
	d.BuildVersion = plistString(m["CFBundleVersion"])
	return nil
}

// decodePlist is plist.Unmarshal, turning a panic inside the third-party decoder (it re-panics
// runtime errors) into an error, as a last line of defence against hostile input.
func decodePlist(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plist decoder panic: %v", r)
		}
	}()
	_, err = plist.Unmarshal(data, v)
	return err
}

// plistString renders a scalar plist value as text ("" for anything else): versions are
// sometimes stored as numbers.
func plistString(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case uint64, int64, float64, bool:
		return fmt.Sprint(v)
	}
	return ""
}
