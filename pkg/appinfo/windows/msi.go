package windows

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// A Windows Installer database (.msi) is a compound file (cfb.go) whose streams hold tables.
// Stream names are packed: a table's stream name is the character U+4840 followed by its name,
// two characters of the set [0-9A-Za-z._] per UTF-16 unit (U+3800 + c1 + c2<<6, each character
// a 6-bit index into that set), a lone last one as U+4800 + c. Binary columns are streams named
// "Table.Key" packed the same way, without the U+4840 mark.
//
// Strings live in one pool for the whole database: "_StringPool" holds a 4-byte header (the
// code page; its bit 31 set means string references are 3 bytes wide instead of 2), then for
// each string id from 1 its length and reference count (2 bytes each); "_StringData" holds the
// strings back to back, in the code page. A string of 64 KiB or more takes two pool entries:
// (0, refcount) then (low 16 bits of its length, high 16 bits). An entry (0, 0) is an unused id.
//
// Tables are stored column by column: all rows of the first column, then of the second, and so
// on; a string column holds string ids. The Property table's schema is fixed by the installer
// (Property: string key, Value: localizable string), so the parser reads it without _Columns:
// its stream is rows×2 string references.
//
// The "\x05SummaryInformation" stream is an OLE property set: the Template property
// ("Intel;1033", "x64;1033") names the platform, the Revision Number the package code.

const (
	msiMaxPoolBytes  = 8 << 20  // _StringPool: 2M strings
	msiMaxDataBytes  = 32 << 20 // _StringData
	msiMaxTableBytes = 8 << 20  // the Property table
	msiMaxSummary    = 256 << 10
)

// Root CLSIDs of Windows Installer compound files.
var (
	msiCLSIDDatabase  = [16]byte{0x84, 0x10, 0x0c, 0x00, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46}
	msiCLSIDPatch     = [16]byte{0x86, 0x10, 0x0c, 0x00, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46}
	msiCLSIDTransform = [16]byte{0x82, 0x10, 0x0c, 0x00, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0x46}
)

// IsMSI reports whether r is a compound file that may be a Windows Installer database: the CFB
// signature and a root entry whose CLSID is the installer's (database, patch or transform) or
// empty, as some tools leave it. It reads the header and the first directory entry.
func IsMSI(r io.ReaderAt, size int64) bool {
	if size < 1024 {
		return false
	}
	h := make([]byte, 512)
	if _, err := r.ReadAt(h, 0); err != nil || !isCFB(h) {
		return false
	}
	shift := binary.LittleEndian.Uint16(h[30:])
	if shift != 9 && shift != 12 {
		return false
	}
	off := (int64(binary.LittleEndian.Uint32(h[48:])) + 1) << shift
	if off < 0 || off > size-128 {
		return false
	}
	var clsid [16]byte
	if _, err := r.ReadAt(clsid[:], off+80); err != nil {
		return false
	}
	return clsid == msiCLSIDDatabase || clsid == msiCLSIDPatch || clsid == msiCLSIDTransform || clsid == [16]byte{}
}

// msiNameChars is the packed stream names' character set.
const msiNameChars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._"

// msiStreamName unpacks a stream name; a table's stream comes out as "!Name".
func msiStreamName(n cfbName) string {
	var b strings.Builder
	for _, u := range n {
		switch {
		case u >= 0x3800 && u < 0x4800:
			v := u - 0x3800
			b.WriteByte(msiNameChars[v&0x3f])
			b.WriteByte(msiNameChars[v>>6&0x3f])
		case u >= 0x4800 && u < 0x4840:
			b.WriteByte(msiNameChars[u-0x4800])
		case u == 0x4840:
			b.WriteByte('!')
		default:
			b.WriteRune(rune(u))
		}
	}
	return b.String()
}

// ParseMSI reads a Windows Installer database: its Property table and summary information.
func ParseMSI(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	c, err := openCFB(r, size)
	if err != nil {
		return nil, err
	}
	switch c.entries[0].clsid {
	case msiCLSIDPatch:
		return nil, errs.Invalidf("the file is a Windows Installer patch (.msp), not an installer")
	case msiCLSIDTransform:
		return nil, errs.Invalidf("the file is a Windows Installer transform (.mst), not an installer")
	}
	streams := map[string]*cfbEntry{}
	for _, e := range c.rootStreams() {
		if name := msiStreamName(e.name); streams[name] == nil {
			streams[name] = e
		}
	}
	poolE, dataE, propE := streams["!_StringPool"], streams["!_StringData"], streams["!Property"]
	if poolE == nil || dataE == nil || propE == nil {
		return nil, errs.Invalidf("not a Windows Installer database (a compound file without a string pool or Property table)")
	}
	pool, err := c.readStream(poolE, msiMaxPoolBytes, "MSI string pool")
	if err != nil {
		return nil, err
	}
	data, err := c.readStream(dataE, msiMaxDataBytes, "MSI string data")
	if err != nil {
		return nil, err
	}
	st, err := loadStringPool(pool, data)
	if err != nil {
		return nil, err
	}
	table, err := c.readStream(propE, msiMaxTableBytes, "MSI Property table")
	if err != nil {
		return nil, err
	}
	props, err := st.propertyTable(table)
	if err != nil {
		return nil, err
	}
	info := &appinfo.Info{Platform: appinfo.Windows, Format: appinfo.FormatMSI, Device: appinfo.DeviceWindows,
		Name: props["ProductName"], BundleID: props["ProductName"], ReleaseVersion: props["ProductVersion"],
		BuildVersion: props["ProductVersion"], Publisher: props["Manufacturer"]}
	for _, k := range []string{"ProductCode", "UpgradeCode", "ProductLanguage"} {
		info.SetProperty(k, props[k])
	}
	var summary msiSummary
	if e := streams["\x05SummaryInformation"]; e != nil {
		// The summary is optional to this parser: a damaged one costs the architecture only.
		if b, err := c.readStream(e, msiMaxSummary, "MSI summary information"); err == nil {
			summary = parseSummary(b)
		}
	}
	if a := msiArch(summary.template); a != "" {
		info.Architectures = []string{a}
	}
	info.SetProperty("PackageCode", summary.revision)
	info.Description = first(props["ARPCOMMENTS"], summary.comments)
	if name := props["ARPPRODUCTICON"]; name != "" {
		if e := streams["Icon."+name]; e != nil {
			if b, err := c.readStream(e, appinfo.MaxIconBytes, "MSI icon"); err == nil && !bytes.HasPrefix(b, []byte("MZ")) {
				info.Icon, _ = icoFileIcon(b)
			}
		}
	}
	return info, nil
}

// msiStrings is a loaded string pool: each id's span in the data.
type msiStrings struct {
	data    []byte
	spans   []msiSpan // index = string id; 0 is the null string
	refSize int
	dec     *encoding.Decoder
}

type msiSpan struct{ off, n uint32 }

func loadStringPool(pool, data []byte) (*msiStrings, error) {
	if len(pool) < 4 || len(pool)%4 != 0 {
		return nil, errs.Invalidf("the MSI string pool is corrupt (%d bytes)", len(pool))
	}
	hdr := binary.LittleEndian.Uint32(pool)
	st := &msiStrings{data: data, refSize: 2, dec: codepageDecoder(hdr & 0x7fffffff)}
	if hdr&0x80000000 != 0 {
		st.refSize = 3
	}
	count := len(pool) / 4
	st.spans = make([]msiSpan, 1, count)
	var off uint64
	for i := 1; i < count; {
		n := uint64(binary.LittleEndian.Uint16(pool[i*4:]))
		refs := binary.LittleEndian.Uint16(pool[i*4+2:])
		switch {
		case n == 0 && refs == 0: // an unused id
			st.spans = append(st.spans, msiSpan{})
			i++
			continue
		case n == 0: // a long string: the next entry holds its length
			if i+1 >= count {
				return nil, errs.Invalidf("the MSI string pool is corrupt (a long string without its length)")
			}
			n = uint64(binary.LittleEndian.Uint16(pool[i*4+4:])) | uint64(binary.LittleEndian.Uint16(pool[i*4+6:]))<<16
			i += 2
		default:
			i++
		}
		if off+n > uint64(len(data)) {
			return nil, errs.Invalidf("the MSI string pool declares more string data than the database holds (%d bytes)", len(data))
		}
		st.spans = append(st.spans, msiSpan{uint32(off), uint32(n)})
		off += n
	}
	return st, nil
}

// str returns string id as UTF-8; ok is false for an id outside the pool.
func (st *msiStrings) str(id uint32) (string, bool) {
	if int64(id) >= int64(len(st.spans)) {
		return "", false
	}
	s := st.spans[id]
	b := st.data[s.off : s.off+s.n]
	if len(b) > 4*maxTextLen {
		b = b[:4*maxTextLen]
	}
	if st.dec == nil || utf8.Valid(b) && isASCII(b) {
		return clean(string(b)), true
	}
	out, err := st.dec.Bytes(b)
	if err != nil {
		return clean(strings.ToValidUTF8(string(b), "")), true
	}
	return clean(string(out)), true
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// msiWanted are the properties the parser reads; the others are not decoded.
var msiWanted = map[string]bool{"ProductName": true, "ProductVersion": true, "Manufacturer": true,
	"ProductCode": true, "UpgradeCode": true, "ProductLanguage": true, "ARPCOMMENTS": true, "ARPPRODUCTICON": true}

// raw returns the stored bytes of string id; ok is false for an id outside the pool.
func (st *msiStrings) raw(id uint32) ([]byte, bool) {
	if int64(id) >= int64(len(st.spans)) {
		return nil, false
	}
	s := st.spans[id]
	return st.data[s.off : s.off+s.n], true
}

// propertyTable reads the wanted rows of the Property table: two string columns, stored column
// by column. Property names are identifiers, compared as stored; only wanted values are decoded.
func (st *msiStrings) propertyTable(b []byte) (map[string]string, error) {
	row := 2 * st.refSize
	if len(b)%row != 0 {
		return nil, errs.Invalidf("the MSI Property table is corrupt (%d bytes is not a whole number of rows)", len(b))
	}
	rows := len(b) / row
	ref := func(col, i int) uint32 {
		p := b[(col*rows+i)*st.refSize:]
		v := uint32(p[0]) | uint32(p[1])<<8
		if st.refSize == 3 {
			v |= uint32(p[2]) << 16
		}
		return v
	}
	props := map[string]string{}
	for i := range rows {
		k, ok1 := st.raw(ref(0, i))
		vid := ref(1, i)
		if !ok1 || int64(vid) >= int64(len(st.spans)) {
			return nil, errs.Invalidf("the MSI Property table refers to a string the pool does not hold")
		}
		if key := string(k); msiWanted[key] {
			props[key], _ = st.str(vid)
		}
	}
	return props, nil
}

// codepageDecoder returns the decoder of a Windows code page; nil for UTF-8 and ASCII, and for
// code pages without a table here (their bytes are then kept when they are valid UTF-8).
func codepageDecoder(cp uint32) *encoding.Decoder {
	var e encoding.Encoding
	switch cp {
	case 0, 1252, 20127:
		e = charmap.Windows1252
	case 1250:
		e = charmap.Windows1250
	case 1251:
		e = charmap.Windows1251
	case 1253:
		e = charmap.Windows1253
	case 1254:
		e = charmap.Windows1254
	case 1255:
		e = charmap.Windows1255
	case 1256:
		e = charmap.Windows1256
	case 1257:
		e = charmap.Windows1257
	case 1258:
		e = charmap.Windows1258
	case 874:
		e = charmap.Windows874
	case 28591:
		e = charmap.ISO8859_1
	case 932:
		e = japanese.ShiftJIS
	case 936:
		e = simplifiedchinese.GBK
	case 949:
		e = korean.EUCKR
	case 950:
		e = traditionalchinese.Big5
	default: // 65001 (UTF-8) and the rest
		return nil
	}
	return e.NewDecoder()
}

// msiSummary is what the parser reads of the summary information.
type msiSummary struct {
	template, revision, comments string
}

// parseSummary reads the string properties of an OLE property set stream: a 28-byte header,
// the first section's format id and offset, then the section: its size, its property count,
// and (id, offset) pairs; a VT_LPSTR value is its byte count and the bytes in the set's code
// page (property 1). A damaged set gives what could be read.
func parseSummary(b []byte) msiSummary {
	var s msiSummary
	if len(b) < 48 || binary.LittleEndian.Uint16(b) != 0xfffe {
		return s
	}
	sec := int64(binary.LittleEndian.Uint32(b[44:]))
	if sec < 0 || sec+8 > int64(len(b)) {
		return s
	}
	n := int64(binary.LittleEndian.Uint32(b[sec+4:]))
	if sec+8+n*8 > int64(len(b)) {
		return s
	}
	vals := map[uint32][]byte{}
	var cp uint32 = 1252
	for i := range n {
		id := binary.LittleEndian.Uint32(b[sec+8+i*8:])
		off := sec + int64(binary.LittleEndian.Uint32(b[sec+12+i*8:]))
		if off < 0 || off+8 > int64(len(b)) {
			continue
		}
		switch typ := binary.LittleEndian.Uint32(b[off:]); {
		case id == 1 && typ == 2: // VT_I2 code page
			cp = uint32(binary.LittleEndian.Uint16(b[off+4:]))
		case typ == 0x1e: // VT_LPSTR
			l := int64(binary.LittleEndian.Uint32(b[off+4:]))
			if l >= 0 && off+8+l <= int64(len(b)) {
				vals[id] = b[off+8 : off+8+l]
			}
		}
	}
	dec := codepageDecoder(cp)
	str := func(id uint32) string {
		v := vals[id]
		if dec != nil && !isASCII(v) {
			if out, err := dec.Bytes(v); err == nil {
				v = out
			}
		}
		return clean(string(v))
	}
	s.template, s.revision, s.comments = str(7), str(9), str(6)
	return s
}

// msiArch maps the summary's Template platform to an architecture.
func msiArch(template string) string {
	p, _, _ := strings.Cut(template, ";")
	switch strings.ToLower(strings.TrimSpace(p)) {
	case "intel":
		return "x86"
	case "x64", "amd64":
		return "x64"
	case "arm64":
		return "arm64"
	case "arm":
		return "arm"
	case "intel64":
		return "ia64"
	}
	return ""
}
