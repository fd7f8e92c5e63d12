package windowstest

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// IconPixel is the colour of pixel (x, y) of the synthetic icons: a gradient with a transparent
// top-left quarter, so tests can check colours and the AND mask's alpha.
func IconPixel(x, y, size int) color.NRGBA {
	if x < size/2 && y < size/2 {
		return color.NRGBA{}
	}
	return color.NRGBA{R: uint8(x * 255 / max(size-1, 1)), G: uint8(y * 255 / max(size-1, 1)), B: 0x80, A: 255}
}

// PNGImage returns a w×h PNG of the IconPixel pattern.
func PNGImage(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetNRGBA(x, y, IconPixel(x, y, w))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// IconData encodes one icon image: a PNG, or a DIB (BITMAPINFOHEADER, palette for depths up to
// 8 bits, bottom-up colour rows, AND mask). 32-bit DIBs carry alpha in the pixels and a mask as
// well; the others get their transparency from the mask alone. Paletted images use a palette of
// black, the blue of the pattern and white.
func IconData(ic IconImage) []byte {
	n := ic.Size
	if ic.PNG {
		return PNGImage(n, n)
	}
	bpp := ic.BPP
	if bpp == 0 {
		bpp = 32
	}
	var b []byte
	hdr := make([]byte, 40)
	binary.LittleEndian.PutUint32(hdr, 40)
	binary.LittleEndian.PutUint32(hdr[4:], uint32(n))
	binary.LittleEndian.PutUint32(hdr[8:], uint32(2*n))
	binary.LittleEndian.PutUint16(hdr[12:], 1)
	binary.LittleEndian.PutUint16(hdr[14:], uint16(bpp))
	b = append(b, hdr...)
	palette := []color.NRGBA{{0, 0, 0, 255}, {0x20, 0x40, 0x80, 255}, {255, 255, 255, 255}}
	if bpp <= 8 {
		for i := range 1 << bpp {
			c := color.NRGBA{}
			if i < len(palette) {
				c = palette[i]
			}
			b = append(b, c.B, c.G, c.R, 0)
		}
	}
	stride := (n*bpp + 31) / 32 * 4
	for y := n - 1; y >= 0; y-- {
		row := make([]byte, stride)
		for x := range n {
			c := IconPixel(x, y, n)
			switch bpp {
			case 32:
				copy(row[x*4:], []byte{c.B, c.G, c.R, c.A})
			case 24:
				copy(row[x*3:], []byte{c.B, c.G, c.R})
			default:
				idx := (x / 2) % len(palette) // stripes of the palette's colours
				if idx >= 1<<bpp {
					idx = 0
				}
				bit := x * bpp
				row[bit/8] |= byte(idx << (8 - bpp - bit%8))
			}
		}
		b = append(b, row...)
	}
	andStride := (n + 31) / 32 * 4
	for y := n - 1; y >= 0; y-- {
		row := make([]byte, andStride)
		for x := range n {
			if IconPixel(x, y, n).A == 0 {
				row[x/8] |= 0x80 >> (x % 8)
			}
		}
		b = append(b, row...)
	}
	return b
}

// ICO returns an .ico file holding the images.
func ICO(images ...IconImage) []byte {
	var data [][]byte
	for _, ic := range images {
		d := ic.Raw
		if d == nil {
			d = IconData(ic)
		}
		data = append(data, d)
	}
	b := binary.LittleEndian.AppendUint16(nil, 0)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(images)))
	off := 6 + 16*len(images)
	for i, ic := range images {
		bpp := ic.BPP
		if bpp == 0 {
			bpp = 32
		}
		b = append(b, byte(ic.Size), byte(ic.Size), 0, 0)
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint16(b, uint16(bpp))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(data[i])))
		b = binary.LittleEndian.AppendUint32(b, uint32(off))
		off += len(data[i])
	}
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}
