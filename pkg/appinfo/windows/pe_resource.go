package windows

import (
	"encoding/binary"
	"fmt"
	"io"
	"unicode/utf16"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// The resource section is a tree of three levels (type → name → language) of directories: a
// 16-byte header with the number of named and of numbered entries, then 8 bytes per entry, whose
// high bit marks a subdirectory. The leaves are data entries giving the RVA and size of a
// resource. Compilers put every directory at the start of the section, so one read of its first
// 64 KiB usually serves the whole walk.

const (
	rtIcon      = 3
	rtGroupIcon = 14
	rtVersion   = 16

	rsrcFirstRead   = 64 << 10 // the first read of the resource section
	rsrcMaxEntries  = 4096     // entries one directory may declare
	rsrcMaxVersion  = 64 << 10 // VS_VERSIONINFO's length is 16 bits
	rsrcMaxGroup    = 64 << 10 // a group icon directory
	rsrcIconTries   = 4        // icon images read before giving up
	versionMaxNodes = 4096     // nodes of the version resource visited
)

// peResources reads the resource tree of one PE.
type peResources struct {
	r     io.ReaderAt
	pe    *peFile
	base  int64  // file offset of the root directory
	limit int64  // bytes of the section available from base
	buf   []byte // the first bytes of the section from base
}

type rsrcEntry struct {
	id    uint32 // numeric id; 0 for a named entry
	named bool
	dir   bool
	off   uint32 // of the subdirectory or data entry, from the root
}

func openResources(r io.ReaderAt, pe *peFile) (*peResources, error) {
	base, avail, ok := pe.offset(pe.rsrcRVA, 16)
	if !ok {
		return nil, errs.Invalidf("the .exe's resource directory (RVA 0x%x) lies outside the file (truncated?)", pe.rsrcRVA)
	}
	rs := &peResources{r: r, pe: pe, base: base, limit: avail}
	n := min(avail, rsrcFirstRead)
	zipread.Prefetch(r, base, n)
	buf, err := zipread.ReadFullAt(r, base, int(n))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .exe's resource directory is unreadable")
	}
	rs.buf = buf
	return rs, nil
}

// at returns n bytes at off from the root directory.
func (rs *peResources) at(off uint32, n int) ([]byte, error) {
	if int64(off)+int64(n) > rs.limit {
		return nil, errs.Invalidf("the .exe's resource directory points past its section (offset 0x%x)", off)
	}
	if int64(off)+int64(n) <= int64(len(rs.buf)) {
		return rs.buf[off : int(off)+n], nil
	}
	b, err := zipread.ReadFullAt(rs.r, rs.base+int64(off), n)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .exe's resource directory is unreadable")
	}
	return b, nil
}

// dir reads the directory at off.
func (rs *peResources) dir(off uint32) ([]rsrcEntry, error) {
	h, err := rs.at(off, 16)
	if err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint16(h[12:])) + int(binary.LittleEndian.Uint16(h[14:]))
	if n > rsrcMaxEntries {
		return nil, errs.Invalidf("the .exe's resource directory declares %d entries, over the limit of %d", n, rsrcMaxEntries)
	}
	b, err := rs.at(off+16, n*8)
	if err != nil {
		return nil, err
	}
	out := make([]rsrcEntry, n)
	for i := range out {
		name, data := binary.LittleEndian.Uint32(b[i*8:]), binary.LittleEndian.Uint32(b[i*8+4:])
		e := rsrcEntry{named: name&0x80000000 != 0, dir: data&0x80000000 != 0, off: data & 0x7fffffff}
		if !e.named {
			e.id = name
		}
		out[i] = e
	}
	return out, nil
}

// find returns the data of the first resource of type typ (with id name when name > 0), in its
// first language, or nil when there is none. Only three levels are walked, and a directory that
// points back at an ancestor is an error, so a crafted tree cannot loop.
func (rs *peResources) find(typ, name uint32, max int) ([]byte, error) {
	root, err := rs.dir(0)
	if err != nil {
		return nil, err
	}
	loop := errs.Invalidf("the .exe's resource directory loops back on itself")
	for _, t := range root {
		if t.named || t.id != typ || !t.dir {
			continue
		}
		if t.off == 0 {
			return nil, loop
		}
		names, err := rs.dir(t.off)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !n.dir || (name > 0 && (n.named || n.id != name)) {
				continue
			}
			if n.off == 0 || n.off == t.off {
				return nil, loop
			}
			langs, err := rs.dir(n.off)
			if err != nil {
				return nil, err
			}
			for _, l := range langs {
				if l.dir && (l.off == 0 || l.off == t.off || l.off == n.off) {
					return nil, loop
				}
				if !l.dir {
					return rs.data(l.off, max)
				}
			}
		}
		return nil, nil
	}
	return nil, nil
}

// data reads the resource a data entry describes, at most max bytes.
func (rs *peResources) data(off uint32, max int) ([]byte, error) {
	e, err := rs.at(off, 16)
	if err != nil {
		return nil, err
	}
	rva, size := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
	if int64(size) > int64(max) {
		return nil, errs.Invalidf("a resource of the .exe declares %d bytes, over the limit of %d", size, max)
	}
	foff, _, ok := rs.pe.offset(rva, int64(size))
	if !ok {
		return nil, errs.Invalidf("a resource of the .exe (RVA 0x%x, %d bytes) lies outside the file", rva, size)
	}
	if d := foff - rs.base; d >= 0 && d+int64(size) <= int64(len(rs.buf)) {
		return rs.buf[d : d+int64(size)], nil
	}
	b, err := zipread.ReadFullAt(rs.r, foff, int(size))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "a resource of the .exe is unreadable")
	}
	return b, nil
}

// versionInfo reads the first RT_VERSION resource; an empty result when there is none.
func (rs *peResources) versionInfo() (*peVersion, error) {
	b, err := rs.find(rtVersion, 0, rsrcMaxVersion)
	if err != nil || b == nil {
		return &peVersion{strings: map[string]string{}}, err
	}
	return parseVersionInfo(b)
}

// icon returns the largest image of the first icon group as a PNG, nil when the executable has
// none. A group or image that is missing, lies about its size or does not decode is skipped, not
// an error: the icon is optional and a bad one should not reject an otherwise valid package.
func (rs *peResources) icon() *appinfo.Icon {
	grp, err := rs.find(rtGroupIcon, 0, rsrcMaxGroup)
	if err != nil || grp == nil {
		return nil
	}
	entries, err := parseIconDir(grp, true)
	if err != nil {
		return nil
	}
	for i, e := range entries {
		if i == rsrcIconTries {
			break
		}
		data, err := rs.find(rtIcon, uint32(e.id), appinfo.MaxIconBytes)
		if err != nil || data == nil {
			continue
		}
		if icon, err := iconImage(data); err == nil {
			return icon
		}
	}
	return nil
}

// peVersion is what a VS_VERSIONINFO resource says.
type peVersion struct {
	strings        map[string]string // StringFileInfo values, the first table's first
	fileVersion    string            // from VS_FIXEDFILEINFO, "" when absent or zero
	productVersion string
}

// VS_VERSIONINFO is a tree of nodes, each: wLength (of the node with its children), wValueLength,
// wType (1 for text), a NUL-terminated UTF-16 key, padding to 32 bits, the value, padding, then
// the children. The root's value is VS_FIXEDFILEINFO; its children are StringFileInfo (holding
// one StringTable per language and code page, holding the String nodes) and VarFileInfo.
func parseVersionInfo(b []byte) (*peVersion, error) {
	v := &peVersion{strings: map[string]string{}}
	budget := versionMaxNodes
	var walk func(off, end, depth int, parent string) error
	walk = func(off, end, depth int, parent string) error {
		for off+6 <= end {
			if budget--; budget < 0 {
				return errs.Invalidf("the .exe's version resource has too many entries")
			}
			length := int(binary.LittleEndian.Uint16(b[off:]))
			valueLen := int(binary.LittleEndian.Uint16(b[off+2:]))
			if length < 6 || off+length > end {
				if depth == 0 {
					return errs.Invalidf("the .exe's version resource is corrupt (a block of %d bytes at %d overruns it)", length, off)
				}
				return nil // a sloppy tail inside a table: keep what was read
			}
			node := b[off : off+length]
			key, keyEnd := utf16Key(node, 6)
			valOff := align4(keyEnd)
			switch {
			case depth == 0 && key == "VS_VERSION_INFO":
				if valueLen >= 52 && valOff+52 <= len(node) && binary.LittleEndian.Uint32(node[valOff:]) == 0xfeef04bd {
					f := node[valOff:]
					v.fileVersion = fixedVersion(binary.LittleEndian.Uint32(f[8:]), binary.LittleEndian.Uint32(f[12:]))
					v.productVersion = fixedVersion(binary.LittleEndian.Uint32(f[16:]), binary.LittleEndian.Uint32(f[20:]))
				}
				child := align4(valOff + min(valueLen, len(node)))
				if err := walk(off+min(child, length), off+length, 1, key); err != nil {
					return err
				}
			case depth == 1 && key == "StringFileInfo":
				if err := walk(off+min(valOff, length), off+length, 2, key); err != nil {
					return err
				}
			case depth == 2 && parent == "StringFileInfo":
				if err := walk(off+min(valOff, length), off+length, 3, "table"); err != nil {
					return err
				}
			case depth == 3 && parent == "table" && key != "":
				if _, seen := v.strings[key]; !seen && valOff < len(node) {
					val, _ := utf16Key(node, valOff)
					if val = clean(val); val != "" {
						v.strings[key] = val
					}
				}
			case depth == 0:
				return errs.Invalidf("the .exe's version resource does not start with VS_VERSION_INFO")
			}
			off = align4(off + length)
		}
		return nil
	}
	if err := walk(0, len(b), 0, ""); err != nil {
		return nil, err
	}
	return v, nil
}

// utf16Key decodes the NUL-terminated UTF-16LE string at off; end is the offset after the NUL.
func utf16Key(b []byte, off int) (string, int) {
	var u []uint16
	for ; off+2 <= len(b); off += 2 {
		c := binary.LittleEndian.Uint16(b[off:])
		if c == 0 {
			return string(utf16.Decode(u)), off + 2
		}
		if len(u) < maxTextLen {
			u = append(u, c)
		}
	}
	return string(utf16.Decode(u)), len(b)
}

func align4(n int) int { return (n + 3) &^ 3 }

// fixedVersion formats a VS_FIXEDFILEINFO version as "a.b.c.d", "" when zero.
func fixedVersion(ms, ls uint32) string {
	if ms == 0 && ls == 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.%d", ms>>16, ms&0xffff, ls>>16, ls&0xffff)
}

// fill sets the Info fields the version resource gives.
func (v *peVersion) fill(info *appinfo.Info) {
	s := v.strings
	info.Name = first(s["ProductName"], s["FileDescription"])
	info.BundleID = first(s["ProductName"], s["InternalName"], s["OriginalFilename"])
	info.ReleaseVersion = first(s["ProductVersion"], v.productVersion, s["FileVersion"], v.fileVersion)
	info.BuildVersion = first(s["FileVersion"], v.fileVersion, info.ReleaseVersion)
	info.Publisher = s["CompanyName"]
	info.Description = s["FileDescription"]
	for _, k := range []string{"FileVersion", "InternalName", "OriginalFilename", "LegalCopyright"} {
		info.SetProperty(k, s[k])
	}
}
