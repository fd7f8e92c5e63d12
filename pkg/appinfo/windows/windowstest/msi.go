package windowstest

import (
	"bytes"
	"encoding/binary"
	"io"
	"sort"
	"strings"
)

// MSIOptions describes a synthetic Windows Installer database.
type MSIOptions struct {
	// Property table values; empty ones are left out. ProductName defaults to "Field Tool",
	// ProductVersion to "0.9.1", Manufacturer to "Acme Labs".
	ProductName, ProductVersion, Manufacturer, ProductCode, UpgradeCode string
	// Properties are further Property table rows (ARPCOMMENTS, ProductLanguage, ...).
	Properties map[string]string
	// Template is the summary's platform and languages (default "x64;1033").
	Template string
	// Icon, when set, is stored in the Icon table as "product.ico" and named by ARPPRODUCTICON.
	Icon []byte
	// CabBytes is the size of an embedded cabinet stream of pseudo-random bytes, written first
	// as msitools does (default 8 KiB; at least 4096; negative for none).
	CabBytes int64
	// LongRefs stores string references in 3 bytes (bit 31 of the pool header), as databases
	// with more than 65535 strings do.
	LongRefs bool
	// Codepage of the string pool (default 1252). Strings are written as given (UTF-8 bytes),
	// so use 65001 or ASCII values.
	Codepage uint32
	// LongString, when set, is stored as a Property "LONG" value over 64 KiB, exercising the
	// pool's two-entry form.
	LongString string
	// Streams are further raw streams (hostile tests).
	Streams []CFBStream
}

// MSICLSID is the root CLSID of an installer database.
var MSICLSID = [16]byte{0x84, 0x10, 0x0c, 0x00, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46}

// BuildMSI returns the bytes of the database o describes.
func BuildMSI(o MSIOptions) []byte {
	var b bytes.Buffer
	if _, err := WriteMSI(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteMSI streams the database o describes to w and returns its size.
func WriteMSI(w io.Writer, o MSIOptions) (int64, error) {
	return WriteCFB(w, MSICLSID, MSIStreams(o))
}

// MSIStreams returns the streams of the database o describes: the string pool, _Tables,
// _Columns, Property (and Icon), the summary information and the cabinet.
func MSIStreams(o MSIOptions) []CFBStream {
	props := map[string]string{
		"ProductName": or(o.ProductName, "Field Tool"), "ProductVersion": or(o.ProductVersion, "0.9.1"),
		"Manufacturer": or(o.Manufacturer, "Acme Labs"), "ProductCode": o.ProductCode, "UpgradeCode": o.UpgradeCode,
		"ProductLanguage": "1033",
	}
	for k, v := range o.Properties {
		props[k] = v
	}
	if o.Icon != nil {
		props["ARPPRODUCTICON"] = "product.ico"
	}
	if o.LongString != "" {
		props["LONG"] = o.LongString
	}
	var keys []string
	for k, v := range props {
		if v != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)

	sp := &stringPool{ids: map[string]uint32{}}
	tables := []string{"Property"}
	if o.Icon != nil {
		tables = append(tables, "Icon")
	}
	type col struct {
		table, name string
		typ         uint16
	}
	cols := []col{{"Property", "Property", 0x2d48}, {"Property", "Value", 0x0f00}}
	if o.Icon != nil {
		cols = append(cols, col{"Icon", "Name", 0x2d48}, col{"Icon", "Data", 0x0900})
	}
	refs := 2
	if o.LongRefs {
		refs = 3
	}
	ref := func(b []byte, s string) []byte {
		id := sp.id(s)
		b = append(b, byte(id), byte(id>>8))
		if refs == 3 {
			b = append(b, byte(id>>16))
		}
		return b
	}
	i2 := func(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v^0x8000) }

	var tablesT, columnsT, propT, iconT []byte
	for _, t := range tables {
		tablesT = ref(tablesT, t)
	}
	for _, c := range cols {
		columnsT = ref(columnsT, c.table)
	}
	for i, c := range cols {
		n := 1
		if i > 0 && cols[i-1].table == c.table {
			n = 2
		}
		columnsT = i2(columnsT, uint16(n))
	}
	for _, c := range cols {
		columnsT = ref(columnsT, c.name)
	}
	for _, c := range cols {
		columnsT = i2(columnsT, c.typ)
	}
	for _, k := range keys {
		propT = ref(propT, k)
	}
	for _, k := range keys {
		propT = ref(propT, props[k])
	}
	if o.Icon != nil {
		iconT = ref(iconT, "product.ico")
		iconT = append(iconT, 0, 0) // a binary column holds no string: its stream is Icon.<key>
	}
	cp := o.Codepage
	if cp == 0 {
		cp = 1252
	}
	pool, data := sp.encode(cp, o.LongRefs)
	streams := []CFBStream{
		{Name: MSIStreamName("_StringPool", true), Data: pool},
		{Name: MSIStreamName("_StringData", true), Data: data},
		{Name: MSIStreamName("_Tables", true), Data: tablesT},
		{Name: MSIStreamName("_Columns", true), Data: columnsT},
		{Name: MSIStreamName("Property", true), Data: propT},
		{Name: append([]uint16{5}, utf16s("SummaryInformation")...), Data: Summary(or(o.Template, "x64;1033"), props["ProductName"], props["Manufacturer"], "{D67542DF-3CB2-4694-8038-02FE1A6084CA}")},
	}
	if o.Icon != nil {
		streams = append(streams, CFBStream{Name: MSIStreamName("Icon", true), Data: iconT},
			CFBStream{Name: MSIStreamName("Icon.product.ico", false), Data: o.Icon})
	}
	cab := o.CabBytes
	if cab == 0 {
		cab = 8 << 10
	}
	if cab < 0 {
		return append(streams, o.Streams...)
	}
	streams = append(streams, CFBStream{Name: MSIStreamName("tool.cab", false), Size: cab, Fill: func(w io.Writer) error {
		if _, err := w.Write([]byte("MSCF")); err != nil {
			return err
		}
		return writeRandom(w, cab-4, 0xcab)
	}})
	return append(streams, o.Streams...)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func utf16s(s string) []uint16 {
	var u []uint16
	for _, r := range s {
		u = append(u, uint16(r))
	}
	return u
}

// MSIStreamName packs a stream name as the installer does: two characters of [0-9A-Za-z._] per
// code unit (U+3800 + c1 + c2<<6), a lone last one as U+4800 + c, other characters as they are;
// a table's stream starts with U+4840.
func MSIStreamName(name string, table bool) []uint16 {
	const set = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._"
	var out []uint16
	if table {
		out = append(out, 0x4840)
	}
	for i := 0; i < len(name); i++ {
		c := strings.IndexByte(set, name[i])
		if c < 0 {
			out = append(out, uint16(name[i]))
			continue
		}
		if i+1 < len(name) {
			if d := strings.IndexByte(set, name[i+1]); d >= 0 {
				out = append(out, uint16(0x3800+c+d<<6))
				i++
				continue
			}
		}
		out = append(out, uint16(0x4800+c))
	}
	return out
}

// stringPool interns strings with ids from 1 and counts references.
type stringPool struct {
	ids  map[string]uint32
	strs []string
	refs []uint16
}

func (p *stringPool) id(s string) uint32 {
	if s == "" {
		return 0
	}
	id, ok := p.ids[s]
	if !ok {
		p.strs = append(p.strs, s)
		p.refs = append(p.refs, 0)
		id = uint32(len(p.strs))
		p.ids[s] = id
	}
	p.refs[id-1]++
	return id
}

// encode returns _StringPool and _StringData.
func (p *stringPool) encode(codepage uint32, longRefs bool) (pool, data []byte) {
	hdr := codepage
	if longRefs {
		hdr |= 0x80000000
	}
	pool = binary.LittleEndian.AppendUint32(nil, hdr)
	for i, s := range p.strs {
		if len(s) > 0xffff {
			pool = binary.LittleEndian.AppendUint16(pool, 0)
			pool = binary.LittleEndian.AppendUint16(pool, p.refs[i])
			pool = binary.LittleEndian.AppendUint16(pool, uint16(len(s)))
			pool = binary.LittleEndian.AppendUint16(pool, uint16(len(s)>>16))
		} else {
			pool = binary.LittleEndian.AppendUint16(pool, uint16(len(s)))
			pool = binary.LittleEndian.AppendUint16(pool, p.refs[i])
		}
		data = append(data, s...)
	}
	return pool, data
}

// Summary returns a SummaryInformation property set: code page 1252, title, subject, author,
// comments, template, revision number (package code), page count 200 (schema), word count 2.
func Summary(template, subject, author, revision string) []byte {
	type prop struct {
		id  uint32
		val []byte
	}
	lpstr := func(s string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 0x1e)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)+1))
		return append(append(b, s...), 0)
	}
	i4 := func(v uint32) []byte {
		b := binary.LittleEndian.AppendUint32(nil, 3)
		return binary.LittleEndian.AppendUint32(b, v)
	}
	props := []prop{
		{1, []byte{2, 0, 0, 0, 0xe4, 0x04, 0, 0}}, // VT_I2 1252
		{2, lpstr("Installation Database")}, {3, lpstr(subject)}, {4, lpstr(author)}, {6, lpstr("Hello")},
		{7, lpstr(template)}, {9, lpstr(revision)}, {14, i4(200)}, {15, i4(2)},
	}
	var body []byte
	offs := make([]uint32, len(props))
	head := 8 + 8*len(props)
	for i, p := range props {
		offs[i] = uint32(head + len(body))
		body = append(body, p.val...)
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
	}
	sec := binary.LittleEndian.AppendUint32(nil, uint32(head+len(body)))
	sec = binary.LittleEndian.AppendUint32(sec, uint32(len(props)))
	for i, p := range props {
		sec = binary.LittleEndian.AppendUint32(sec, p.id)
		sec = binary.LittleEndian.AppendUint32(sec, offs[i])
	}
	sec = append(sec, body...)
	b := []byte{0xfe, 0xff, 0, 0, 5, 1, 2, 0}
	b = append(b, make([]byte, 16)...) // CLSID
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = append(b, 0xe0, 0x85, 0x9f, 0xf2, 0xf9, 0x4f, 0x68, 0x10, 0xab, 0x91, 0x08, 0x00, 0x2b, 0x27, 0xb3, 0xd9)
	b = binary.LittleEndian.AppendUint32(b, 48)
	return append(b, sec...)
}
