package apple

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// appleWantInvalid checks that parsing data fails with an errs.Invalid error mentioning want.
func appleWantInvalid(t *testing.T, data []byte, want string) {
	t.Helper()
	info, err := appleParseBytes(t, data)
	if !errs.Is(err, errs.Invalid) {
		t.Fatalf("Parse = %+v, %v; want an errs.Invalid error", info, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("Parse error %q does not mention %q", err, want)
	}
}

// appleBombIPA returns a minimal .ipa in which entry name declares `declared` bytes but inflates
// to `inflated` zero bytes; the other entries are honest.
func appleBombIPA(t *testing.T, name string, declared uint64, inflated int) []byte {
	t.Helper()
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestSpeed)
	chunk := make([]byte, 1<<20)
	for left := inflated; left > 0; left -= len(chunk) {
		fw.Write(chunk[:min(left, len(chunk))])
	}
	fw.Close()
	base := appletest.BuildIPA(appletest.IPAOptions{
		Profile: &appletest.ProfileOptions{Devices: []string{"a"}},
		Icons:   []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}},
	})
	a := appleOpenZip(t, base)
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range a.Files() {
		if f.Name == name {
			w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CompressedSize64: uint64(comp.Len()), UncompressedSize64: declared})
			if err != nil {
				t.Fatal(err)
			}
			w.Write(comp.Bytes())
			continue
		}
		if err := zw.Copy(f); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()
	return out.Bytes()
}

func TestAppleZipBombs(t *testing.T) {
	const plistName, profileName, iconName = "Payload/Demo.app/Info.plist", "Payload/Demo.app/embedded.mobileprovision", "Payload/Demo.app/AppIcon60x60@2x.png"
	// archive/zip itself stops an entry at its declared size, so a bomb declared small fails as
	// a corrupt entry after 1000 bytes.
	t.Run("Info.plist declared small", func(t *testing.T) {
		appleWantInvalid(t, appleBombIPA(t, plistName, 1000, 16<<20), "Info.plist\" is corrupt")
	})
	t.Run("Info.plist declared huge", func(t *testing.T) {
		appleWantInvalid(t, appleBombIPA(t, plistName, 1<<40, 1000), "declares")
	})
	t.Run("profile declared small", func(t *testing.T) {
		appleWantInvalid(t, appleBombIPA(t, profileName, 1000, 16<<20), "embedded.mobileprovision\" is corrupt")
	})
	t.Run("profile declared huge", func(t *testing.T) {
		appleWantInvalid(t, appleBombIPA(t, profileName, 1<<40, 1000), "declares")
	})
	// An icon is optional: a bomb there costs the icon, not the upload.
	for _, declared := range []uint64{1000, 1 << 40} {
		t.Run(fmt.Sprintf("icon declared %d", declared), func(t *testing.T) {
			info := appleMustParse(t, appleBombIPA(t, iconName, declared, 16<<20))
			if info.Icon != nil || info.BundleID != "com.example.demo" {
				t.Errorf("Parse = %+v, want the app without its icon", info)
			}
		})
	}
}

func TestAppleTruncatedAndCorrupt(t *testing.T) {
	data := appletest.BuildIPA(appletest.IPAOptions{
		Profile: &appletest.ProfileOptions{AllDevices: true},
		Icons:   []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 40, CgBI: true}},
	})
	for n := 0; n < len(data); n += 1 + n/50 {
		if _, err := appleParseBytes(t, data[:n]); !errs.Is(err, errs.Invalid) {
			t.Fatalf("truncated to %d of %d bytes: %v, want errs.Invalid", n, len(data), err)
		}
	}
	// Flip bytes one at a time throughout the archive (about 800 of them): never a panic, never a
	// non-Invalid error.
	for i := 0; i < len(data); i += 1 + len(data)/800 {
		c := bytes.Clone(data)
		c[i] ^= 0x5a
		if _, err := appleParseBytes(t, c); err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("byte %d flipped: %v, want nil or errs.Invalid", i, err)
		}
	}
	// Corrupt the compressed Info.plist in place: a checksum or inflate error, never a panic.
	a := appleOpenZip(t, data)
	f := a.File("Payload/Demo.app/Info.plist")
	off, err := f.DataOffset()
	if err != nil {
		t.Fatal(err)
	}
	c := bytes.Clone(data)
	for i := off + 4; i < off+int64(f.CompressedSize64)-4; i++ {
		c[i] = 0xff
	}
	appleWantInvalid(t, c, "Info.plist")
}

func TestApplePathTraversal(t *testing.T) {
	for _, name := range []string{"Payload/../../etc/passwd", "/etc/passwd", `Payload\..\..\evil`, "C:/evil"} {
		data := appletest.BuildIPA(appletest.IPAOptions{Extra: []appletest.Entry{{Name: name, Data: []byte("x")}}})
		appleWantInvalid(t, data, "zip entry")
	}
}

func TestAppleWrongMagic(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":         {},
		"text":          []byte("not-a-zip-file"),
		"png":           appletest.StandardPNG(8, 8),
		"zip magic":     append([]byte("PK\x03\x04"), bytes.Repeat([]byte{0xee}, 100)...),
		"xar garbage":   append([]byte("xar!"), bytes.Repeat([]byte{0xee}, 100)...),
		"random":        bytes.Repeat([]byte{0x13, 0x37, 0xc0, 0xde}, 300),
		"mac zip empty": appletest.BuildZip(appletest.Entry{Name: "Demo.app/"}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := appleParseBytes(t, data); !errs.Is(err, errs.Invalid) {
				t.Fatalf("Parse error %v, want errs.Invalid", err)
			}
		})
	}
}

// appleBplist encodes a binary plist from serialized objects (refs 2 bytes wide).
func appleBplist(objs [][]byte, top uint64) []byte {
	b := []byte("bplist00")
	var offs []uint32
	for _, o := range objs {
		offs = append(offs, uint32(len(b)))
		b = append(b, o...)
	}
	table := len(b)
	for _, o := range offs {
		b = binary.BigEndian.AppendUint32(b, o)
	}
	b = append(b, 0, 0, 0, 0, 0, 0, 4, 2)
	b = binary.BigEndian.AppendUint64(b, uint64(len(objs)))
	b = binary.BigEndian.AppendUint64(b, top)
	return binary.BigEndian.AppendUint64(b, uint64(table))
}

func appleArray(refs ...uint16) []byte {
	o := []byte{0xA0 | byte(len(refs))}
	for _, r := range refs {
		o = binary.BigEndian.AppendUint16(o, r)
	}
	return o
}

func TestAppleHostilePlists(t *testing.T) {
	// root = {"k": obj 2}; objects 2.. are built by each case.
	rooted := func(rest ...[]byte) []byte {
		return appleBplist(append([][]byte{{0xD1, 0, 1, 0, 2}, {0x51, 'k'}}, rest...), 0)
	}
	var dag, chain [][]byte
	for i := range 60 { // each array holds the next twice: 2^60 values once expanded
		dag = append(dag, appleArray(uint16(3+i), uint16(3+i)))
	}
	dag = append(dag, []byte{0x51, 'x'})
	for i := range 5000 {
		chain = append(chain, appleArray(uint16(3+i)))
	}
	chain = append(chain, []byte{0x51, 'x'})
	var bigXML strings.Builder // about 1 MiB of realistic keys: under the cap, parsed in full
	bigXML.WriteString(`<?xml version="1.0"?><plist><dict><key>CFBundleIdentifier</key><string>a</string><key>CFBundleVersion</key><string>1</string>`)
	for i := range 14_000 {
		fmt.Fprintf(&bigXML, "<key>K%d</key><array><string>value</string><integer>%d</integer></array>", i, i)
	}
	bigXML.WriteString("</dict></plist>")
	for _, tc := range []struct {
		name  string
		plist []byte
		want  string // "" means the parse succeeds
	}{
		{"garbage", []byte("garbage"), "Info.plist is not a valid property list"},
		{"OpenStep text plist", []byte(`{ CFBundleIdentifier = "a"; CFBundleVersion = "1"; }`), "not a valid property list"},
		{"XML but not a plist", []byte(`<?xml version="1.0"?><html><body/></html>`), "not a valid property list"},
		{"truncated XML", []byte(`<?xml version="1.0"?><plist><dict><key>CFBundleIdentifier</key>`), "not a valid property list"},
		{"array root", []byte(`<?xml version="1.0"?><plist><array/></plist>`), "root is not a dictionary"},
		{"no bundle id", []byte(`<?xml version="1.0"?><plist><dict><key>CFBundleVersion</key><string>1</string></dict></plist>`), "no CFBundleIdentifier"},
		{"no versions", []byte(`<?xml version="1.0"?><plist><dict><key>CFBundleIdentifier</key><string>a</string></dict></plist>`), "neither CFBundleShortVersionString"},
		{"deep XML", []byte(`<?xml version="1.0"?><plist>` + strings.Repeat("<array>", 100_000) + strings.Repeat("</array>", 100_000) + `</plist>`), "nested more than"},
		{"huge XML", []byte(`<?xml version="1.0"?><plist><dict><key>a</key><string>` + strings.Repeat("x", MaxPlistBytes) + `</string></dict></plist>`), "over the"},
		{"large but allowed XML", []byte(bigXML.String()), ""},
		{"binary DAG bomb", rooted(dag...), "expands to more than"},
		{"binary deep chain", rooted(chain...), "nested more than"},
		{"binary cycle", rooted(appleArray(2)), "self-referential"},
		{"binary ref out of range", rooted(appleArray(999)), "out of range"},
		{"binary bad trailer", append([]byte("bplist00"), make([]byte, 40)...), "trailer"},
		{"binary truncated", []byte("bplist00\x00"), "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := appletest.BuildIPA(appletest.IPAOptions{RawInfoPlist: tc.plist})
			if tc.want == "" {
				appleMustParse(t, data)
				return
			}
			appleWantInvalid(t, data, tc.want)
		})
	}
}

// appleXar builds a xar archive from a TOC and a heap, with the TOC's declared inflated size
// overridable (0 keeps the real one).
func appleXar(toc string, heap []byte, declaredTOC uint64) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	zw.Write([]byte(toc))
	zw.Close()
	if declaredTOC == 0 {
		declaredTOC = uint64(len(toc))
	}
	out := []byte("xar!\x00\x1c\x00\x01")
	out = binary.BigEndian.AppendUint64(out, uint64(z.Len()))
	out = binary.BigEndian.AppendUint64(out, declaredTOC)
	out = binary.BigEndian.AppendUint32(out, 0)
	return append(append(out, z.Bytes()...), heap...)
}

func appleXarFile(name, style string, length, offset, size int) string {
	return fmt.Sprintf(`<file id="1"><name>%s</name><type>file</type><data><length>%d</length><offset>%d</offset><size>%d</size><encoding style="%s"/></data></file>`,
		name, length, offset, size, style)
}

func TestAppleHostilePKG(t *testing.T) {
	toc := func(files ...string) string { return "<xar><toc>" + strings.Join(files, "") + "</toc></xar>" }
	pkgInfo := []byte(`<pkg-info identifier="com.example.x" version="1.0"/>`)
	var bomb bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&bomb, zlib.BestSpeed)
	zw.Write(make([]byte, MaxPlistBytes+1000))
	zw.Close()
	// Few elements and tokens under the TOC's limits, so that the inflation cap is what trips.
	hugeTOC := toc(strings.Repeat("<file><name>x</name></file>"+strings.Repeat(" ", 60_000), MaxXarTOCBytes/60_000+1))
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"short header", "truncated", []byte("xar!\x00\x1c\x00\x01\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00")[:28]},
		{"TOC declared huge", "over the", appleXar(toc(), nil, 1<<40)},
		{"TOC zlib bomb", "inflates to more than", appleXar(hugeTOC, nil, 100)},
		{"TOC not XML", "not valid XML", appleXar("not xml <<<", nil, 0)},
		{"TOC past the end", "truncated", func() []byte { d := appleXar(toc(), nil, 0); return d[:len(d)-3] }()},
		{"no files", "neither a Distribution nor a PackageInfo", appleXar(toc(), nil, 0)},
		{"file outside the archive", "outside the archive", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 10, 5, 10)), []byte("short"), 0)},
		{"negative offset", "outside the archive", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 10, -5, 10)), pkgInfo, 0)},
		{"declared huge", "over the", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 1<<40, 0, 10)), pkgInfo, 0)},
		{"archived huge", "too large", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 10, 0, 1<<40)), pkgInfo, 0)},
		{"file bomb", "inflates to more than", appleXar(toc(appleXarFile("PackageInfo", "application/x-gzip", 100, 0, bomb.Len())), bomb.Bytes(), 0)},
		{"unsupported encoding", "unsupported encoding", appleXar(toc(appleXarFile("PackageInfo", "application/x-lzma", len(pkgInfo), 0, len(pkgInfo))), pkgInfo, 0)},
		{"corrupt zlib", "corrupt", appleXar(toc(appleXarFile("PackageInfo", "application/x-gzip", len(pkgInfo), 0, len(pkgInfo))), pkgInfo, 0)},
		{"PackageInfo not XML", "not valid XML", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 5, 0, 5)), []byte("<<<<<"), 0)},
		{"no identifier", "no bundle or package identifier", appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", 11, 0, 11)), []byte("<pkg-info/>"), 0)},
		{"no version", "no version", appleXar(toc(appleXarFile("PackageInfo", "", 30, 0, 30)), []byte(`<pkg-info identifier="a.b"/>   `), 0)},
		{"no data", "has no data", appleXar(toc(`<file><name>Distribution</name><type>file</type></file>`), nil, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) { appleWantInvalid(t, tc.data, tc.want) })
	}
	ok := appleXar(toc(appleXarFile("PackageInfo", "application/octet-stream", len(pkgInfo), 0, len(pkgInfo))), pkgInfo, 0)
	if info := appleMustParse(t, ok); info.BundleID != "com.example.x" || info.ReleaseVersion != "1.0" {
		t.Errorf("Parse = %+v", info)
	}
}

// appleCountingReader counts the bytes read through it and records prefetch hints.
type appleCountingReader struct {
	r          *bytes.Reader
	read       int64
	prefetches int
}

func (c *appleCountingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

func (c *appleCountingReader) Prefetch(off, n int64) { c.prefetches++ }

func TestApplePrefetchAndBoundedReads(t *testing.T) {
	data := appletest.BuildIPA(appletest.IPAOptions{
		FillerBytes: 32 << 20,
		Profile:     &appletest.ProfileOptions{},
		Icons:       []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true}},
	})
	r := &appleCountingReader{r: bytes.NewReader(data)}
	info, err := appinfo.Parse(r, int64(len(data)))
	if err != nil || info.Icon == nil || info.Profile == nil {
		t.Fatalf("Parse = %+v, %v", info, err)
	}
	if r.read > 1<<20 || r.prefetches == 0 {
		t.Errorf("read %d bytes of %d with %d prefetch hints; want under 1 MiB and some hints", r.read, len(data), r.prefetches)
	}
	pkg := appletest.BuildPKG(appletest.PKGOptions{Distribution: true})
	r = &appleCountingReader{r: bytes.NewReader(pkg)}
	if _, err := appinfo.Parse(r, int64(len(pkg))); err != nil || r.prefetches < 2 {
		t.Errorf("pkg: %v, %d prefetch hints", err, r.prefetches)
	}
}
