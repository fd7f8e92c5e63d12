package linux

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"

	"github.com/ulikunitz/xz/lzma"
)

// The xz container (tukaani.org/xz/xz-file-format.txt): a 12-byte stream header, blocks (a
// header naming the filters, the LZMA2 data, padding to 4 bytes, a check of the block's
// uncompressed data), then an index and a footer, which this reader does not need: it stops at
// the index. Only a single LZMA2 filter is supported (what xz, dpkg-deb and mksquashfs write by
// default); BCJ and delta filters are refused.

var xzMagic = []byte{0xfd, '7', 'z', 'X', 'Z', 0}

var crc64Table = crc64.MakeTable(crc64.ECMA)

// errXZ is the cause of every malformed-xz error; the caller words the message.
var errXZ = errors.New("malformed xz data")

// xzReader decodes the first xz stream of an in-memory buffer.
type xzReader struct {
	src      *bytes.Reader
	srcLen   int64
	dictMax  int // the output limit: no dictionary needs to be larger
	check    byte
	block    io.Reader // the current block's LZMA2 decoder; nil between blocks
	blockPos int64     // where the current block's header started
	hdrLen   int64
	h        hash.Hash
	out      int64 // uncompressed bytes of the current block
	declared int64 // the block's declared uncompressed size, -1 when absent
	err      error
}

// newXZReader returns a reader of the xz stream in data. dictMax bounds the LZMA2 dictionary it
// allocates; set it to the most output the caller will read.
func newXZReader(data []byte, dictMax int) (io.Reader, error) {
	if len(data) < 12 || !bytes.Equal(data[:6], xzMagic) {
		return nil, errors.New("not xz data")
	}
	if data[6] != 0 || data[7]&0xf0 != 0 || crc32.ChecksumIEEE(data[6:8]) != binary.LittleEndian.Uint32(data[8:12]) {
		return nil, errXZ
	}
	x := &xzReader{src: bytes.NewReader(data), srcLen: int64(len(data)), dictMax: max(dictMax, lzma.MinDictCap), check: data[7]}
	x.src.Seek(12, io.SeekStart)
	return x, nil
}

// xzCheckSize is the size of the check field for each check type.
var xzCheckSize = [16]int{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}

func (x *xzReader) Read(p []byte) (int, error) {
	for x.err == nil {
		if x.block == nil {
			x.err = x.startBlock()
			continue
		}
		n, err := x.block.Read(p)
		if n > 0 {
			if x.out += int64(n); x.declared >= 0 && x.out > x.declared {
				x.err = errXZ
				return 0, x.err
			}
			if x.h != nil {
				x.h.Write(p[:n])
			}
		}
		if err == io.EOF {
			x.err = x.endBlock()
		} else if err != nil {
			x.err = errors.Join(errXZ, err)
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, x.err
}

// startBlock parses a block header and starts its LZMA2 decoder; at the index it ends the
// stream with io.EOF.
func (x *xzReader) startBlock() error {
	pos, _ := x.src.Seek(0, io.SeekCurrent)
	b, err := x.src.ReadByte()
	if err != nil {
		return io.ErrUnexpectedEOF
	}
	if b == 0 { // the index: every block has been read
		return io.EOF
	}
	hlen := (int64(b) + 1) * 4
	if hlen > x.srcLen-pos {
		return io.ErrUnexpectedEOF
	}
	hdr := make([]byte, hlen)
	x.src.ReadAt(hdr, pos)
	x.src.Seek(pos+hlen, io.SeekStart)
	if crc32.ChecksumIEEE(hdr[:hlen-4]) != binary.LittleEndian.Uint32(hdr[hlen-4:]) {
		return errXZ
	}
	flags := hdr[1]
	if flags&0x3c != 0 {
		return errXZ
	}
	rest := hdr[2 : hlen-4]
	x.declared = -1
	if flags&0x40 != 0 { // compressed size: checked by the padding below
		if _, rest, err = xzVarint(rest); err != nil {
			return err
		}
	}
	if flags&0x80 != 0 {
		var v uint64
		if v, rest, err = xzVarint(rest); err != nil {
			return err
		}
		x.declared = int64(v & (1<<62 - 1))
	}
	if flags&3 != 0 {
		return errors.New("xz data uses a BCJ or delta filter, which is not supported")
	}
	id, rest, err := xzVarint(rest)
	if err != nil {
		return err
	}
	psize, rest, err := xzVarint(rest)
	if err != nil {
		return err
	}
	if id != 0x21 {
		return errors.New("xz data uses a filter other than LZMA2, which is not supported")
	}
	if psize != 1 || len(rest) < 1 || rest[0] > 40 {
		return errXZ
	}
	for _, c := range rest[1:] {
		if c != 0 {
			return errXZ
		}
	}
	dict := uint64(2|rest[0]&1) << (rest[0]/2 + 11)
	if rest[0] == 40 {
		dict = 1<<32 - 1
	}
	// A match reaches back at most to the start of the block's output: the dictionary need not
	// be larger than the output limit, nor than the block's declared uncompressed size.
	dc := int(min(dict, uint64(x.dictMax)))
	if x.declared >= 0 {
		dc = int(min(int64(dc), x.declared))
	}
	r, err := lzma.Reader2Config{DictCap: max(dc, lzma.MinDictCap)}.NewReader2(x.src)
	if err != nil {
		return errors.Join(errXZ, err)
	}
	x.block, x.blockPos, x.hdrLen, x.out = r, pos, hlen, 0
	switch x.check {
	case 1:
		x.h = crc32.NewIEEE()
	case 4:
		x.h = crc64.New(crc64Table)
	case 10:
		x.h = sha256.New()
	default:
		x.h = nil
	}
	return nil
}

// endBlock skips the block padding and compares the check.
func (x *xzReader) endBlock() error {
	x.block = nil
	if x.declared >= 0 && x.declared != x.out {
		return errXZ
	}
	pos, _ := x.src.Seek(0, io.SeekCurrent)
	for (pos-x.blockPos)%4 != 0 {
		b, err := x.src.ReadByte()
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		if b != 0 {
			return errXZ
		}
		pos++
	}
	n := xzCheckSize[x.check&0xf]
	if int64(n) > x.srcLen-pos {
		return io.ErrUnexpectedEOF
	}
	sum := make([]byte, n)
	x.src.Read(sum)
	if x.h != nil {
		got := x.h.Sum(nil)
		if x.check != 10 { // CRC32 and CRC64 are stored little-endian
			for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
				got[i], got[j] = got[j], got[i]
			}
		}
		if !bytes.Equal(got, sum) {
			return errors.New("xz data fails its check (corrupt)")
		}
	}
	return nil
}

// xzVarint reads a multibyte integer of the xz format (at most 9 bytes).
func xzVarint(b []byte) (uint64, []byte, error) {
	var v uint64
	for i := 0; i < 9 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if i > 0 && b[i] == 0 {
				return 0, nil, errXZ
			}
			return v, b[i+1:], nil
		}
	}
	return 0, nil, errXZ
}
