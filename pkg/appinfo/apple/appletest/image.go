package appletest

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
)

// IconImage returns the deterministic w×h image the icon builders encode: a red/green gradient
// on blue, fully transparent in the top-left quarter-square and half transparent along the
// bottom row, so tests can check channel order and alpha handling.
func IconImage(w, h int) *image.NRGBA {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{R: uint8(x * 255 / max(w-1, 1)), G: uint8(y * 255 / max(h-1, 1)), B: 200, A: 255}
			switch {
			case x < w/4 && y < h/4:
				c = color.NRGBA{}
			case y == h-1:
				c.A = 128
			}
			img.SetNRGBA(x, y, c)
		}
	}
	return img
}

// StandardPNG returns IconImage(w, h) as an ordinary PNG.
func StandardPNG(w, h int) []byte {
	var buf bytes.Buffer
	if err := png.Encode(&buf, IconImage(w, h)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// CgBIPNG returns IconImage(w, h) as an Apple-crushed PNG, the form Xcode gives app icons: a CgBI
// chunk before IHDR, premultiplied BGRA pixels, and raw deflate data without a zlib header. Rows
// cycle through all five PNG filter types, so a converter's unfiltering is fully exercised.
func CgBIPNG(w, h int) []byte {
	img := IconImage(w, h)
	stride := 4 * w
	raw := make([]byte, 0, h*(stride+1))
	prev := make([]byte, stride)
	for y := range h {
		cur := make([]byte, stride)
		for x := range w {
			c := img.NRGBAAt(x, y)
			a := uint32(c.A)
			pm := func(v uint8) byte { return byte((uint32(v)*a + 127) / 255) }
			cur[4*x], cur[4*x+1], cur[4*x+2], cur[4*x+3] = pm(c.B), pm(c.G), pm(c.R), c.A
		}
		ft := byte(y % 5)
		raw = append(raw, ft)
		raw = append(raw, appleFilterRow(ft, cur, prev)...)
		prev = cur
	}
	var idat bytes.Buffer
	fw, _ := flate.NewWriter(&idat, flate.BestCompression)
	_, _ = fw.Write(raw)
	_ = fw.Close()

	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	appleWriteChunk(&out, "CgBI", []byte{0x50, 0x00, 0x20, 0x06})
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 6 // 8-bit RGBA
	appleWriteChunk(&out, "IHDR", ihdr)
	appleWriteChunk(&out, "IDAT", idat.Bytes())
	appleWriteChunk(&out, "IEND", nil)
	return out.Bytes()
}

// appleFilterRow applies PNG filter ft (0–4) to cur given the previous unfiltered row, 4 bytes a pixel.
func appleFilterRow(ft byte, cur, prev []byte) []byte {
	const bpp = 4
	out := make([]byte, len(cur))
	for i := range cur {
		var a, c int
		if i >= bpp {
			a, c = int(cur[i-bpp]), int(prev[i-bpp])
		}
		b := int(prev[i])
		var pred int
		switch ft {
		case 1:
			pred = a
		case 2:
			pred = b
		case 3:
			pred = (a + b) / 2
		case 4:
			p := a + b - c
			pa, pb, pc := max(p-a, a-p), max(p-b, b-p), max(p-c, c-p)
			switch {
			case pa <= pb && pa <= pc:
				pred = a
			case pb <= pc:
				pred = b
			default:
				pred = c
			}
		}
		out[i] = cur[i] - byte(pred)
	}
	return out
}

func appleWriteChunk(w *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	w.Write(n[:])
	w.WriteString(typ)
	w.Write(data)
	binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(append([]byte(typ), data...)))
	w.Write(n[:])
}

// BuildICNS returns a macOS .icns file holding a PNG image of each size (as the types iconutil
// uses: icp4 16, icp5 32, icp6 64, ic07 128, ic08 256, ic09 512, ic10 1024, else ic14), preceded,
// when legacy is true, by an old RLE (is32) image that is not a PNG.
func BuildICNS(pngSizes []int, legacy bool) []byte {
	types := map[int]string{16: "icp4", 32: "icp5", 64: "icp6", 128: "ic07", 256: "ic08", 512: "ic09", 1024: "ic10"}
	var body bytes.Buffer
	entry := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(8+len(data)))
		body.WriteString(typ)
		body.Write(n[:])
		body.Write(data)
	}
	if legacy {
		entry("is32", bytes.Repeat([]byte{0x7f, 0x10}, 96))
	}
	for _, s := range pngSizes {
		typ, ok := types[s]
		if !ok {
			typ = "ic14"
		}
		entry(typ, StandardPNG(s, s))
	}
	out := []byte("icns\x00\x00\x00\x00")
	binary.BigEndian.PutUint32(out[4:], uint32(8+body.Len()))
	return append(out, body.Bytes()...)
}
