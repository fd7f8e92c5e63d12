package windows

import (
	"bytes"
	"encoding/binary"
	"io"
	"unicode/utf16"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A compound file (CFB, "OLE2", [MS-CFB]) is a little file system: a 512-byte header, then
// sectors of 512 (version 3) or 4096 bytes (version 4); sector n starts at (n+1)×sectorSize. The
// FAT chains the sectors of each stream: FAT[n] is the sector after n. The FAT itself lives in
// sectors listed by the DIFAT: 109 entries in the header, then a chain of DIFAT sectors. The
// directory is a stream of 128-byte entries forming, per storage, a red-black tree of siblings.
// Streams under 4096 bytes live in the mini stream (the root entry's stream), in 64-byte mini
// sectors chained by the mini FAT.
//
// This reader is written here rather than taken from github.com/richardlehane/mscfb (v1.0.9),
// which reads lazily but: on opening, reads the whole directory chain and walks the whole mini
// stream chain with one 4-byte ReadAt per FAT lookup (a ranged GET each, without a block
// cache), keeps a *File per directory entry for the whole chain (memory in proportion to a
// crafted file), recurses once per entry to traverse the tree, and brings msoleps along. This
// one reads each FAT sector once (cached), coalesces contiguous sectors into one read, caps the
// directory, and checks every sector number against the file before following it. On the
// fieldtool fixture, opening it with mscfb and reading the string pool and Property table took
// 65 ReadAt calls; the whole parse here takes 8.

const (
	cfbEndOfChain = 0xfffffffe
	cfbFree       = 0xffffffff
	cfbMaxRegular = 0xfffffffa
	cfbNoStream   = 0xffffffff

	cfbMaxDirBytes = 8 << 20 // the directory stream: 65536 entries of 128 bytes
	cfbMiniSector  = 64
	// cfbDIFATReadAhead bounds the DIFAT sectors read in one go (a 4 GiB file has 64).
	cfbDIFATReadAhead = 128

	cfbTypeStorage = 1
	cfbTypeStream  = 2
	cfbTypeRoot    = 5
)

var cfbMagic = []byte{0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1}

// cfbFile is an opened compound file.
type cfbFile struct {
	r       io.ReaderAt
	size    int64
	ss      int64  // sector size
	nsec    uint32 // sectors that start within the file
	version uint16

	difat     []uint32 // FAT sector numbers known so far
	difatNext uint32   // next DIFAT sector to read
	difatLeft uint32   // DIFAT sectors the header declares and not yet read
	difatSeen map[uint32]bool
	// difatAhead holds sectors read ahead of the DIFAT chain.
	difatAhead map[uint32][]byte
	fat        map[uint32][]byte // FAT sectors read, by position in the DIFAT

	miniFatStart uint32
	miniFat      *cfbChain // sectors of the mini FAT stream
	miniStream   *cfbChain // sectors of the mini stream (the root entry's)
	miniFatCache map[uint32][]byte
	cutoff       uint64

	entries []cfbEntry
}

// cfbEntry is a directory entry.
type cfbEntry struct {
	name               cfbName
	typ                byte
	left, right, child uint32
	clsid              [16]byte
	start              uint32
	size               uint64
}

// cfbName is a directory entry name as stored: UTF-16 code units, which for MSI streams are
// not text but packed table names (see msi.go).
type cfbName []uint16

func (n cfbName) String() string { return string(utf16.Decode(n)) }

// isCFB reports whether the first bytes are a compound file signature.
func isCFB(b []byte) bool { return bytes.HasPrefix(b, cfbMagic) }

// openCFB reads the header and the directory.
func openCFB(r io.ReaderAt, size int64) (*cfbFile, error) {
	if size < 512 {
		return nil, errs.Invalidf("the compound file is truncated (%d bytes)", size)
	}
	h, err := zipread.ReadFullAt(r, 0, 512)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the compound file's header is unreadable")
	}
	if !isCFB(h) {
		return nil, errs.Invalidf("not a compound file (no D0 CF 11 E0 signature)")
	}
	c := &cfbFile{r: r, size: size, fat: map[uint32][]byte{}, miniFatCache: map[uint32][]byte{}, difatSeen: map[uint32]bool{}}
	c.version = binary.LittleEndian.Uint16(h[26:])
	switch shift := binary.LittleEndian.Uint16(h[30:]); {
	case c.version == 3 && shift == 9, c.version == 4 && shift == 12:
		c.ss = 1 << shift
	default:
		return nil, errs.Invalidf("the compound file has an unsupported version %d with sector shift %d", c.version, shift)
	}
	if binary.LittleEndian.Uint16(h[28:]) != 0xfffe {
		return nil, errs.Invalidf("the compound file is not little-endian")
	}
	if size < c.ss {
		return nil, errs.Invalidf("the compound file is truncated (%d bytes)", size)
	}
	c.nsec = uint32(min((size-c.ss+c.ss-1)/c.ss, cfbMaxRegular))
	c.cutoff = uint64(binary.LittleEndian.Uint32(h[56:]))
	if c.cutoff != 4096 {
		return nil, errs.Invalidf("the compound file has a mini stream cutoff of %d bytes, not 4096", c.cutoff)
	}
	dirStart := binary.LittleEndian.Uint32(h[48:])
	c.miniFatStart = binary.LittleEndian.Uint32(h[60:])
	c.difatNext = binary.LittleEndian.Uint32(h[68:])
	c.difatLeft = binary.LittleEndian.Uint32(h[72:])
	for i := range 109 {
		s := binary.LittleEndian.Uint32(h[76+4*i:])
		if s == cfbFree {
			break
		}
		c.difat = append(c.difat, s)
	}
	if err := c.readDirectory(dirStart); err != nil {
		return nil, err
	}
	root := &c.entries[0]
	if root.typ != cfbTypeRoot {
		return nil, errs.Invalidf("the compound file's first directory entry is not the root")
	}
	c.miniStream = &cfbChain{c: c, next: root.start, seen: map[uint32]bool{}}
	c.miniFat = &cfbChain{c: c, next: c.miniFatStart, seen: map[uint32]bool{}}
	return c, nil
}

// fatSector returns the number of the i-th FAT sector, reading DIFAT sectors as needed.
func (c *cfbFile) fatSector(i uint32) (uint32, error) {
	per := uint32(c.ss/4) - 1
	for uint32(len(c.difat)) <= i {
		if c.difatLeft == 0 || c.difatNext == cfbEndOfChain || c.difatNext == cfbFree {
			return 0, errs.Invalidf("the compound file's FAT is missing sector %d (truncated?)", i)
		}
		s := c.difatNext
		if s >= c.nsec || c.difatSeen[s] {
			return 0, errs.Invalidf("the compound file's DIFAT chain loops or points outside the file (sector %d)", s)
		}
		c.difatSeen[s] = true
		b, err := c.difatSector(s)
		if err != nil {
			return 0, err
		}
		for j := range per {
			c.difat = append(c.difat, binary.LittleEndian.Uint32(b[4*j:]))
		}
		c.difatNext = binary.LittleEndian.Uint32(b[4*per:])
		c.difatLeft--
	}
	return c.difat[i], nil
}

// difatSector reads a DIFAT sector. Writers put the DIFAT sectors one after the other, so the
// first one read brings the rest the header declares (up to cfbDIFATReadAhead sectors) in the
// same read; a chain that jumps elsewhere is read sector by sector.
func (c *cfbFile) difatSector(s uint32) ([]byte, error) {
	if b, ok := c.difatAhead[s]; ok {
		return b, nil
	}
	n := int64(min(c.difatLeft, cfbDIFATReadAhead))
	if s >= c.nsec {
		return nil, errs.Invalidf("the compound file points at sector %d, outside the file (truncated?)", s)
	}
	n = max(1, min(n, int64(c.nsec-s)))
	off := (int64(s) + 1) * c.ss
	n = min(n, (c.size-off)/c.ss)
	if n <= 1 {
		return c.sector(s)
	}
	zipread.Prefetch(c.r, off, n*c.ss)
	b, err := zipread.ReadFullAt(c.r, off, int(n*c.ss))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the compound file is truncated (sector %d)", s)
	}
	c.difatAhead = map[uint32][]byte{}
	for i := range uint32(n) {
		c.difatAhead[s+i] = b[int64(i)*c.ss : int64(i+1)*c.ss]
	}
	return c.difatAhead[s], nil
}

// sector reads one whole sector.
func (c *cfbFile) sector(s uint32) ([]byte, error) {
	if s >= c.nsec {
		return nil, errs.Invalidf("the compound file points at sector %d, outside the file (truncated?)", s)
	}
	b, err := zipread.ReadFullAt(c.r, (int64(s)+1)*c.ss, int(c.ss))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the compound file is truncated (sector %d)", s)
	}
	return b, nil
}

// next returns the sector after s in its chain.
func (c *cfbFile) next(s uint32) (uint32, error) {
	if s >= c.nsec {
		return 0, errs.Invalidf("the compound file's FAT chain points outside the file (sector %d)", s)
	}
	per := uint32(c.ss / 4)
	idx := s / per
	b, ok := c.fat[idx]
	if !ok {
		fs, err := c.fatSector(idx)
		if err != nil {
			return 0, err
		}
		if b, err = c.sector(fs); err != nil {
			return 0, err
		}
		c.fat[idx] = b
	}
	return binary.LittleEndian.Uint32(b[4*(s%per):]), nil
}

// cfbChain is a sector chain followed lazily, with loops detected.
type cfbChain struct {
	c    *cfbFile
	secs []uint32
	next uint32
	seen map[uint32]bool
	mini bool // chained by the mini FAT (mini sectors) instead of the FAT
}

// at returns the i-th sector of the chain.
func (ch *cfbChain) at(i int) (uint32, error) {
	for len(ch.secs) <= i {
		s := ch.next
		if s == cfbEndOfChain || s > cfbMaxRegular {
			return 0, errs.Invalidf("the compound file's sector chain ends early (truncated?)")
		}
		if ch.seen[s] {
			return 0, errs.Invalidf("the compound file's sector chain loops (sector %d)", s)
		}
		ch.seen[s] = true
		ch.secs = append(ch.secs, s)
		var err error
		if ch.mini {
			ch.next, err = ch.c.miniNext(s)
		} else {
			ch.next, err = ch.c.next(s)
		}
		if err != nil {
			return 0, err
		}
	}
	return ch.secs[i], nil
}

// miniNext returns the mini sector after m, from the mini FAT.
func (c *cfbFile) miniNext(m uint32) (uint32, error) {
	per := uint32(c.ss / 4)
	idx := m / per
	b, ok := c.miniFatCache[idx]
	if !ok {
		s, err := c.miniFat.at(int(idx))
		if err != nil {
			return 0, err
		}
		if b, err = c.sector(s); err != nil {
			return 0, err
		}
		c.miniFatCache[idx] = b
	}
	return binary.LittleEndian.Uint32(b[4*(m%per):]), nil
}

// readDirectory reads the directory stream, at most cfbMaxDirBytes.
func (c *cfbFile) readDirectory(start uint32) error {
	ch := &cfbChain{c: c, next: start, seen: map[uint32]bool{}}
	maxSecs := int(cfbMaxDirBytes / c.ss)
	var runs []cfbRun
	for i := 0; ; i++ {
		if ch.next == cfbEndOfChain && i > 0 {
			break
		}
		if i == maxSecs {
			return errs.Invalidf("the compound file's directory is over %d bytes", cfbMaxDirBytes)
		}
		s, err := ch.at(i)
		if err != nil {
			return err
		}
		runs = addRun(runs, (int64(s)+1)*c.ss, c.ss)
	}
	data, err := c.readRuns(runs)
	if err != nil {
		return err
	}
	c.entries = make([]cfbEntry, len(data)/128)
	for i := range c.entries {
		e := data[i*128:]
		n := int(binary.LittleEndian.Uint16(e[64:]))/2 - 1
		n = max(0, min(n, 31))
		name := make(cfbName, n)
		for j := range name {
			name[j] = binary.LittleEndian.Uint16(e[2*j:])
		}
		d := cfbEntry{name: name, typ: e[66], left: binary.LittleEndian.Uint32(e[68:]),
			right: binary.LittleEndian.Uint32(e[72:]), child: binary.LittleEndian.Uint32(e[76:]),
			start: binary.LittleEndian.Uint32(e[116:]), size: binary.LittleEndian.Uint64(e[120:])}
		copy(d.clsid[:], e[80:96])
		if c.version == 3 {
			d.size &= 0xffffffff // the high half may hold garbage in version 3
		}
		c.entries[i] = d
	}
	return nil
}

// rootStreams returns the streams directly under the root storage, walking its red-black tree
// of siblings; every entry is visited at most once, so a tree that loops ends the walk.
func (c *cfbFile) rootStreams() []*cfbEntry {
	var out []*cfbEntry
	seen := make([]bool, len(c.entries))
	stack := []uint32{c.entries[0].child}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i == cfbNoStream || int64(i) >= int64(len(c.entries)) || seen[i] {
			continue
		}
		seen[i] = true
		e := &c.entries[i]
		if e.typ == cfbTypeStream {
			out = append(out, e)
		}
		stack = append(stack, e.left, e.right)
	}
	return out
}

// cfbRun is a span of the file to read.
type cfbRun struct{ off, n int64 }

// addRun appends a span, merging it with the previous one when contiguous.
func addRun(runs []cfbRun, off, n int64) []cfbRun {
	if k := len(runs); k > 0 && runs[k-1].off+runs[k-1].n == off {
		runs[k-1].n += n
		return runs
	}
	return append(runs, cfbRun{off, n})
}

// readRuns reads the spans, one ReadAt each, into one buffer.
func (c *cfbFile) readRuns(runs []cfbRun) ([]byte, error) {
	var total int64
	for _, r := range runs {
		total += r.n
	}
	out := make([]byte, 0, total)
	for _, r := range runs {
		if r.off < 0 || r.off+r.n > c.size {
			return nil, errs.Invalidf("the compound file is truncated (a stream runs past its end)")
		}
		zipread.Prefetch(c.r, r.off, r.n)
		b, err := zipread.ReadFullAt(c.r, r.off, int(r.n))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the compound file is truncated")
		}
		out = append(out, b...)
	}
	return out, nil
}

// readStream returns the content of a stream, refusing one declared over max bytes.
func (c *cfbFile) readStream(e *cfbEntry, max int64, what string) ([]byte, error) {
	if e.size > uint64(max) {
		return nil, errs.Invalidf("the %s declares %d bytes, over the limit of %d", what, e.size, max)
	}
	size := int64(e.size)
	if size > c.size {
		return nil, errs.Invalidf("the %s declares %d bytes, more than the file holds", what, size)
	}
	if size == 0 {
		return nil, nil
	}
	var runs []cfbRun
	if e.size < c.cutoff {
		root := c.entries[0].size
		if uint64(size) > root {
			return nil, errs.Invalidf("the %s declares %d bytes, more than the mini stream holds", what, size)
		}
		ch := &cfbChain{c: c, next: e.start, seen: map[uint32]bool{}, mini: true}
		per := c.ss / cfbMiniSector
		for i := range int((size + cfbMiniSector - 1) / cfbMiniSector) {
			m, err := ch.at(i)
			if err != nil {
				return nil, err
			}
			if uint64(m)*cfbMiniSector >= root {
				return nil, errs.Invalidf("the %s points outside the mini stream", what)
			}
			s, err := c.miniStream.at(int(int64(m) / per))
			if err != nil {
				return nil, err
			}
			if s >= c.nsec {
				return nil, errs.Invalidf("the compound file's mini stream points outside the file")
			}
			runs = addRun(runs, (int64(s)+1)*c.ss+(int64(m)%per)*cfbMiniSector, cfbMiniSector)
		}
	} else {
		ch := &cfbChain{c: c, next: e.start, seen: map[uint32]bool{}}
		for i := range int((size + c.ss - 1) / c.ss) {
			s, err := ch.at(i)
			if err != nil {
				return nil, err
			}
			if s >= c.nsec {
				return nil, errs.Invalidf("the %s points outside the file", what)
			}
			runs = addRun(runs, (int64(s)+1)*c.ss, c.ss)
		}
	}
	// The last sector may be partial at the end of the file; trim the runs to the stream size.
	left := size
	for i := range runs {
		runs[i].n = min(runs[i].n, left)
		left -= runs[i].n
	}
	return c.readRuns(runs)
}
