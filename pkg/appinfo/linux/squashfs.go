package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/slipwayhq/slipway/pkg/zipread"
)

// A minimal squashfs 4.0 reader (the format: docs.kernel.org/filesystems/squashfs.html and
// dr-emann.github.io/squashfs): it looks up paths and reads small files, nothing else. It reads
// lazily through an io.ReaderAt: the superblock, then only the metadata blocks (8 KiB, each
// compressed on its own) and data blocks a lookup needs, each read in one ReadAt and cached for
// the parse. Every position and size read from the image is checked against the image before
// it is used; every block inflates to at most its format's size; the number of blocks
// decompressed per parse is bounded (maxSquashBlocks), and so are path walks.

const (
	sqSuperLen       = 96
	sqMagic          = 0x73717368 // "hsqs"
	sqMetaSize       = 8192       // uncompressed size of a full metadata block
	sqNoFragment     = 0xffffffff
	sqAbsent         = ^uint64(0) // an optional table that is not there
	maxSquashBlocks  = 4096       // metadata and data blocks read per parse
	maxSquashInflate = 64 << 20   // bytes decompressed per parse
	maxDirBytes      = 1 << 20    // one directory listing
	maxDirScan       = 8 << 20    // directory listings scanned per parse
	maxSymlinkTarget = 4096
	sqReadAhead      = 32 << 10 // bytes read at once for metadata (see readAhead)
	maxReadAheads    = 16
	maxSymlinkHops   = 8  // symbolic links followed in one lookup
	maxPathSteps     = 64 // path components walked in one lookup, links included
)

// Inode types (directory entries use the basic ones).
const (
	sqDirType     = 1
	sqFileType    = 2
	sqSymlinkType = 3
	sqLDirType    = 8
	sqLFileType   = 9
	sqLSymlinkTyp = 10
)

// errSquash marks a malformed image; messages say what was wrong.
type errSquash struct{ msg string }

func (e *errSquash) Error() string { return e.msg }

func squashErr(format string, args ...any) error { return &errSquash{fmt.Sprintf(format, args...)} }

// errNotFound is a lookup of a name that the image does not have.
var errNotFound = errors.New("not found")

// squashFS is an open squashfs image.
type squashFS struct {
	r         io.ReaderAt
	base      int64 // where the image starts in r
	used      int64 // bytes_used: the image's extent, checked against the file
	blockSize int64
	fragCount uint32
	compID    uint16
	root      uint64
	inodes    int64 // inode table start
	dirs      int64 // directory table start
	inodesEnd int64 // bounds of those tables
	dirsEnd   int64
	frags     int64 // the fragment index, -1 when the image has no fragments
	dec       blockDecoder

	meta     map[int64]metaBlock
	fragc    map[int64][]byte
	found    map[sqFindKey]sqEntry
	ahead    []aheadChunk
	scanned  int64 // directory listing bytes scanned so far
	blocks   int   // read so far
	inflated int64 // bytes decompressed so far
}

type metaBlock struct {
	data []byte
	next int64 // position of the following block
}

// openSquashfs reads and checks the superblock of the image at base in r (size bytes in all).
func openSquashfs(r io.ReaderAt, base, size int64) (*squashFS, error) {
	if base < 0 || base > size-sqSuperLen {
		return nil, squashErr("no squashfs superblock (the file ends at byte %d)", size)
	}
	sb, err := zipread.ReadFullAt(r, base, sqSuperLen)
	if err != nil {
		return nil, squashErr("the squashfs superblock is unreadable")
	}
	return parseSuperblock(r, base, size, sb)
}

func parseSuperblock(r io.ReaderAt, base, size int64, sb []byte) (*squashFS, error) {
	le := binary.LittleEndian
	if le.Uint32(sb) != sqMagic {
		return nil, squashErr("no squashfs image at byte %d", base)
	}
	if major, minor := le.Uint16(sb[28:]), le.Uint16(sb[30:]); major != 4 || minor != 0 {
		return nil, squashErr("squashfs version %d.%d is not supported (4.0 is)", major, minor)
	}
	blockSize, blockLog := le.Uint32(sb[12:]), le.Uint16(sb[22:])
	if blockSize < 4096 || blockSize > 1<<20 || bits.OnesCount32(blockSize) != 1 || uint32(1)<<blockLog != blockSize {
		return nil, squashErr("the squashfs block size %d is invalid", blockSize)
	}
	s := &squashFS{r: r, base: base, blockSize: int64(blockSize), fragCount: le.Uint32(sb[16:]),
		compID: le.Uint16(sb[20:]), root: le.Uint64(sb[32:]),
		meta: map[int64]metaBlock{}, fragc: map[int64][]byte{}, found: map[sqFindKey]sqEntry{}}
	used := le.Uint64(sb[40:])
	if used < sqSuperLen || used > uint64(size-base) {
		return nil, squashErr("the squashfs image declares %d bytes, but the file holds %d after its start (truncated?)", used, size-base)
	}
	s.used = int64(used)
	inodes, dirs, frags := le.Uint64(sb[64:]), le.Uint64(sb[72:]), le.Uint64(sb[80:])
	if inodes < sqSuperLen || inodes >= dirs || dirs >= used {
		return nil, squashErr("the squashfs inode and directory tables lie outside the image")
	}
	s.inodes, s.dirs, s.inodesEnd = int64(inodes), int64(dirs), int64(dirs)
	// The directory table ends where the next table starts.
	s.dirsEnd = s.used
	for _, t := range []uint64{frags, le.Uint64(sb[88:]), le.Uint64(sb[48:]), le.Uint64(sb[56:])} {
		if t > dirs && t < uint64(s.dirsEnd) {
			s.dirsEnd = int64(t)
		}
	}
	s.frags = -1
	if s.fragCount > 0 {
		if frags == sqAbsent || frags >= used || uint64(s.fragCount-1)/512*8+8 > used-frags {
			return nil, squashErr("the squashfs fragment table lies outside the image")
		}
		s.frags = int64(frags)
	}
	dec, err := newBlockDecoder(s.compID, int(s.blockSize))
	if err != nil {
		name := sqCompressorNames[s.compID]
		if name == "" {
			name = fmt.Sprintf("unknown (%d)", s.compID)
		}
		return nil, squashErr("the squashfs image uses %s compression; Slipway reads gzip, xz and zstd", name)
	}
	s.dec = dec
	return s, nil
}

func (s *squashFS) close() { s.dec.close() }

// read reads n bytes at pos (relative to the image), which must lie within the image. It is
// served from an earlier read ahead when one covers it. The bytes may be shared: callers must
// not change them.
func (s *squashFS) read(pos, n int64) ([]byte, error) {
	if pos < 0 || n < 0 || pos > s.used || n > s.used-pos {
		return nil, squashErr("the squashfs image points outside itself (byte %d)", pos)
	}
	if n == 0 {
		return nil, nil
	}
	if b := s.fromAhead(pos, n); b != nil {
		return b, nil
	}
	b, err := zipread.ReadFullAt(s.r, s.base+pos, int(n))
	if err != nil {
		return nil, squashErr("the squashfs image is unreadable at byte %d (truncated?)", pos)
	}
	return b, nil
}

// readAhead is read, but when it must read, it reads sqReadAhead bytes from pos and keeps them
// for later reads (at most maxReadAheads times a parse): the metadata tables sit together at the
// end of an image, so the first read of a small image's inode table brings its directory and
// fragment tables too.
func (s *squashFS) readAhead(pos, n int64) ([]byte, error) {
	if pos < 0 || n < 0 || pos > s.used || n > s.used-pos {
		return nil, squashErr("the squashfs image points outside itself (byte %d)", pos)
	}
	if n == 0 || n >= sqReadAhead || len(s.ahead) >= maxReadAheads || s.fromAhead(pos, n) != nil {
		return s.read(pos, n)
	}
	chunk, err := s.read(pos, min(sqReadAhead, s.used-pos))
	if err != nil {
		return nil, err
	}
	s.ahead = append(s.ahead, aheadChunk{pos: pos, data: chunk})
	return chunk[:n], nil
}

// fromAhead returns [pos, pos+n) from a read ahead, or nil.
func (s *squashFS) fromAhead(pos, n int64) []byte {
	for _, c := range s.ahead {
		if pos >= c.pos && pos+n <= c.pos+int64(len(c.data)) {
			return c.data[pos-c.pos : pos-c.pos+n]
		}
	}
	return nil
}

type aheadChunk struct {
	pos  int64
	data []byte
}

// decode inflates a block read from the image to at most limit bytes, counting it against the
// parse's budgets.
func (s *squashFS) decode(src []byte, limit int) ([]byte, error) {
	if s.blocks++; s.blocks > maxSquashBlocks {
		return nil, squashErr("the squashfs image needs more than %d blocks for a lookup (a loop?)", maxSquashBlocks)
	}
	if s.inflated > maxSquashInflate {
		return nil, squashErr("the squashfs image needs more than %d bytes decompressed for a lookup", maxSquashInflate)
	}
	out, err := s.dec.decode(src, limit)
	s.inflated += int64(len(out))
	if errors.Is(err, errTooBig) {
		return nil, squashErr("a squashfs block inflates to more than %d bytes", limit)
	}
	if err != nil {
		return nil, squashErr("a squashfs block is corrupt (%v)", err)
	}
	return out, nil
}

// metaBlock returns the metadata block at pos (relative to the image), which must lie before
// end.
func (s *squashFS) metaBlock(pos, end int64) (metaBlock, error) {
	if m, ok := s.meta[pos]; ok {
		return m, nil
	}
	if pos < 0 || pos > end-2 {
		return metaBlock{}, squashErr("a squashfs metadata reference points outside its table")
	}
	// One read: the 2-byte header and the largest block it can announce.
	raw, err := s.readAhead(pos, min(2+sqMetaSize, end-pos))
	if err != nil {
		return metaBlock{}, err
	}
	h := binary.LittleEndian.Uint16(raw)
	n := int64(h & 0x7fff)
	if n == 0 || n > sqMetaSize || n > int64(len(raw))-2 {
		return metaBlock{}, squashErr("a squashfs metadata block at byte %d has a bad size (%d)", pos, n)
	}
	data := raw[2 : 2+n]
	if h&0x8000 == 0 {
		if data, err = s.decode(data, sqMetaSize); err != nil {
			return metaBlock{}, err
		}
	} else if s.blocks++; s.blocks > maxSquashBlocks {
		return metaBlock{}, squashErr("the squashfs image needs more than %d blocks for a lookup (a loop?)", maxSquashBlocks)
	}
	if len(data) == 0 {
		return metaBlock{}, squashErr("a squashfs metadata block at byte %d is empty", pos)
	}
	m := metaBlock{data: data, next: pos + 2 + n}
	s.meta[pos] = m
	return m, nil
}

// metaReader reads a run of bytes from a metadata table, across block boundaries.
type metaReader struct {
	s   *squashFS
	end int64 // the table's end
	blk metaBlock
	off int
}

// metaAt starts reading at the block table+block (relative to the table) and offset within it.
func (s *squashFS) metaAt(table, end int64, block uint64, offset int) (*metaReader, error) {
	if block >= uint64(end-table) {
		return nil, squashErr("a squashfs metadata reference points outside its table")
	}
	m, err := s.metaBlock(table+int64(block), end)
	if err != nil {
		return nil, err
	}
	if offset >= len(m.data) {
		return nil, squashErr("a squashfs metadata reference points past its block")
	}
	return &metaReader{s: s, end: end, blk: m, off: offset}, nil
}

// bytes returns the next n bytes (n small: callers bound it).
func (m *metaReader) bytes(n int) ([]byte, error) {
	if m.off+n <= len(m.blk.data) { // the common case: no copy
		b := m.blk.data[m.off : m.off+n]
		m.off += n
		return b, nil
	}
	out := make([]byte, 0, n)
	for len(out) < n {
		if m.off == len(m.blk.data) {
			next, err := m.s.metaBlock(m.blk.next, m.end)
			if err != nil {
				return nil, err
			}
			m.blk, m.off = next, 0
		}
		k := min(n-len(out), len(m.blk.data)-m.off)
		out = append(out, m.blk.data[m.off:m.off+k]...)
		m.off += k
	}
	return out, nil
}

// sqInode is what the reader keeps of an inode.
type sqInode struct {
	kind int // sqDirType, sqFileType, sqSymlinkType or 0 for anything else
	// directories
	dirBlock  uint32
	dirOffset uint16
	dirSize   uint32
	// files
	start      uint64
	size       uint64
	frag       uint32
	fragOffset uint32
	blockSizes []uint32 // read only when size <= the caller's limit
	listed     bool     // whether blockSizes was read
	// symbolic links
	target string
}

// inode reads the inode ref points at; for a file no larger than maxData, its block list too.
func (s *squashFS) inode(ref uint64, maxData int64) (*sqInode, error) {
	m, err := s.metaAt(s.inodes, s.inodesEnd, ref>>16, int(ref&0xffff))
	if err != nil {
		return nil, err
	}
	h, err := m.bytes(16)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	in := &sqInode{}
	switch typ := le.Uint16(h); typ {
	case sqDirType:
		b, err := m.bytes(16)
		if err != nil {
			return nil, err
		}
		in.kind, in.dirBlock, in.dirSize, in.dirOffset = sqDirType, le.Uint32(b), uint32(le.Uint16(b[8:])), le.Uint16(b[10:])
	case sqLDirType:
		b, err := m.bytes(24)
		if err != nil {
			return nil, err
		}
		in.kind, in.dirSize, in.dirBlock, in.dirOffset = sqDirType, le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint16(b[18:])
	case sqFileType, sqLFileType:
		if typ == sqFileType {
			b, err := m.bytes(16)
			if err != nil {
				return nil, err
			}
			in.start, in.frag, in.fragOffset, in.size = uint64(le.Uint32(b)), le.Uint32(b[4:]), le.Uint32(b[8:]), uint64(le.Uint32(b[12:]))
		} else {
			b, err := m.bytes(40)
			if err != nil {
				return nil, err
			}
			in.start, in.size, in.frag, in.fragOffset = le.Uint64(b), le.Uint64(b[8:]), le.Uint32(b[28:]), le.Uint32(b[32:])
		}
		in.kind = sqFileType
		if in.size > uint64(maxData) {
			return in, nil
		}
		n := in.size / uint64(s.blockSize)
		if in.frag == sqNoFragment && in.size%uint64(s.blockSize) != 0 {
			n++
		}
		b, err := m.bytes(int(4 * n))
		if err != nil {
			return nil, err
		}
		in.blockSizes, in.listed = make([]uint32, n), true
		for i := range in.blockSizes {
			in.blockSizes[i] = le.Uint32(b[4*i:])
		}
	case sqSymlinkType, sqLSymlinkTyp:
		b, err := m.bytes(8)
		if err != nil {
			return nil, err
		}
		n := le.Uint32(b[4:])
		if n == 0 || n > maxSymlinkTarget {
			return nil, squashErr("a squashfs symbolic link has a bad target length (%d)", n)
		}
		t, err := m.bytes(int(n))
		if err != nil {
			return nil, err
		}
		in.kind, in.target = sqSymlinkType, string(t)
	}
	return in, nil
}

// sqEntry is one directory entry.
type sqEntry struct {
	name string
	ref  uint64 // inode reference: metadata block << 16 | offset
	typ  uint16
}

// find returns the entry of a directory with the given name, or errNotFound. Results are
// cached for the parse, so a path that goes round a directory loop costs one listing scan.
func (s *squashFS) find(in *sqInode, name string) (sqEntry, error) {
	key := sqFindKey{in.dirBlock, in.dirOffset, in.dirSize, name}
	if e, ok := s.found[key]; ok {
		return e, nil
	}
	var found sqEntry
	err := s.walkDir(in, func(n []byte, ref uint64, typ uint16) bool {
		if string(n) == name {
			found = sqEntry{name: name, ref: ref, typ: typ}
			return false
		}
		return true
	})
	if err != nil {
		return sqEntry{}, err
	}
	if found.name == "" {
		return sqEntry{}, errNotFound
	}
	s.found[key] = found
	return found, nil
}

type sqFindKey struct {
	block  uint32
	offset uint16
	size   uint32
	name   string
}

// walkDir calls fn for each entry of a directory listing until fn returns false. The names it
// passes are only valid during the call. Listing bytes scanned per parse are bounded
// (maxDirScan).
func (s *squashFS) walkDir(in *sqInode, fn func(name []byte, ref uint64, typ uint16) bool) error {
	if in.kind != sqDirType {
		return errNotFound
	}
	if in.dirSize < 3 {
		return squashErr("a squashfs directory has a bad size (%d)", in.dirSize)
	}
	left := int64(in.dirSize) - 3 // the size counts "." and "..", which are not stored
	if left == 0 {
		return nil
	}
	if left > maxDirBytes {
		return squashErr("a squashfs directory listing is %d bytes, over the %d-byte limit", left, maxDirBytes)
	}
	if s.scanned += left; s.scanned > maxDirScan {
		return squashErr("the squashfs image needs more than %d bytes of directory listings for a lookup", maxDirScan)
	}
	m, err := s.metaAt(s.dirs, s.dirsEnd, uint64(in.dirBlock), int(in.dirOffset))
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	for left > 0 {
		if left < 12 {
			return squashErr("a squashfs directory listing is corrupt")
		}
		h, err := m.bytes(12)
		if err != nil {
			return err
		}
		left -= 12
		count, start := int64(le.Uint32(h))+1, le.Uint32(h[4:])
		if count > 256 || count*8 > left {
			return squashErr("a squashfs directory listing is corrupt (a header counts %d entries)", count)
		}
		for ; count > 0; count-- {
			if left < 8 {
				return squashErr("a squashfs directory listing is corrupt")
			}
			e, err := m.bytes(8)
			if err != nil {
				return err
			}
			offset, typ, nameLen := le.Uint16(e), le.Uint16(e[4:]), int64(le.Uint16(e[6:]))+1
			left -= 8
			if nameLen > 256 || nameLen > left {
				return squashErr("a squashfs directory listing is corrupt (a name of %d bytes)", nameLen)
			}
			name, err := m.bytes(int(nameLen))
			if err != nil {
				return err
			}
			left -= nameLen
			if string(name) == "." || string(name) == ".." || bytes.ContainsAny(name, "/\x00") {
				return squashErr("a squashfs directory holds an invalid name %q", clean(string(name)))
			}
			if !fn(name, uint64(start)<<16|uint64(offset), typ) {
				return nil
			}
		}
	}
	return nil
}

// lookup resolves a path from the root, following symbolic links (at most maxSymlinkHops,
// staying inside the image), and returns the inode it names with the name of its last
// component. A file's block list is read when it is at most maxData bytes.
func (s *squashFS) lookup(p string, maxData int64) (*sqInode, string, error) {
	root, err := s.inode(s.root, 0)
	if err != nil {
		return nil, "", err
	}
	if root.kind != sqDirType {
		return nil, "", squashErr("the squashfs root is not a directory")
	}
	stack := []*sqInode{root} // the directories walked, for ".."
	parts := strings.Split(p, "/")
	hops, steps := 0, 0
	var name string
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if steps++; steps > maxPathSteps {
			return nil, "", squashErr("a squashfs path is longer than %d steps (a loop?)", maxPathSteps)
		}
		if part == ".." {
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		dir := stack[len(stack)-1]
		if dir.kind != sqDirType {
			return nil, "", errNotFound
		}
		e, err := s.find(dir, part)
		if err != nil {
			return nil, "", err
		}
		ref := e.ref
		limit := maxData
		if len(parts) > 0 {
			limit = 0
		}
		in, err := s.inode(ref, limit)
		if err != nil {
			return nil, "", err
		}
		if in.kind == sqSymlinkType {
			if hops++; hops > maxSymlinkHops {
				return nil, "", squashErr("a squashfs path follows more than %d symbolic links (a loop?)", maxSymlinkHops)
			}
			if strings.HasPrefix(in.target, "/") {
				stack = stack[:1]
			}
			parts = append(strings.Split(in.target, "/"), parts...)
			continue
		}
		stack = append(stack, in)
		name = part
	}
	return stack[len(stack)-1], name, nil
}

// readFile returns the content of a file inode read by lookup with maxData >= in.size.
func (s *squashFS) readFile(in *sqInode) ([]byte, error) {
	if in.kind != sqFileType {
		return nil, squashErr("not a regular file")
	}
	if !in.listed {
		return nil, squashErr("a squashfs file is too large to read (%d bytes)", in.size)
	}
	out := make([]byte, 0, in.size)
	// The blocks are contiguous: one read for all.
	var total int64
	for _, bs := range in.blockSizes {
		n := int64(bs & 0xffffff)
		if n > s.blockSize {
			return nil, squashErr("a squashfs data block declares %d bytes, over the block size", n)
		}
		total += n
	}
	raw, err := s.read(int64(min(in.start, uint64(s.used))), total)
	if err != nil {
		return nil, err
	}
	for i, bs := range in.blockSizes {
		want := min(s.blockSize, int64(in.size)-int64(i)*s.blockSize)
		n := int64(bs & 0xffffff)
		var blk []byte
		switch {
		case n == 0: // a sparse block: zeros
			blk = make([]byte, want)
		case bs&(1<<24) != 0:
			blk = raw[:n]
		default:
			if blk, err = s.decode(raw[:n], int(s.blockSize)); err != nil {
				return nil, err
			}
		}
		raw = raw[n:]
		if int64(len(blk)) != want {
			return nil, squashErr("a squashfs data block holds %d bytes, not %d", len(blk), want)
		}
		out = append(out, blk...)
	}
	if in.frag == sqNoFragment {
		if uint64(len(out)) != in.size {
			return nil, squashErr("a squashfs file is shorter than its size")
		}
		return out, nil
	}
	tail := int64(in.size) - int64(len(out))
	frag, err := s.fragment(in.frag)
	if err != nil {
		return nil, err
	}
	if int64(in.fragOffset) > int64(len(frag)) || tail > int64(len(frag))-int64(in.fragOffset) {
		return nil, squashErr("a squashfs file's tail lies outside its fragment")
	}
	return append(out, frag[in.fragOffset:int64(in.fragOffset)+tail]...), nil
}

// fragment returns the inflated fragment block i.
func (s *squashFS) fragment(i uint32) ([]byte, error) {
	if i >= s.fragCount || s.frags < 0 {
		return nil, squashErr("a squashfs file names fragment %d of %d", i, s.fragCount)
	}
	ptr, err := s.readAhead(s.frags+8*int64(i/512), 8)
	if err != nil {
		return nil, err
	}
	// Fragment entries are stored before the index that points at them.
	m, err := s.metaAt(0, s.frags, binary.LittleEndian.Uint64(ptr), 0)
	if err != nil {
		return nil, err
	}
	if _, err := m.bytes(int(16 * (i % 512))); err != nil {
		return nil, err
	}
	e, err := m.bytes(16)
	if err != nil {
		return nil, err
	}
	start, size := binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:])
	if data, ok := s.fragc[int64(start)]; ok {
		return data, nil
	}
	n := int64(size & 0xffffff)
	if n == 0 || n > s.blockSize || start > uint64(s.used) {
		return nil, squashErr("a squashfs fragment entry is corrupt")
	}
	raw, err := s.read(int64(start), n)
	if err != nil {
		return nil, err
	}
	data := raw
	if size&(1<<24) == 0 {
		if data, err = s.decode(raw, int(s.blockSize)); err != nil {
			return nil, err
		}
	}
	s.fragc[int64(start)] = data
	return data, nil
}
