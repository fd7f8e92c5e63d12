package debuginfo

import (
	"bufio"
	"cmp"
	"debug/macho"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Mach-O values debug/macho does not name.
const (
	magicFat64      = 0xcafebabf // fat header with 64-bit offsets and sizes
	loadCmdUUID     = 0x1b       // LC_UUID
	cpuSubtypeMask  = 0xff000000 // capability bits of cpusubtype (e.g. arm64e pointer auth)
	cpuArm64_32     = macho.Cpu(0x0200000c)
	fatArchSize     = 20
	fatArch64Size   = 32
	machHeaderSize  = 28 // after which a 64-bit header has 4 reserved bytes
	uuidCommandSize = 24
)

// readMachO reads a thin or fat Mach-O file from r and returns one Slice per architecture (Object
// left empty), in the file's order. name is the entry's name, for messages.
//
// It never holds the file in memory, because a dSYM's DWARF file can be gigabytes and Go's
// debug/macho needs an io.ReaderAt over the whole file (and is not hardened against hostile input).
// The LC_UUID sits in the load commands, right after the Mach-O header, so only the first bytes of
// each slice matter: the fat header gives the slices' offsets; the stream is skipped to each
// offset in turn, the slice's header read, and its load commands walked one by one (at most
// MaxMachOHeader bytes), keeping only LC_UUID. The rest is drained, so the entry's size and CRC
// are checked by archive/zip and every slice is known to lie inside the file. Memory is a 32 KiB
// buffer and the fat table (at most MaxSlices entries), whatever the file's size.
//
// Every problem is an errs.Invalid error naming the file; errors from the reader (an entry over
// its limit, a corrupt entry) are returned as they are.
func readMachO(r io.Reader, name string) ([]Slice, error) {
	m := &machoReader{r: bufio.NewReaderSize(r, 32<<10), name: name}
	var magic [4]byte
	if err := m.read(magic[:]); err != nil {
		return nil, err
	}
	var out []Slice
	fat := binary.BigEndian.Uint32(magic[:])
	if fat == macho.MagicFat || fat == magicFat64 {
		s, err := m.fat(fat == magicFat64)
		if err != nil {
			return nil, err
		}
		out = s
	} else {
		s, _, err := m.slice(magic)
		if err != nil {
			return nil, err
		}
		out = []Slice{s}
	}
	n, err := io.Copy(io.Discard, m.r)
	m.pos += n
	if err != nil {
		return nil, m.ioErr(err)
	}
	if len(out) == 1 && m.end == 0 { // thin: the slice is the whole file
		out[0].Size = m.pos
	}
	if m.pos < m.end {
		return nil, m.errorf("an architecture ends at byte %d, past the end of the file (%d bytes)", m.end, m.pos)
	}
	return out, nil
}

// machoReader is a forward-only reader keeping track of its position.
type machoReader struct {
	r    *bufio.Reader
	name string
	pos  int64 // bytes consumed
	end  int64 // where the last fat slice ends
}

func (m *machoReader) errorf(format string, args ...any) error {
	return errs.Invalidf("%s is not a valid Mach-O file: %s", quote(m.name), fmt.Sprintf(format, args...))
}

func (m *machoReader) ioErr(err error) error {
	if errs.KindOf(err) != errs.Internal {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return m.errorf("truncated at byte %d", m.pos)
	}
	return errs.Wrap(errs.Invalid, err, "%s is unreadable", quote(m.name))
}

func (m *machoReader) read(p []byte) error {
	n, err := io.ReadFull(m.r, p)
	m.pos += int64(n)
	if err != nil {
		return m.ioErr(err)
	}
	return nil
}

func (m *machoReader) skip(n int64) error {
	for n > 0 { // bufio.Reader.Discard takes an int; step in chunks so it never overflows
		k, err := m.r.Discard(int(min(n, 1<<30)))
		m.pos += int64(k)
		n -= int64(k)
		if err != nil {
			return m.ioErr(err)
		}
	}
	return nil
}

// fatArch is one entry of a fat header.
type fatArch struct {
	cpu          macho.Cpu
	sub          uint32
	offset, size uint64
}

// fat reads a fat header (after its magic) and each slice's header, in offset order.
func (m *machoReader) fat(is64 bool) ([]Slice, error) {
	var b [4]byte
	if err := m.read(b[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(b[:])
	if n == 0 {
		return nil, m.errorf("the fat header lists no architectures")
	}
	if n > uint32(lim.slices) {
		return nil, m.errorf("the fat header claims %d architectures, over the limit of %d", n, lim.slices)
	}
	size := fatArchSize
	if is64 {
		size = fatArch64Size
	}
	table := make([]byte, int(n)*size)
	if err := m.read(table); err != nil {
		return nil, err
	}
	archs := make([]fatArch, n)
	for i := range archs {
		e := table[i*size:]
		a := fatArch{cpu: macho.Cpu(binary.BigEndian.Uint32(e)), sub: binary.BigEndian.Uint32(e[4:])}
		if is64 {
			a.offset, a.size = binary.BigEndian.Uint64(e[8:]), binary.BigEndian.Uint64(e[16:])
		} else {
			a.offset, a.size = uint64(binary.BigEndian.Uint32(e[8:])), uint64(binary.BigEndian.Uint32(e[12:]))
		}
		archs[i] = a
	}
	// Visit the slices in offset order so the stream only moves forward; they must not overlap.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(archs[i].offset, archs[j].offset) })
	end := uint64(m.pos)
	for _, i := range order {
		a := archs[i]
		if a.offset < end {
			return nil, m.errorf("architecture %d starts at byte %d, inside the fat header or another architecture", i, a.offset)
		}
		if a.size < machHeaderSize || a.offset > 1<<62 || a.size > 1<<62 {
			return nil, m.errorf("architecture %d has an invalid offset %d or size %d", i, a.offset, a.size)
		}
		end = a.offset + a.size
	}
	m.end = int64(end)
	out := make([]Slice, n)
	for _, i := range order {
		a := archs[i]
		if err := m.skip(int64(a.offset) - m.pos); err != nil {
			return nil, err
		}
		var magic [4]byte
		if err := m.read(magic[:]); err != nil {
			return nil, err
		}
		s, cpu, err := m.slice(magic)
		if err != nil {
			return nil, err
		}
		if m.pos > int64(a.offset+a.size) {
			return nil, m.errorf("the load commands of architecture %d run past its end", i)
		}
		if cpu != a.cpu {
			return nil, m.errorf("architecture %d is listed as %s in the fat header but is %s", i, archName(a.cpu, a.sub), s.Arch)
		}
		s.Size = int64(a.size)
		out[i] = s
	}
	return out, nil
}

// slice reads one Mach-O header (after its magic) and walks its load commands for LC_UUID. It
// returns the slice without Size and Object, and its CPU type.
func (m *machoReader) slice(magic [4]byte) (Slice, macho.Cpu, error) {
	var bo binary.ByteOrder
	var is64 bool
	switch {
	case binary.LittleEndian.Uint32(magic[:]) == macho.Magic32:
		bo = binary.LittleEndian
	case binary.LittleEndian.Uint32(magic[:]) == macho.Magic64:
		bo, is64 = binary.LittleEndian, true
	case binary.BigEndian.Uint32(magic[:]) == macho.Magic32:
		bo = binary.BigEndian
	case binary.BigEndian.Uint32(magic[:]) == macho.Magic64:
		bo, is64 = binary.BigEndian, true
	default:
		return Slice{}, 0, m.errorf("unknown magic number %#08x at byte %d", binary.BigEndian.Uint32(magic[:]), m.pos-4)
	}
	hdrLen := machHeaderSize
	if is64 {
		hdrLen += 4
	}
	var h [32]byte
	if err := m.read(h[4:hdrLen]); err != nil {
		return Slice{}, 0, err
	}
	cpu, sub := macho.Cpu(bo.Uint32(h[4:])), bo.Uint32(h[8:])
	ncmds, sizeofcmds := bo.Uint32(h[16:]), bo.Uint32(h[20:])
	arch := archName(cpu, sub)
	if uint64(sizeofcmds)+uint64(hdrLen) > uint64(lim.machOHeader) {
		return Slice{}, 0, m.errorf("%s load commands take %d bytes, over the limit of %d", arch, sizeofcmds, lim.machOHeader)
	}
	if ncmds > sizeofcmds/8 {
		return Slice{}, 0, m.errorf("%s declares %d load commands in %d bytes", arch, ncmds, sizeofcmds)
	}
	var uuid []byte
	left := sizeofcmds
	for i := uint32(0); i < ncmds; i++ {
		var c [8]byte
		if err := m.read(c[:]); err != nil {
			return Slice{}, 0, err
		}
		cmd, cmdsize := bo.Uint32(c[:]), bo.Uint32(c[4:])
		if cmdsize < 8 || cmdsize > left {
			return Slice{}, 0, m.errorf("%s load command %d has an invalid size %d", arch, i, cmdsize)
		}
		left -= cmdsize
		body := int64(cmdsize) - 8
		if cmd == loadCmdUUID && uuid == nil {
			if cmdsize < uuidCommandSize {
				return Slice{}, 0, m.errorf("%s LC_UUID command is too short (%d bytes)", arch, cmdsize)
			}
			uuid = make([]byte, 16)
			if err := m.read(uuid); err != nil {
				return Slice{}, 0, err
			}
			body -= 16
		}
		if err := m.skip(body); err != nil {
			return Slice{}, 0, err
		}
	}
	if uuid == nil {
		return Slice{}, 0, m.errorf("the %s slice has no LC_UUID load command", arch)
	}
	return Slice{UUID: formatUUID(uuid, true), Arch: arch}, cpu, nil
}

// cpuNames names architectures as Apple's tools (lipo, dwarfdump) do: by CPU type, then by
// subtype (an index into subs, without capability bits), falling back to base.
var cpuNames = map[macho.Cpu]struct {
	base string
	subs []string
}{
	macho.Cpu386:   {base: "i386"},
	macho.CpuAmd64: {base: "x86_64", subs: []string{8: "x86_64h"}},
	macho.CpuArm: {base: "arm", subs: []string{5: "armv4t", 6: "armv6", 7: "armv5", 8: "xscale", 9: "armv7",
		10: "armv7f", 11: "armv7s", 12: "armv7k", 13: "armv8", 14: "armv6m", 15: "armv7m", 16: "armv7em"}},
	macho.CpuArm64: {base: "arm64", subs: []string{2: "arm64e"}},
	cpuArm64_32:    {base: "arm64_32"},
	macho.CpuPpc:   {base: "ppc"},
	macho.CpuPpc64: {base: "ppc64"},
}

// archName names a CPU type and subtype, e.g. "arm64", "armv7s"; unknown ones as "cpu<type>-<sub>".
func archName(cpu macho.Cpu, sub uint32) string {
	n, ok := cpuNames[cpu]
	if !ok {
		return fmt.Sprintf("cpu%d-%d", uint32(cpu), sub&^cpuSubtypeMask)
	}
	if s := sub &^ cpuSubtypeMask; s < uint32(len(n.subs)) && n.subs[s] != "" {
		return n.subs[s]
	}
	return n.base
}

// formatUUID formats 16 bytes as a dashed UUID.
func formatUUID(b []byte, upper bool) string {
	s := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	if upper {
		return strings.ToUpper(s)
	}
	return s
}
