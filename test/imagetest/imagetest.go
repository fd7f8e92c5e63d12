// Package imagetest makes the images the feedback tests send: plain screenshots, a camera JPEG
// with GPS tags that must never come out, and a PNG whose header declares what its data is not.
package imagetest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

// PNG is a w×h PNG: red on its left half, blue on its right.
func PNG(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := color.NRGBA{R: 255, A: 255}
			if x >= w/2 {
				c = color.NRGBA{B: 255, A: 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// GPSJPEG is a w×h JPEG carrying an Exif segment with GPS tags (a GPS IFD with latitude
// reference "N") and Orientation 1, as a phone camera writes: what must never come out.
func GPSJPEG(t testing.TB, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 200
	}
	var enc bytes.Buffer
	if err := jpeg.Encode(&enc, img, nil); err != nil {
		t.Fatal(err)
	}
	// TIFF, little endian: IFD0 with Orientation (0x0112) and GPSInfo (0x8825), then the GPS
	// IFD with GPSLatitudeRef (0x0001) "N".
	var tiff bytes.Buffer
	le := binary.LittleEndian
	tiff.WriteString("II")
	_ = binary.Write(&tiff, le, uint16(42))
	_ = binary.Write(&tiff, le, uint32(8))
	_ = binary.Write(&tiff, le, uint16(2))
	for _, e := range [][4]uint32{{0x0112, 3, 1, 1}, {0x8825, 4, 1, 8 + 2 + 2*12 + 4}} {
		_ = binary.Write(&tiff, le, uint16(e[0]))
		_ = binary.Write(&tiff, le, uint16(e[1]))
		_ = binary.Write(&tiff, le, e[2])
		_ = binary.Write(&tiff, le, e[3])
	}
	_ = binary.Write(&tiff, le, uint32(0))
	_ = binary.Write(&tiff, le, uint16(1))
	_ = binary.Write(&tiff, le, uint16(0x0001))
	_ = binary.Write(&tiff, le, uint16(2))
	_ = binary.Write(&tiff, le, uint32(2))
	tiff.Write([]byte{'N', 0, 0, 0})
	_ = binary.Write(&tiff, le, uint32(0))
	tiff.WriteString("GPSMarker")
	app1 := append([]byte("Exif\x00\x00"), tiff.Bytes()...)
	seg := []byte{0xFF, 0xE1, byte((len(app1) + 2) >> 8), byte(len(app1) + 2)}
	b := enc.Bytes()
	out := append(append(append([]byte{}, b[:2]...), seg...), app1...)
	return append(out, b[2:]...)
}

// DeclaredPNG is a valid PNG header declaring w×h pixels, and no more than a few bytes of data.
func DeclaredPNG(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6
	writeChunk(&b, "IHDR", ihdr)
	writeChunk(&b, "IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	writeChunk(&b, "IEND", nil)
	return b.Bytes()
}

func writeChunk(b *bytes.Buffer, typ string, data []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(data)))
	b.WriteString(typ)
	b.Write(data)
	crc := crc32.ChecksumIEEE(append([]byte(typ), data...))
	_ = binary.Write(b, binary.BigEndian, crc)
}
