package apple

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/slipwayhq/slipway/pkg/appinfo"
	"image"
	"image/png"
	"io"
)

// maxAppleIconPixels bounds the images checked or converted as an icon (appinfo.MaxIconPixels). App
// icons are at most 1024×1024; a PNG header claiming more is refused before anything is allocated.
const maxAppleIconPixels = appinfo.MaxIconPixels

// iconDecodeBytes is the most converting one icon allocates (appinfo.Family.DecodeBytes): a
// crushed PNG's inflated rows, its pixels, and the PNG encoded from them, at maxAppleIconPixels.
const iconDecodeBytes = 4 * 4 * maxAppleIconPixels

// maxAppleIconAttempts is how many candidate icons, largest first, are decoded before giving up:
// a crafted package could otherwise declare thousands of large, broken images.
const maxAppleIconAttempts = 4

var applePNGSig = []byte("\x89PNG\r\n\x1a\n")

// applePNGHeader reads the dimensions from the start of a PNG, standard or Apple-crushed (CgBI, whose
// CgBI chunk precedes IHDR). head needs to hold only the first 64 bytes.
func applePNGHeader(head []byte) (w, h int, cgbi, ok bool) {
	if !bytes.HasPrefix(head, applePNGSig) {
		return 0, 0, false, false
	}
	pos := len(applePNGSig)
	if len(head) >= pos+8 && string(head[pos+4:pos+8]) == "CgBI" {
		n := binary.BigEndian.Uint32(head[pos:])
		if n > 64 {
			return 0, 0, true, false
		}
		pos += 12 + int(n)
		cgbi = true
	}
	if len(head) < pos+16 || string(head[pos+4:pos+8]) != "IHDR" {
		return 0, 0, cgbi, false
	}
	w64, h64 := binary.BigEndian.Uint32(head[pos+8:]), binary.BigEndian.Uint32(head[pos+12:])
	if w64 == 0 || h64 == 0 || w64 > 1<<20 || h64 > 1<<20 {
		return 0, 0, cgbi, false
	}
	return int(w64), int(h64), cgbi, true
}

// appleIconFromPNG checks that data is a decodable PNG of reasonable size, converting an Apple-crushed one
// to a standard PNG first, and returns it as an Icon.
func appleIconFromPNG(data []byte) (*appinfo.Icon, error) {
	w, h, cgbi, ok := applePNGHeader(data)
	switch {
	case !ok:
		return nil, errors.New("not a PNG image")
	case w*h > maxAppleIconPixels:
		return nil, fmt.Errorf("PNG image of %d×%d pixels is too large for an icon", w, h)
	}
	if cgbi {
		var err error
		if data, err = convertCgBI(data); err != nil {
			return nil, err
		}
	}
	// A standard PNG (or the one converted) is checked whole, its pixels inflated but never held.
	w, h, err := appinfo.CheckPNG(data, maxAppleIconPixels)
	if err != nil {
		return nil, err
	}
	return &appinfo.Icon{Data: data, ContentType: "image/png", Width: w, Height: h}, nil
}

// convertCgBI converts an Apple-crushed PNG, which Go's image/png cannot read, to a standard PNG.
// Xcode's pngcrush variant writes a CgBI chunk before IHDR, compresses the image data as raw
// deflate (no zlib header or checksum), and stores pixels as BGRA with premultiplied alpha (or BGR).
// The conversion inflates and unfilters the rows, swaps the channels back, un-premultiplies, and
// re-encodes with image/png. Only 8-bit RGB(A), non-interlaced images exist in this format.
func convertCgBI(data []byte) ([]byte, error) {
	if _, _, cgbi, ok := applePNGHeader(data); !ok || !cgbi {
		return nil, errors.New("not an Apple CgBI PNG (a CgBI chunk, then IHDR)")
	}
	var (
		ihdr     []byte
		idat     []byte
		finished bool
	)
	// The image data is gathered into one buffer of its real size (the IDAT chunks' lengths, all
	// within data), never grown by doubling.
	var total uint64
	for p := data[len(applePNGSig):]; len(p) >= 12; {
		n := uint64(binary.BigEndian.Uint32(p))
		if n > uint64(len(p)-12) {
			break
		}
		if string(p[4:8]) == "IDAT" {
			total += n
		}
		p = p[12+n:]
	}
	idat = make([]byte, 0, total)
	for p := data[len(applePNGSig):]; len(p) > 0 && !finished; {
		if len(p) < 12 {
			return nil, errors.New("truncated PNG chunk")
		}
		n := binary.BigEndian.Uint32(p)
		if uint64(n) > uint64(len(p)-12) {
			return nil, errors.New("PNG chunk overruns the file")
		}
		typ, body := string(p[4:8]), p[8:8+n]
		switch {
		case typ == "IHDR" && ihdr == nil:
			ihdr = body
		case typ == "IDAT":
			if ihdr == nil {
				return nil, errors.New("IDAT before IHDR")
			}
			idat = append(idat, body...)
		case typ == "IEND":
			finished = true
		}
		p = p[12+n:]
	}
	if len(ihdr) != 13 {
		return nil, errors.New("missing or bad IHDR chunk")
	}
	w, h := int(binary.BigEndian.Uint32(ihdr)), int(binary.BigEndian.Uint32(ihdr[4:]))
	depth, color, interlace := ihdr[8], ihdr[9], ihdr[12]
	bpp := 0
	switch {
	case depth == 8 && color == 6:
		bpp = 4
	case depth == 8 && color == 2:
		bpp = 3
	default:
		return nil, fmt.Errorf("unsupported CgBI pixel format (depth %d, color type %d)", depth, color)
	}
	if interlace != 0 {
		return nil, errors.New("interlaced CgBI PNGs are not supported")
	}
	if w <= 0 || h <= 0 || w > 1<<20 || h > 1<<20 || w*h > maxAppleIconPixels {
		return nil, fmt.Errorf("CgBI image of %d×%d pixels is out of range", w, h)
	}
	stride := w * bpp
	raw := make([]byte, h*(stride+1))
	zr := flate.NewReader(bytes.NewReader(idat))
	if _, err := io.ReadFull(zr, raw); err != nil {
		return nil, fmt.Errorf("CgBI image data: %w", err)
	}
	if err := cgbiUnfilter(raw, h, stride, bpp); err != nil {
		return nil, err
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		row := raw[y*(stride+1)+1 : (y+1)*(stride+1)]
		out := img.Pix[y*img.Stride : y*img.Stride+4*w]
		for x := range w {
			px, o := row[x*bpp:x*bpp+bpp], out[4*x:4*x+4]
			o[0], o[1], o[2], o[3] = px[2], px[1], px[0], 255
			if bpp == 4 {
				o[3] = px[3]
				cgbiUnpremultiply(o)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cgbiUnpremultiply turns one premultiplied RGBA pixel into straight alpha, rounding to nearest.
func cgbiUnpremultiply(px []byte) {
	a := int(px[3])
	if a == 0 || a == 255 {
		return
	}
	for i := range 3 {
		px[i] = byte(min((int(px[i])*255+a/2)/a, 255))
	}
}

// cgbiUnfilter reverses PNG's per-row filters in place. raw holds h rows, each a filter-type byte
// followed by stride bytes; bpp is the bytes per pixel.
func cgbiUnfilter(raw []byte, h, stride, bpp int) error {
	prev := make([]byte, stride) // the row above the first is all zeros
	for y := range h {
		row := raw[y*(stride+1) : (y+1)*(stride+1)]
		ft, cur := row[0], row[1:]
		switch ft {
		case 0: // None
		case 1: // Sub
			for i := bpp; i < stride; i++ {
				cur[i] += cur[i-bpp]
			}
		case 2: // Up
			for i := range cur {
				cur[i] += prev[i]
			}
		case 3: // Average
			for i := range cur {
				left := 0
				if i >= bpp {
					left = int(cur[i-bpp])
				}
				cur[i] += byte((left + int(prev[i])) / 2)
			}
		case 4: // Paeth
			for i := range cur {
				var a, c int
				if i >= bpp {
					a, c = int(cur[i-bpp]), int(prev[i-bpp])
				}
				cur[i] += byte(cgbiPaeth(a, int(prev[i]), c))
			}
		default:
			return fmt.Errorf("bad PNG filter type %d in row %d", ft, y)
		}
		prev = cur
	}
	return nil
}

func cgbiPaeth(a, b, c int) int {
	p := a + b - c
	pa, pb, pc := max(p-a, a-p), max(p-b, b-p), max(p-c, c-p)
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}
