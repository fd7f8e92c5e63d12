// Package windowstest builds Windows packages in code for tests and benchmarks: PE executables
// with a version resource and icons, zips holding them, Windows Installer databases (a compound
// file with the installer's tables), and MSIX/APPX packages and bundles. Each builder has a
// Build function returning the bytes of a small package and, where a benchmark needs a large one,
// a Write function streaming it without holding it in memory.
package windowstest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// PE machine values.
const (
	MachineX86   = 0x014c
	MachineX64   = 0x8664
	MachineARM64 = 0xaa64
	MachineARMNT = 0x01c4
)

// PEOptions describes a synthetic PE executable.
type PEOptions struct {
	// Machine is the COFF machine (default MachineX64; PE32+ for 64-bit machines).
	Machine uint16
	// Version is the version resource; nil for none.
	Version *VersionInfo
	// Icons are the images of the first icon group (RT_GROUP_ICON 1, RT_ICON 1..n).
	Icons []IconImage
	// TextBytes is the size of the .text section, pseudo-random (default 512). The resource
	// section follows it, as linkers lay them out.
	TextBytes int64
	// Resources are further raw resources (type, id, data), e.g. a second icon group.
	Resources []Resource
	// CLRFlags, when not zero, makes the executable a .NET assembly: a COR20 header with these
	// flags (0x1 IL only, 0x2 32-bit required, 0x20000 32-bit preferred) at the start of .text.
	CLRFlags uint32
}

// VersionInfo is a VS_VERSIONINFO resource.
type VersionInfo struct {
	// Strings are the StringFileInfo values (ProductName, ProductVersion, FileVersion,
	// CompanyName, FileDescription, ...), in table Lang ("040904b0" by default).
	Strings map[string]string
	Lang    string
	// FileVersion and ProductVersion are VS_FIXEDFILEINFO's ([4]uint16 a.b.c.d).
	FileVersion, ProductVersion [4]uint16
	// ExtraTables are further string tables (language → strings), after the first.
	ExtraTables map[string]map[string]string
}

// IconImage is one image of an icon.
type IconImage struct {
	Size int  // width and height (1..256)
	PNG  bool // stored as PNG; else as a DIB with an AND mask
	// BPP is the DIB's depth: 32 (default), 24, 8, 4 or 1.
	BPP int
	// Raw replaces the encoded image (for hostile tests); the directory still says Size.
	Raw []byte
}

// Resource is a raw resource of a PE.
type Resource struct {
	Type, ID uint32
	Lang     uint32
	Data     []byte
}

// BuildPE returns the bytes of the executable o describes.
func BuildPE(o PEOptions) []byte {
	var b bytes.Buffer
	if _, err := WritePE(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const (
	peFileAlign = 0x200
	peSectAlign = 0x1000
)

// WritePE streams the executable o describes to w and returns its size. The .text section is
// generated in chunks, so a 256 MiB executable costs no memory.
func WritePE(w io.Writer, o PEOptions) (int64, error) {
	machine := o.Machine
	if machine == 0 {
		machine = MachineX64
	}
	is64 := machine == MachineX64 || machine == MachineARM64
	textBytes := o.TextBytes
	if textBytes <= 0 {
		textBytes = 512
	}
	optLen := 224
	if is64 {
		optLen = 240
	}
	const lfanew = 0x80
	nsec := 2
	headers := align(lfanew+24+optLen+nsec*40, peFileAlign)
	textRaw := align64(textBytes, peFileAlign)
	textVA := int64(peSectAlign)
	rsrcVA := textVA + align64(textBytes, peSectAlign)
	rsrc := buildResources(o, uint32(rsrcVA))
	rsrcRaw := align64(int64(len(rsrc)), peFileAlign)
	imageSize := rsrcVA + align64(int64(len(rsrc)), peSectAlign)

	h := make([]byte, headers)
	copy(h, "MZ")
	binary.LittleEndian.PutUint32(h[0x3c:], lfanew)
	copy(h[0x40:], "This program cannot be run in DOS mode.\r\r\n$")
	p := h[lfanew:]
	copy(p, "PE\x00\x00")
	binary.LittleEndian.PutUint16(p[4:], machine)
	binary.LittleEndian.PutUint16(p[6:], uint16(nsec))
	binary.LittleEndian.PutUint32(p[8:], 0x5f000000)
	binary.LittleEndian.PutUint16(p[20:], uint16(optLen))
	chars := uint16(0x0002 | 0x0020) // executable, large address aware
	if !is64 {
		chars |= 0x0100 // 32-bit machine
	}
	binary.LittleEndian.PutUint16(p[22:], chars)
	opt := p[24 : 24+optLen]
	ddOff := 96
	if is64 {
		binary.LittleEndian.PutUint16(opt, 0x20b)
		binary.LittleEndian.PutUint64(opt[24:], 0x140000000) // ImageBase
		ddOff = 112
	} else {
		binary.LittleEndian.PutUint16(opt, 0x10b)
		binary.LittleEndian.PutUint32(opt[28:], 0x400000)
	}
	opt[2] = 14 // linker version
	binary.LittleEndian.PutUint32(opt[4:], uint32(textRaw))
	binary.LittleEndian.PutUint32(opt[16:], uint32(textVA)) // entry point
	binary.LittleEndian.PutUint32(opt[20:], uint32(textVA))
	binary.LittleEndian.PutUint32(opt[32:], peSectAlign)
	binary.LittleEndian.PutUint32(opt[36:], peFileAlign)
	binary.LittleEndian.PutUint16(opt[40:], 6) // OS version 6.0
	binary.LittleEndian.PutUint16(opt[48:], 6) // subsystem version
	binary.LittleEndian.PutUint32(opt[56:], uint32(imageSize))
	binary.LittleEndian.PutUint32(opt[60:], uint32(headers))
	binary.LittleEndian.PutUint16(opt[68:], 2) // GUI
	binary.LittleEndian.PutUint32(opt[ddOff-4:], 16)
	binary.LittleEndian.PutUint32(opt[ddOff+2*8:], uint32(rsrcVA))
	binary.LittleEndian.PutUint32(opt[ddOff+2*8+4:], uint32(len(rsrc)))
	var clr []byte
	if o.CLRFlags != 0 {
		clr = make([]byte, 72)
		binary.LittleEndian.PutUint32(clr, 72)
		binary.LittleEndian.PutUint16(clr[4:], 2)
		binary.LittleEndian.PutUint16(clr[6:], 5)
		binary.LittleEndian.PutUint32(clr[16:], o.CLRFlags)
		binary.LittleEndian.PutUint32(opt[ddOff+14*8:], uint32(textVA))
		binary.LittleEndian.PutUint32(opt[ddOff+14*8+4:], 72)
	}
	sec := p[24+optLen:]
	putSection(sec, ".text", uint32(textBytes), uint32(textVA), uint32(textRaw), uint32(headers), 0x60000020)
	putSection(sec[40:], ".rsrc", uint32(len(rsrc)), uint32(rsrcVA), uint32(rsrcRaw), uint32(int64(headers)+textRaw), 0x40000040)

	cw := &counter{w: w}
	if _, err := cw.Write(h); err != nil {
		return cw.n, err
	}
	if _, err := cw.Write(clr); err != nil {
		return cw.n, err
	}
	if err := writeRandom(cw, textRaw-int64(len(clr)), 0x7e57); err != nil {
		return cw.n, err
	}
	if _, err := cw.Write(rsrc); err != nil {
		return cw.n, err
	}
	if _, err := cw.Write(make([]byte, rsrcRaw-int64(len(rsrc)))); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

func putSection(b []byte, name string, vsize, va, rawSize, rawOff, chars uint32) {
	copy(b, name)
	binary.LittleEndian.PutUint32(b[8:], vsize)
	binary.LittleEndian.PutUint32(b[12:], va)
	binary.LittleEndian.PutUint32(b[16:], rawSize)
	binary.LittleEndian.PutUint32(b[20:], rawOff)
	binary.LittleEndian.PutUint32(b[36:], chars)
}

// buildResources lays out the resource section at rva: every directory first (type → id →
// language), then the data entries, then the data, as resource compilers do.
func buildResources(o PEOptions, rva uint32) []byte {
	res := append([]Resource(nil), o.Resources...)
	if o.Version != nil {
		res = append(res, Resource{Type: 16, ID: 1, Lang: 0x409, Data: BuildVersionInfo(*o.Version)})
	}
	if len(o.Icons) > 0 {
		grp := binary.LittleEndian.AppendUint16(nil, 0)
		grp = binary.LittleEndian.AppendUint16(grp, 1)
		grp = binary.LittleEndian.AppendUint16(grp, uint16(len(o.Icons)))
		for i, ic := range o.Icons {
			data := ic.Raw
			if data == nil {
				data = IconData(ic)
			}
			bpp := ic.BPP
			if bpp == 0 {
				bpp = 32
			}
			grp = append(grp, byte(ic.Size), byte(ic.Size), 0, 0)
			grp = binary.LittleEndian.AppendUint16(grp, 1)
			grp = binary.LittleEndian.AppendUint16(grp, uint16(bpp))
			grp = binary.LittleEndian.AppendUint32(grp, uint32(len(data)))
			grp = binary.LittleEndian.AppendUint16(grp, uint16(i+1))
			res = append(res, Resource{Type: 3, ID: uint32(i + 1), Lang: 0x409, Data: data})
		}
		res = append(res, Resource{Type: 14, ID: 1, Lang: 0x409, Data: grp})
	}
	if len(res) == 0 {
		return make([]byte, 16) // an empty root directory
	}
	sort.SliceStable(res, func(i, j int) bool {
		if res[i].Type != res[j].Type {
			return res[i].Type < res[j].Type
		}
		return res[i].ID < res[j].ID
	})
	// Group: type → ids → one language each.
	type typ struct {
		id  uint32
		res []int
	}
	var types []typ
	for i, r := range res {
		if len(types) == 0 || types[len(types)-1].id != r.Type {
			types = append(types, typ{id: r.Type})
		}
		types[len(types)-1].res = append(types[len(types)-1].res, i)
	}
	dirSize := func(n int) int { return 16 + 8*n }
	// Offsets: root, type dirs, id dirs (one per resource), language dirs (one per resource).
	off := dirSize(len(types))
	typeOff := make([]int, len(types))
	for i, t := range types {
		typeOff[i] = off
		off += dirSize(len(t.res))
	}
	langOff := make([]int, len(res))
	for i := range res {
		langOff[i] = off
		off += dirSize(1)
	}
	entryOff := make([]int, len(res))
	for i := range res {
		entryOff[i] = off
		off += 16
	}
	dataOff := make([]int, len(res))
	for i, r := range res {
		off = align(off, 8)
		dataOff[i] = off
		off += len(r.Data)
	}
	b := make([]byte, align(off, 8))
	putDir := func(at, n int) {
		binary.LittleEndian.PutUint16(b[at+14:], uint16(n))
	}
	putDir(0, len(types))
	for i, t := range types {
		binary.LittleEndian.PutUint32(b[16+8*i:], t.id)
		binary.LittleEndian.PutUint32(b[16+8*i+4:], 0x80000000|uint32(typeOff[i]))
		putDir(typeOff[i], len(t.res))
		for j, ri := range t.res {
			binary.LittleEndian.PutUint32(b[typeOff[i]+16+8*j:], res[ri].ID)
			binary.LittleEndian.PutUint32(b[typeOff[i]+16+8*j+4:], 0x80000000|uint32(langOff[ri]))
		}
	}
	for i, r := range res {
		putDir(langOff[i], 1)
		binary.LittleEndian.PutUint32(b[langOff[i]+16:], r.Lang)
		binary.LittleEndian.PutUint32(b[langOff[i]+20:], uint32(entryOff[i]))
		binary.LittleEndian.PutUint32(b[entryOff[i]:], rva+uint32(dataOff[i]))
		binary.LittleEndian.PutUint32(b[entryOff[i]+4:], uint32(len(r.Data)))
		copy(b[dataOff[i]:], r.Data)
	}
	return b
}

// BuildVersionInfo encodes a VS_VERSIONINFO resource.
func BuildVersionInfo(v VersionInfo) []byte {
	fixed := make([]byte, 52)
	binary.LittleEndian.PutUint32(fixed, 0xfeef04bd)
	binary.LittleEndian.PutUint32(fixed[4:], 0x00010000)
	put := func(at int, v [4]uint16) {
		binary.LittleEndian.PutUint32(fixed[at:], uint32(v[0])<<16|uint32(v[1]))
		binary.LittleEndian.PutUint32(fixed[at+4:], uint32(v[2])<<16|uint32(v[3]))
	}
	put(8, v.FileVersion)
	put(16, v.ProductVersion)
	binary.LittleEndian.PutUint32(fixed[36:], 0x4) // VOS_NT_WINDOWS32
	binary.LittleEndian.PutUint32(fixed[40:], 0x1) // VFT_APP
	table := func(lang string, strs map[string]string) []byte {
		keys := make([]string, 0, len(strs))
		for k := range strs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kids [][]byte
		for _, k := range keys {
			val := utf16z(strs[k])
			kids = append(kids, versionNode(k, val, 1, len(val)/2))
		}
		return versionNode(lang, nil, 1, 0, kids...)
	}
	lang := v.Lang
	if lang == "" {
		lang = "040904b0"
	}
	tables := [][]byte{table(lang, v.Strings)}
	var extra []string
	for l := range v.ExtraTables {
		extra = append(extra, l)
	}
	sort.Strings(extra)
	for _, l := range extra {
		tables = append(tables, table(l, v.ExtraTables[l]))
	}
	sfi := versionNode("StringFileInfo", nil, 1, 0, tables...)
	langID, _ := strconv.ParseUint(lang[:4], 16, 16)
	cp, _ := strconv.ParseUint(lang[4:], 16, 16)
	trans := binary.LittleEndian.AppendUint16(nil, uint16(langID))
	trans = binary.LittleEndian.AppendUint16(trans, uint16(cp))
	vfi := versionNode("VarFileInfo", nil, 1, 0, versionNode("Translation", trans, 0, len(trans)))
	return versionNode("VS_VERSION_INFO", fixed, 0, len(fixed), sfi, vfi)
}

// versionNode encodes one node: length, value length, type, key, padding, value, padding,
// children (each padded to 32 bits).
func versionNode(key string, value []byte, typ, valueLen int, children ...[]byte) []byte {
	b := make([]byte, 6)
	b = append(b, utf16z(key)...)
	b = pad4(b)
	b = append(b, value...)
	for _, c := range children {
		b = pad4(b)
		b = append(b, c...)
	}
	binary.LittleEndian.PutUint16(b, uint16(len(b)))
	binary.LittleEndian.PutUint16(b[2:], uint16(valueLen))
	binary.LittleEndian.PutUint16(b[4:], uint16(typ))
	return b
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// utf16z encodes s as NUL-terminated UTF-16LE.
func utf16z(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, u)
	}
	return append(b, 0, 0)
}

func align(n, a int) int       { return (n + a - 1) / a * a }
func align64(n, a int64) int64 { return (n + a - 1) / a * a }

// counter counts the bytes written to w.
type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeRandom writes n deterministic pseudo-random bytes.
func writeRandom(w io.Writer, n int64, seed uint64) error {
	rng := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 's', 'l', 'i', 'p'})
	chunk := make([]byte, 1<<20)
	for n > 0 {
		c := chunk[:min(n, int64(len(chunk)))]
		_, _ = rng.Read(c)
		if _, err := w.Write(c); err != nil {
			return err
		}
		n -= int64(len(c))
	}
	return nil
}

// DefaultVersion is a version resource with every field the parser reads.
func DefaultVersion(product, version string) *VersionInfo {
	var fv [4]uint16
	for i, p := range strings.SplitN(version, ".", 4) {
		n, _ := strconv.Atoi(p)
		fv[i] = uint16(n)
	}
	return &VersionInfo{
		Strings: map[string]string{
			"ProductName": product, "ProductVersion": version, "FileVersion": fmt.Sprintf("%d.%d.%d.%d", fv[0], fv[1], fv[2], fv[3]),
			"CompanyName": "Acme Labs", "FileDescription": product + " desktop client",
			"InternalName": strings.ToLower(product), "OriginalFilename": strings.ToLower(product) + ".exe",
			"LegalCopyright": "Copyright (C) Acme Labs",
		},
		FileVersion: fv, ProductVersion: fv,
	}
}
