package appinfo

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// MaxIconPixels is the most pixels an icon may have to be kept (or decoded) by any family's parser:
// 1280 × 1280, a Windows Square310x310 logo at scale 400 (1240 × 1240) with room; app icons are
// at most 1024 × 1024.
const MaxIconPixels = 1280 * 1280

// CheckPNG checks that b is a whole PNG image of at most maxPixels pixels, without decoding its
// pixels: the signature, IHDR first, every chunk within b and its CRC right, IDAT present, IEND
// last, and the image data a complete zlib stream of the size the header implies (inflated to
// io.Discard, so the cost is bounded by maxPixels and nothing is allocated for them). It returns
// the image's width and height. A truncated or corrupt image, which png.Decode would refuse after
// allocating its pixels, is refused here for the cost of reading it.
func CheckPNG(b []byte, maxPixels int) (w, h int, err error) {
	const sig = "\x89PNG\r\n\x1a\n"
	if !bytes.HasPrefix(b, []byte(sig)) {
		return 0, 0, errors.New("not a PNG image")
	}
	var (
		idat      [][]byte
		sawEnd    bool
		depth     int
		colorType byte
		interlace byte
	)
	for p := len(sig); p < len(b); {
		if len(b)-p < 12 {
			return 0, 0, errors.New("PNG image is truncated")
		}
		n := int64(binary.BigEndian.Uint32(b[p:]))
		typ := string(b[p+4 : p+8])
		if n > int64(len(b)-p-12) {
			return 0, 0, errors.New("PNG image is truncated")
		}
		data := b[p+8 : p+8+int(n)]
		if crc32.ChecksumIEEE(b[p+4:p+8+int(n)]) != binary.BigEndian.Uint32(b[p+8+int(n):]) {
			return 0, 0, fmt.Errorf("PNG chunk %q has a bad CRC", typ)
		}
		p += 12 + int(n)
		switch {
		case p == len(sig)+12+int(n) && typ != "IHDR":
			return 0, 0, errors.New("PNG image does not start with IHDR")
		case typ == "IHDR":
			if n != 13 || w != 0 {
				return 0, 0, errors.New("PNG image has a bad IHDR")
			}
			w64, h64 := binary.BigEndian.Uint32(data), binary.BigEndian.Uint32(data[4:])
			if w64 == 0 || h64 == 0 || w64 > 1<<20 || h64 > 1<<20 || int64(w64)*int64(h64) > int64(maxPixels) {
				return 0, 0, fmt.Errorf("PNG image of %d×%d pixels is over the %d-pixel limit for an icon", w64, h64, maxPixels)
			}
			w, h, depth, colorType, interlace = int(w64), int(h64), int(data[8]), data[9], data[12]
		case typ == "IDAT":
			idat = append(idat, data)
		case typ == "IEND":
			sawEnd = true
			p = len(b) // what follows IEND is ignored, as decoders do
		}
	}
	if w == 0 || len(idat) == 0 || !sawEnd {
		return 0, 0, errors.New("PNG image is truncated (no image data or no IEND)")
	}
	zr, err := zlib.NewReader(io.MultiReader(readers(idat)...))
	if err != nil {
		return 0, 0, fmt.Errorf("PNG image data is corrupt: %w", err)
	}
	want := rawPNGBytes(w, h, depth, colorType)
	if want < 0 {
		return 0, 0, errors.New("PNG image has an unknown colour type or bit depth")
	}
	if interlace != 0 {
		want = -1 // the passes' sizes differ; the stream must still end cleanly within the cap
	}
	limit := rawPNGBytes(w, h, 16, 6) + 1 // the most any image of these dimensions holds
	got, err := io.Copy(io.Discard, io.LimitReader(zr, limit))
	if err != nil {
		return 0, 0, fmt.Errorf("PNG image data is truncated or corrupt: %w", err)
	}
	if got == limit || (want >= 0 && got != want) {
		return 0, 0, fmt.Errorf("PNG image data holds %d bytes, not the %d its header implies", got, want)
	}
	return w, h, nil
}

// rawPNGBytes is the size of a non-interlaced PNG's inflated data: each row's filter byte and
// pixels; -1 for an invalid colour type or bit depth.
func rawPNGBytes(w, h, depth int, colorType byte) int64 {
	var channels int
	switch colorType {
	case 0, 3:
		channels = 1
	case 2:
		channels = 3
	case 4:
		channels = 2
	case 6:
		channels = 4
	default:
		return -1
	}
	switch depth {
	case 1, 2, 4, 8, 16:
	default:
		return -1
	}
	row := (int64(w)*int64(channels*depth) + 7) / 8
	return (row + 1) * int64(h)
}

func readers(bs [][]byte) []io.Reader {
	out := make([]io.Reader, len(bs))
	for i, b := range bs {
		out[i] = bytes.NewReader(b)
	}
	return out
}
