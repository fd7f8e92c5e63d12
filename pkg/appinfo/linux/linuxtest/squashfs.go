package linuxtest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// SquashEntry is one entry of a squashfs directory: a regular file (Data, or Size bytes read
// from Content), a symbolic link (Symlink), a directory (IsDir, Dir) or, with InodeOf, an entry
// pointing at another inode.
type SquashEntry struct {
	Name string
	Data []byte
	// Size and Content make a large file streamed by WriteSquashfs and stored uncompressed
	// (Data must be nil).
	Size    int64
	Content io.Reader
	Symlink string
	IsDir   bool
	Dir     []SquashEntry
	// InodeOf "." makes the entry point at the directory that holds it (a directory loop: at
	// the root, every path can go round it forever).
	InodeOf string
}

// SquashOptions describes a squashfs image.
type SquashOptions struct {
	// Compression: "gzip" (default, zlib streams as mksquashfs writes), "xz", "zstd" or "none"
	// (every block stored uncompressed, handy for patching bytes in tests).
	Compression string
	// BlockSize is the data block size (default 128 KiB, mksquashfs's default).
	BlockSize int
	// Fragments packs files smaller than a block into shared fragment blocks, as mksquashfs
	// does by default; without it every file's tail is a short block of its own.
	Fragments bool
	Root      []SquashEntry
}

// BuildSquashfs returns the squashfs image o describes.
func BuildSquashfs(o SquashOptions) []byte {
	var b bytes.Buffer
	if _, err := WriteSquashfs(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

const (
	sqMeta       = 8192
	sqUncompBit  = 1 << 24
	sqNoFragment = 0xffffffff
	sqModTime    = 1700000000
)

// sqChunk is a piece of the data region: bytes in memory or a stream.
type sqChunk struct {
	data []byte
	r    io.Reader
	n    int64
}

type sqFragBlock struct {
	data []byte
	size uint32 // as the fragment table stores it
}

type sqWriter struct {
	bs       int64
	comp     func([]byte) []byte // nil: store everything uncompressed
	chunks   []sqChunk
	dataLen  int64 // bytes in chunks
	frag     bytes.Buffer
	frags    []sqFragBlock
	inodes   *metaWriter
	dirs     *metaWriter
	num      uint32 // inode numbers given so far
	total    uint32 // inodes in the image
	fragging bool
}

// metaWriter writes a metadata table: 8 KiB blocks, each compressed on its own.
type metaWriter struct {
	comp func([]byte) []byte
	out  bytes.Buffer
	cur  []byte
}

// ref returns the position of the next byte: the block's offset in the table, and the offset
// within the block.
func (m *metaWriter) ref() (uint32, uint16) { return uint32(m.out.Len()), uint16(len(m.cur)) }

func (m *metaWriter) write(b []byte) {
	m.cur = append(m.cur, b...)
	for len(m.cur) >= sqMeta {
		m.flush(m.cur[:sqMeta])
		m.cur = append([]byte(nil), m.cur[sqMeta:]...)
	}
}

func (m *metaWriter) flush(block []byte) {
	h := uint16(len(block)) | 0x8000
	data := block
	if m.comp != nil {
		if c := m.comp(block); len(c) < len(block) {
			h, data = uint16(len(c)), c
		}
	}
	binary.Write(&m.out, binary.LittleEndian, h)
	m.out.Write(data)
}

func (m *metaWriter) finish() []byte {
	if len(m.cur) > 0 {
		m.flush(m.cur)
		m.cur = nil
	}
	return m.out.Bytes()
}

func sqCompressor(kind string, bs int) (func([]byte) []byte, uint16) {
	switch kind {
	case "", "gzip":
		return func(b []byte) []byte {
			var out bytes.Buffer
			zw, _ := zlib.NewWriterLevel(&out, zlib.BestCompression)
			zw.Write(b)
			zw.Close()
			return out.Bytes()
		}, 1
	case "xz":
		return func(b []byte) []byte {
			var out bytes.Buffer
			xw, err := xz.WriterConfig{DictCap: bs, CheckSum: xz.CRC32}.NewWriter(&out)
			if err != nil {
				panic(err)
			}
			xw.Write(b)
			xw.Close()
			return out.Bytes()
		}, 4
	case "zstd":
		enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		return func(b []byte) []byte { return enc.EncodeAll(b, nil) }, 6
	case "none":
		return nil, 1
	}
	panic("linuxtest: unknown squashfs compression " + kind)
}

func countInodes(entries []SquashEntry) uint32 {
	n := uint32(0)
	for _, e := range entries {
		switch {
		case e.InodeOf != "":
		case e.IsDir:
			n += 1 + countInodes(e.Dir)
		default:
			n++
		}
	}
	return n
}

// WriteSquashfs streams the squashfs image o describes to w and returns its size (padded to
// 4 KiB, as mksquashfs pads). Layout: superblock, file data, fragment blocks, inode table,
// directory table, fragment table, id table.
func WriteSquashfs(w io.Writer, o SquashOptions) (int64, error) {
	bs := int64(o.BlockSize)
	if bs == 0 {
		bs = 128 << 10
	}
	if bs < 4096 || bs > 1<<20 || bits.OnesCount64(uint64(bs)) != 1 {
		return 0, fmt.Errorf("linuxtest: squashfs block size %d is not a power of two in [4 KiB, 1 MiB]", bs)
	}
	comp, compID := sqCompressor(o.Compression, int(bs))
	sw := &sqWriter{bs: bs, comp: comp, inodes: &metaWriter{comp: comp}, dirs: &metaWriter{comp: comp}, fragging: o.Fragments}
	sw.total = 1 + countInodes(o.Root)
	rootRef, err := sw.dir(o.Root, sw.total+1)
	if err != nil {
		return 0, err
	}
	sw.flushFrag()

	// Lay out everything after the data.
	pos := int64(96) + sw.dataLen
	var fentries []byte
	for _, f := range sw.frags {
		fentries = binary.LittleEndian.AppendUint64(fentries, uint64(pos))
		fentries = binary.LittleEndian.AppendUint32(fentries, f.size)
		fentries = binary.LittleEndian.AppendUint32(fentries, 0)
		pos += int64(len(f.data))
	}
	inodeTable := sw.inodes.finish()
	dirTable := sw.dirs.finish()
	inodeStart := pos
	dirStart := inodeStart + int64(len(inodeTable))
	pos = dirStart + int64(len(dirTable))
	// Fragment table: metadata blocks of 512 entries, then the index of their positions.
	var fragMeta, fragIndex []byte
	for i := 0; i < len(fentries); i += sqMeta {
		mw := &metaWriter{comp: comp}
		mw.write(fentries[i:min(i+sqMeta, len(fentries))])
		fragIndex = binary.LittleEndian.AppendUint64(fragIndex, uint64(pos+int64(len(fragMeta))))
		fragMeta = append(fragMeta, mw.finish()...)
	}
	fragStart := pos + int64(len(fragMeta))
	pos = fragStart + int64(len(fragIndex))
	// Id table: one id (0, root), one metadata block, its index.
	idw := &metaWriter{comp: comp}
	idw.write([]byte{0, 0, 0, 0})
	idMeta := idw.finish()
	idIndex := binary.LittleEndian.AppendUint64(nil, uint64(pos))
	idStart := pos + int64(len(idMeta))
	used := idStart + int64(len(idIndex))

	flags := uint16(0x0200) // no xattrs
	if comp == nil {
		flags |= 0x0001 | 0x0002 | 0x0008 | 0x0800 // inodes, data, fragments, ids uncompressed
	}
	if len(sw.frags) == 0 {
		flags |= 0x0010 // no fragments
	}
	le := binary.LittleEndian
	sb := make([]byte, 96)
	le.PutUint32(sb, 0x73717368)
	le.PutUint32(sb[4:], sw.total)
	le.PutUint32(sb[8:], sqModTime)
	le.PutUint32(sb[12:], uint32(bs))
	le.PutUint32(sb[16:], uint32(len(sw.frags)))
	le.PutUint16(sb[20:], compID)
	le.PutUint16(sb[22:], uint16(bits.TrailingZeros64(uint64(bs))))
	le.PutUint16(sb[24:], flags)
	le.PutUint16(sb[26:], 1) // ids
	le.PutUint16(sb[28:], 4)
	le.PutUint16(sb[30:], 0)
	le.PutUint64(sb[32:], rootRef)
	le.PutUint64(sb[40:], uint64(used))
	le.PutUint64(sb[48:], uint64(idStart))
	le.PutUint64(sb[56:], ^uint64(0)) // no xattr table
	le.PutUint64(sb[64:], uint64(inodeStart))
	le.PutUint64(sb[72:], uint64(dirStart))
	le.PutUint64(sb[80:], uint64(fragStart))
	le.PutUint64(sb[88:], ^uint64(0)) // no export table

	cw := &countWriter{w: w}
	cw.Write(sb)
	for _, c := range sw.chunks {
		if c.r == nil {
			cw.Write(c.data)
			continue
		}
		if n, err := io.CopyN(cw, c.r, c.n); err != nil {
			return cw.n, fmt.Errorf("linuxtest: a streamed file gave %d of %d bytes: %w", n, c.n, err)
		}
	}
	for _, f := range sw.frags {
		cw.Write(f.data)
	}
	for _, b := range [][]byte{inodeTable, dirTable, fragMeta, fragIndex, idMeta, idIndex} {
		cw.Write(b)
	}
	if cw.n != used {
		return cw.n, fmt.Errorf("linuxtest: squashfs layout error: wrote %d bytes, planned %d", cw.n, used)
	}
	_, err = cw.Write(make([]byte, (4096-used%4096)%4096))
	return cw.n, err
}

// inodeHeader returns the 16-byte common inode header.
func inodeHeader(typ, mode uint16, num uint32) []byte {
	h := make([]byte, 16)
	binary.LittleEndian.PutUint16(h, typ)
	binary.LittleEndian.PutUint16(h[2:], mode)
	binary.LittleEndian.PutUint32(h[8:], sqModTime)
	binary.LittleEndian.PutUint32(h[12:], num)
	return h
}

func (sw *sqWriter) next() uint32 { sw.num++; return sw.num }

func inodeRef(block uint32, off uint16) uint64 { return uint64(block)<<16 | uint64(off) }

type sqChild struct {
	name string
	ref  uint64
	num  uint32
	typ  uint16
}

// dir writes a directory's children, its listing and its inode; it returns the inode's
// reference.
func (sw *sqWriter) dir(entries []SquashEntry, parent uint32) (uint64, error) {
	num := sw.next()
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b SquashEntry) int { return strings.Compare(a.Name, b.Name) })
	var children []sqChild
	var loops []int
	subdirs := uint32(0)
	for _, e := range entries {
		if e.Name == "" || strings.Contains(e.Name, "/") {
			return 0, fmt.Errorf("linuxtest: bad squashfs entry name %q", e.Name)
		}
		c := sqChild{name: e.Name}
		var err error
		switch {
		case e.InodeOf == ".":
			c.typ, c.num = 1, num
			loops = append(loops, len(children))
		case e.InodeOf != "":
			return 0, fmt.Errorf("linuxtest: InodeOf %q is not supported (only \".\")", e.InodeOf)
		case e.IsDir:
			subdirs++
			c.typ = 1
			c.num = sw.num + 1
			c.ref, err = sw.dir(e.Dir, num)
		case e.Symlink != "":
			c.typ = 3
			c.num, c.ref = sw.symlink(e.Symlink)
		default:
			c.typ = 2
			c.num, c.ref, err = sw.file(e)
		}
		if err != nil {
			return 0, err
		}
		children = append(children, c)
	}
	// This directory's inode comes right after its children's.
	blk, off := sw.inodes.ref()
	self := inodeRef(blk, off)
	for _, i := range loops {
		children[i].ref = self
	}
	// The listing: runs of entries sharing an inode block, at most 256 per header.
	dblk, doff := sw.dirs.ref()
	var listing []byte
	for i := 0; i < len(children); {
		base := children[i]
		j := i
		for j < len(children) && j-i < 256 && children[j].ref>>16 == base.ref>>16 &&
			int64(children[j].num)-int64(base.num) >= -32768 && int64(children[j].num)-int64(base.num) <= 32767 {
			j++
		}
		listing = binary.LittleEndian.AppendUint32(listing, uint32(j-i-1))
		listing = binary.LittleEndian.AppendUint32(listing, uint32(base.ref>>16))
		listing = binary.LittleEndian.AppendUint32(listing, base.num)
		for _, c := range children[i:j] {
			listing = binary.LittleEndian.AppendUint16(listing, uint16(c.ref&0xffff))
			listing = binary.LittleEndian.AppendUint16(listing, uint16(int16(int64(c.num)-int64(base.num))))
			listing = binary.LittleEndian.AppendUint16(listing, c.typ)
			listing = binary.LittleEndian.AppendUint16(listing, uint16(len(c.name)-1))
			listing = append(listing, c.name...)
		}
		i = j
	}
	if len(listing)+3 > 0xffff {
		return 0, fmt.Errorf("linuxtest: squashfs directory listing too large for a basic inode")
	}
	sw.dirs.write(listing)
	in := inodeHeader(1, 0o755, num)
	in = binary.LittleEndian.AppendUint32(in, dblk)
	in = binary.LittleEndian.AppendUint32(in, 2+subdirs)
	in = binary.LittleEndian.AppendUint16(in, uint16(len(listing)+3))
	in = binary.LittleEndian.AppendUint16(in, doff)
	in = binary.LittleEndian.AppendUint32(in, parent)
	sw.inodes.write(in)
	return self, nil
}

func (sw *sqWriter) symlink(target string) (uint32, uint64) {
	num := sw.next()
	blk, off := sw.inodes.ref()
	in := inodeHeader(3, 0o777, num)
	in = binary.LittleEndian.AppendUint32(in, 1)
	in = binary.LittleEndian.AppendUint32(in, uint32(len(target)))
	sw.inodes.write(append(in, target...))
	return num, inodeRef(blk, off)
}

// file lays out a file's data blocks (and fragment) and writes its inode.
func (sw *sqWriter) file(e SquashEntry) (uint32, uint64, error) {
	num := sw.next()
	start := uint64(96 + sw.dataLen)
	size := int64(len(e.Data))
	var sizes []uint32
	frag, fragOff := uint32(sqNoFragment), uint32(0)
	if e.Content != nil {
		if e.Data != nil {
			return 0, 0, fmt.Errorf("linuxtest: squashfs entry %q has both Data and Content", e.Name)
		}
		size = e.Size
		for left := size; left > 0; left -= sw.bs {
			sizes = append(sizes, uint32(min(left, sw.bs))|sqUncompBit)
		}
		sw.chunks = append(sw.chunks, sqChunk{r: e.Content, n: size})
		sw.dataLen += size
	} else {
		data := e.Data
		useFrag := sw.fragging && size > 0 && size < sw.bs
		for len(data) > 0 && !useFrag {
			blk := data[:min(int64(len(data)), sw.bs)]
			data = data[len(blk):]
			stored, sz := blk, uint32(len(blk))|sqUncompBit
			if sw.comp != nil {
				if c := sw.comp(blk); len(c) < len(blk) {
					stored, sz = c, uint32(len(c))
				}
			}
			sizes = append(sizes, sz)
			sw.chunks = append(sw.chunks, sqChunk{data: stored})
			sw.dataLen += int64(len(stored))
		}
		if useFrag {
			if int64(sw.frag.Len())+size > sw.bs {
				sw.flushFrag()
			}
			frag, fragOff = uint32(len(sw.frags)), uint32(sw.frag.Len())
			sw.frag.Write(e.Data)
		}
	}
	blk, off := sw.inodes.ref()
	var in []byte
	if start < 1<<32 && size < 1<<32 {
		in = inodeHeader(2, 0o644, num)
		in = binary.LittleEndian.AppendUint32(in, uint32(start))
		in = binary.LittleEndian.AppendUint32(in, frag)
		in = binary.LittleEndian.AppendUint32(in, fragOff)
		in = binary.LittleEndian.AppendUint32(in, uint32(size))
	} else {
		in = inodeHeader(9, 0o644, num)
		in = binary.LittleEndian.AppendUint64(in, start)
		in = binary.LittleEndian.AppendUint64(in, uint64(size))
		in = binary.LittleEndian.AppendUint64(in, 0) // sparse bytes
		in = binary.LittleEndian.AppendUint32(in, 1) // links
		in = binary.LittleEndian.AppendUint32(in, frag)
		in = binary.LittleEndian.AppendUint32(in, fragOff)
		in = binary.LittleEndian.AppendUint32(in, sqNoFragment) // no xattr
	}
	for _, s := range sizes {
		in = binary.LittleEndian.AppendUint32(in, s)
	}
	sw.inodes.write(in)
	return num, inodeRef(blk, off), nil
}

func (sw *sqWriter) flushFrag() {
	if sw.frag.Len() == 0 {
		return
	}
	data := append([]byte(nil), sw.frag.Bytes()...)
	size := uint32(len(data)) | sqUncompBit
	if sw.comp != nil {
		if c := sw.comp(data); len(c) < len(data) {
			data, size = c, uint32(len(c))
		}
	}
	sw.frags = append(sw.frags, sqFragBlock{data: data, size: size})
	sw.frag.Reset()
}
