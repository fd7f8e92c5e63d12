package linux

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// wantInvalid checks that err is an errs.Invalid error mentioning msg.
func wantInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want an errs.Invalid error mentioning %q", msg)
	}
	if errs.KindOf(err) != errs.Invalid {
		t.Fatalf("error %q is not errs.Invalid", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not mention %q", err, msg)
	}
}

func mustParse(t *testing.T, parse func([]byte) (*appinfo.Info, error), data []byte) *appinfo.Info {
	t.Helper()
	info, err := parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func parseDeb(b []byte) (*appinfo.Info, error)      { return parseWith(ParseDeb, b) }
func parseRPM(b []byte) (*appinfo.Info, error)      { return parseWith(ParseRPM, b) }
func parseAppImage(b []byte) (*appinfo.Info, error) { return parseWith(ParseAppImage, b) }

func TestDebSynthetic(t *testing.T) {
	base := want{Format: appinfo.FormatDeb, Name: "demo", BundleID: "demo", Release: "1.2.3", Build: "1.2.3-1",
		Arch: []string{"amd64"}, Publisher: "Demo Team <demo@example.com>", Description: "demo app",
		Props: map[string]string{"Revision": "1", "Extended-Description": "A demo package built in code."}}
	for _, comp := range []string{"gz", "xz", "zst", "none"} {
		for _, gnu := range []bool{false, true} {
			t.Run(fmt.Sprint(comp, gnu), func(t *testing.T) {
				base.check(t, mustParse(t, parseDeb, linuxtest.BuildDeb(linuxtest.DebOptions{Compression: comp, GNUNames: gnu})))
			})
		}
	}
	t.Run("fields", func(t *testing.T) {
		info := mustParse(t, parseDeb, linuxtest.BuildDeb(linuxtest.DebOptions{
			Package: "org-demo", Version: "2:1.0~rc1-0ubuntu1", Architecture: "all", Maintainer: "Ünïcode <u@example.com>",
			Description: "first line\n second line\n .\n third",
			Extra: []linuxtest.Field{{Name: "Depends", Value: "libc6 (>= 2.34),\n libgtk-3-0"}, {Name: "Section", Value: "utils"},
				{Name: "Homepage", Value: "https://example.com"}, {Name: "Priority", Value: "optional"}},
			Before: []linuxtest.TarFile{{Name: "./md5sums", Data: []byte("x  usr/bin/demo\n")}},
			After:  []linuxtest.TarFile{{Name: "./postinst", Data: []byte("#!/bin/sh\n")}},
		}))
		want{Format: appinfo.FormatDeb, Name: "org-demo", BundleID: "org-demo", Release: "1.0~rc1", Build: "2:1.0~rc1-0ubuntu1",
			Arch: []string{"all"}, Publisher: "Ünïcode <u@example.com>", Description: "first line",
			Props: map[string]string{"Revision": "0ubuntu1", "Epoch": "2", "Depends": "libc6 (>= 2.34), libgtk-3-0",
				"Section": "utils", "Homepage": "https://example.com", "Priority": "optional",
				"Extended-Description": "second line\n.\nthird"}}.check(t, info)
	})
	t.Run("index fields", func(t *testing.T) {
		// What an APT index repeats: relation fields, Installed-Size (digits only), a verbatim
		// (two-space) description line, bounded.
		long := strings.Repeat(" word", 3000)
		info := mustParse(t, parseDeb, linuxtest.BuildDeb(linuxtest.DebOptions{
			Description: "tool\n para one\n .\n   verbatim  code\n" + long,
			Extra: []linuxtest.Field{{Name: "Installed-Size", Value: "1234"}, {Name: "Pre-Depends", Value: "dpkg (>= 1.17)"},
				{Name: "Recommends", Value: "a | b"}, {Name: "Conflicts", Value: "old"}, {Name: "Breaks", Value: "old (<< 2)"},
				{Name: "Replaces", Value: "old"}, {Name: "Provides", Value: "virtual"}, {Name: "Suggests", Value: "doc"},
				{Name: "Multi-Arch", Value: "foreign"}},
		}))
		p := info.Properties
		for k, v := range map[string]string{"Installed-Size": "1234", "Pre-Depends": "dpkg (>= 1.17)", "Recommends": "a | b",
			"Conflicts": "old", "Breaks": "old (<< 2)", "Replaces": "old", "Provides": "virtual", "Suggests": "doc", "Multi-Arch": "foreign"} {
			if p[k] != v {
				t.Errorf("%s = %q, want %q", k, p[k], v)
			}
		}
		if ext := p["Extended-Description"]; !strings.HasPrefix(ext, "para one\n.\n  verbatim  code") || len(ext) > 4<<10 {
			t.Errorf("Extended-Description %q (%d bytes)", ext[:min(len(ext), 80)], len(ext))
		}
		info = mustParse(t, parseDeb, linuxtest.BuildDeb(linuxtest.DebOptions{Extra: []linuxtest.Field{{Name: "Installed-Size", Value: "12\n Package: evil"}}}))
		if _, ok := info.Properties["Installed-Size"]; ok {
			t.Errorf("a non-numeric Installed-Size is kept: %q", info.Properties["Installed-Size"])
		}
	})
	t.Run("raw control", func(t *testing.T) {
		// Field names in any case, comments, CRLF line ends, a second paragraph ignored, the
		// first of a repeated field.
		info := mustParse(t, parseDeb, linuxtest.BuildDeb(linuxtest.DebOptions{
			Control: "# comment\r\npackage: raw\r\nVERSION: 3.0\r\nPackage: other\r\nDescription:   spaced  \r\n\r\nPackage: second\r\n"}))
		want{Format: appinfo.FormatDeb, Name: "raw", BundleID: "raw", Release: "3.0", Build: "3.0", Description: "spaced"}.check(t, info)
	})
	t.Run("signature members", func(t *testing.T) {
		// Members named "_..." (debsigs) may sit between debian-binary, control.tar and data.tar.
		name, control := linuxtest.ControlTar(linuxtest.DebOptions{})
		deb := linuxtest.Ar(linuxtest.ArFile{Name: "debian-binary", Data: []byte("2.0\n")}, linuxtest.ArFile{Name: "_gpgorigin", Data: []byte("sig")},
			linuxtest.ArFile{Name: name, Data: control}, linuxtest.ArFile{Name: "_gpgbuilder", Data: []byte("x")},
			linuxtest.ArFile{Name: "data.tar.gz", Data: []byte("opaque")})
		base.check(t, mustParse(t, parseDeb, deb))
	})
	t.Run("streamed payload", func(t *testing.T) {
		var b bytes.Buffer
		n, err := linuxtest.WriteDeb(&b, linuxtest.DebOptions{DataBytes: 100_001})
		if err != nil || n != int64(b.Len()) {
			t.Fatalf("WriteDeb = %d, %v (wrote %d)", n, err, b.Len())
		}
		base.check(t, mustParse(t, parseDeb, b.Bytes()))
	})
}

func TestSplitDebVersion(t *testing.T) {
	for v, w := range map[string][3]string{
		"1.0":          {"", "1.0", ""},
		"1.0-1":        {"", "1.0", "1"},
		"1:1.0":        {"1", "1.0", ""},
		"1.0-2-3":      {"", "1.0-2", "3"},
		"10:2.4+dfsg-": {"10", "2.4+dfsg", ""},
		"a:1.0":        {"", "a:1.0", ""},
		":1.0":         {"", ":1.0", ""},
		"-1":           {"", "-1", ""},
	} {
		e, u, r := splitDebVersion(v)
		if [3]string{e, u, r} != w {
			t.Errorf("splitDebVersion(%q) = %q, %q, %q; want %q", v, e, u, r, w)
		}
	}
}

func TestRPMSynthetic(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		want{Format: appinfo.FormatRPM, Name: "demo", BundleID: "demo", Release: "1.2.3", Build: "1.2.3-1", Arch: []string{"x86_64"},
			Description: "Demo package", Props: map[string]string{"Release": "1", "License": "MIT", "Description": "A demo package built in code.",
				"BuildTime": "1700000000", "Group": "Unspecified", "SourceRPM": "demo-1.2.3-1.src.rpm", "ArchiveSize": "64", "HeaderStart": "184", "HeaderEnd": "587"}}.
			check(t, mustParse(t, parseRPM, linuxtest.BuildRPM(linuxtest.RPMOptions{})))
	})
	t.Run("all fields", func(t *testing.T) {
		info := mustParse(t, parseRPM, linuxtest.BuildRPM(linuxtest.RPMOptions{Name: "org.demo", Version: "4.5", Release: "2.fc40",
			Arch: "aarch64", Summary: "Sum", Vendor: "Vendor Inc.", Packager: "Pack <p@example.com>", License: "GPL-2.0-only",
			URL: "https://example.com", Epoch: 7, Source: true, PayloadBytes: 70_000}))
		want{Format: appinfo.FormatRPM, Name: "org.demo", BundleID: "org.demo", Release: "4.5", Build: "4.5-2.fc40", Arch: []string{"aarch64"},
			Publisher: "Vendor Inc.", Description: "Sum", Props: map[string]string{"Release": "2.fc40", "Epoch": "7",
				"License": "GPL-2.0-only", "URL": "https://example.com", "SourcePackage": "true", "Description": "A demo package built in code.",
				"BuildTime": "1700000000", "Group": "Unspecified", "Packager": "Pack <p@example.com>", "Vendor": "Vendor Inc.",
				"ArchiveSize": "70000", "HeaderStart": "184", "HeaderEnd": "678"}}.check(t, info)
	})
	t.Run("packager without vendor", func(t *testing.T) {
		info := mustParse(t, parseRPM, linuxtest.BuildRPM(linuxtest.RPMOptions{Packager: "Pack <p@example.com>"}))
		if info.Publisher != "Pack <p@example.com>" {
			t.Errorf("Publisher = %q", info.Publisher)
		}
	})
	t.Run("raw header", func(t *testing.T) {
		// No release; a translated summary (the first string is the untranslated one); a repeated
		// name (the first wins); the tags in any order.
		hdr := linuxtest.RPMHeader([]linuxtest.RPMTag{
			{Tag: linuxtest.RPMTagSummary, Type: linuxtest.RPMI18NString, Data: []byte("Hello\x00Hallo\x00"), Count: 2},
			linuxtest.RPMStr(linuxtest.RPMTagVersion, "9"), linuxtest.RPMStr(linuxtest.RPMTagName, "first"),
			linuxtest.RPMStr(linuxtest.RPMTagName, "second"), linuxtest.RPMStr(linuxtest.RPMTagSourceRPM, "x.src.rpm"),
		})
		info := mustParse(t, parseRPM, linuxtest.BuildRPM(linuxtest.RPMOptions{Header: hdr}))
		want{Format: appinfo.FormatRPM, Name: "first", BundleID: "first", Release: "9", Build: "9", Description: "Hello",
			Props: map[string]string{"SourceRPM": "x.src.rpm", "ArchiveSize": "64", "HeaderStart": "184", "HeaderEnd": "317"}}.check(t, info)
	})
}

func TestAppImageSynthetic(t *testing.T) {
	base := want{Format: appinfo.FormatAppImage, Name: "Demo", BundleID: "demo", Release: "1.2.3", Build: "1.2.3",
		Arch: []string{"x86_64"}, Props: map[string]string{"Categories": "Utility"}, Icon: 64}
	for _, comp := range []string{"gzip", "xz", "zstd", "none"} {
		for _, bs := range []int{4096, 1 << 20} {
			for _, nofrag := range []bool{false, true} {
				t.Run(fmt.Sprint(comp, bs, nofrag), func(t *testing.T) {
					o := linuxtest.AppImageOptions{Squash: linuxtest.SquashOptions{Compression: comp, BlockSize: bs}, NoFragments: nofrag}
					base.check(t, mustParse(t, parseAppImage, linuxtest.BuildAppImage(o)))
					// A large icon spans several blocks (and, without fragments, ends in a short one).
					o.IconSize = 300
					w := base
					w.Icon = 300
					w.check(t, mustParse(t, parseAppImage, linuxtest.BuildAppImage(o)))
				})
			}
		}
	}
	for _, tc := range []struct {
		name string
		o    linuxtest.AppImageOptions
		edit func(*want)
	}{
		{"no version", linuxtest.AppImageOptions{Version: "-"}, func(w *want) { w.Release, w.Build = "", "" }},
		{"desktop fields", linuxtest.AppImageOptions{DesktopName: "org.example.App", Comment: `Tabs\tand\\slashes`, Categories: "Graphics;2DGraphics;"},
			func(w *want) {
				w.BundleID, w.Description, w.Props = "org.example.App", `Tabs and\slashes`, map[string]string{"Categories": "Graphics;2DGraphics"}
			}},
		{"no name", linuxtest.AppImageOptions{Desktop: "[Desktop Entry]\nName[de]=Nur Deutsch\nIcon=demo\n"}, func(w *want) {
			w.Name, w.Release, w.Build, w.Props = "demo", "", "", nil
		}},
		{"other groups", linuxtest.AppImageOptions{Desktop: "[Desktop Action new]\nName=Action\n[Desktop Entry]\nName=Real\nName=Dup\nIcon=demo\n[X-Other]\nName=Other\n"},
			func(w *want) { w.Name, w.Release, w.Build, w.Props = "Real", "", "", nil }},
		{"byte order mark", linuxtest.AppImageOptions{Desktop: "\ufeff[Desktop Entry]\nName=Bom\nIcon=demo\n"}, func(w *want) {
			w.Name, w.Release, w.Build, w.Props = "Bom", "", "", nil
		}},
		{"icon key with extension", linuxtest.AppImageOptions{Icon: "pic.png", IconSize: -1, Squash: linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "pic.png", Data: linuxtest.PNG(40, 40)}}}}, func(w *want) { w.Icon = 40 }},
		{"no icon", linuxtest.AppImageOptions{IconSize: -1}, func(w *want) { w.Icon = 0 }},
		{"only .DirIcon", linuxtest.AppImageOptions{Icon: "absent", Squash: linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "share", IsDir: true, Dir: []linuxtest.SquashEntry{{Name: "icon.png", Data: linuxtest.PNG(48, 48)}}},
			{Name: ".DirIcon", Symlink: "./share/../share/icon.png"}}}, IconSize: -1}, func(w *want) { w.Icon = 48 }},
		{"absolute link", linuxtest.AppImageOptions{IconSize: -1, Squash: linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "demo.png", Symlink: "/usr/icon.png"}, {Name: "usr2", IsDir: true}}}}, func(w *want) { w.Icon = 0 }},
		{"svg icon", linuxtest.AppImageOptions{IconSize: -1, Squash: linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "demo.png", Data: []byte("<svg/>")}, {Name: ".DirIcon", Symlink: "demo.png"}}}}, func(w *want) { w.Icon = 0 }},
		{"elf32 i686", linuxtest.AppImageOptions{Runtime: linuxtest.RuntimeOptions{ELF32: true, Machine: linuxtest.MachineI386}}, func(w *want) { w.Arch = []string{"i686"} }},
		{"armhf", linuxtest.AppImageOptions{Runtime: linuxtest.RuntimeOptions{ELF32: true, Machine: linuxtest.MachineARM}}, func(w *want) { w.Arch = []string{"armhf"} }},
		{"aarch64", linuxtest.AppImageOptions{Runtime: linuxtest.RuntimeOptions{Machine: linuxtest.MachineAArch64}}, func(w *want) { w.Arch = []string{"aarch64"} }},
		{"unknown machine", linuxtest.AppImageOptions{Runtime: linuxtest.RuntimeOptions{Machine: 0xf3}}, func(w *want) { w.Arch = nil }},
		{"section after the table", linuxtest.AppImageOptions{Runtime: linuxtest.RuntimeOptions{TrailingSection: 1000}}, func(w *want) {}},
		{"streamed payload", linuxtest.AppImageOptions{PayloadBytes: 300_000}, func(w *want) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := base
			tc.edit(&w)
			w.check(t, mustParse(t, parseAppImage, linuxtest.BuildAppImage(tc.o)))
		})
	}
	t.Run("desktop link", func(t *testing.T) {
		// The root .desktop file may be a link into usr/share/applications.
		desktop := linuxtest.DesktopFile(linuxtest.AppImageOptions{Name: "Linked"})
		sq := linuxtest.BuildSquashfs(linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "linked.desktop", Symlink: "usr/share/applications/linked.desktop"},
			{Name: "usr", IsDir: true, Dir: []linuxtest.SquashEntry{{Name: "share", IsDir: true, Dir: []linuxtest.SquashEntry{
				{Name: "applications", IsDir: true, Dir: []linuxtest.SquashEntry{{Name: "linked.desktop", Data: []byte(desktop)}}}}}}},
		}})
		info := mustParse(t, parseAppImage, append(linuxtest.Runtime(linuxtest.RuntimeOptions{}), sq...))
		if info.Name != "Linked" || info.BundleID != "linked" {
			t.Errorf("Name, BundleID = %q, %q", info.Name, info.BundleID)
		}
	})
	t.Run("big directory", func(t *testing.T) {
		// More than 256 entries (several listing headers) and a listing over 8 KiB (several
		// metadata blocks).
		var extra []linuxtest.SquashEntry
		for i := range 700 {
			extra = append(extra, linuxtest.SquashEntry{Name: fmt.Sprintf("file-with-a-long-name-%04d.txt", i), Data: []byte(fmt.Sprint(i))})
		}
		o := linuxtest.AppImageOptions{DesktopName: "zz-last", Squash: linuxtest.SquashOptions{Root: extra}}
		w := base
		w.BundleID = "zz-last"
		w.check(t, mustParse(t, parseAppImage, linuxtest.BuildAppImage(o)))
	})
}

// TestSquashfsReadsFiles reads every file of a synthetic image back through the squashfs reader.
func TestSquashfsReadsFiles(t *testing.T) {
	files := map[string][]byte{"a": nil, "b": []byte("short"), "c": bytes.Repeat([]byte("0123456789"), 1000), "d": linuxtest.PNG(200, 200)}
	for _, comp := range []string{"gzip", "xz", "zstd", "none"} {
		for _, frag := range []bool{false, true} {
			var root []linuxtest.SquashEntry
			for name, data := range files {
				root = append(root, linuxtest.SquashEntry{Name: name, Data: data})
			}
			img := linuxtest.BuildSquashfs(linuxtest.SquashOptions{Compression: comp, Fragments: frag, BlockSize: 4096, Root: root})
			fs, err := openSquashfs(bytes.NewReader(img), 0, int64(len(img)))
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range files {
				in, base, err := fs.lookup("/./"+name, 1<<20)
				if err != nil || base != name {
					t.Fatalf("%s %v lookup %s: %v (%q)", comp, frag, name, err, base)
				}
				got, err := fs.readFile(in)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("%s %v read %s: %v (%d bytes, want %d)", comp, frag, name, err, len(got), len(data))
				}
			}
			if _, _, err := fs.lookup("missing", 0); err != errNotFound {
				t.Errorf("lookup of a missing file = %v", err)
			}
			if _, _, err := fs.lookup("b/c", 0); err != errNotFound {
				t.Errorf("lookup through a file = %v", err)
			}
			fs.close()
		}
	}
}

// TestBuildersAgainstRealTools checks the linuxtest builders with dpkg-deb, rpm and unsquashfs
// when they are installed (skipped otherwise): the synthetic packages are real ones.
func TestBuildersAgainstRealTools(t *testing.T) {
	dir := t.TempDir()
	run := func(t *testing.T, tool string, args ...string) string {
		t.Helper()
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
		out, err := exec.Command(tool, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", tool, args, err, out)
		}
		return string(out)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("dpkg-deb", func(t *testing.T) {
		for _, comp := range []string{"gz", "xz", "zst", "none"} {
			p := write("demo-"+comp+".deb", linuxtest.BuildDeb(linuxtest.DebOptions{Compression: comp, Version: "1:2.0-3"}))
			if out := run(t, "dpkg-deb", "-f", p, "Package", "Version"); out != "Package: demo\nVersion: 1:2.0-3\n" {
				t.Errorf("%s: dpkg-deb -f says %q", comp, out)
			}
			run(t, "dpkg-deb", "-c", p)
		}
	})
	t.Run("rpm", func(t *testing.T) {
		p := write("demo.rpm", linuxtest.BuildRPM(linuxtest.RPMOptions{Epoch: 2, Vendor: "V"}))
		if out := run(t, "rpm", "-qp", "--qf", "%{NAME} %{EPOCH} %{VERSION} %{RELEASE} %{ARCH} %{VENDOR}", p); out != "demo 2 1.2.3 1 x86_64 V" {
			t.Errorf("rpm -qp says %q", out)
		}
	})
	t.Run("unsquashfs", func(t *testing.T) {
		for _, comp := range []string{"gzip", "xz", "zstd", "none"} {
			o := linuxtest.SquashOptions{Compression: comp, Fragments: true, BlockSize: 4096,
				Root: linuxtest.AppDir(linuxtest.AppImageOptions{IconSize: 100})}
			p := write("demo-"+comp+".sqfs", linuxtest.BuildSquashfs(o))
			out := filepath.Join(dir, "out-"+comp)
			run(t, "unsquashfs", "-q", "-n", "-d", out, p)
			got, err := os.ReadFile(filepath.Join(out, "demo.png"))
			if err != nil || !bytes.Equal(got, linuxtest.PNG(100, 100)) {
				t.Errorf("%s: unsquashfs extracted a different icon (%v)", comp, err)
			}
			if link, err := os.Readlink(filepath.Join(out, ".DirIcon")); err != nil || link != "demo.png" {
				t.Errorf("%s: .DirIcon = %q, %v", comp, link, err)
			}
		}
		// The AppImage: the squashfs image starts where the runtime ends.
		rt := linuxtest.Runtime(linuxtest.RuntimeOptions{})
		p := write("demo.AppImage", linuxtest.BuildAppImage(linuxtest.AppImageOptions{}))
		run(t, "unsquashfs", "-o", fmt.Sprint(len(rt)), "-s", p)
	})
}

// sqFields reads the superblock fields the hostile tests patch.
type sqFields struct {
	base                          int64
	root                          uint64
	used, inodes, dirs, fragTable int64
}

func readSuper(img []byte, base int64) sqFields {
	le := binary.LittleEndian
	sb := img[base:]
	return sqFields{base: base, root: le.Uint64(sb[32:]), used: int64(le.Uint64(sb[40:])), inodes: int64(le.Uint64(sb[64:])),
		dirs: int64(le.Uint64(sb[72:])), fragTable: int64(le.Uint64(sb[80:]))}
}
