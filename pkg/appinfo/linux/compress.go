package linux

import (
	"bytes"
	"compress/zlib"
	"errors"
	"io"

	"github.com/klauspost/compress/zstd"
)

// errTooBig reports output over a decompression limit.
var errTooBig = errors.New("inflates past its limit")

// readCapped reads all of r, failing with errTooBig past limit bytes.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, errTooBig
	}
	return data, nil
}

// cappedReader reads from r and fails with errTooBig once more than left bytes come out.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			return 0, errTooBig
		}
		return c.r.Read(p[:0])
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// A blockDecoder decompresses one squashfs block into at most limit bytes.
type blockDecoder interface {
	decode(src []byte, limit int) ([]byte, error)
	close()
}

// Squashfs compressor ids.
const (
	sqGzip = 1
	sqLZMA = 2
	sqLZO  = 3
	sqXZ   = 4
	sqLZ4  = 5
	sqZstd = 6
)

var sqCompressorNames = map[uint16]string{sqGzip: "gzip", sqLZMA: "lzma", sqLZO: "lzo", sqXZ: "xz", sqLZ4: "lz4", sqZstd: "zstd"}

// newBlockDecoder returns the decoder of a squashfs compressor; maxBlock is the image's block
// size, the most any block may inflate to.
func newBlockDecoder(id uint16, maxBlock int) (blockDecoder, error) {
	switch id {
	case sqGzip:
		return zlibDecoder{}, nil
	case sqXZ:
		return xzDecoder{}, nil
	case sqZstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(maxBlock)))
		if err != nil {
			return nil, err
		}
		return zstdDecoder{d}, nil
	}
	return nil, errors.New("unsupported")
}

type zlibDecoder struct{}

func (zlibDecoder) decode(src []byte, limit int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return readCapped(zr, limit)
}

func (zlibDecoder) close() {}

type xzDecoder struct{}

func (xzDecoder) decode(src []byte, limit int) ([]byte, error) {
	xr, err := newXZReader(src, limit)
	if err != nil {
		return nil, err
	}
	return readCapped(xr, limit)
}

func (xzDecoder) close() {}

type zstdDecoder struct{ d *zstd.Decoder }

func (z zstdDecoder) decode(src []byte, limit int) ([]byte, error) {
	out, err := z.d.DecodeAll(src, nil)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
		return nil, errTooBig
	}
	return out, err
}

func (z zstdDecoder) close() { z.d.Close() }
