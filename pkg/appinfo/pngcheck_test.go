package appinfo

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"
)

func testPNG(t testing.TB, w, h int, c color.Model) []byte {
	var img image.Image
	switch c {
	case color.NRGBA64Model:
		img = image.NewNRGBA64(image.Rect(0, 0, w, h))
	case color.GrayModel:
		img = image.NewGray(image.Rect(0, 0, w, h))
	default:
		m := image.NewNRGBA(image.Rect(0, 0, w, h))
		for i := range m.Pix {
			m.Pix[i] = byte(i * 7)
		}
		img = m
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// CheckPNG accepts whole PNGs of every depth within the pixel cap and refuses truncated ones,
// ones over the cap and ones with a damaged chunk, without decoding their pixels.
func TestCheckPNG(t *testing.T) {
	for _, c := range []color.Model{color.NRGBAModel, color.NRGBA64Model, color.GrayModel} {
		b := testPNG(t, 40, 30, c)
		if w, h, err := CheckPNG(b, 40*30); err != nil || w != 40 || h != 30 {
			t.Errorf("a whole PNG: %d×%d %v", w, h, err)
		}
		if _, _, err := CheckPNG(b, 40*30-1); err == nil {
			t.Error("a PNG over the pixel cap was accepted")
		}
		for _, cut := range []int{len(b) - 1, len(b) - 12, len(b) / 2, 20} {
			if _, _, err := CheckPNG(b[:cut], 1<<20); err == nil {
				t.Errorf("a PNG cut at %d of %d bytes was accepted", cut, len(b))
			}
		}
		bad := bytes.Clone(b)
		bad[len(bad)/2] ^= 0xff
		if _, _, err := CheckPNG(bad, 1<<20); err == nil {
			t.Error("a PNG with a damaged byte was accepted")
		}
	}
}

// FuzzCheckPNG: CheckPNG never panics, and accepts every non-interlaced PNG that image/png
// decodes within the pixel cap (it checks less than a decode, never more).
func FuzzCheckPNG(f *testing.F) {
	f.Add(testPNG(f, 16, 16, color.NRGBAModel))
	f.Add(testPNG(f, 3, 5, color.NRGBA64Model))
	f.Add(testPNG(f, 9, 2, color.GrayModel))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, err := CheckPNG(b, 1<<16)
		if err == nil {
			return
		}
		cfg, cerr := png.DecodeConfig(bytes.NewReader(b))
		if cerr != nil || cfg.Width*cfg.Height > 1<<16 || len(b) < 29 || b[28] != 0 {
			return
		}
		if _, derr := png.Decode(bytes.NewReader(b)); derr == nil && bytes.Contains(b, []byte("IEND")) {
			t.Errorf("image/png decodes what CheckPNG refuses: %v", err)
		}
	})
}
