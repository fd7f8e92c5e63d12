package android_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unicode/utf16"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/errs"
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

// utf16Bytes encodes s as the UTF-16LE bytes of a string pool.
func utf16Bytes(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return b
}

func TestAPKBadManifests(t *testing.T) {
	good := androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest})
	// Fixed random bytes, the first never whitespace or '<': random ones began like a text
	// manifest about once in 200 runs, and the test then saw the text-XML error (a CI flake).
	rng := rand.New(rand.NewPCG(33, 1))
	garbage := make([]byte, 1000)
	for i := range garbage {
		garbage[i] = byte(rng.IntN(256))
	}
	garbage[0] = 0x07
	tooLong := bytes.Clone(good)
	binary.LittleEndian.PutUint32(tooLong[4:], uint32(len(good)+1))
	notManifest := bytes.Replace(good, utf16Bytes("manifest"), utf16Bytes("xanifest"), 1)
	badAttrs := androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "a.b"}})
	// The first start element's attributeCount: 65535 attributes of 20 bytes cannot fit.
	i := bytes.Index(badAttrs, []byte{0x02, 0x01, 0x10, 0x00})
	binary.LittleEndian.PutUint16(badAttrs[i+16+12:], 0xffff)

	tests := []struct {
		name     string
		manifest []byte
		want     string
	}{
		{"empty", []byte{}, "AndroidManifest.xml is not a valid binary XML document (0 bytes)"},
		{"garbage", garbage, "AndroidManifest.xml is not a valid binary XML document"},
		{"text XML", []byte("\xef\xbb\xbf <?xml version=\"1.0\"?><manifest package=\"a.b\"/>"), "plain-text XML"},
		{"declared size over the file", tooLong, "header declares"},
		{"truncated", good[:len(good)/2], "header declares"},
		{"no elements", good[:8+int(binary.LittleEndian.Uint32(good[12:]))], "no elements"},
		{"root is not manifest", notManifest, "root element is not <manifest>"},
		{"attribute count overruns", badAttrs, "lie outside their chunk"},
		{"no package", androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{VersionCode: 1}}), "the manifest has no package attribute"},
		{"bad package", androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "../../etc/passwd"}}), "not a valid Android package name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "no elements" {
				tt.manifest = bytes.Clone(tt.manifest)
				binary.LittleEndian.PutUint32(tt.manifest[4:], uint32(len(tt.manifest)))
			}
			_, err := parseBytes(t, androidtest.BuildAPK(androidtest.APKOptions{Manifest: tt.manifest}))
			wantInvalid(t, err, tt.want)
		})
	}
}

// arscTable wraps chunks in a resource table header.
func arscTable(chunks ...[]byte) []byte {
	body := bytes.Join(chunks, nil)
	b := binary.LittleEndian.AppendUint16(nil, 0x0002)
	b = binary.LittleEndian.AppendUint16(b, 12)
	b = binary.LittleEndian.AppendUint32(b, uint32(12+len(body)))
	return append(binary.LittleEndian.AppendUint32(b, 1), body...)
}

func chunk(typ, hdr uint16, size uint32, rest ...uint32) []byte {
	b := binary.LittleEndian.AppendUint16(nil, typ)
	b = binary.LittleEndian.AppendUint16(b, hdr)
	b = binary.LittleEndian.AppendUint32(b, size)
	for _, v := range rest {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// TestAPKBadResources includes the tables on which androidbinary v1.0.5 panics, hangs or
// allocates gigabytes (see android.go).
func TestAPKBadResources(t *testing.T) {
	good := androidtest.BuildARSC(androidtest.APKOptions{AndroidManifest: fullManifest})
	tooLong := bytes.Clone(good)
	binary.LittleEndian.PutUint32(tooLong[4:], uint32(len(good)+100))
	tests := []struct {
		name string
		arsc []byte
		want string
	}{
		{"empty", nil, "resources.arsc is not a resource table (0 bytes)"},
		{"not a table", androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest}), "resources.arsc is not a resource table"},
		{"declared size over the file", tooLong, "resources.arsc declares"},
		{"truncated package chunk", arscTable(chunk(0x0200, 288, 40)), "overruns the table"},
		{"package header too short", arscTable(chunk(0x0200, 8, 8)), "package chunk with a 8-byte header"},
		{"zero-size chunk", arscTable(chunk(0x7777, 8, 0)), "overruns the table"},
		{"string pool declaring 2^28 strings", arscTable(chunk(0x0001, 28, 36, 1<<28, 0, 0, 36, 0, 0, 0)), "malformed string pool"},
		{"type chunk header too short", arscTable(append(chunk(0x0200, 12, 12+8, 0x7f), chunk(0x0201, 8, 8)...)), "type chunk with a 8-byte header"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := androidtest.APKOptions{AndroidManifest: fullManifest, Resources: tt.arsc}
			if tt.arsc == nil {
				o.Resources = []byte{}
			}
			_, err := parseBytes(t, androidtest.BuildAPK(o))
			wantInvalid(t, err, tt.want)
		})
	}
}

func TestAABBadInput(t *testing.T) {
	good := androidtest.BuildAABManifest(androidtest.AABOptions{AndroidManifest: fullManifest})
	// XmlNode{element: XmlElement{name: "application"}}
	appRoot := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "application"))
	tests := []struct {
		name          string
		manifest, res []byte
		want          string
	}{
		{"garbage manifest", []byte("\xff\xff\xff\xff\xff"), nil, "base/manifest/AndroidManifest.xml is not a valid protobuf XML document"},
		{"truncated manifest", good[:len(good)-3], nil, "not a valid protobuf XML document"},
		{"empty manifest", []byte{}, nil, "has no root element"},
		{"binary AXML instead", androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest}), nil, "base/manifest/AndroidManifest.xml"},
		{"root is not manifest", appRoot, nil, "root element is not <manifest>"},
		{"no package", androidtest.BuildAABManifest(androidtest.AABOptions{AndroidManifest: androidtest.AndroidManifest{VersionName: "1"}}), nil, "the manifest has no package attribute"},
		{"garbage resources.pb", good, []byte("\x12\x05\x0a\x03\x0a\x01"), "base/resources.pb is not a valid aapt2 resource table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := androidtest.AABOptions{AndroidManifest: fullManifest, Manifest: tt.manifest, Resources: tt.res}
			_, err := parseBytes(t, androidtest.BuildAAB(o))
			wantInvalid(t, err, tt.want)
		})
	}
}

// TestAABDeepNesting: a manifest nested 200,000 elements deep is read without descending past
// the root's children.
func TestAABDeepNesting(t *testing.T) {
	const depth = 200_000
	// Written outside-in in one pass (wrapping inside-out would copy quadratically): each element
	// is its name field, then one child XmlNode holding the next element.
	x := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "x")
	lens := []int{len(x)} // lens[k]: size of the element k levels above the innermost
	for k := 1; k < depth; k++ {
		node := protowire.SizeTag(1) + protowire.SizeBytes(lens[k-1])
		lens = append(lens, len(x)+protowire.SizeTag(5)+protowire.SizeBytes(node))
	}
	el := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "manifest")
	for k := depth - 1; k >= 0; k-- {
		node := protowire.SizeTag(1) + protowire.SizeBytes(lens[k])
		el = protowire.AppendVarint(protowire.AppendTag(el, 5, protowire.BytesType), uint64(node))
		el = protowire.AppendVarint(protowire.AppendTag(el, 1, protowire.BytesType), uint64(lens[k]))
		el = append(el, x...)
	}
	doc := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), el)
	if _, _, err := android.AndroidDecodeAAB(doc, nil); !strings.Contains(fmt.Sprint(err), "no package") {
		t.Fatalf("decoding: %v", err) // a malformed document would fail earlier, as "not a valid protobuf"
	}
	_, err := parseBytes(t, androidtest.BuildAAB(androidtest.AABOptions{Manifest: doc}))
	wantInvalid(t, err, "the manifest has no package attribute")
}

// rawEntry is a zip entry written as given: declared sizes may lie.
type rawEntry struct {
	name     string
	data     []byte // uncompressed content, deflated when written
	declared uint64 // declared uncompressed size
}

func rawZip(t *testing.T, entries ...rawEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		var c bytes.Buffer
		fw, _ := flate.NewWriter(&c, flate.BestCompression)
		fw.Write(e.data)
		fw.Close()
		w, err := zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(e.data),
			CompressedSize64: uint64(c.Len()), UncompressedSize64: e.declared})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(c.Bytes())
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestAndroidZipBombs(t *testing.T) {
	manifest := androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest})
	arsc := androidtest.BuildARSC(androidtest.APKOptions{AndroidManifest: fullManifest})
	bomb := make([]byte, android.MaxManifestBytes+1)
	tests := []struct {
		name    string
		entries []rawEntry
		want    string
	}{
		{"manifest over the cap", []rawEntry{{"AndroidManifest.xml", bomb, uint64(len(bomb))}}, "over the 8388608-byte limit"},
		// archive/zip itself refuses to inflate past the declared size.
		{"manifest lying about its size", []rawEntry{{"AndroidManifest.xml", bomb, 100}}, `zip entry "AndroidManifest.xml" is corrupt`},
		{"resources.arsc declaring 1 TiB", []rawEntry{{"AndroidManifest.xml", manifest, uint64(len(manifest))}, {"resources.arsc", arsc, 1 << 40}}, "over the 67108864-byte limit"},
		{"bundle manifest over the cap", []rawEntry{{"base/manifest/AndroidManifest.xml", bomb, 1 << 33}}, "over the 8388608-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseBytes(t, rawZip(t, tt.entries...))
			wantInvalid(t, err, tt.want)
		})
	}

	// An icon lying about its size is skipped, not fatal: the next largest is used.
	bigHead := append(androidtest.AndroidPNG(256, 256), make([]byte, appinfo.MaxIconBytes)...)
	o := androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "a.b", Icons: []androidtest.AndroidIcon{
		{Density: 640, Path: "res/bomb.png"}, {Density: 160, Path: "res/ok.png"},
	}}}
	b := rawZip(t,
		rawEntry{"AndroidManifest.xml", androidtest.BuildAXML(o), uint64(len(androidtest.BuildAXML(o)))},
		rawEntry{"resources.arsc", androidtest.BuildARSC(o), uint64(len(androidtest.BuildARSC(o)))},
		rawEntry{"res/bomb.png", bigHead, 1000},
		rawEntry{"res/ok.png", png48, uint64(len(png48))},
	)
	info := mustParse(t, b)
	if info.Icon == nil || info.Icon.Width != 48 {
		t.Errorf("icon %+v, want the 48px one", info.Icon)
	}
}

// TestAndroidDeclaredSizesNotPreallocated: a kilobyte zip whose entries declare the largest
// sizes allowed must not make the parse allocate that much (zipread.ReadFile once did).
func TestAndroidDeclaredSizesNotPreallocated(t *testing.T) {
	manifest := androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest})
	b := rawZip(t, rawEntry{"AndroidManifest.xml", manifest, uint64(len(manifest))},
		rawEntry{"resources.arsc", []byte("tiny"), android.MaxResourcesBytes})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := parseBytes(t, b)
	runtime.ReadMemStats(&after)
	wantInvalid(t, err, "resources.arsc")
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Errorf("parsing a %d-byte zip allocated %d bytes", len(b), n)
	}
}

// TestAndroidMutations is a deterministic mini-fuzz: every truncation and many byte changes of
// valid documents and packages must give a result or an errs.Invalid error, never a panic.
func TestAndroidMutations(t *testing.T) {
	o := androidtest.APKOptions{AndroidManifest: fullManifest}
	ao := androidtest.AABOptions{AndroidManifest: fullManifest}
	axml, arsc := androidtest.BuildAXML(o), androidtest.BuildARSC(o)
	aabManifest, aabRes := androidtest.BuildAABManifest(ao), androidtest.BuildAABResources(ao)
	// Packages for zip-level mutations: small icons keep each parse cheap.
	small := fullManifest
	small.Icons = []androidtest.AndroidIcon{{Density: 160, Path: "res/i.png", Data: androidtest.AndroidPNG(4, 4)}}
	docs := []struct {
		name   string
		data   []byte
		decode func(b []byte) error
	}{
		{"AXML", axml, func(b []byte) error { _, _, err := android.AndroidDecodeAPK(b, arsc); return err }},
		{"AXML UTF-8", androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: fullManifest, UTF8: true}), func(b []byte) error { _, _, err := android.AndroidDecodeAPK(b, nil); return err }},
		{"ARSC", arsc, func(b []byte) error { _, _, err := android.AndroidDecodeAPK(axml, b); return err }},
		{"ARSC sparse", androidtest.BuildARSC(androidtest.APKOptions{AndroidManifest: fullManifest, SparseResources: true}), func(b []byte) error {
			_, _, err := android.AndroidDecodeAPK(axml, b)
			return err
		}},
		{"AAB manifest", aabManifest, func(b []byte) error { _, _, err := android.AndroidDecodeAAB(b, aabRes); return err }},
		{"AAB resources", aabRes, func(b []byte) error { _, _, err := android.AndroidDecodeAAB(aabManifest, b); return err }},
		{"APK zip", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: small}), func(b []byte) error { _, err := appinfo.Parse(bytes.NewReader(b), int64(len(b))); return err }},
		{"AAB zip", androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: small}), func(b []byte) error { _, err := appinfo.Parse(bytes.NewReader(b), int64(len(b))); return err }},
	}
	for _, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			check := func(what string, b []byte) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s: panic %v", what, r)
					}
				}()
				if err := d.decode(b); err != nil && !errs.Is(err, errs.Invalid) {
					t.Fatalf("%s: error %q is not errs.Invalid", what, err)
				}
			}
			if err := d.decode(d.data); err != nil {
				t.Fatalf("unmutated: %v", err)
			}
			for n := range len(d.data) {
				check("truncated", d.data[:n])
			}
			for i := range d.data {
				for _, v := range []byte{0x00, 0xff, d.data[i] + 1, d.data[i] ^ 0x80} {
					b := bytes.Clone(d.data)
					b[i] = v
					check("mutated", b)
				}
			}
		})
	}
}

// TestAndroidLookupBudget: an icon whose 100 configurations reference 100 string resources, in
// a string type of 200,000 chunks (APK) or entries (AAB) that every lookup scans, ends with an
// error instead of 20 million steps.
func TestAndroidLookupBudget(t *testing.T) {
	o := androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "a.b", Icons: []androidtest.AndroidIcon{{Path: "x"}}}}

	for i := range 100 { // mipmap/ic_launcher in 100 densities, each a reference to string i
		c := chunk(0x0201, 36, 56, 2, 1, 40) // type 2, one entry, entries at 40
		cfg := make([]byte, 16)
		binary.LittleEndian.PutUint32(cfg, 16)
		binary.LittleEndian.PutUint16(cfg[14:], uint16(i+1))
		c = append(c, cfg...)
		c = binary.LittleEndian.AppendUint32(c, 0)           // entry 0 at offset 0
		c = append(c, 8, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0x01) // ResTable_entry, Res_value reference
		o.Resources = binary.LittleEndian.AppendUint32(append(o.Resources, c...), 0x7f010000+uint32(i))
	}
	for range 200_000 { // empty string type chunks (type 1, no entries, 4-byte config)
		o.Resources = append(o.Resources, chunk(0x0201, 24, 24, 1, 0, 24, 4)...)
	}
	pkg := append(chunk(0x0200, 288, uint32(288+len(o.Resources)), 0x7f), make([]byte, 256+20)...)
	o.Resources = arscTable(append(pkg, o.Resources...))
	_, err := parseBytes(t, androidtest.BuildAPK(o))
	wantInvalid(t, err, "resources.arsc is too convoluted")

	bytesField := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	id := func(v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), v)
	}
	var icon []byte // Entry{entry_id {0}, config_value: ConfigValue{config{density}, value{item{ref{id}}}}...}
	icon = bytesField(icon, 1, nil)
	for i := range 100 {
		ref := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), uint64(0x7f010000+i))
		cfg := protowire.AppendVarint(protowire.AppendTag(nil, 18, protowire.VarintType), uint64(i+1))
		icon = bytesField(icon, 6, bytesField(bytesField(nil, 1, cfg), 2, bytesField(nil, 4, bytesField(nil, 1, ref))))
	}
	strType := bytesField(nil, 1, id(1))
	for i := range 200_000 {
		strType = bytesField(strType, 3, bytesField(nil, 1, id(uint64(1000+i))))
	}
	pb := bytesField(nil, 1, id(0x7f))
	pb = bytesField(pb, 3, bytesField(bytesField(nil, 1, id(2)), 3, icon))
	pb = bytesField(nil, 2, bytesField(pb, 3, strType))
	ao := androidtest.AABOptions{AndroidManifest: o.AndroidManifest, Resources: pb}
	_, err = parseBytes(t, androidtest.BuildAAB(ao))
	wantInvalid(t, err, "base/resources.pb is too convoluted")
}
