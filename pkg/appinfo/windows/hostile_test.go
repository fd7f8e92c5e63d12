package windows

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// wantInvalid fails unless err is an errs.Invalid error whose message contains want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("no error, want one containing %q", want)
	case !errs.Is(err, errs.Invalid):
		t.Errorf("error %q is not errs.Invalid", err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

func le32(b []byte, off int) int { return int(binary.LittleEndian.Uint32(b[off:])) }
func put32(b []byte, off, v int) { binary.LittleEndian.PutUint32(b[off:], uint32(v)) }
func put16(b []byte, off, v int) { binary.LittleEndian.PutUint16(b[off:], uint16(v)) }

// Offsets in the PE32+ files windowstest writes (e_lfanew 0x80).
const (
	offNSec     = 0x86
	offOptLen   = 0x94
	offRsrcDD   = 0x98 + 112 + 16 // the resource data directory's RVA
	offRsrcSect = 0x98 + 240 + 40 // the .rsrc section header
)

// peRsrc returns a copy of a PE with only a version resource and the file offset of its resource
// section: the root directory (one type, its entry at +16), the type's directory at +24 (its
// entry at +40), the language directory at +48 (its entry at +64), the data entry at +72, and
// the version resource itself at +88.
func peRsrc() ([]byte, int) {
	b := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0.0.0")})
	return b, le32(b, offRsrcSect+20)
}

// withMemoryBound runs f and fails when it allocates more than limit bytes.
func withMemoryBound(t *testing.T, limit uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > limit {
		t.Errorf("allocated %d bytes, over %d", n, limit)
	}
}

func TestPEHostile(t *testing.T) {
	type patch func(b []byte, rsrc int) []byte
	tests := []struct {
		name  string
		patch patch
		want  string
	}{
		{"PE offset past the end", func(b []byte, _ int) []byte { put32(b, 0x3c, len(b)); return b }, "not a build Slipway reads"},
		{"no PE signature", func(b []byte, _ int) []byte { b[0x81] = 'X'; return b }, "not a build Slipway reads"},
		{"65535 sections", func(b []byte, _ int) []byte { put16(b, offNSec, 65535); return b }, "declares 65535 sections"},
		{"sections past the end", func(b []byte, _ int) []byte { put16(b, offNSec, 2000); return b[:0x400] }, "section table runs past the end"},
		{"huge optional header", func(b []byte, _ int) []byte { put16(b, offOptLen, 0xffff); return b }, "optional header declares"},
		{"bad optional magic", func(b []byte, _ int) []byte { put16(b, 0x98, 0x1234); return b }, "unknown magic"},
		{"resource section past the end", func(b []byte, _ int) []byte { put32(b, offRsrcSect+20, 1<<30); return b }, "lies outside the file"},
		{"resource RVA in no section", func(b []byte, _ int) []byte { put32(b, offRsrcDD, 0x7fff0000); return b }, "lies outside the file"},
		{"65535 resource entries", func(b []byte, r int) []byte { put16(b, r+14, 65535); return b }, "declares 65535 entries"},
		{"resource entries past the section", func(b []byte, r int) []byte { put16(b, r+14, 4000); return b }, "points past its section"},
		{"type directory is the root", func(b []byte, r int) []byte { put32(b, r+20, 0x80000000); return b }, "loops back"},
		{"name directory is its parent", func(b []byte, r int) []byte { put32(b, r+44, 0x80000000|24); return b }, "loops back"},
		{"language directory loops", func(b []byte, r int) []byte { put32(b, r+68, 0x80000000|24); return b }, "loops back"},
		{"data entry past the section", func(b []byte, r int) []byte { put32(b, r+68, 1<<20); return b }, "points past its section"},
		{"resource size over the limit", func(b []byte, r int) []byte { put32(b, r+76, 1<<30); return b }, "over the limit"},
		{"resource data outside the file", func(b []byte, r int) []byte { put32(b, r+72, 0x7ff00000); return b }, "lies outside the file"},
		{"version block overruns", func(b []byte, r int) []byte { put16(b, r+88, 0xfff0); return b }, "version resource is corrupt"},
		{"not VS_VERSION_INFO", func(b []byte, r int) []byte { b[r+88+6] = 'X'; return b }, "does not start with VS_VERSION_INFO"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, rsrc := peRsrc()
			withMemoryBound(t, 4<<20, func() {
				_, err := parse(t, tt.patch(b, rsrc))
				wantInvalid(t, err, tt.want)
			})
		})
	}
}

// peRsrc's offsets hold for windowstest's layout.
func TestPEFixtureLayout(t *testing.T) {
	b, rsrc := peRsrc()
	if le32(b, offRsrcDD) != 0x2000 || le32(b, rsrc+72) != 0x2000+88 || string(b[rsrc+88+6:rsrc+88+8]) != "V\x00" {
		t.Fatalf("layout changed: resource RVA 0x%x, data RVA 0x%x", le32(b, offRsrcDD), le32(b, rsrc+72))
	}
}

func TestPETruncated(t *testing.T) {
	b := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0.0.0"),
		Icons: []windowstest.IconImage{{Size: 48}, {Size: 64, PNG: true}}})
	for n := 0; n < len(b); n += 7 {
		info, err := parse(t, b[:n])
		if err != nil && !errs.Is(err, errs.Invalid) {
			t.Fatalf("truncated at %d: %v is not errs.Invalid", n, err)
		}
		if err == nil && info.Name != "Demo" {
			t.Fatalf("truncated at %d: parsed without its version resource: %+v", n, info)
		}
	}
}

// Icons that lie about themselves are skipped: the package still parses, without the icon.
func TestPEIconsLying(t *testing.T) {
	dib := windowstest.IconData(windowstest.IconImage{Size: 32})
	huge := bytes.Clone(dib)
	put32(huge, 4, 100000) // width
	put32(huge, 8, 200000)
	short := dib[:len(dib)/3]
	badDepth := bytes.Clone(dib)
	put16(badDepth, 14, 7)
	badHdr := bytes.Clone(dib)
	put32(badHdr, 0, 1<<30)
	palette := windowstest.IconData(windowstest.IconImage{Size: 32, BPP: 8})
	put32(palette, 32, 0) // clrUsed 0: 256 entries
	palette = palette[:40+100]
	hugePNG := windowstest.PNGImage(300, 300) // icons are at most 256 pixels
	for name, raw := range map[string][]byte{"huge": huge, "short": short, "depth": badDepth, "header": badHdr,
		"palette": palette, "png over 256": hugePNG, "empty": {}, "corrupt png": []byte("\x89PNG\r\n\x1a\nxx")} {
		t.Run(name, func(t *testing.T) {
			withMemoryBound(t, 4<<20, func() {
				info, err := parse(t, windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0"),
					Icons: []windowstest.IconImage{{Size: 16, Raw: raw}}}))
				if err != nil || info.Icon != nil {
					t.Errorf("info %+v, err %v: want the package without icon", info, err)
				}
			})
		})
	}
	// A group directory declaring more images than it holds, and one that references no image.
	grp := []byte{0, 0, 1, 0, 0xff, 0xff}
	info, err := parse(t, windowstest.BuildPE(windowstest.PEOptions{Resources: []windowstest.Resource{{Type: 14, ID: 1, Data: grp}}}))
	if err != nil || info.Icon != nil {
		t.Errorf("lying group: %+v, %v", info, err)
	}
	grp = []byte{0, 0, 1, 0, 1, 0, 32, 32, 0, 0, 1, 0, 32, 0, 0, 1, 0, 0, 99, 0}
	info, err = parse(t, windowstest.BuildPE(windowstest.PEOptions{Resources: []windowstest.Resource{{Type: 14, ID: 1, Data: grp}}}))
	if err != nil || info.Icon != nil {
		t.Errorf("dangling group: %+v, %v", info, err)
	}
}

func TestEXEZipHostile(t *testing.T) {
	exe := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0"), TextBytes: 200 << 10})
	// A deflated .exe whose data is cut short: the zip's sizes lie.
	z := windowstest.BuildZip(windowstest.Entry{Name: "demo.exe", Data: exe})
	cut := bytes.Clone(z)
	i := bytes.Index(cut, []byte("PK\x01\x02"))
	put32(cut, i+24, len(exe)*4) // central directory: uncompressed size
	_, err := parse(t, cut)
	wantInvalid(t, err, "")
	// A stored .exe that is not a PE.
	_, err = parse(t, windowstest.BuildZip(windowstest.Entry{Name: "demo.exe", Data: []byte("MZ but nothing else"), Store: true}))
	wantInvalid(t, err, "truncated")
	// Resources past the inflate limit: the headers only (the architecture), no error.
	z = windowstest.BuildZip(windowstest.Entry{Name: "demo.exe", Data: exe})
	a, err := zipread.Open(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	info, err := parseDeflatedEXE(a, mainEXE(a), 100<<10)
	if err != nil || info.Name != "" || len(info.Architectures) != 1 {
		t.Errorf("past the limit: %+v, %v", info, err)
	}
	if info, err = parseDeflatedEXE(a, mainEXE(a), 1<<20); err != nil || info.Name != "Demo" {
		t.Errorf("within the limit: %+v, %v", info, err)
	}
	zr := &inflateReaderAt{src: bytes.NewReader(exe), limit: 1000}
	if err := zr.fillHead(2000); !errs.Is(err, errs.Invalid) {
		t.Errorf("inflating past the limit: %v", err)
	}
}

// msiPatch builds the default synthetic MSI and applies f to it.
func msiPatch(f func(b []byte, h msiLayout)) []byte {
	b := windowstest.BuildMSI(windowstest.MSIOptions{})
	h := msiLayout{fat: (le32(b, 76) + 1) * 512, dir: (le32(b, 48) + 1) * 512, dirStart: le32(b, 48), miniFat: (le32(b, 60) + 1) * 512}
	f(b, h)
	return b
}

type msiLayout struct{ fat, dir, dirStart, miniFat int }

// msiDirEntry returns the offset of the directory entry whose name unpacks to name.
func msiDirEntry(b []byte, h msiLayout, name string) int {
	for off := h.dir; off+128 <= len(b); off += 128 {
		n := int(binary.LittleEndian.Uint16(b[off+64:]))/2 - 1
		if n < 0 || n > 31 {
			continue
		}
		u := make(cfbName, n)
		for j := range u {
			u[j] = binary.LittleEndian.Uint16(b[off+2*j:])
		}
		if msiStreamName(u) == name {
			return off
		}
	}
	panic("no entry " + name)
}

func TestMSIHostile(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"directory chain loops", msiPatch(func(b []byte, h msiLayout) { put32(b, h.fat+4*h.dirStart, h.dirStart) }), "loops"},
		{"directory chain leaves the file", msiPatch(func(b []byte, h msiLayout) { put32(b, h.fat+4*h.dirStart, 0xffffff) }), "outside the file"},
		{"directory starts outside the file", msiPatch(func(b []byte, h msiLayout) { put32(b, 48, 0x7fffff) }), ""},
		{"FAT sector outside the file", msiPatch(func(b []byte, h msiLayout) { put32(b, 76, 0x7fffff) }), "outside the file"},
		{"mini FAT loops", msiPatch(func(b []byte, h msiLayout) {
			e := msiDirEntry(b, h, "!Property")
			put32(b, h.miniFat+4*le32(b, e+116), le32(b, e+116)) // its first mini sector is its own next
			put32(b, e+120, 128)
		}), "loops"},
		{"bad sector size", msiPatch(func(b []byte, h msiLayout) { put16(b, 30, 16) }), "unsupported version"},
		{"bad mini cutoff", msiPatch(func(b []byte, h msiLayout) { put32(b, 56, 1) }), "mini stream cutoff"},
		{"root is not a root", msiPatch(func(b []byte, h msiLayout) { b[h.dir+66] = 1 }), "not the root"},
		{"Property size lies", msiPatch(func(b []byte, h msiLayout) { put32(b, msiDirEntry(b, h, "!Property")+120, 1<<30) }), "over the limit"},
		{"string data size lies", msiPatch(func(b []byte, h msiLayout) {
			put32(b, msiDirEntry(b, h, "!_StringData")+120, 3000) // still in the mini stream, but beyond it
		}), "mini stream"},
		{"no Property table", msiPatch(func(b []byte, h msiLayout) { b[msiDirEntry(b, h, "!Property")+66] = 0 }), "not a Windows Installer database"},
		{"patch", msiPatch(func(b []byte, h msiLayout) { b[h.dir+80] = 0x86 }), "patch"},
		{"transform", msiPatch(func(b []byte, h msiLayout) { b[h.dir+80] = 0x82 }), "transform"},
		{"pool declares more strings than data", msiStreams(func(s []windowstest.CFBStream) {
			s[0].Data = binary.LittleEndian.AppendUint32(bytes.Clone(s[0].Data), 0x0001ffff)
		}), "more string data"},
		{"pool with a torn long string", msiStreams(func(s []windowstest.CFBStream) {
			s[0].Data = binary.LittleEndian.AppendUint32(bytes.Clone(s[0].Data), 0x00010000)
		}), "long string without its length"},
		{"pool not whole entries", msiStreams(func(s []windowstest.CFBStream) { s[0].Data = s[0].Data[:5] }), "string pool is corrupt"},
		{"Property torn row", msiStreams(func(s []windowstest.CFBStream) { s[4].Data = s[4].Data[:3] }), "not a whole number of rows"},
		{"Property refers outside the pool", msiStreams(func(s []windowstest.CFBStream) {
			s[4].Data = bytes.Repeat([]byte{0xff}, len(s[4].Data))
		}), "a string the pool does not hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withMemoryBound(t, 4<<20, func() {
				_, err := ParseMSI(bytes.NewReader(tt.b), int64(len(tt.b)))
				wantInvalid(t, err, tt.want)
			})
		})
	}
}

// msiStreams builds the default synthetic MSI with its streams changed by f (0: _StringPool,
// 1: _StringData, 4: Property).
func msiStreams(f func([]windowstest.CFBStream)) []byte {
	s := windowstest.MSIStreams(windowstest.MSIOptions{})
	f(s)
	var b bytes.Buffer
	if _, err := windowstest.WriteCFB(&b, windowstest.MSICLSID, s); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestMSITruncated(t *testing.T) {
	b := windowstest.BuildMSI(windowstest.MSIOptions{Icon: windowstest.ICO(windowstest.IconImage{Size: 16})})
	for n := 0; n < len(b); n += 13 {
		_, err := ParseMSI(bytes.NewReader(b[:n]), int64(n))
		if !errs.Is(err, errs.Invalid) {
			t.Fatalf("truncated at %d of %d: %v, want errs.Invalid", n, len(b), err)
		}
	}
}

func TestMSIXHostile(t *testing.T) {
	bomb := `<?xml version="1.0"?>
<!DOCTYPE Package [<!ENTITY a "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
<Package xmlns="http://schemas.microsoft.com/appx/manifest/foundation/windows10"><Identity Name="&c;" Version="1.0.0.0" Publisher="CN=x"/></Package>`
	deep := "<Package>" + strings.Repeat("<a>", 100000) + strings.Repeat("</a>", 100000) + "</Package>"
	big := "<Package><Identity Name=\"a\"/>" + strings.Repeat("<!-- padding -->", MaxManifestBytes/16+1) + "</Package>"
	nested := windowstest.BuildMSIXBundle(windowstest.BundleOptions{Inner: windowstest.BuildMSIXBundle(windowstest.BundleOptions{
		Inner: windowstest.BuildMSIXBundle(windowstest.BundleOptions{})})})
	other := windowstest.BuildMSIXBundle(windowstest.BundleOptions{Inner: windowstest.BuildMSIX(windowstest.MSIXOptions{Name: "Evil.App"})})
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"entity bomb", windowstest.BuildMSIX(windowstest.MSIXOptions{Manifest: []byte(bomb)}), "not valid XML"},
		{"deep nesting", windowstest.BuildMSIX(windowstest.MSIXOptions{Manifest: []byte(deep)}), "no Identity Name"}, // skipped, not recursed
		{"manifest over the cap", windowstest.BuildMSIX(windowstest.MSIXOptions{Manifest: []byte(big)}), "limit"},
		{"not a Package", windowstest.BuildMSIX(windowstest.MSIXOptions{Manifest: []byte("<Bundle/>")}), "not a <Package> manifest"},
		{"no identity", windowstest.BuildMSIX(windowstest.MSIXOptions{Manifest: []byte("<Package><Identity Version=\"1\"/></Package>")}), "no Identity Name"},
		{"zip in a zip in a zip", nested, "not an MSIX package"},
		{"main package not a zip", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Inner: []byte("not a zip")}), "not a zip archive"},
		{"main package of another app", other, "holds a package of another app"},
		{"bundle without packages", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Manifest: []byte(`<Bundle><Identity Name="a" Version="1"/></Bundle>`)}), "no application package"},
		{"bundle main package missing", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Manifest: []byte(`<Bundle><Identity Name="a"/><Packages><Package Type="application" FileName="gone.msix"/></Packages></Bundle>`)}), "is missing"},
		{"bundle bomb", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Manifest: []byte(strings.Replace(bomb, "Package", "Bundle", -1))}), "not valid XML"},
		{"bundle not a Bundle", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Manifest: []byte("<Package/>")}), "not a <Bundle> manifest"},
		{"bundle without identity", windowstest.BuildMSIXBundle(windowstest.BundleOptions{Manifest: []byte("<Bundle/>")}), "no Identity Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withMemoryBound(t, 64<<20, func() {
				_, err := parse(t, tt.b)
				wantInvalid(t, err, tt.want)
			})
		})
	}
}

// Logos that lie are skipped.
func TestMSIXLogoHostile(t *testing.T) {
	hugeHeader := windowstest.PNGImage(8, 8)
	binary.BigEndian.PutUint32(hugeHeader[16:], 1<<20)
	info, err := parse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{LogoFiles: []windowstest.LogoFile{
		{Name: "Assets/StoreLogo.scale-200.png", Data: hugeHeader},
		{Name: "Assets/StoreLogo.scale-100.png", Data: []byte("\x89PNG junk")},
	}}))
	if err != nil || info.Icon != nil {
		t.Errorf("lying logos: icon %v, err %v", info.Icon, err)
	}
	// Hundreds of variants: only the first few are probed.
	var many []windowstest.LogoFile
	for i := range 300 {
		many = append(many, windowstest.LogoFile{Name: "Assets/StoreLogo.targetsize-" + strings.Repeat("1", 1+i%5) + string(rune('a'+i%26)) + ".png", Size: 4})
	}
	if _, err := parse(t, windowstest.BuildMSIX(windowstest.MSIXOptions{LogoFiles: many})); err != nil {
		t.Error(err)
	}
}

var _ = appinfo.Parse

// A database large enough for a DIFAT chain (over 109 FAT sectors): its chain looping back on
// itself, or leaving the file, is an error, not a hang.
func TestMSIDIFATHostile(t *testing.T) {
	good := windowstest.BuildMSI(windowstest.MSIOptions{CabBytes: 16 << 20})
	if n := le32(good, 72); n < 2 {
		t.Fatalf("the database has %d DIFAT sectors, want at least 2", n)
	}
	if _, err := ParseMSI(bytes.NewReader(good), int64(len(good))); err != nil {
		t.Fatal(err)
	}
	first := (le32(good, 68) + 1) * 512
	for name, next := range map[string]int{"loops": le32(good, 68), "outside the file": 0x7ffffff} {
		t.Run(name, func(t *testing.T) {
			b := bytes.Clone(good)
			put32(b, first+508, next)
			_, err := ParseMSI(bytes.NewReader(b), int64(len(b)))
			wantInvalid(t, err, "DIFAT chain loops or points outside the file")
		})
	}
	b := bytes.Clone(good)
	put32(b, 72, 1) // fewer DIFAT sectors than the FAT needs
	_, err := ParseMSI(bytes.NewReader(b), int64(len(b)))
	wantInvalid(t, err, "FAT is missing sector")
}
