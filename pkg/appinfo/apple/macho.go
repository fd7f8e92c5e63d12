package apple

import (
	"archive/zip"
	"bufio"
	"compress/flate"
	"encoding/binary"
	"io"
	"slices"
)

// Architectures of the main executable, from its Mach-O header.
//
// This is the one read the size breakdown and the other facts do not get for free: the first
// bytes of the executable, an entry otherwise never opened. It costs two small ranged reads (the
// entry's local header, 30 bytes plus its name, then machOReadBytes of its data, stored or
// deflated), never the executable: the reader is not hinted to prefetch the entry, as
// zipread.Archive.Open would. In a real .ipa the executable sits beside Info.plist and the
// profile, so behind a block cache it usually costs no request at all (BenchmarkParseExportedIPA).
// A header that cannot be read or is not Mach-O leaves Architectures empty: it never fails a
// parse.

const (
	// machOReadBytes is how much of the entry's stored (compressed) data is read: enough to
	// inflate a fat header of machOMaxSlices slices.
	machOReadBytes = 1024
	// machOMaxSlices bounds the slices of a fat header read; a real one has two or three. A
	// Java class file shares the fat magic: its version (45 and up) reads as too many slices.
	machOMaxSlices = 16
	machOHeadBytes = 8 + machOMaxSlices*32
)

// machOArchitectures returns the architectures of the executable f, sorted; nil when its
// header cannot be read.
func machOArchitectures(f *zip.File) []string {
	if f == nil || f.Flags&0x1 != 0 { // encrypted
		return nil
	}
	raw, err := f.OpenRaw()
	if err != nil {
		return nil
	}
	var r io.Reader = bufio.NewReaderSize(io.LimitReader(raw, machOReadBytes), machOReadBytes)
	switch f.Method {
	case zip.Store:
	case zip.Deflate:
		fr := flate.NewReader(r)
		defer fr.Close()
		r = fr
	default:
		return nil
	}
	head := make([]byte, machOHeadBytes)
	n, _ := io.ReadFull(r, head)
	return machOArchs(head[:n])
}

// machOArchs reads the architectures from the start of a Mach-O file: a thin file's CPU type, or
// those of each slice of a fat (universal) one, named as Apple's tools name them ("arm64",
// "armv7", "x86_64").
func machOArchs(head []byte) []string {
	if len(head) < 12 {
		return nil
	}
	var out []string
	switch magic := binary.BigEndian.Uint32(head); magic {
	case 0xcafebabe, 0xcafebabf: // fat, big-endian; fat_arch or fat_arch_64
		n := int(binary.BigEndian.Uint32(head[4:]))
		size := 20
		if magic == 0xcafebabf {
			size = 32
		}
		if n == 0 || n > machOMaxSlices || 8+n*size > len(head) {
			return nil
		}
		for i := range n {
			a := head[8+i*size:]
			if name := machOCPU(binary.BigEndian.Uint32(a), binary.BigEndian.Uint32(a[4:])); name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	case 0xfeedface, 0xfeedfacf: // thin, big-endian
		out = append(out, machOCPU(binary.BigEndian.Uint32(head[4:]), binary.BigEndian.Uint32(head[8:])))
	case 0xcefaedfe, 0xcffaedfe: // thin, little-endian
		out = append(out, machOCPU(binary.LittleEndian.Uint32(head[4:]), binary.LittleEndian.Uint32(head[8:])))
	}
	out = slices.DeleteFunc(out, func(s string) bool { return s == "" })
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// machOCPU names a Mach-O CPU type and subtype, "" for one Slipway does not know.
func machOCPU(cpu, sub uint32) string {
	sub &= 0x00ffffff // the capability bits
	switch cpu {
	case 7:
		return "i386"
	case 0x01000007:
		if sub == 8 {
			return "x86_64h"
		}
		return "x86_64"
	case 12:
		switch sub {
		case 6:
			return "armv6"
		case 9:
			return "armv7"
		case 11:
			return "armv7s"
		case 12:
			return "armv7k"
		}
		return "arm"
	case 0x0100000c:
		if sub == 2 {
			return "arm64e"
		}
		return "arm64"
	case 0x0200000c:
		return "arm64_32"
	case 18:
		return "ppc"
	case 0x01000012:
		return "ppc64"
	}
	return ""
}
