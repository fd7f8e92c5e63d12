// Package rpmmd renders a DNF/YUM repository's metadata (the rpm-md format createrepo writes):
// repodata/repomd.xml, which names and checksums primary.xml.gz, filelists.xml.gz and
// other.xml.gz, and its detached signature repomd.xml.asc. The data files are named after their
// checksums (<sha256>-primary.xml.gz, as createrepo_c names them), so a client or a cache never
// mixes one generation's repomd.xml with another's primary.xml.
//
// Everything rendered is a function of the packages given: two replicas render the same bytes,
// and strong ETags hold across them.
package rpmmd

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// The XML namespaces of the rpm-md format.
const (
	nsRepo      = "http://linux.duke.edu/metadata/repo"
	nsCommon    = "http://linux.duke.edu/metadata/common"
	nsRPM       = "http://linux.duke.edu/metadata/rpm"
	nsFilelists = "http://linux.duke.edu/metadata/filelists"
	nsOther     = "http://linux.duke.edu/metadata/other"
)

// Package is one .rpm the repository lists.
type Package struct {
	Name, Arch                    string
	Epoch, Version, Release       string // Epoch "" is 0
	SHA256                        string // of the file: the package's pkgid
	Summary, Description          string
	Packager, URL                 string
	License, Vendor, Group        string
	BuildHost, SourceRPM          string
	FileTime, BuildTime           int64 // Unix seconds: when it was uploaded, and built
	Size, InstalledSize, Archive  int64 // the file's bytes; installed and payload bytes (0: unknown)
	HeaderStart, HeaderEnd        int64 // the main header's byte range (0, 0: unknown)
	Provides, Requires, Conflicts []Dep
	Obsoletes                     []Dep
	// Href is where the package is, relative to the repository's base URL.
	Href string
}

// Dep is a dependency entry: a name, and a comparison with a version when Flags is set.
type Dep struct {
	Name            string
	Flags           string // "", LT, LE, EQ, GE, GT
	Epoch, Ver, Rel string
	Pre             bool // a requirement of a scriptlet run before install
}

// File is one rendered file of the repository.
type File struct {
	Name        string // relative to the repository's base: repodata/…
	Data        []byte
	ContentType string
}

// Repository is a rendered repository's metadata files.
type Repository struct {
	Files []File
}

// Get returns the file of that name (relative to the base) and whether there is one.
func (r *Repository) Get(name string) (File, bool) {
	for _, f := range r.Files {
		if f.Name == name {
			return f, true
		}
	}
	return File{}, false
}

// Render renders the metadata of pkgs. timestamp (Unix seconds) is the repository's revision
// and its data files' timestamp: the newest upload, so that it changes with the packages and
// is the same on every replica. sign, when not nil, makes repomd.xml.asc (an armored detached
// OpenPGP signature of repomd.xml).
func Render(pkgs []Package, timestamp int64, sign func([]byte) ([]byte, error)) (*Repository, error) {
	type data struct {
		kind string
		xml  []byte
	}
	var out Repository
	var md bytes.Buffer
	md.WriteString(xml.Header)
	fmt.Fprintf(&md, "<repomd xmlns=%q xmlns:rpm=%q>\n  <revision>%d</revision>\n", nsRepo, nsRPM, timestamp)
	for _, d := range []data{{"primary", primary(pkgs)}, {"filelists", filelists(pkgs)}, {"other", other(pkgs)}} {
		gz, err := gzipped(d.xml)
		if err != nil {
			return nil, err
		}
		sum, open := sha256.Sum256(gz), sha256.Sum256(d.xml)
		name := "repodata/" + hex.EncodeToString(sum[:]) + "-" + d.kind + ".xml.gz"
		out.Files = append(out.Files, File{Name: name, Data: gz, ContentType: "application/gzip"})
		fmt.Fprintf(&md, "  <data type=%q>\n    <checksum type=\"sha256\">%x</checksum>\n    <open-checksum type=\"sha256\">%x</open-checksum>\n"+
			"    <location href=%q/>\n    <timestamp>%d</timestamp>\n    <size>%d</size>\n    <open-size>%d</open-size>\n  </data>\n",
			d.kind, sum, open, name, timestamp, len(gz), len(d.xml))
	}
	md.WriteString("</repomd>\n")
	out.Files = append(out.Files, File{Name: "repodata/repomd.xml", Data: md.Bytes(), ContentType: "text/xml; charset=utf-8"})
	if sign != nil {
		asc, err := sign(md.Bytes())
		if err != nil {
			return nil, fmt.Errorf("signing repomd.xml: %w", err)
		}
		out.Files = append(out.Files, File{Name: "repodata/repomd.xml.asc", Data: asc, ContentType: "application/pgp-signature"})
	}
	return &out, nil
}

// gzipped compresses b (no name, no time in the gzip header: the same bytes give the same file).
func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// esc escapes s for XML text or a double-quoted attribute, dropping what XML 1.0 cannot hold.
func esc(s string) string {
	var b strings.Builder
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, ""))
	if err := xml.EscapeText(&b, []byte(s)); err != nil {
		return ""
	}
	return b.String()
}

// evr writes the version element of p.
func evr(b *bytes.Buffer, p *Package) {
	fmt.Fprintf(b, "  <version epoch=\"%s\" ver=\"%s\" rel=\"%s\"/>\n", esc(orZero(p.Epoch)), esc(p.Version), esc(p.Release))
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

// primary renders primary.xml: every package with its version, checksum, texts, sizes,
// location and its format (license…, header range, dependencies). The file lists are not
// listed (Slipway never reads a package's payload or file list): dnf resolves packages by name
// and by what they provide.
func primary(pkgs []Package) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	fmt.Fprintf(&b, "<metadata xmlns=%q xmlns:rpm=%q packages=\"%d\">\n", nsCommon, nsRPM, len(pkgs))
	for i := range pkgs {
		p := &pkgs[i]
		b.WriteString("<package type=\"rpm\">\n")
		fmt.Fprintf(&b, "  <name>%s</name>\n  <arch>%s</arch>\n", esc(p.Name), esc(p.Arch))
		evr(&b, p)
		fmt.Fprintf(&b, "  <checksum type=\"sha256\" pkgid=\"YES\">%s</checksum>\n", esc(p.SHA256))
		fmt.Fprintf(&b, "  <summary>%s</summary>\n  <description>%s</description>\n", esc(p.Summary), esc(p.Description))
		fmt.Fprintf(&b, "  <packager>%s</packager>\n  <url>%s</url>\n", esc(p.Packager), esc(p.URL))
		fmt.Fprintf(&b, "  <time file=\"%d\" build=\"%d\"/>\n", p.FileTime, p.BuildTime)
		fmt.Fprintf(&b, "  <size package=\"%d\" installed=\"%d\" archive=\"%d\"/>\n", p.Size, p.InstalledSize, p.Archive)
		fmt.Fprintf(&b, "  <location href=\"%s\"/>\n", esc(p.Href))
		b.WriteString("  <format>\n")
		for _, t := range [][2]string{{"license", p.License}, {"vendor", p.Vendor}, {"group", p.Group}, {"buildhost", p.BuildHost}, {"sourcerpm", p.SourceRPM}} {
			if t[1] == "" {
				fmt.Fprintf(&b, "    <rpm:%s/>\n", t[0])
			} else {
				fmt.Fprintf(&b, "    <rpm:%s>%s</rpm:%s>\n", t[0], esc(t[1]), t[0])
			}
		}
		fmt.Fprintf(&b, "    <rpm:header-range start=\"%d\" end=\"%d\"/>\n", p.HeaderStart, p.HeaderEnd)
		deps(&b, "provides", p.Provides)
		deps(&b, "requires", p.Requires)
		deps(&b, "conflicts", p.Conflicts)
		deps(&b, "obsoletes", p.Obsoletes)
		b.WriteString("  </format>\n</package>\n")
	}
	b.WriteString("</metadata>\n")
	return b.Bytes()
}

// deps writes one kind of dependency (nothing when there are none).
func deps(b *bytes.Buffer, kind string, ds []Dep) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(b, "    <rpm:%s>\n", kind)
	for _, d := range ds {
		fmt.Fprintf(b, "      <rpm:entry name=\"%s\"", esc(d.Name))
		if d.Flags != "" {
			fmt.Fprintf(b, " flags=\"%s\" epoch=\"%s\" ver=\"%s\"", esc(d.Flags), esc(orZero(d.Epoch)), esc(d.Ver))
			if d.Rel != "" {
				fmt.Fprintf(b, " rel=\"%s\"", esc(d.Rel))
			}
		}
		if d.Pre {
			b.WriteString(" pre=\"1\"")
		}
		b.WriteString("/>\n")
	}
	fmt.Fprintf(b, "    </rpm:%s>\n", kind)
}

// filelists renders filelists.xml: one entry per package, without files (see primary).
func filelists(pkgs []Package) []byte {
	return perPackage(pkgs, "filelists", nsFilelists)
}

// other renders other.xml: one entry per package, without changelogs (Slipway does not read them).
func other(pkgs []Package) []byte {
	return perPackage(pkgs, "otherdata", nsOther)
}

func perPackage(pkgs []Package, root, ns string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	fmt.Fprintf(&b, "<%s xmlns=%q packages=\"%d\">\n", root, ns, len(pkgs))
	for i := range pkgs {
		p := &pkgs[i]
		fmt.Fprintf(&b, "<package pkgid=\"%s\" name=\"%s\" arch=\"%s\">\n", esc(p.SHA256), esc(p.Name), esc(p.Arch))
		evr(&b, p)
		b.WriteString("</package>\n")
	}
	fmt.Fprintf(&b, "</%s>\n", root)
	return b.Bytes()
}

// ParseDeps reads dependencies as the rpm parser keeps them (pkg/appinfo/linux: "name [op
// [epoch:]version[-release]]" entries joined by ", ", a scriptlet's requirement ending " [pre]").
func ParseDeps(s string) []Dep {
	if s == "" {
		return nil
	}
	var out []Dep
	for _, e := range strings.Split(s, ", ") {
		var d Dep
		e, d.Pre = strings.CutSuffix(e, " [pre]")
		f := strings.Fields(e)
		if len(f) == 0 {
			continue
		}
		d.Name = f[0]
		flags := ""
		if len(f) == 3 {
			flags = map[string]string{"<": "LT", "<=": "LE", "=": "EQ", ">=": "GE", ">": "GT"}[f[1]]
		}
		switch {
		case flags != "":
			d.Flags = flags
			d.Epoch, d.Ver, d.Rel = SplitEVR(f[2])
		case len(f) != 1:
			d.Name = strings.TrimSpace(e) // a rich dependency ("(a or b)"): kept whole
		}
		out = append(out, d)
	}
	return out
}

// SplitEVR splits [epoch:]version[-release]; the epoch is "" when absent.
func SplitEVR(s string) (epoch, version, release string) {
	if e, rest, ok := strings.Cut(s, ":"); ok {
		if _, err := strconv.ParseUint(e, 10, 32); err == nil {
			epoch, s = e, rest
		}
	}
	version = s
	if i := strings.LastIndexByte(s, '-'); i > 0 {
		version, release = s[:i], s[i+1:]
	}
	return epoch, version, release
}
