package appinfo

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/zipread"
)

// Size breakdown: what a package is made of, from the reads a parse already makes.
//
// A zip's central directory lists every entry's compressed and uncompressed size, and every zip
// parser has read it before it reads anything else, so cutting a zip package into components
// costs no byte and no request more (the parse benchmarks check it). Each family decides how its
// entries are cut (ZipBreakdown's cut function); what a zip spends on its own records (local
// headers, data descriptors, the central directory, an APK Signing Block, a comment) is what the
// file holds beyond the entries' compressed bytes, in the component ComponentOverhead. So, for a
// zip package, the components' Download add up to the file's size and their Install to the
// entries' uncompressed total, exactly.
//
// Packages that are not zips (.deb, .rpm, AppImage, .msi, .pkg, .dmg, .exe) get only Download,
// the file size: their containers list their files only inside compressed streams (a .deb's
// data.tar, an AppImage's squashfs directory tables, a .pkg's table of contents lists them but
// its payload is a compressed cpio, a .msi's cabinets) or not at all, and reading those would
// cost reads the parse does not make today. (An .rpm's header, which the parse reads, does list
// each file's installed size; its compressed share is not known per file. Not used yet.)

// Component kinds: what a component of a Breakdown is. Names are per family (see each family's
// package doc); kinds let pages and diffs treat alike what is alike.
const (
	KindExecutable   = "executable"   // the main executable (Apple, a zip's .exe)
	KindFramework    = "framework"    // an embedded framework or dynamic library (Apple)
	KindExtension    = "extension"    // an app extension, watch app or App Clip (Apple)
	KindAssets       = "assets"       // an asset catalog (Assets.car), Android assets/
	KindLocalization = "localization" // *.lproj folders
	KindResources    = "resources"    // other resources: res/, resources.arsc, HarmonyOS resources
	KindCode         = "code"         // Android dex files, HarmonyOS ets/abc bytecode
	KindNative       = "native"       // native libraries of one ABI
	KindSignature    = "signature"    // signature and package metadata (META-INF/, AppxSignature.p7x)
	KindModule       = "module"       // a module: an AAB feature module, a HAP in an .app, a package in a bundle
	KindSymbols      = "symbols"      // debug symbols shipped in the package (Symbols/, BCSymbolMaps/)
	KindFolder       = "folder"       // a top-level folder (MSIX, a zip holding an .exe)
	KindOther        = "other"        // everything else
	KindOverhead     = "overhead"     // the zip's own records
)

// Names every family gives the same component.
const (
	// ComponentOverhead is the zip's own bytes: local headers, data descriptors, the central
	// directory and end records, and anything else between entries (an APK Signing Block).
	ComponentOverhead = "Archive overhead"
	// ComponentOther gathers the entries no other component of the family takes.
	ComponentOther = "Other"
)

// Caps on what a Breakdown keeps, whatever the package declares.
const (
	// MaxComponents bounds the components of one breakdown; entries that would open another
	// are counted in ComponentOther.
	MaxComponents = 256
	// MaxListedFiles bounds Breakdown.Largest.
	MaxListedFiles = 1000
	// LargestShown is how many of the largest files pages and reports show.
	LargestShown = 20
	// maxSizePath bounds a path or component name kept in a breakdown, in bytes.
	maxSizePath = 512
)

// Breakdown is what a package is made of: its sizes, by component and by file.
type Breakdown struct {
	// Download is the package's size in bytes: what a device downloads.
	Download int64
	// Install is the sum of the entries' uncompressed sizes: about what the app takes once
	// installed. 0 when the container does not list its files (not a zip).
	Install int64
	// Components cut the package by what its entries are (per family: see ZipBreakdown), largest
	// download first; a component without files or bytes (an empty folder) is left out. Their
	// Download add up to Download and their Install to Install, exactly. Empty when the container
	// does not list its files.
	Components []Component
	// Largest lists the package's largest files, largest install size first (then largest
	// download, then path): all of them up to MaxListedFiles. When Files is larger than the
	// list, every file left out is no larger than the last one listed. Pages show the first
	// LargestShown; diffs compare the whole list.
	Largest []File
	// Files is the number of files in the package (folders not counted), those of a nested
	// package the parse opened counted instead of it (see Expand).
	Files int
}

// Component is a part of a package: one framework, the native libraries of one ABI, res/...
type Component struct {
	// Name identifies the component within its package, stably from one build to the next:
	// a path ("Frameworks/Alamofire.framework", "lib/arm64-v8a/") or a fixed label
	// ("Localizations", ComponentOverhead).
	Name string
	// Kind is one of the Kind* constants.
	Kind string
	// Download is the compressed bytes of the component's entries (for ComponentOverhead, the
	// zip's own bytes); Install their uncompressed bytes.
	Download, Install int64
	// Files is the number of files in the component (a nested package counts as one).
	Files int
}

// File is one file of a package, by its path in the archive.
type File struct {
	Path              string
	Download, Install int64
}

// LargestFiles returns the first n files of Largest (all when fewer).
func (b *Breakdown) LargestFiles(n int) []File {
	if b == nil {
		return nil
	}
	return b.Largest[:min(n, len(b.Largest))]
}

// Cut names the component a zip entry belongs to: its name and one of the Kind* constants. An
// empty name puts the entry in ComponentOther.
type Cut func(entry string) (name, kind string)

// ZipBreakdown cuts the archive a into components with cut, from its central directory alone (no
// read), and adds ComponentOverhead so that the components' Download add up to the archive's
// size. It returns nil when the directory's sizes cannot be true: entries whose compressed sizes
// add up to more than the file, or sizes past 2^63. (The parse goes on: such an archive is
// broken or crafted, and its metadata entries were read within their own bounds.)
func ZipBreakdown(a *zipread.Archive, cut Cut) *Breakdown {
	files := a.Files()
	b := &Breakdown{Download: a.Size()}
	index := map[[2]string]int{} // name, kind → position in b.Components
	var download int64
	listed := make([]File, 0, min(len(files), 4096))
	for _, f := range files {
		if f.CompressedSize64 > math.MaxInt64 || f.UncompressedSize64 > math.MaxInt64 {
			return nil
		}
		c, u := int64(f.CompressedSize64), int64(f.UncompressedSize64)
		if download > math.MaxInt64-c || b.Install > math.MaxInt64-u {
			return nil
		}
		download += c
		b.Install += u
		name, kind := cut(f.Name)
		if name == "" {
			name, kind = ComponentOther, KindOther
		}
		name = sizeText(name)
		key := [2]string{name, kind}
		i, ok := index[key]
		if !ok {
			if len(b.Components) >= MaxComponents-2 { // room for Other and the overhead
				key = [2]string{ComponentOther, KindOther}
				if i, ok = index[key]; !ok {
					b.Components = append(b.Components, Component{Name: ComponentOther, Kind: KindOther})
					i = len(b.Components) - 1
					index[key] = i
				}
			} else {
				b.Components = append(b.Components, Component{Name: name, Kind: kind})
				i = len(b.Components) - 1
				index[key] = i
			}
		}
		comp := &b.Components[i]
		comp.Download += c
		comp.Install += u
		if strings.HasSuffix(f.Name, "/") {
			continue // a folder
		}
		comp.Files++
		b.Files++
		listed = append(listed, File{Path: f.Name, Download: c, Install: u})
	}
	if download > b.Download {
		return nil
	}
	// Folders alone (an empty Frameworks/X.framework/, the Payload/ entry) make no component.
	b.Components = slices.DeleteFunc(b.Components, func(c Component) bool { return c.Download == 0 && c.Install == 0 && c.Files == 0 })
	b.Components = append(b.Components, Component{Name: ComponentOverhead, Kind: KindOverhead, Download: b.Download - download})
	slices.SortStableFunc(b.Components, func(x, y Component) int {
		return cmp.Or(cmp.Compare(y.Download, x.Download), cmp.Compare(y.Install, x.Install), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Kind, y.Kind))
	})
	b.Largest = largest(listed, MaxListedFiles, 0)
	return b
}

// Expand lists, in Largest, the files of a nested archive instead of the archive itself: path is
// the nested archive's entry (a HAP in an .app, the main package of an MSIX bundle) and inner
// its breakdown; its files are listed as path + "/" + their own path. Components and totals are
// unchanged: the nested archive stays one component.
func (b *Breakdown) Expand(path string, inner *Breakdown) {
	if b == nil || inner == nil {
		return
	}
	i := slices.IndexFunc(b.Largest, func(f File) bool { return f.Path == path })
	if i < 0 {
		return // not listed: absent, or too small to matter beside what is
	}
	// Files left out of either list are no larger than that list's last; keep the invariant.
	var floor int64
	if len(b.Largest) < b.Files && len(b.Largest) > 0 {
		floor = b.Largest[len(b.Largest)-1].Install
	}
	if len(inner.Largest) < inner.Files && len(inner.Largest) > 0 {
		floor = max(floor, inner.Largest[len(inner.Largest)-1].Install)
	}
	merged := make([]File, 0, len(b.Largest)+len(inner.Largest))
	for j, f := range b.Largest {
		if j != i {
			merged = append(merged, f)
		}
	}
	for _, f := range inner.Largest {
		merged = append(merged, File{Path: sizeText(path + "/" + f.Path), Download: f.Download, Install: f.Install})
	}
	b.Files += inner.Files - 1
	b.Largest = largest(merged, MaxListedFiles, floor)
}

// largest sorts files largest first and keeps at most n, none smaller than floor, their paths
// made safe to keep.
func largest(files []File, n int, floor int64) []File {
	slices.SortFunc(files, func(x, y File) int {
		return cmp.Or(cmp.Compare(y.Install, x.Install), cmp.Compare(y.Download, x.Download), cmp.Compare(x.Path, y.Path))
	})
	if k := slices.IndexFunc(files, func(f File) bool { return f.Install < floor }); k >= 0 {
		files = files[:k]
	}
	out := slices.Clone(files[:min(n, len(files))])
	for i := range out {
		out[i].Path = sizeText(out[i].Path)
	}
	return out
}

// sizeText makes an entry name safe to keep and show: valid UTF-8, at most maxSizePath bytes.
func sizeText(s string) string {
	if len(s) <= maxSizePath && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxSizePath {
		cut := maxSizePath
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// TopFolder returns the first element of an entry name and whether it is a folder (the name goes
// on past it): "res/a.png" gives ("res", true), "classes.dex" ("classes.dex", false).
func TopFolder(name string) (string, bool) {
	first, _, ok := strings.Cut(name, "/")
	return first, ok
}
