// Package androidtest builds synthetic Android packages: an APK with a binary AXML manifest and a
// resources.arsc, and an AAB with aapt2 protobuf manifest and resource table, encoded from scratch
// so that the tests of package android and of the callers of appinfo.Parse mean something without
// the shared fixtures and can vary one thing at a time. Apple's builders (and StandardPNG) are in
// package appletest.
package androidtest

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"google.golang.org/protobuf/encoding/protowire"
)

// Resource ids the synthetic packages use for android:label and android:icon.
const (
	AndroidLabelID = 0x7f010000 // string/app_name
	AndroidIconID  = 0x7f020000 // mipmap/ic_launcher
)

// AndroidManifest is what a synthetic manifest declares; zero values are left out.
type AndroidManifest struct {
	Package     string
	VersionCode int
	VersionName string
	MinSDK      int
	TargetSDK   int
	// Label is a literal android:label.
	Label string
	// LabelStrings, when set, makes android:label a reference to string/app_name, with one value
	// per locale: "" is the default, "zh-CN" a localized value.
	LabelStrings map[string]string
	// Features are <uses-feature android:name> values, such as "android.hardware.type.watch".
	Features []string
	// Permissions are <uses-permission android:name> values, such as
	// "android.permission.CAMERA".
	Permissions []string
	// Icons, when set, makes android:icon a reference to mipmap/ic_launcher with these variants.
	Icons []AndroidIcon
}

// AndroidIcon is one configuration of the synthetic launcher icon resource.
type AndroidIcon struct {
	// Density is the configuration's density in dpi: 160 mdpi ... 640 xxxhdpi, 0xfffe anydpi.
	Density uint16
	// Path is the file's path within the module, such as "res/mipmap-xxxhdpi-v4/ic_launcher.png".
	Path string
	// Data is the file (AndroidPNG, AndroidWebPHead); nil leaves the file out of the archive.
	Data []byte
}

// AndroidEntry is an extra zip entry of a synthetic package.
type AndroidEntry struct {
	Name string
	Data []byte
}

// APKOptions describes a synthetic APK.
type APKOptions struct {
	AndroidManifest
	// UTF8 writes the manifest's string pool as UTF-8 instead of UTF-16.
	UTF8 bool
	// SparseResources encodes resources.arsc type chunks sparsely, as `aapt2 optimize` does.
	SparseResources bool
	// Manifest, when set, replaces the generated AndroidManifest.xml.
	Manifest []byte
	// Resources, when set, replaces the generated resources.arsc; NoResources leaves it out.
	Resources   []byte
	NoResources bool
	Entries     []AndroidEntry
	// FillerBytes writes that many bytes of incompressible native libraries first, as stored
	// entries of at most 16 MiB (lib/arm64-v8a/libfillerNNNN.so), to make large packages without
	// holding them in memory (WriteAPK).
	FillerBytes int64
}

// BuildAPK returns a synthetic APK: AndroidManifest.xml, resources.arsc, classes.dex, the icon
// files and any extra entries.
func BuildAPK(o APKOptions) []byte {
	var buf bytes.Buffer
	if err := WriteAPK(&buf, o); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// WriteAPK streams the APK BuildAPK returns to w, after o.FillerBytes of native libraries.
func WriteAPK(w io.Writer, o APKOptions) error {
	manifest := o.Manifest
	if manifest == nil {
		manifest = BuildAXML(o)
	}
	entries := []AndroidEntry{{"AndroidManifest.xml", manifest}}
	if !o.NoResources {
		res := o.Resources
		if res == nil {
			res = BuildARSC(o)
		}
		entries = append(entries, AndroidEntry{"resources.arsc", res})
	}
	entries = append(entries, AndroidEntry{"classes.dex", []byte("dex\n035\x00")})
	for _, ic := range o.Icons {
		if ic.Data != nil {
			entries = append(entries, AndroidEntry{ic.Path, ic.Data})
		}
	}
	return writeAndroidZip(w, "lib/arm64-v8a/", o.FillerBytes, append(entries, o.Entries...))
}

// AABOptions describes a synthetic Android App Bundle.
type AABOptions struct {
	AndroidManifest
	// TextValuesOnly writes attribute values only as source text (XmlAttribute.value), without
	// compiled items.
	TextValuesOnly bool
	// Manifest, when set, replaces the generated base/manifest/AndroidManifest.xml.
	Manifest []byte
	// Resources, when set, replaces the generated base/resources.pb; NoResources leaves it out.
	Resources   []byte
	NoResources bool
	Entries     []AndroidEntry
	// FillerBytes writes that many bytes of incompressible native libraries first, as stored
	// entries of at most 16 MiB (base/lib/arm64-v8a/libfillerNNNN.so), to make large bundles
	// without holding them in memory (WriteAAB).
	FillerBytes int64
}

// BuildAAB returns a synthetic app bundle: BundleConfig.pb, the base module's protobuf manifest
// and resources.pb, its icon files (under base/) and any extra entries.
func BuildAAB(o AABOptions) []byte {
	var buf bytes.Buffer
	if err := WriteAAB(&buf, o); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// WriteAAB streams the bundle BuildAAB returns to w, after o.FillerBytes of native libraries.
func WriteAAB(w io.Writer, o AABOptions) error {
	manifest := o.Manifest
	if manifest == nil {
		manifest = BuildAABManifest(o)
	}
	entries := []AndroidEntry{{"BundleConfig.pb", nil}, {"base/manifest/AndroidManifest.xml", manifest}}
	if !o.NoResources {
		res := o.Resources
		if res == nil {
			res = BuildAABResources(o)
		}
		entries = append(entries, AndroidEntry{"base/resources.pb", res})
	}
	for _, ic := range o.Icons {
		if ic.Data != nil {
			entries = append(entries, AndroidEntry{"base/" + ic.Path, ic.Data})
		}
	}
	return writeAndroidZip(w, "base/lib/arm64-v8a/", o.FillerBytes, append(entries, o.Entries...))
}

// AndroidZip returns a zip archive of the entries, deflated, in order.
func AndroidZip(entries ...AndroidEntry) []byte {
	var buf bytes.Buffer
	if err := writeAndroidZip(&buf, "", 0, entries); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// writeAndroidZip writes filler bytes of stored, incompressible (deterministic) libraries of at
// most 16 MiB under fillerDir, then the entries, deflated, in order.
func writeAndroidZip(w io.Writer, fillerDir string, filler int64, entries []AndroidEntry) error {
	zw := zip.NewWriter(w)
	const part = 16 << 20
	rng := rand.NewChaCha8([32]byte{'a', 'n', 'd', 'r', 'o', 'i', 'd'})
	chunk := make([]byte, 1<<20)
	for i := 0; filler > 0; i++ {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("%slibfiller%04d.so", fillerDir, i), Method: zip.Store})
		if err != nil {
			return err
		}
		for left := min(filler, part); left > 0; {
			c := chunk[:min(left, int64(len(chunk)))]
			_, _ = rng.Read(c)
			if _, err := fw.Write(c); err != nil {
				return err
			}
			left -= int64(len(c))
			filler -= int64(len(c))
		}
	}
	for _, e := range entries {
		ew, err := zw.CreateHeader(&zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err == nil {
			_, err = ew.Write(e.Data)
		}
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

// AndroidPNG returns a w×h PNG image.
func AndroidPNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.NRGBA{R: uint8(x), G: uint8(y), B: 0x80, A: 0xff})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// AndroidWebPHead returns the head of an extended (VP8X) WebP file declaring a w×h canvas. It
// is not a decodable image, but enough for parsers that read the size from the header.
func AndroidWebPHead(w, h int) []byte {
	b := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x10\x00\x00\x00")
	b = append(b, byte(w-1), byte((w-1)>>8), byte((w-1)>>16), byte(h-1), byte((h-1)>>8), byte((h-1)>>16))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)-8))
	return b
}

// Framework attribute ids (android.R.attr) of the manifest attributes written.
const (
	androidAttrLabel            = 0x01010001
	androidAttrIcon             = 0x01010002
	androidAttrName             = 0x01010003
	androidAttrMinSdkVersion    = 0x0101020c
	androidAttrVersionCode      = 0x0101021b
	androidAttrVersionName      = 0x0101021c
	androidAttrTargetSdkVersion = 0x01010270
	androidNS                   = "http://schemas.android.com/apk/res/android"
)

// Res_value data types.
const (
	androidTypeReference = 0x01
	androidTypeString    = 0x03
	androidTypeIntDec    = 0x10
)

// androidAttr is a manifest attribute before encoding.
type androidAttr struct {
	id   uint32 // framework attribute id; 0 for package
	name string
	str  string // a string value; or
	typ  uint8  // a typed value with data
	data uint32
}

// androidElem is a manifest element before encoding.
type androidElem struct {
	name     string
	attrs    []androidAttr
	children []androidElem
}

// androidTree lays the manifest out as elements.
func (m *AndroidManifest) androidTree() androidElem {
	root := androidElem{name: "manifest", attrs: []androidAttr{{name: "package", str: m.Package}}}
	if m.VersionCode != 0 {
		root.attrs = append(root.attrs, androidAttr{id: androidAttrVersionCode, name: "versionCode", typ: androidTypeIntDec, data: uint32(m.VersionCode)})
	}
	if m.VersionName != "" {
		root.attrs = append(root.attrs, androidAttr{id: androidAttrVersionName, name: "versionName", str: m.VersionName})
	}
	sdk := androidElem{name: "uses-sdk"}
	if m.MinSDK != 0 {
		sdk.attrs = append(sdk.attrs, androidAttr{id: androidAttrMinSdkVersion, name: "minSdkVersion", typ: androidTypeIntDec, data: uint32(m.MinSDK)})
	}
	if m.TargetSDK != 0 {
		sdk.attrs = append(sdk.attrs, androidAttr{id: androidAttrTargetSdkVersion, name: "targetSdkVersion", typ: androidTypeIntDec, data: uint32(m.TargetSDK)})
	}
	if len(sdk.attrs) > 0 {
		root.children = append(root.children, sdk)
	}
	for _, p := range m.Permissions {
		root.children = append(root.children, androidElem{name: "uses-permission", attrs: []androidAttr{{id: androidAttrName, name: "name", str: p}}})
	}
	for _, f := range m.Features {
		root.children = append(root.children, androidElem{name: "uses-feature", attrs: []androidAttr{{id: androidAttrName, name: "name", str: f}}})
	}
	app := androidElem{name: "application"}
	switch {
	case m.LabelStrings != nil:
		app.attrs = append(app.attrs, androidAttr{id: androidAttrLabel, name: "label", typ: androidTypeReference, data: AndroidLabelID})
	case m.Label != "":
		app.attrs = append(app.attrs, androidAttr{id: androidAttrLabel, name: "label", str: m.Label})
	}
	if len(m.Icons) > 0 {
		app.attrs = append(app.attrs, androidAttr{id: androidAttrIcon, name: "icon", typ: androidTypeReference, data: AndroidIconID})
	}
	return androidElem{name: root.name, attrs: root.attrs, children: append(root.children, app)}
}

// androidPool builds a ResStringPool.
type androidPool struct {
	strs  []string
	index map[string]uint32
}

func (p *androidPool) add(s string) uint32 {
	if p.index == nil {
		p.index = map[string]uint32{}
	}
	if i, ok := p.index[s]; ok {
		return i
	}
	p.index[s] = uint32(len(p.strs))
	p.strs = append(p.strs, s)
	return p.index[s]
}

// chunk encodes the pool as a string pool chunk, UTF-8 or UTF-16.
func (p *androidPool) chunk(utf8 bool) []byte {
	var data []byte
	offsets := make([]uint32, len(p.strs))
	for i, s := range p.strs {
		offsets[i] = uint32(len(data))
		if utf8 {
			data = androidLen8(androidLen8(data, len(utf16.Encode([]rune(s)))), len(s))
			data = append(append(data, s...), 0)
			continue
		}
		units := utf16.Encode([]rune(s))
		if len(units) >= 0x8000 {
			data = binary.LittleEndian.AppendUint16(data, uint16(len(units)>>16|0x8000))
		}
		data = binary.LittleEndian.AppendUint16(data, uint16(len(units)))
		for _, u := range units {
			data = binary.LittleEndian.AppendUint16(data, u)
		}
		data = append(data, 0, 0)
	}
	for len(data)%4 != 0 {
		data = append(data, 0)
	}
	var flags uint32
	if utf8 {
		flags = 0x100
	}
	start := 28 + 4*len(p.strs)
	b := androidChunkHead(0x0001, 28, start+len(data))
	b = androidU32s(b, uint32(len(p.strs)), 0, flags, uint32(start), 0)
	return append(androidU32s(b, offsets...), data...)
}

// androidLen8 appends a UTF-8 pool length: one byte, or two with the high bit set.
func androidLen8(b []byte, n int) []byte {
	if n < 0x80 {
		return append(b, byte(n))
	}
	return append(b, byte(n>>8|0x80), byte(n))
}

func androidChunkHead(typ, hdr uint16, size int) []byte {
	b := binary.LittleEndian.AppendUint16(nil, typ)
	b = binary.LittleEndian.AppendUint16(b, hdr)
	return binary.LittleEndian.AppendUint32(b, uint32(size))
}

func androidU32s(b []byte, vs ...uint32) []byte {
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// BuildAXML returns the binary AndroidManifest.xml of a synthetic APK: a string pool whose first
// strings are the attribute names of the resource map, then namespace and element chunks.
func BuildAXML(o APKOptions) []byte {
	tree := o.androidTree()
	var pool androidPool
	var ids []uint32
	var collect func(e androidElem)
	collect = func(e androidElem) { // attribute names with ids come first, matching the resource map
		for _, a := range e.attrs {
			if _, ok := pool.index[a.name]; a.id != 0 && !ok {
				pool.add(a.name)
				ids = append(ids, a.id)
			}
		}
		for _, c := range e.children {
			collect(c)
		}
	}
	collect(tree)
	prefix, uri := pool.add("android"), pool.add(androidNS)

	var body []byte
	ns := binary.LittleEndian.AppendUint32(androidChunkHead(0x0100, 16, 24), 1)
	body = append(body, androidU32s(ns, 0xFFFFFFFF, prefix, uri)...)
	var write func(e androidElem)
	write = func(e androidElem) {
		name := pool.add(e.name)
		start := androidChunkHead(0x0102, 16, 36+20*len(e.attrs))
		start = androidU32s(start, 1, 0xFFFFFFFF, 0xFFFFFFFF, name)
		start = binary.LittleEndian.AppendUint16(start, 20)
		start = binary.LittleEndian.AppendUint16(start, 20)
		start = binary.LittleEndian.AppendUint16(start, uint16(len(e.attrs)))
		start = append(start, 0, 0, 0, 0, 0, 0)
		for _, a := range e.attrs {
			attrNS, raw, typ, data := uri, uint32(0xFFFFFFFF), a.typ, a.data
			if a.id == 0 {
				attrNS = 0xFFFFFFFF
			}
			if a.typ == 0 {
				raw = pool.add(a.str)
				typ, data = androidTypeString, raw
			}
			start = androidU32s(start, attrNS, pool.add(a.name), raw)
			start = append(start, 8, 0, 0, typ)
			start = binary.LittleEndian.AppendUint32(start, data)
		}
		body = append(body, start...)
		for _, c := range e.children {
			write(c)
		}
		body = append(body, androidU32s(androidChunkHead(0x0103, 16, 24), 1, 0xFFFFFFFF, 0xFFFFFFFF, name)...)
	}
	write(tree)
	body = append(body, androidU32s(androidChunkHead(0x0101, 16, 24), 1, 0xFFFFFFFF, prefix, uri)...)

	resMap := androidU32s(androidChunkHead(0x0180, 8, 8+4*len(ids)), ids...)
	strPool := pool.chunk(o.UTF8)
	doc := androidChunkHead(0x0003, 8, 8+len(strPool)+len(resMap)+len(body))
	return append(append(append(doc, strPool...), resMap...), body...)
}

// androidLocale splits "zh-CN" or "zh-rCN" into language and region.
func androidLocale(tag string) (lang, region string) {
	lang, region, _ = strings.Cut(tag, "-")
	return lang, strings.TrimPrefix(region, "r")
}

// androidConfig encodes a 64-byte ResTable_config with a locale and a density.
func androidConfig(locale string, density uint16) []byte {
	c := make([]byte, 64)
	binary.LittleEndian.PutUint32(c, 64)
	lang, region := androidLocale(locale)
	copy(c[8:10], lang)
	copy(c[10:12], region)
	binary.LittleEndian.PutUint16(c[14:], density)
	return c
}

// BuildARSC returns the resources.arsc of a synthetic APK: package 0x7f with string/app_name
// (one value per LabelStrings locale) and mipmap/ic_launcher (one path per icon density).
func BuildARSC(o APKOptions) []byte {
	var values androidPool
	type variant struct {
		cfg []byte
		str uint32
	}
	var labels, icons []variant
	for _, locale := range androidSortedKeys(o.LabelStrings) {
		labels = append(labels, variant{androidConfig(locale, 0), values.add(o.LabelStrings[locale])})
	}
	for _, ic := range o.Icons {
		icons = append(icons, variant{androidConfig("", ic.Density), values.add(ic.Path)})
	}
	var typeNames, keyNames androidPool
	typeNames.add("string")
	typeNames.add("mipmap")
	keyNames.add("app_name")
	keyNames.add("ic_launcher")
	typePool, keyPool := typeNames.chunk(false), keyNames.chunk(false)

	var body []byte
	for typeID, vs := range [][]variant{labels, icons} {
		if len(vs) == 0 {
			continue
		}
		spec := append(androidChunkHead(0x0202, 16, 20), byte(typeID+1), 0, 0, 0)
		body = append(body, androidU32s(spec, 1, 0)...)
		for _, v := range vs {
			var flags byte
			index := androidU32s(nil, 0) // entry 0 at offset 0
			if o.SparseResources {
				flags = 0x01 // {uint16 entry index, uint16 offset/4}
			}
			entry := binary.LittleEndian.AppendUint16(nil, 8)               // ResTable_entry.size
			entry = binary.LittleEndian.AppendUint16(entry, 0)              // flags
			entry = binary.LittleEndian.AppendUint32(entry, uint32(typeID)) // key
			entry = append(entry, 8, 0, 0, androidTypeString)               // Res_value
			entry = binary.LittleEndian.AppendUint32(entry, v.str)
			hdr := 20 + len(v.cfg)
			chunk := androidChunkHead(0x0201, uint16(hdr), hdr+len(index)+len(entry))
			chunk = append(chunk, byte(typeID+1), flags, 0, 0)
			chunk = androidU32s(chunk, 1, uint32(hdr+len(index)))
			chunk = append(append(append(chunk, v.cfg...), index...), entry...)
			body = append(body, chunk...)
		}
	}
	pkg := androidChunkHead(0x0200, 288, 288+len(typePool)+len(keyPool)+len(body))
	pkg = binary.LittleEndian.AppendUint32(pkg, 0x7f)
	name := make([]byte, 256)
	for i, u := range utf16.Encode([]rune("com.example")) {
		binary.LittleEndian.PutUint16(name[2*i:], u)
	}
	pkg = append(pkg, name...)
	pkg = androidU32s(pkg, 288, 2, uint32(288+len(typePool)), 2, 0)
	pkg = append(append(append(pkg, typePool...), keyPool...), body...)

	valuePool := values.chunk(true)
	table := androidChunkHead(0x0002, 12, 12+len(valuePool)+len(pkg))
	table = binary.LittleEndian.AppendUint32(table, 1)
	return append(append(table, valuePool...), pkg...)
}

func androidSortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// aab helpers: protowire appenders for the aapt2 messages.
func aabBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func aabString(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func aabVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// BuildAABManifest returns the base module's AndroidManifest.xml: an aapt2 XmlNode (Resources.proto).
func BuildAABManifest(o AABOptions) []byte {
	var element func(e androidElem, root bool) []byte
	element = func(e androidElem, root bool) []byte {
		var el []byte // XmlElement
		if root {
			ns := aabString(aabString(nil, 1, "android"), 2, androidNS) // XmlNamespace{prefix, uri}
			el = aabBytes(el, 1, ns)
		}
		el = aabString(el, 3, e.name)
		for _, a := range e.attrs {
			var attr []byte // XmlAttribute
			if a.id != 0 {
				attr = aabString(attr, 1, androidNS)
			}
			attr = aabString(attr, 2, a.name)
			var item []byte // Item
			switch {
			case a.typ == 0:
				attr = aabString(attr, 3, a.str)
			case a.typ == androidTypeReference:
				kind := map[uint32]string{AndroidLabelID: "@string/app_name", AndroidIconID: "@mipmap/ic_launcher"}[a.data]
				attr = aabString(attr, 3, kind)
				item = aabBytes(nil, 1, aabVarint(nil, 2, uint64(a.data))) // ref: Reference{id}
			default:
				attr = aabString(attr, 3, strconv.Itoa(int(int32(a.data))))
				item = aabBytes(nil, 7, aabVarint(nil, 6, uint64(a.data))) // prim: Primitive{int_decimal_value}
			}
			if a.id != 0 {
				attr = aabVarint(attr, 5, uint64(a.id))
			}
			if item != nil && !o.TextValuesOnly {
				attr = aabBytes(attr, 6, item)
			}
			el = aabBytes(el, 4, attr)
		}
		for _, c := range e.children {
			el = aabBytes(el, 5, aabBytes(nil, 1, element(c, false))) // child: XmlNode{element}
		}
		return el
	}
	return aabBytes(nil, 1, element(o.androidTree(), true))
}

// BuildAABResources returns the base module's resources.pb: an aapt2 ResourceTable with
// string/app_name and mipmap/ic_launcher, as BuildARSC.
func BuildAABResources(o AABOptions) []byte {
	configValue := func(cfg, item []byte) []byte { // ConfigValue{config, value: Value{item}}
		return aabBytes(aabBytes(nil, 1, cfg), 2, aabBytes(nil, 4, item))
	}
	entry := func(name string, values [][]byte) []byte { // Entry{entry_id: EntryId{0}, name, config_value...}
		e := aabString(aabBytes(nil, 1, nil), 2, name)
		for _, v := range values {
			e = aabBytes(e, 6, v)
		}
		return e
	}
	typ := func(id uint64, name string, entry []byte) []byte { // Type{type_id: TypeId{id}, name, entry}
		return aabBytes(aabString(aabBytes(nil, 1, aabVarint(nil, 1, id)), 2, name), 3, entry)
	}
	pkg := aabString(aabBytes(nil, 1, aabVarint(nil, 1, 0x7f)), 2, "com.example") // Package{package_id, package_name}
	if o.LabelStrings != nil {
		var values [][]byte
		for _, locale := range androidSortedKeys(o.LabelStrings) {
			var cfg []byte // Configuration{locale = 3}
			if locale != "" {
				cfg = aabString(nil, 3, locale)
			}
			values = append(values, configValue(cfg, aabBytes(nil, 2, aabString(nil, 1, o.LabelStrings[locale]))))
		}
		pkg = aabBytes(pkg, 3, typ(1, "string", entry("app_name", values)))
	}
	if len(o.Icons) > 0 {
		var values [][]byte
		for _, ic := range o.Icons {
			cfg := aabVarint(nil, 18, uint64(ic.Density)) // Configuration{density = 18}
			fileType := uint64(1)                         // FileReference.Type PNG
			if strings.HasSuffix(ic.Path, ".xml") {
				fileType = 3 // PROTO_XML
			}
			file := aabVarint(aabString(nil, 1, ic.Path), 2, fileType)
			values = append(values, configValue(cfg, aabBytes(nil, 5, file)))
		}
		pkg = aabBytes(pkg, 3, typ(2, "mipmap", entry("ic_launcher", values)))
	}
	return aabBytes(nil, 2, pkg) // ResourceTable{package}
}
