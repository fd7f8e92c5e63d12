package rpmmd

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// The rpm-md documents as an independent decoder (encoding/xml, by namespace) reads them.
type repomdDoc struct {
	XMLName  xml.Name `xml:"http://linux.duke.edu/metadata/repo repomd"`
	Revision string   `xml:"revision"`
	Data     []struct {
		Type     string `xml:"type,attr"`
		Checksum struct {
			Type  string `xml:"type,attr"`
			Value string `xml:",chardata"`
		} `xml:"checksum"`
		OpenChecksum struct {
			Type  string `xml:"type,attr"`
			Value string `xml:",chardata"`
		} `xml:"open-checksum"`
		Location struct {
			Href string `xml:"href,attr"`
		} `xml:"location"`
		Timestamp string `xml:"timestamp"`
		Size      int    `xml:"size"`
		OpenSize  int    `xml:"open-size"`
	} `xml:"data"`
}

type entryDoc struct {
	Name  string `xml:"name,attr"`
	Flags string `xml:"flags,attr"`
	Epoch string `xml:"epoch,attr"`
	Ver   string `xml:"ver,attr"`
	Rel   string `xml:"rel,attr"`
	Pre   string `xml:"pre,attr"`
}

type versionDoc struct {
	Epoch string `xml:"epoch,attr"`
	Ver   string `xml:"ver,attr"`
	Rel   string `xml:"rel,attr"`
}

type primaryDoc struct {
	XMLName  xml.Name `xml:"http://linux.duke.edu/metadata/common metadata"`
	Count    string   `xml:"packages,attr"`
	Packages []struct {
		Type     string     `xml:"type,attr"`
		Name     string     `xml:"name"`
		Arch     string     `xml:"arch"`
		Version  versionDoc `xml:"version"`
		Checksum struct {
			Type  string `xml:"type,attr"`
			PkgID string `xml:"pkgid,attr"`
			Value string `xml:",chardata"`
		} `xml:"checksum"`
		Summary     string `xml:"summary"`
		Description string `xml:"description"`
		Packager    string `xml:"packager"`
		URL         string `xml:"url"`
		Time        struct {
			File  string `xml:"file,attr"`
			Build string `xml:"build,attr"`
		} `xml:"time"`
		Size struct {
			Package   string `xml:"package,attr"`
			Installed string `xml:"installed,attr"`
			Archive   string `xml:"archive,attr"`
		} `xml:"size"`
		Location struct {
			Href string `xml:"href,attr"`
		} `xml:"location"`
		Format struct {
			License     string `xml:"http://linux.duke.edu/metadata/rpm license"`
			Vendor      string `xml:"http://linux.duke.edu/metadata/rpm vendor"`
			Group       string `xml:"http://linux.duke.edu/metadata/rpm group"`
			BuildHost   string `xml:"http://linux.duke.edu/metadata/rpm buildhost"`
			SourceRPM   string `xml:"http://linux.duke.edu/metadata/rpm sourcerpm"`
			HeaderRange struct {
				Start string `xml:"start,attr"`
				End   string `xml:"end,attr"`
			} `xml:"http://linux.duke.edu/metadata/rpm header-range"`
			Provides  []entryDoc `xml:"http://linux.duke.edu/metadata/rpm provides>entry"`
			Requires  []entryDoc `xml:"http://linux.duke.edu/metadata/rpm requires>entry"`
			Conflicts []entryDoc `xml:"http://linux.duke.edu/metadata/rpm conflicts>entry"`
			Obsoletes []entryDoc `xml:"http://linux.duke.edu/metadata/rpm obsoletes>entry"`
		} `xml:"format"`
	} `xml:"package"`
}

type perPackageDoc struct {
	XMLName  xml.Name
	Count    string `xml:"packages,attr"`
	Packages []struct {
		PkgID   string     `xml:"pkgid,attr"`
		Name    string     `xml:"name,attr"`
		Arch    string     `xml:"arch,attr"`
		Version versionDoc `xml:"version"`
	} `xml:"package"`
}

func samplePackages() []Package {
	return []Package{{
		Name: "demo", Arch: "x86_64", Epoch: "2", Version: "1.0", Release: "3.fc41", SHA256: strings.Repeat("ab", 32),
		Summary: `Tools & <things> "quoted"`, Description: "Line one.\n\n  Indented & more.\x01", Packager: "P <p@example.org>",
		URL: "https://example.org/?a=1&b=2", License: "MIT", Vendor: "V", Group: "Unspecified", BuildHost: "host",
		SourceRPM: "demo-1.0-3.fc41.src.rpm", FileTime: 1700000100, BuildTime: 1700000000, Size: 6000, InstalledSize: 20,
		Archive: 276, HeaderStart: 4504, HeaderEnd: 6205, Href: "packages/7/demo-1.0-3.fc41.x86_64.rpm",
		Provides:  ParseDeps("demo = 2:1.0-3.fc41, demo-virtual = 3.1, demo-bare"),
		Requires:  ParseDeps("coreutils >= 8.0, shadow-utils [pre], bash < 9:6.0-1, (a or b)"),
		Conflicts: ParseDeps("demo-old < 2.0"), Obsoletes: ParseDeps("legacy-demo <= 1.0-4"),
	}, {
		Name: "other", Arch: "noarch", Version: "0.1", Release: "1", SHA256: strings.Repeat("cd", 32), Href: "packages/8/other.rpm",
	}}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRender renders two packages and reads every file back with encoding/xml: repomd.xml's
// checksums, sizes and locations match the data files, each data file lists both packages
// with what was given (escaped text read back as it was), and repomd.xml.asc is the signature
// of repomd.xml's bytes.
func TestRender(t *testing.T) {
	pkgs := samplePackages()
	var signed []byte
	repo, err := Render(pkgs, 1700000200, func(b []byte) ([]byte, error) { signed = b; return []byte("SIG"), nil })
	if err != nil {
		t.Fatal(err)
	}
	md, ok := repo.Get("repodata/repomd.xml")
	if !ok {
		t.Fatal("no repomd.xml")
	}
	if asc, ok := repo.Get("repodata/repomd.xml.asc"); !ok || string(asc.Data) != "SIG" || !bytes.Equal(signed, md.Data) {
		t.Errorf("repomd.xml.asc = %q, signed %d bytes of %d", asc.Data, len(signed), len(md.Data))
	}
	var doc repomdDoc
	if err := xml.Unmarshal(md.Data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Revision != "1700000200" || len(doc.Data) != 3 {
		t.Fatalf("repomd: %+v", doc)
	}
	opened := map[string][]byte{}
	for i, d := range doc.Data {
		if want := []string{"primary", "filelists", "other"}[i]; d.Type != want {
			t.Errorf("data %d is %s, want %s", i, d.Type, want)
		}
		f, ok := repo.Get(d.Location.Href)
		if !ok {
			t.Fatalf("%s: no file at %s", d.Type, d.Location.Href)
		}
		sum := sha256.Sum256(f.Data)
		plain := gunzip(t, f.Data)
		open := sha256.Sum256(plain)
		if d.Checksum.Type != "sha256" || d.Checksum.Value != hex.EncodeToString(sum[:]) || d.OpenChecksum.Value != hex.EncodeToString(open[:]) ||
			d.Size != len(f.Data) || d.OpenSize != len(plain) || d.Timestamp != "1700000200" {
			t.Errorf("%s: repomd says %+v; the file has %d bytes, %d open", d.Type, d, len(f.Data), len(plain))
		}
		if want := "repodata/" + hex.EncodeToString(sum[:]) + "-" + d.Type + ".xml.gz"; d.Location.Href != want {
			t.Errorf("%s is at %s, want %s", d.Type, d.Location.Href, want)
		}
		opened[d.Type] = plain
	}
	var p primaryDoc
	if err := xml.Unmarshal(opened["primary"], &p); err != nil {
		t.Fatal(err)
	}
	if p.Count != "2" || len(p.Packages) != 2 {
		t.Fatalf("primary lists %s/%d packages", p.Count, len(p.Packages))
	}
	a := p.Packages[0]
	got := []string{a.Type, a.Name, a.Arch, a.Version.Epoch, a.Version.Ver, a.Version.Rel, a.Checksum.Type, a.Checksum.PkgID, a.Checksum.Value,
		a.Summary, a.Description, a.Packager, a.URL, a.Time.File, a.Time.Build, a.Size.Package, a.Size.Installed, a.Size.Archive, a.Location.Href,
		a.Format.License, a.Format.Vendor, a.Format.Group, a.Format.BuildHost, a.Format.SourceRPM, a.Format.HeaderRange.Start, a.Format.HeaderRange.End}
	want := []string{"rpm", "demo", "x86_64", "2", "1.0", "3.fc41", "sha256", "YES", strings.Repeat("ab", 32),
		`Tools & <things> "quoted"`, "Line one.\n\n  Indented & more.", "P <p@example.org>", "https://example.org/?a=1&b=2", "1700000100", "1700000000",
		"6000", "20", "276", "packages/7/demo-1.0-3.fc41.x86_64.rpm", "MIT", "V", "Unspecified", "host", "demo-1.0-3.fc41.src.rpm", "4504", "6205"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("primary's first package:\n got %q\nwant %q", got, want)
	}
	wantDeps := map[string][]entryDoc{
		"provides":  {{Name: "demo", Flags: "EQ", Epoch: "2", Ver: "1.0", Rel: "3.fc41"}, {Name: "demo-virtual", Flags: "EQ", Epoch: "0", Ver: "3.1"}, {Name: "demo-bare"}},
		"requires":  {{Name: "coreutils", Flags: "GE", Epoch: "0", Ver: "8.0"}, {Name: "shadow-utils", Pre: "1"}, {Name: "bash", Flags: "LT", Epoch: "9", Ver: "6.0", Rel: "1"}, {Name: "(a or b)"}},
		"conflicts": {{Name: "demo-old", Flags: "LT", Epoch: "0", Ver: "2.0"}},
		"obsoletes": {{Name: "legacy-demo", Flags: "LE", Epoch: "0", Ver: "1.0", Rel: "4"}},
	}
	for kind, got := range map[string][]entryDoc{"provides": a.Format.Provides, "requires": a.Format.Requires, "conflicts": a.Format.Conflicts, "obsoletes": a.Format.Obsoletes} {
		if !reflect.DeepEqual(got, wantDeps[kind]) {
			t.Errorf("%s = %+v, want %+v", kind, got, wantDeps[kind])
		}
	}
	if b := p.Packages[1]; b.Name != "other" || b.Version.Epoch != "0" || b.Format.Provides != nil || b.Format.HeaderRange.End != "0" {
		t.Errorf("second package: %+v", b)
	}
	for kind, ns := range map[string]string{"filelists": nsFilelists, "other": nsOther} {
		var d perPackageDoc
		if err := xml.Unmarshal(opened[kind], &d); err != nil {
			t.Fatal(err)
		}
		if d.XMLName.Space != ns || d.Count != "2" || len(d.Packages) != 2 || d.Packages[0].PkgID != strings.Repeat("ab", 32) ||
			d.Packages[0].Name != "demo" || d.Packages[0].Arch != "x86_64" || d.Packages[0].Version != (versionDoc{"2", "1.0", "3.fc41"}) {
			t.Errorf("%s: %+v", kind, d)
		}
	}
	// The same packages render the same bytes (replicas agree); another set, other names.
	again, _ := Render(pkgs, 1700000200, nil)
	if len(again.Files) != 4 || !bytes.Equal(again.Files[3].Data, md.Data) {
		t.Errorf("rendering again gave other bytes")
	}
	fewer, _ := Render(pkgs[:1], 1700000200, nil)
	if fewer.Files[0].Name == repo.Files[0].Name {
		t.Errorf("primary of another package set has the same name %s", fewer.Files[0].Name)
	}
}

// An empty repository is valid: dnf reads it as holding no packages.
func TestRenderEmpty(t *testing.T) {
	repo, err := Render(nil, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p primaryDoc
	if err := xml.Unmarshal(gunzip(t, repo.Files[0].Data), &p); err != nil || p.Count != "0" {
		t.Errorf("empty primary: %v %+v", err, p)
	}
}

func TestSplitEVR(t *testing.T) {
	for in, want := range map[string][3]string{
		"1.0": {"", "1.0", ""}, "1.0-2": {"", "1.0", "2"}, "3:1.0-2.fc41": {"3", "1.0", "2.fc41"}, "x:1-2": {"", "x:1", "2"}, "1.0-rc-2": {"", "1.0-rc", "2"},
	} {
		e, v, r := SplitEVR(in)
		if [3]string{e, v, r} != want {
			t.Errorf("SplitEVR(%q) = %q, %q, %q; want %q", in, e, v, r, want)
		}
	}
}

// BenchmarkRender1000 renders a repository of 1,000 packages (docs/benchmarks.md).
func BenchmarkRender1000(b *testing.B) {
	one := samplePackages()[0]
	pkgs := make([]Package, 1000)
	for i := range pkgs {
		pkgs[i] = one
		pkgs[i].Version = fmt.Sprintf("1.%d", i)
		pkgs[i].SHA256 = fmt.Sprintf("%064x", i)
	}
	var size int
	for b.Loop() {
		repo, err := Render(pkgs, 1700000000, nil)
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, f := range repo.Files {
			size += len(f.Data)
		}
	}
	b.ReportMetric(float64(size), "bytes")
}
