package apt

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func pkg(id int64, name, version, arch string) Package {
	return Package{ID: id, Name: name, Version: version, Architecture: arch, Maintainer: "Dev <dev@example.com>",
		Description: name + " tool", Size: 1000 + id, SHA256: sum([]byte(fmt.Sprint(id))), Uploaded: time.Unix(id*60, 0)}
}

func TestCompareVersionsAsDpkg(t *testing.T) {
	cases := [][2]string{{"1.0", "1.0"}, {"1.0", "1.1"}, {"1.0~rc1", "1.0"}, {"1:0.1", "2.0"}, {"1.0-1", "1.0-2"}, {"1.0a", "1.0"},
		{"1.0+b1", "1.0"}, {"1.10", "1.9"}, {"1.0-1ubuntu1", "1.0-1"}, {"2.0~~", "2.0~"}, {"0001.0", "1.0"}, {"1.0.0", "1.0"}, {"a", "B"}}
	dpkg, err := exec.LookPath("dpkg")
	for _, c := range cases {
		got := CompareVersions(c[0], c[1])
		if -got != CompareVersions(c[1], c[0]) {
			t.Errorf("%s vs %s is not antisymmetric", c[0], c[1])
		}
		if err != nil {
			continue
		}
		for op, want := range map[string]bool{"lt": got < 0, "eq": got == 0, "gt": got > 0} {
			if ok := exec.Command(dpkg, "--compare-versions", c[0], op, c[1]).Run() == nil; ok != want {
				t.Errorf("%s %s %s: dpkg says %v, CompareVersions %d", c[0], op, c[1], ok, got)
			}
		}
	}
}

func TestSelect(t *testing.T) {
	a1, a2 := pkg(1, "tool", "1.0-1", "amd64"), pkg(2, "tool", "1.0-1", "amd64") // same package, version, arch: 2 is newer
	b := pkg(3, "tool", "1.1-1", "amd64")
	all := pkg(4, "docs", "1.0", "all")
	bad := pkg(5, "Bad Name", "1.0", "amd64")
	arm := pkg(6, "tool", "1.0-1", "arm64")
	listed, dropped := Select([]Package{b, a1, a2, all, bad, arm}, false)
	var ids []int64
	for _, p := range listed {
		ids = append(ids, p.ID)
	}
	if fmt.Sprint(ids) != "[4 2 6 3]" {
		t.Errorf("listed %v", ids)
	}
	if !strings.Contains(dropped[1], "replaced by build 2") || !strings.Contains(dropped[5], "not a Debian package name") || len(dropped) != 2 {
		t.Errorf("dropped %v", dropped)
	}
	cut := pkg(10, "cut", "1.0", "amd64")
	cut.Fields = map[string]string{"Depends": "libc6 (>= 2.34), libgtk-3-0 (>= 3.2"}
	ok := pkg(11, "ok", "1.0", "amd64")
	ok.Fields = map[string]string{"Depends": "libc6 (>= 2.34), libgtk-3-0 | libgtk-4-1, python3:any, foo [amd64], bar <!nocheck>", "Provides": "virtual (= 1.0)"}
	listed, dropped = Select([]Package{cut, ok}, false)
	if len(listed) != 1 || listed[0].ID != 11 || !strings.Contains(dropped[10], "Depends field is cut short") {
		t.Errorf("relations: listed %v, dropped %v", listed, dropped)
	}
	listed, dropped = Select([]Package{a1, b, a2, arm}, true)
	ids = nil
	for _, p := range listed {
		ids = append(ids, p.ID)
	}
	if fmt.Sprint(ids) != "[6 3]" || !strings.Contains(dropped[2], "only the newest version") {
		t.Errorf("newest only: %v %v", ids, dropped)
	}
}

// parse reads a deb822 file into paragraphs (continuation lines joined with "\n").
func parse(t *testing.T, b []byte) []map[string]string {
	t.Helper()
	var out []map[string]string
	cur := map[string]string{}
	var last string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = map[string]string{}
		case line[0] == ' ':
			cur[last] += "\n" + line[1:]
		default:
			k, v, ok := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			if !ok {
				t.Fatalf("bad line %q", line)
			}
			if _, dup := cur[k]; dup {
				t.Fatalf("field %s twice", k)
			}
			cur[k], last = v, k
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func TestBuild(t *testing.T) {
	p := pkg(7, "tool", "2:1.2-3", "amd64")
	p.Fields = map[string]string{"Depends": "libc6 (>= 2.34)", "Installed-Size": "123", "Section": "utils", "Priority": "optional",
		"Homepage": "https://example.com", "Recommends": ""}
	p.ExtendedDescription = "First paragraph\n.\n  verbatim\nevil\nPackage: injected"
	docs := pkg(8, "tool-docs", "1.0", "all")
	docs.Fields = map[string]string{"Installed-Size": "12 KiB"} // not a number: left out
	date := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	idx := Build(Meta{Origin: "Acme", Label: "Acme tool beta", Date: date}, []Package{p, docs, pkg(9, "tool", "1.0", "arm64")}, false)

	rel := parse(t, idx.Release)
	if len(rel) != 1 {
		t.Fatalf("Release has %d paragraphs", len(rel))
	}
	r := rel[0]
	for k, v := range map[string]string{"Suite": "stable", "Codename": "stable", "Components": "main", "Architectures": "amd64 arm64",
		"Acquire-By-Hash": "yes", "Date": "Thu, 03 Dec 2026 12:00:00 UTC", "Valid-Until": "Thu, 10 Dec 2026 12:00:00 UTC", "Origin": "Acme"} {
		if r[k] != v {
			t.Errorf("Release %s = %q, want %q", k, r[k], v)
		}
	}
	// Every file is listed with its size and hash, and found by hash.
	lines := strings.Split(strings.TrimSpace(r["SHA256"]), "\n")
	if len(lines) != 4 {
		t.Fatalf("SHA256 lists %q", r["SHA256"])
	}
	for _, l := range lines {
		var h, path string
		var n int
		fmt.Sscan(l, &h, &n, &path)
		f, ok := idx.Files[path]
		if !ok || sum(f) != h || len(f) != n || idx.ByHash[h] != path {
			t.Errorf("SHA256 line %q does not match the file", l)
		}
	}
	amd := parse(t, idx.Files["main/binary-amd64/Packages"])
	if len(amd) != 2 || amd[0]["Package"] != "tool" || amd[1]["Package"] != "tool-docs" {
		t.Fatalf("amd64 Packages: %v", amd)
	}
	s := amd[0]
	for k, v := range map[string]string{"Version": "2:1.2-3", "Architecture": "amd64", "Maintainer": "Dev <dev@example.com>",
		"Depends": "libc6 (>= 2.34)", "Installed-Size": "123", "Section": "utils", "Priority": "optional", "Homepage": "https://example.com",
		"Filename": "pool/7/tool_1.2-3_amd64.deb", "Size": "1007", "SHA256": p.SHA256,
		"Description": "tool tool\nFirst paragraph\n.\n  verbatim\nevil\nPackage: injected"} {
		if s[k] != v {
			t.Errorf("stanza %s = %q, want %q", k, s[k], v)
		}
	}
	if _, ok := s["Recommends"]; ok {
		t.Error("an empty field is written")
	}
	if _, ok := amd[1]["Installed-Size"]; ok {
		t.Error("a non-numeric Installed-Size is written")
	}
	arm := parse(t, idx.Files["main/binary-arm64/Packages"])
	if len(arm) != 2 || arm[0]["Package"] != "tool" || arm[1]["Architecture"] != "all" {
		t.Errorf("arm64 lacks the all package: %v", arm)
	}
	zr, err := gzip.NewReader(bytes.NewReader(idx.Files["main/binary-amd64/Packages.gz"]))
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, idx.Files["main/binary-amd64/Packages"]) {
		t.Error("Packages.gz is not Packages")
	}
	again := Build(Meta{Origin: "Acme", Label: "Acme tool beta", Date: date}, []Package{pkg(9, "tool", "1.0", "arm64"), docs, p}, false)
	if !bytes.Equal(again.Release, idx.Release) {
		t.Error("the same packages render another Release")
	}
	// A repository of "all" packages only still has an architecture.
	if got := Build(Meta{Date: date}, []Package{docs}, false); got.Files["main/binary-amd64/Packages"] == nil {
		t.Errorf("all-only repository: %v", got.Files)
	}
}

// dpkg's own deb822 parser reads the Packages file (merged as the available file of a scratch
// admin directory). apt's reading of the whole repository is TestAPT* in pkg/httpapi.
func TestPackagesParsesWithDpkg(t *testing.T) {
	dpkg, err := exec.LookPath("dpkg")
	if err != nil {
		t.Skip("dpkg is not installed")
	}
	p := pkg(7, "tool", "2:1.2-3", "amd64")
	p.Fields = map[string]string{"Depends": "libc6 (>= 2.34)", "Installed-Size": "123"}
	p.ExtendedDescription = "Line one\n.\nLine two"
	idx := Build(Meta{Date: time.Now()}, []Package{p}, false)
	dir := t.TempDir()
	if out, err := exec.Command("sh", "-c", "mkdir -p "+dir+"/updates && touch "+dir+"/status "+dir+"/available").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	f := dir + "/Packages"
	if err := writeFile(f, idx.Files["main/binary-amd64/Packages"]); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(dpkg, "--admindir", dir, "--merge-avail", f).CombinedOutput(); err != nil {
		t.Fatalf("dpkg --merge-avail: %v\n%s", err, out)
	}
	out, err := exec.Command(dpkg, "--admindir", dir, "--print-avail", "tool").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Version: 2:1.2-3") || !strings.Contains(string(out), " Line two") {
		t.Fatalf("dpkg --print-avail: %v\n%s", err, out)
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

// BenchmarkBuild1000 renders the index of 1,000 packages (100 names, 10 versions), unsigned.
func BenchmarkBuild1000(b *testing.B) {
	var pkgs []Package
	for i := 0; i < 1000; i++ {
		p := pkg(int64(i), fmt.Sprintf("bench-tool-%03d", i%100), fmt.Sprintf("1.%d-1", i/100), "amd64")
		p.Fields = map[string]string{"Depends": "libc6 (>= 2.34), libssl3", "Installed-Size": "1024", "Section": "utils"}
		p.ExtendedDescription = "A longer description\nof two lines."
		pkgs = append(pkgs, p)
	}
	date := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		Build(Meta{Origin: "Bench", Date: date}, pkgs, false)
	}
}
