package windows

import (
	"encoding/binary"
	"io"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A PE file (.exe) starts with a DOS header ("MZ") whose field at 0x3c is the offset of the PE
// signature ("PE\0\0"), followed by the COFF file header (20 bytes), the optional header (its
// data directories give the resource directory's RVA) and the section table (40 bytes per
// section, mapping RVAs to file offsets). The parser reads those (usually within the first
// 4 KiB, one read), then the resource directory tree and the few resource data blocks it needs.
//
// Why not debug/pe: pe.NewFile also reads the COFF symbol table and the string table that
// follows it (NumberOfSymbols×18 bytes plus the strings); Go- and MinGW-built executables keep
// them, often megabytes at the end of the file, which a ranged reader must then fetch for
// nothing: on a 1.7 MB hello-world built by Go 1.26 for Windows, pe.NewFile made 2051 ReadAt
// calls (86 KB); ParseEXE makes 1 (4 KiB) for the whole parse. debug/pe does not read
// resources either, so the parser reads the headers itself.

const (
	peHeadRead     = 4096     // the first read: DOS header, PE headers and section table
	peMaxLfanew    = 16 << 20 // where the PE signature may start
	peMaxSections  = 2048     // Windows loads at most 96 in practice
	peMaxOptHeader = 4096     // PE32+ needs 240 bytes
)

// Machine values of the COFF header, as Architectures names them.
var peMachines = map[uint16]string{
	0x014c: "x86",
	0x8664: "x64",
	0xaa64: "arm64",
	0x01c0: "arm",
	0x01c4: "arm",   // ARMv7 Thumb-2 (ARMNT)
	0xa641: "arm64", // ARM64EC
	0xa64e: "arm64", // ARM64X
}

// peFile is what the parser keeps of a PE's headers.
type peFile struct {
	size          int64
	machine       uint16
	sizeOfHeaders uint32
	sections      []peSection
	rsrcRVA       uint32 // resource directory, 0 when absent
	rsrcSize      uint32
	clrRVA        uint32 // .NET (COR20) header, 0 when absent
	clrFlags      uint32 // its Flags, once read
	clrRead       bool
}

type peSection struct {
	name                       string
	va, vsize, rawOff, rawSize uint32
}

// IsPE reports whether r starts with a DOS header pointing at a PE signature: "MZ", then at the
// offset stored at 0x3c, within the file, "PE\0\0". It reads 64 bytes and 4 bytes.
func IsPE(r io.ReaderAt, size int64) bool {
	if size < 64+24 {
		return false
	}
	var dos [64]byte
	if _, err := r.ReadAt(dos[:], 0); err != nil || dos[0] != 'M' || dos[1] != 'Z' {
		return false
	}
	lfanew := int64(binary.LittleEndian.Uint32(dos[0x3c:]))
	if lfanew < 4 || lfanew > peMaxLfanew || lfanew > size-24 {
		return false
	}
	var sig [4]byte
	_, err := r.ReadAt(sig[:], lfanew)
	return err == nil && string(sig[:]) == "PE\x00\x00"
}

// parsePEHeaders reads the DOS, COFF and optional headers and the section table.
func parsePEHeaders(r io.ReaderAt, size int64) (*peFile, error) {
	if size < 64+24 {
		return nil, errs.Invalidf("the .exe is truncated (%d bytes)", size)
	}
	head, err := zipread.ReadFullAt(r, 0, int(min(size, peHeadRead)))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .exe's headers are unreadable")
	}
	if head[0] != 'M' || head[1] != 'Z' {
		return nil, errs.Invalidf("not a Windows executable (no MZ header)")
	}
	lfanew := int64(binary.LittleEndian.Uint32(head[0x3c:]))
	if lfanew < 4 || lfanew > peMaxLfanew || lfanew > size-24 {
		return nil, errs.Invalidf("the .exe's PE header offset %d lies outside the file", lfanew)
	}
	coff := head[min(int(lfanew), len(head)):]
	if len(coff) < 24 {
		if coff, err = zipread.ReadFullAt(r, lfanew, 24); err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .exe's PE header is unreadable")
		}
	}
	if string(coff[:4]) != "PE\x00\x00" {
		return nil, errs.Invalidf("not a Windows PE executable (an MZ file without a PE signature: a DOS program?)")
	}
	pe := &peFile{size: size, machine: binary.LittleEndian.Uint16(coff[4:])}
	nsec := int(binary.LittleEndian.Uint16(coff[6:]))
	optLen := int(binary.LittleEndian.Uint16(coff[20:]))
	switch {
	case nsec > peMaxSections:
		return nil, errs.Invalidf("the .exe declares %d sections, over the limit of %d", nsec, peMaxSections)
	case optLen > peMaxOptHeader:
		return nil, errs.Invalidf("the .exe's optional header declares %d bytes, over the limit of %d", optLen, peMaxOptHeader)
	case optLen < 2:
		return nil, errs.Invalidf("the .exe has no optional header (an object file, not an executable)")
	}
	total := int64(24 + optLen + nsec*40)
	if lfanew+total > size {
		return nil, errs.Invalidf("the .exe is truncated (its section table runs past the end of the file)")
	}
	hdr := head[min(int(lfanew), len(head)):]
	if int64(len(hdr)) < total {
		if hdr, err = zipread.ReadFullAt(r, lfanew, int(total)); err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .exe's section table is unreadable")
		}
	}
	opt := hdr[24 : 24+optLen]
	var ddOff int
	switch magic := binary.LittleEndian.Uint16(opt); magic {
	case 0x10b: // PE32
		ddOff = 96
	case 0x20b: // PE32+
		ddOff = 112
	default:
		return nil, errs.Invalidf("the .exe's optional header has an unknown magic 0x%04x", magic)
	}
	if optLen >= 64 {
		pe.sizeOfHeaders = binary.LittleEndian.Uint32(opt[60:])
	}
	if optLen >= ddOff {
		n := int(binary.LittleEndian.Uint32(opt[ddOff-4:]))
		n = min(n, (optLen-ddOff)/8, 16)
		if n > 2 {
			pe.rsrcRVA = binary.LittleEndian.Uint32(opt[ddOff+2*8:])
			pe.rsrcSize = binary.LittleEndian.Uint32(opt[ddOff+2*8+4:])
		}
		if n > 14 {
			pe.clrRVA = binary.LittleEndian.Uint32(opt[ddOff+14*8:])
		}
	}
	sec := hdr[24+optLen : total]
	pe.sections = make([]peSection, nsec)
	for i := range pe.sections {
		s := sec[i*40:]
		name := s[:8]
		for j, c := range name {
			if c == 0 {
				name = name[:j]
				break
			}
		}
		pe.sections[i] = peSection{name: clean(string(name)),
			vsize: binary.LittleEndian.Uint32(s[8:]), va: binary.LittleEndian.Uint32(s[12:]),
			rawSize: binary.LittleEndian.Uint32(s[16:]), rawOff: binary.LittleEndian.Uint32(s[20:])}
	}
	return pe, nil
}

// offset maps n bytes at an RVA to their file offset. ok is false when the bytes are not all in
// the file: in no section, in a section's uninitialised tail, or past the end of the file.
// avail is how many bytes from the offset the containing section holds in the file.
func (pe *peFile) offset(rva uint32, n int64) (off, avail int64, ok bool) {
	for _, s := range pe.sections {
		span := max(s.vsize, s.rawSize)
		if rva < s.va || uint64(rva) >= uint64(s.va)+uint64(span) {
			continue
		}
		d := int64(rva - s.va)
		if d >= int64(s.rawSize) {
			return 0, 0, false
		}
		off = int64(s.rawOff) + d
		avail = min(int64(s.rawSize)-d, pe.size-off)
		return off, avail, avail >= n && n >= 0
	}
	if rva < pe.sizeOfHeaders && int64(rva) < pe.size {
		off = int64(rva)
		avail = min(int64(pe.sizeOfHeaders), pe.size) - off
		return off, avail, avail >= n && n >= 0
	}
	return 0, 0, false
}

// peArch names the COFF Machine; empty for machines Windows packages do not target.
func peArch(machine uint16) string { return peMachines[machine] }

// COR20 header flags.
const (
	clrILOnly         = 0x1
	clr32BitRequired  = 0x2
	clr32BitPreferred = 0x20000
)

// readCLR reads the flags of the .NET header, when the PE has one. A .NET assembly built for
// "Any CPU" is marked x86 (PE32, i386) but runs natively on every architecture; its flags say so
// (IL only, neither 32-bit required nor preferred). A header that cannot be read is ignored.
func (pe *peFile) readCLR(r io.ReaderAt) {
	if pe.clrRead || pe.clrRVA == 0 {
		return
	}
	pe.clrRead = true
	if off, _, ok := pe.offset(pe.clrRVA, 72); ok {
		if b, err := zipread.ReadFullAt(r, off, 72); err == nil && binary.LittleEndian.Uint32(b) >= 72 {
			pe.clrFlags = binary.LittleEndian.Uint32(b[16:])
		}
	}
}

// anyCPU reports a .NET assembly built for any architecture.
func (pe *peFile) anyCPU() bool {
	return pe.machine == 0x014c && pe.clrFlags&clrILOnly != 0 && pe.clrFlags&(clr32BitRequired|clr32BitPreferred) == 0
}

// ParseEXE reads a Windows PE executable: the version resource, the architecture and the
// largest icon of the first icon group (see the package documentation).
func ParseEXE(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	pe, err := parsePEHeaders(r, size)
	if err != nil {
		return nil, err
	}
	return peInfo(r, pe, appinfo.FormatEXE)
}

// peInfo reads the resources of a PE whose headers are parsed and assembles its Info.
func peInfo(r io.ReaderAt, pe *peFile, format appinfo.Format) (*appinfo.Info, error) {
	info := &appinfo.Info{Platform: appinfo.Windows, Format: format, Device: appinfo.DeviceWindows}
	pe.readCLR(r)
	switch a := peArch(pe.machine); {
	case pe.anyCPU():
		info.Architectures = []string{"neutral"}
	case a != "":
		info.Architectures = []string{a}
	}
	if pe.rsrcRVA == 0 {
		return info, nil
	}
	rs, err := openResources(r, pe)
	if err != nil {
		return nil, err
	}
	vi, err := rs.versionInfo()
	if err != nil {
		return nil, err
	}
	vi.fill(info)
	info.Icon = rs.icon()
	return info, nil
}
