// Package apt renders a Debian (APT) repository's index from a list of packages: the Packages
// files of each architecture (plain and gzip), and the Release file listing their SHA-256 sums,
// which the caller signs (InRelease, Release.gpg). It only renders: which packages a channel
// offers, and signing, are the caller's (pkg/httpapi, pkg/repokey).
//
// The layout is Debian's (https://wiki.debian.org/DebianRepository/Format), one suite and one
// component:
//
//	dists/stable/InRelease, Release, Release.gpg
//	dists/stable/main/binary-<arch>/Packages, Packages.gz
//	dists/stable/main/binary-<arch>/by-hash/SHA256/<sha256 of Packages or Packages.gz>
//	pool/<release id>/<package>_<version>_<arch>.deb
//
// Renders are deterministic: the same packages and date give the same bytes.
package apt

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// Suite is the one suite (and codename) a channel's repository has; Component its one component.
const (
	Suite     = "stable"
	Component = "main"
)

// ValidFor is how long a Release file is valid (Valid-Until = Date + ValidFor): apt refuses an
// older one, so a stale or replayed index stops being accepted after a week. The server re-signs
// well before (a new Date every day at the least, and whenever a build arrives or leaves).
const ValidFor = 7 * 24 * time.Hour

// Package is one .deb in the index.
type Package struct {
	// ID is the release's id: its pool path is pool/<ID>/<file>.
	ID           int64
	Name         string // Package
	Version      string // the full Version ([epoch:]upstream[-revision])
	Architecture string // amd64, arm64, all...
	Maintainer   string
	// Fields are the other control fields the index repeats (Installed-Size, Depends, Section,
	// Priority, Homepage...), by their control-file names; empty values are left out.
	Fields map[string]string
	// Description is the synopsis (the first line); ExtendedDescription its further lines, as
	// the control file writes them without their leading space ("." for a paragraph break).
	Description         string
	ExtendedDescription string
	Size                int64
	SHA256              string // hex
	// Uploaded orders two builds of the same package, version and architecture: the newer one
	// is listed, the older one left out (apt could not tell them apart).
	Uploaded time.Time
}

// fieldOrder is the order of the fields of a stanza after Package, Version, Architecture and
// Maintainer (as dpkg-scanpackages writes them), then Filename, Size, SHA256 and Description.
var fieldOrder = []string{"Installed-Size", "Pre-Depends", "Depends", "Recommends", "Suggests", "Enhances", "Breaks", "Conflicts",
	"Replaces", "Provides", "Built-Using", "Essential", "Multi-Arch", "Homepage", "Section", "Priority"}

// FieldNames are the control fields besides the fixed ones that a stanza may carry.
func FieldNames() []string { return slices.Clone(fieldOrder) }

var (
	nameRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	versionRe = regexp.MustCompile(`^([0-9]+:)?[0-9A-Za-z][0-9A-Za-z.+~-]*(-[0-9A-Za-z.+~]+)?$`)
	archRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	sha256Re  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Valid reports why a package cannot be listed ("" when it can): a name, version or architecture
// dpkg would not have built, which apt could not parse back, or a missing checksum.
func (p *Package) Valid() string {
	switch {
	case !nameRe.MatchString(p.Name):
		return fmt.Sprintf("package name %q is not a Debian package name", p.Name)
	case !versionRe.MatchString(p.Version):
		return fmt.Sprintf("version %q is not a Debian version", p.Version)
	case !archRe.MatchString(p.Architecture):
		return fmt.Sprintf("architecture %q is not a Debian architecture", p.Architecture)
	case !sha256Re.MatchString(p.SHA256):
		return "its SHA-256 is not known yet"
	}
	for _, k := range relationFields {
		if v := p.Fields[k]; v != "" && !wellFormedRelation(v) {
			// A value cut short (builds uploaded before Slipway kept these whole were cut at
			// 256 bytes) would make apt refuse the whole index.
			return fmt.Sprintf("its %s field is cut short or malformed", k)
		}
	}
	return ""
}

// relationFields are the fields that name other packages (deb-control(5)).
var relationFields = []string{"Pre-Depends", "Depends", "Recommends", "Suggests", "Enhances", "Breaks", "Conflicts", "Replaces", "Provides", "Built-Using"}

// relationRe is one relation: a package name with an optional architecture qualifier, version
// restriction, architecture list and build profiles.
var relationRe = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*(:[a-z0-9-]+)?\s*(\(\s*(<<|<=|=|>=|>>|<|>)\s*[0-9A-Za-z.+~:-]+\s*\))?\s*(\[[^\[\]()]*\])?\s*(<[^<>()]*>\s*)*$`)

// wellFormedRelation reports whether v is a list of relations apt can parse ("a, b (>= 1) | c").
func wellFormedRelation(v string) bool {
	for _, alt := range strings.Split(v, ",") {
		for _, rel := range strings.Split(alt, "|") {
			if !relationRe.MatchString(strings.TrimSpace(rel)) {
				return false
			}
		}
	}
	return true
}

// PoolFile is the package's path in the repository.
func (p *Package) PoolFile() string {
	version := p.Version
	if _, rest, ok := strings.Cut(version, ":"); ok {
		version = rest // pool file names leave out the epoch, as Debian's do
	}
	return fmt.Sprintf("pool/%d/%s_%s_%s.deb", p.ID, p.Name, version, p.Architecture)
}

// oneLine keeps a value on one line (the parser already does; this is the renderer's own guard).
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)), " ")
}

// stanza writes one package's paragraph.
func (p *Package) stanza(b *bytes.Buffer) {
	field := func(k, v string) {
		if v = oneLine(v); v != "" {
			fmt.Fprintf(b, "%s: %s\n", k, v)
		}
	}
	field("Package", p.Name)
	field("Version", p.Version)
	field("Architecture", p.Architecture)
	field("Maintainer", p.Maintainer)
	for _, k := range fieldOrder {
		v := p.Fields[k]
		if k == "Installed-Size" && strings.Trim(v, "0123456789") != "" {
			continue
		}
		field(k, v)
	}
	field("Filename", p.PoolFile())
	field("Size", fmt.Sprint(p.Size))
	field("SHA256", p.SHA256)
	desc := oneLine(p.Description)
	if desc == "" {
		desc = p.Name
	}
	fmt.Fprintf(b, "Description: %s\n", desc)
	for _, line := range strings.Split(p.ExtendedDescription, "\n") {
		line = strings.TrimRight(strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, line), " ")
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(" " + line + "\n")
	}
}

// Select returns the packages an index lists, sorted by name, version and architecture: the
// valid ones, the newest upload of each package, version and architecture, and with newestOnly
// only the newest version of each package and architecture. Dropped says why each left out was.
func Select(pkgs []Package, newestOnly bool) (listed []Package, dropped map[int64]string) {
	dropped = map[int64]string{}
	byKey := map[string]int{}
	for _, p := range pkgs {
		if why := p.Valid(); why != "" {
			dropped[p.ID] = why
			continue
		}
		key := p.Name + " " + p.Version + " " + p.Architecture
		if newestOnly {
			key = p.Name + " " + p.Architecture
		}
		i, seen := byKey[key]
		if !seen {
			byKey[key] = len(listed)
			listed = append(listed, p)
			continue
		}
		old := listed[i]
		newer := p.Uploaded.After(old.Uploaded) || (p.Uploaded.Equal(old.Uploaded) && p.ID > old.ID)
		if newestOnly && p.Version != old.Version {
			newer = CompareVersions(p.Version, old.Version) > 0
		}
		if newer {
			listed[i], old = p, listed[i]
		} else {
			old = p
		}
		if old.Version == listed[i].Version {
			dropped[old.ID] = fmt.Sprintf("replaced by build %d, the newer upload of %s %s (%s)", listed[i].ID, old.Name, old.Version, old.Architecture)
		} else {
			dropped[old.ID] = fmt.Sprintf("only the newest version of %s (%s) is listed: %s (build %d)", old.Name, old.Architecture, listed[i].Version, listed[i].ID)
		}
	}
	sort.Slice(listed, func(i, j int) bool {
		a, b := listed[i], listed[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if c := CompareVersions(a.Version, b.Version); c != 0 {
			return c < 0
		}
		return a.Architecture < b.Architecture
	})
	return listed, dropped
}

// Packages renders a Packages file: the stanzas of the packages of arch and of "all", in order.
func Packages(pkgs []Package, arch string) []byte {
	var b bytes.Buffer
	for i := range pkgs {
		if pkgs[i].Architecture != arch && pkgs[i].Architecture != "all" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		pkgs[i].stanza(&b)
	}
	return b.Bytes()
}

// Gzip compresses deterministically (no name, no time).
func Gzip(b []byte) []byte {
	var out bytes.Buffer
	w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// Architectures are the binary-<arch> indexes a repository of pkgs has: every architecture a
// package names besides "all" (sorted), and amd64 when there is none (a repository of
// "all" packages only).
func Architectures(pkgs []Package) []string {
	var archs []string
	for _, p := range pkgs {
		if p.Architecture != "all" && !slices.Contains(archs, p.Architecture) {
			archs = append(archs, p.Architecture)
		}
	}
	if len(archs) == 0 {
		archs = []string{"amd64"}
	}
	slices.Sort(archs)
	return archs
}

// Meta describes a repository in its Release file.
type Meta struct {
	Origin, Label, Description string
	// Date is when the index was made (Valid-Until is Date + ValidFor).
	Date time.Time
}

// Index is a rendered repository: Release and the files it lists, by their paths under
// dists/stable/.
type Index struct {
	Release []byte
	Files   map[string][]byte
	// ByHash maps the hex SHA-256 of each file to its path (Acquire-By-Hash).
	ByHash map[string]string
	// Dropped are the packages left out, by release id, and why.
	Dropped map[int64]string
}

// Build renders the index of pkgs (see Select for which are listed).
func Build(meta Meta, pkgs []Package, newestOnly bool) *Index {
	listed, dropped := Select(pkgs, newestOnly)
	archs := Architectures(listed)
	idx := &Index{Files: map[string][]byte{}, ByHash: map[string]string{}, Dropped: dropped}
	var paths []string
	for _, arch := range archs {
		plain := Packages(listed, arch)
		dir := Component + "/binary-" + arch + "/"
		idx.Files[dir+"Packages"] = plain
		idx.Files[dir+"Packages.gz"] = Gzip(plain)
		paths = append(paths, dir+"Packages", dir+"Packages.gz")
	}
	var b bytes.Buffer
	field := func(k, v string) {
		if v = oneLine(v); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	date := meta.Date.UTC().Truncate(time.Second)
	field("Origin", meta.Origin)
	field("Label", meta.Label)
	field("Suite", Suite)
	field("Codename", Suite)
	field("Date", date.Format(time.RFC1123))
	field("Valid-Until", date.Add(ValidFor).Format(time.RFC1123))
	field("Architectures", strings.Join(archs, " "))
	field("Components", Component)
	field("Description", meta.Description)
	field("Acquire-By-Hash", "yes")
	b.WriteString("SHA256:\n")
	for _, p := range paths {
		sum := sha256.Sum256(idx.Files[p])
		h := hex.EncodeToString(sum[:])
		idx.ByHash[h] = p
		fmt.Fprintf(&b, " %s %d %s\n", h, len(idx.Files[p]), p)
	}
	idx.Release = b.Bytes()
	return idx
}
