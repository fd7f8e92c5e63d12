package windows

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"sort"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Windows icons. An icon directory (6 bytes: reserved, type 1, count) lists images with their
// size and bit depth: in a PE's RT_GROUP_ICON resource 14 bytes each, ending with the RT_ICON
// resource id of the image; in an .ico file 16 bytes each, ending with the image's offset. An
// image is either a PNG or a DIB: a BITMAPINFOHEADER, a palette for depths up to 8 bits, the
// colour (XOR) rows bottom-up, then a 1-bit AND mask (1 = transparent). The header's height
// counts both bitmaps, so it is twice the icon's. DIBs are converted to PNG.

const iconMaxSide = 256 // icon formats cannot express more

// iconDecodeBytes is the most decoding one icon allocates (appinfo.Family.DecodeBytes): a JPEG
// logo's pixels at appinfo.MaxIconPixels and the PNG encoded from them (a PNG is checked, never
// decoded; an icon's bitmap is at most 256×256).
const iconDecodeBytes = 8 * appinfo.MaxIconPixels

// iconDirEntry is one image an icon directory lists.
type iconDirEntry struct {
	w, h     int
	bitCount int
	size     uint32
	id       uint16 // RT_ICON id (group directories)
	offset   uint32 // file offset (.ico files)
}

// parseIconDir reads an icon directory (group: RT_GROUP_ICON's 14-byte entries, else an .ico
// file's 16-byte ones) and returns its entries, largest first.
func parseIconDir(b []byte, group bool) ([]iconDirEntry, error) {
	if len(b) < 6 || binary.LittleEndian.Uint16(b) != 0 || binary.LittleEndian.Uint16(b[2:]) != 1 {
		return nil, errs.Invalidf("not an icon directory")
	}
	n := int(binary.LittleEndian.Uint16(b[4:]))
	step := 16
	if group {
		step = 14
	}
	if 6+n*step > len(b) {
		return nil, errs.Invalidf("the icon directory declares %d images, more than it holds", n)
	}
	out := make([]iconDirEntry, 0, n)
	for i := range n {
		e := b[6+i*step:]
		d := iconDirEntry{w: int(e[0]), h: int(e[1]), bitCount: int(binary.LittleEndian.Uint16(e[6:])),
			size: binary.LittleEndian.Uint32(e[8:])}
		if d.w == 0 {
			d.w = 256
		}
		if d.h == 0 {
			d.h = 256
		}
		if group {
			d.id = binary.LittleEndian.Uint16(e[12:])
		} else {
			d.offset = binary.LittleEndian.Uint32(e[12:])
		}
		out = append(out, d)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := out[i].w*out[i].h, out[j].w*out[j].h; a != b {
			return a > b
		}
		return out[i].bitCount > out[j].bitCount
	})
	return out, nil
}

// icoFileIcon returns the largest image of an .ico file as a PNG.
func icoFileIcon(b []byte) (*appinfo.Icon, error) {
	entries, err := parseIconDir(b, false)
	if err != nil {
		return nil, err
	}
	for i, e := range entries {
		if i == rsrcIconTries {
			break
		}
		if uint64(e.offset)+uint64(e.size) > uint64(len(b)) {
			continue
		}
		if icon, err := iconImage(b[e.offset : e.offset+e.size]); err == nil {
			return icon, nil
		}
	}
	return nil, errs.Invalidf("the icon holds no readable image")
}

// iconImage converts one icon image (PNG or DIB) to a PNG Icon.
func iconImage(b []byte) (*appinfo.Icon, error) {
	if bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the icon is not a valid PNG")
		}
		if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > iconMaxSide || cfg.Height > iconMaxSide {
			return nil, errs.Invalidf("the icon's PNG is %dx%d, not an icon size", cfg.Width, cfg.Height)
		}
		// Checked whole (a truncated image is refused) without its pixels held.
		if _, _, err := appinfo.CheckPNG(b, iconMaxSide*iconMaxSide); err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the icon is not a valid PNG")
		}
		return &appinfo.Icon{Data: b, ContentType: "image/png", Width: cfg.Width, Height: cfg.Height}, nil
	}
	img, err := decodeDIB(b)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the icon cannot be re-encoded")
	}
	r := img.Bounds()
	return &appinfo.Icon{Data: out.Bytes(), ContentType: "image/png", Width: r.Dx(), Height: r.Dy()}, nil
}

// decodeDIB decodes an icon's device-independent bitmap with its AND mask as alpha. Every size
// comes from the header and is checked against the bytes present before anything is allocated.
func decodeDIB(b []byte) (*image.NRGBA, error) {
	if len(b) < 40 {
		return nil, errs.Invalidf("the icon image is neither a PNG nor a bitmap")
	}
	hdrLen := binary.LittleEndian.Uint32(b)
	w := int(int32(binary.LittleEndian.Uint32(b[4:])))
	h2 := int(int32(binary.LittleEndian.Uint32(b[8:])))
	bpp := int(binary.LittleEndian.Uint16(b[14:]))
	compression := binary.LittleEndian.Uint32(b[16:])
	clrUsed := binary.LittleEndian.Uint32(b[32:])
	h := h2 / 2
	switch {
	case hdrLen < 40 || hdrLen > 124 || int(hdrLen) > len(b):
		return nil, errs.Invalidf("the icon bitmap has a bad header length %d", hdrLen)
	case w <= 0 || h <= 0 || w > iconMaxSide || h > iconMaxSide:
		return nil, errs.Invalidf("the icon bitmap declares %dx%d pixels, not an icon size", w, h2)
	case compression != 0 && !(compression == 3 && bpp == 32):
		return nil, errs.Invalidf("the icon bitmap uses unsupported compression %d", compression)
	case bpp != 1 && bpp != 4 && bpp != 8 && bpp != 24 && bpp != 32:
		return nil, errs.Invalidf("the icon bitmap has an unsupported depth of %d bits", bpp)
	}
	off := int(hdrLen)
	if compression == 3 && hdrLen == 40 {
		off += 12 // the three colour masks follow a plain header
	}
	var palette []color.NRGBA
	if bpp <= 8 {
		n := 1 << bpp
		if clrUsed > 0 && int(clrUsed) < n {
			n = int(clrUsed)
		}
		if off+4*n > len(b) {
			return nil, errs.Invalidf("the icon bitmap's palette runs past its end")
		}
		palette = make([]color.NRGBA, n)
		for i := range palette {
			p := b[off+4*i:]
			palette[i] = color.NRGBA{R: p[2], G: p[1], B: p[0], A: 255}
		}
		off += 4 * n
	}
	xorStride := (w*bpp + 31) / 32 * 4
	andStride := (w + 31) / 32 * 4
	if off+xorStride*h > len(b) {
		return nil, errs.Invalidf("the icon bitmap's pixels run past its end")
	}
	xor := b[off : off+xorStride*h]
	var and []byte
	if rest := b[off+xorStride*h:]; len(rest) >= andStride*h {
		and = rest[:andStride*h]
	}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	anyAlpha := false
	for y := range h {
		row := xor[(h-1-y)*xorStride:]
		for x := range w {
			var c color.NRGBA
			switch bpp {
			case 32:
				p := row[x*4:]
				c = color.NRGBA{R: p[2], G: p[1], B: p[0], A: p[3]}
				anyAlpha = anyAlpha || p[3] != 0
			case 24:
				p := row[x*3:]
				c = color.NRGBA{R: p[2], G: p[1], B: p[0], A: 255}
			default:
				bit := x * bpp
				idx := int(row[bit/8]>>(8-bpp-bit%8)) & (1<<bpp - 1)
				if idx < len(palette) {
					c = palette[idx]
				}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	// A 32-bit image carries its own alpha; the mask applies when it does not (all zero).
	if bpp == 32 && anyAlpha {
		return img, nil
	}
	for y := range h {
		for x := range w {
			transparent := false
			if and != nil {
				m := and[(h-1-y)*andStride+x/8]
				transparent = m&(0x80>>(x%8)) != 0
			}
			i := img.PixOffset(x, y)
			if transparent {
				img.Pix[i+3] = 0
			} else {
				img.Pix[i+3] = 255
			}
		}
	}
	return img, nil
}
