package linux

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// rpmQueryFields are the header fields compared with rpm -qp --queryformat: the property (or
// "" for a field of Info) and rpm's tag.
var rpmQueryFields = []struct{ prop, tag string }{
	{"Epoch", "EPOCH"}, {"Release", "RELEASE"}, {"License", "LICENSE"}, {"URL", "URL"}, {"Packager", "PACKAGER"},
	{"Vendor", "VENDOR"}, {"Group", "GROUP"}, {"BuildHost", "BUILDHOST"}, {"SourceRPM", "SOURCERPM"},
	{"BuildTime", "BUILDTIME"}, {"InstalledSize", "SIZE"}, {"ArchiveSize", "ARCHIVESIZE"}, {"Description", "DESCRIPTION"},
}

// TestRPMAgainstRPMQuery compares what ParseRPM reads with what Debian's rpm says of the same
// packages: the shared fixture, the testdata ones and packages rpmbuild makes here (dependencies
// of every kind, a requirement of a scriptlet, a description of several lines, and one of 3,000
// files, whose dependencies sit past its file lists: the reads that costs are counted). The
// header range is checked against the file: the main header's magic at its start, the payload's
// compressor's magic at its end.
func TestRPMAgainstRPMQuery(t *testing.T) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("rpm and rpmbuild are not installed (test/dnf.sh installs them)")
		}
		t.Skip("rpm and rpmbuild are not installed")
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"field-tool": fixtures.Read(t, "linux/field-tool-0.9.1-7.noarch.rpm"),
	}
	for _, f := range []string{"real-demo-2.0.1-5.el9.noarch.rpm", "real-demo-2.0.1-5.el9.src.rpm"} {
		b, err := os.ReadFile("testdata/real/" + f)
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	deps := []string{"Requires: coreutils >= 8.0", "Requires(pre): shadow-utils", "Requires: bash < 9:6.0-1",
		"Provides: demo-virtual = 3.1", "Provides: demo-bare", "Conflicts: demo-old < 2.0", "Obsoletes: legacy-demo <= 1.0-4",
		"Conflicts: other-demo", "Obsoletes: ancient-demo"}
	for name, o := range map[string]linuxtest.SpecOptions{
		"deps": {Name: "deps-demo", Version: "2.3", Release: "4.fc41", Epoch: 2, Deps: deps,
			Description: "First line of the description.\n\n  An indented line & <markup>.\nLast line."},
		"many-files": {Name: "many-demo", Version: "1.0", Deps: deps, Files: 3000},
	} {
		p, err := linuxtest.RPMBuild(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if files[name], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			p := dir + "/" + name + ".rpm"
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r := &countingReader{r: bytes.NewReader(data)}
			info, err := ParseRPM(r, int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d reads, %d of %d bytes", r.calls.Load(), r.bytes.Load(), len(data))
			if r.calls.Load() > 7 {
				t.Errorf("%d reads, want at most 7", r.calls.Load())
			}
			q := func(format string) string {
				out, err := exec.Command("rpm", "-qp", "--nosignature", "--nodigest", "--qf", format, p).Output()
				if err != nil {
					t.Fatalf("rpm -qp --qf %q: %v", format, err)
				}
				return string(out)
			}
			for _, f := range rpmQueryFields {
				want := q("%{" + f.tag + "}")
				if want == "(none)" || f.tag == "ARCHIVESIZE" && want == "0" {
					want = ""
				}
				if f.prop == "Description" {
					want = strings.Trim(want, "\n")
				}
				if got := info.Properties[f.prop]; got != want {
					t.Errorf("%s = %q, rpm says %s = %q", f.prop, got, f.tag, want)
				}
			}
			for _, c := range [][2]string{{info.Name, "NAME"}, {info.ReleaseVersion, "VERSION"}, {info.Architectures[0], "ARCH"}, {info.Description, "SUMMARY"}} {
				if want := q("%{" + c[1] + "}"); c[0] != want && !(c[1] == "ARCH" && q("%{SOURCEPACKAGE}") == "1") {
					t.Errorf("%s: parsed %q, rpm says %q", c[1], c[0], want)
				}
			}
			for prop, tag := range map[string]string{"Provides": "PROVIDE", "Requires": "REQUIRE", "Conflicts": "CONFLICT", "Obsoletes": "OBSOLETE"} {
				var want []string
				lines := strings.Split(strings.TrimSuffix(q("[%{"+tag+"NEVRS}\\t%{"+tag+"FLAGS}\\n]"), "\n"), "\n")
				for _, l := range lines {
					nevr, flags, ok := strings.Cut(l, "\t")
					if !ok || strings.HasPrefix(nevr, "rpmlib(") {
						continue
					}
					if f, _ := strconv.Atoi(flags); tag == "REQUIRE" && f&rpmSensePre != 0 {
						nevr += " [pre]"
					}
					want = append(want, nevr)
				}
				if got := info.Properties[prop]; got != strings.Join(want, ", ") {
					t.Errorf("%s = %q, rpm says %q", prop, got, strings.Join(want, ", "))
				}
			}
			start, _ := strconv.Atoi(info.Properties["HeaderStart"])
			end, _ := strconv.Atoi(info.Properties["HeaderEnd"])
			if start <= 96 || end <= start || end > len(data) || !bytes.Equal(data[start:start+4], rpmHeaderMagic) {
				t.Fatalf("header range %d-%d does not start at a header", start, end)
			}
			magic := map[string][]byte{"xz": {0xfd, '7', 'z', 'X', 'Z', 0}, "gzip": {0x1f, 0x8b}, "zstd": {0x28, 0xb5, 0x2f, 0xfd}}[q("%{PAYLOADCOMPRESSOR}")]
			if magic == nil || !bytes.HasPrefix(data[end:], magic) {
				t.Errorf("the payload (%s) does not start at the header range's end %d: % x", q("%{PAYLOADCOMPRESSOR}"), end, data[end:min(end+6, len(data))])
			}
		})
	}
}

// The tags read for a repository's index are optional: malformed or far away, they are left
// out and the package still parses; a declared count never sizes an allocation.
func TestRPMExtraTagsHostile(t *testing.T) {
	name, version := linuxtest.RPMStr(linuxtest.RPMTagName, "n"), linuxtest.RPMStr(linuxtest.RPMTagVersion, "1")
	for what, c := range map[string]struct {
		tags []linuxtest.RPMTag
		prop string
	}{
		"requires claims 2^31 names": {[]linuxtest.RPMTag{{Tag: 1049, Type: linuxtest.RPMStringArray, Data: []byte("a\x00"), Count: 1 << 31}}, "Requires"},
		"provide flags cut short":    {[]linuxtest.RPMTag{{Tag: 1047, Type: linuxtest.RPMStringArray, Data: []byte("a\x00b\x00"), Count: 2}, {Tag: 1112, Type: linuxtest.RPMInt32, Data: []byte{0, 0, 0, 8}, Count: 2}}, ""},
		"a description of 5 MiB":     {[]linuxtest.RPMTag{{Tag: 1005, Type: linuxtest.RPMString, Data: append(make([]byte, 5<<20), 0)}}, "Description"},
		"description 5 MiB away":     {[]linuxtest.RPMTag{{Tag: 5000, Type: linuxtest.RPMBin, Data: make([]byte, 5<<20)}, {Tag: 1005, Type: linuxtest.RPMString, Data: []byte("far\x00")}}, ""},
		"description past the data":  {[]linuxtest.RPMTag{{Tag: 1005, Type: linuxtest.RPMString, Data: []byte("x\x00"), Offset: 1 << 30}}, "Description"},
		"unterminated build host":    {[]linuxtest.RPMTag{{Tag: 1007, Type: linuxtest.RPMString, Data: []byte("abc")}}, "BuildHost"},
		"build time of 2 bytes":      {[]linuxtest.RPMTag{{Tag: 1006, Type: linuxtest.RPMInt32, Data: []byte{1, 2}}}, "BuildTime"},
		"requires of a binary type":  {[]linuxtest.RPMTag{{Tag: 1049, Type: linuxtest.RPMBin, Data: []byte("a\x00")}}, "Requires"},
	} {
		t.Run(what, func(t *testing.T) {
			tags := append([]linuxtest.RPMTag{name, version}, c.tags...)
			info, err := parseRPM(linuxtest.BuildRPM(linuxtest.RPMOptions{Header: linuxtest.RPMHeader(tags)}))
			if err != nil {
				t.Fatalf("a malformed optional tag fails the parse: %v", err)
			}
			if c.prop != "" && info.Properties[c.prop] != "" {
				t.Errorf("%s = %q, want it left out", c.prop, info.Properties[c.prop])
			}
			if what == "description 5 MiB away" && info.Properties["Description"] != "far" {
				t.Errorf("Description = %q, want it read with a read of its own", info.Properties["Description"])
			}
			if what == "provide flags cut short" && info.Properties["Provides"] != "a, b" {
				t.Errorf("Provides = %q, want the names without versions", info.Properties["Provides"])
			}
		})
	}
}
