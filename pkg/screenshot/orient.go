package screenshot

import (
	"image"
	"image/color"
)

// turn returns m turned upright as EXIF orientation o says (1 upright, 2 mirrored, 3 upside
// down, 4 flipped, 5 to 8 the same with width and height exchanged). It moves the bytes of each
// plane, keeping the image's type, so an upright photo costs one copy of its planes, not a
// conversion to RGBA; only the rare 4:1:1 and 4:1:0 JPEGs go through RGBA.
func turn(m image.Image, o int) image.Image {
	if o < 2 || o > 8 {
		return m
	}
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	r := image.Rect(0, 0, dw, dh)
	switch m := m.(type) {
	case *image.YCbCr:
		ratio, ok := turnedRatio(m.SubsampleRatio, o)
		if !ok {
			break
		}
		hr, vr := ratioSteps(m.SubsampleRatio)
		y, ys := turnPlane(m.Y[m.YOffset(b.Min.X, b.Min.Y):], m.YStride, w, h, 1, o)
		cw, ch := (b.Max.X+hr-1)/hr-b.Min.X/hr, (b.Max.Y+vr-1)/vr-b.Min.Y/vr
		co := m.COffset(b.Min.X, b.Min.Y)
		cb, cs := turnPlane(m.Cb[co:], m.CStride, cw, ch, 1, o)
		cr, _ := turnPlane(m.Cr[co:], m.CStride, cw, ch, 1, o)
		return &image.YCbCr{Y: y, Cb: cb, Cr: cr, YStride: ys, CStride: cs, SubsampleRatio: ratio, Rect: r}
	case *image.Gray:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 1, o)
		return &image.Gray{Pix: p, Stride: s, Rect: r}
	case *image.Gray16:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 2, o)
		return &image.Gray16{Pix: p, Stride: s, Rect: r}
	case *image.RGBA:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 4, o)
		return &image.RGBA{Pix: p, Stride: s, Rect: r}
	case *image.NRGBA:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 4, o)
		return &image.NRGBA{Pix: p, Stride: s, Rect: r}
	case *image.CMYK:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 4, o)
		return &image.CMYK{Pix: p, Stride: s, Rect: r}
	case *image.RGBA64:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 8, o)
		return &image.RGBA64{Pix: p, Stride: s, Rect: r}
	case *image.NRGBA64:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 8, o)
		return &image.NRGBA64{Pix: p, Stride: s, Rect: r}
	case *image.Paletted:
		p, s := turnPlane(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, w, h, 1, o)
		return &image.Paletted{Pix: p, Stride: s, Rect: r, Palette: m.Palette}
	}
	// Any other type, pixel by pixel.
	dst := image.NewRGBA(r)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			dx, dy := turnPoint(x, y, w, h, o)
			dst.Set(dx, dy, color.RGBAModel.Convert(m.At(b.Min.X+x, b.Min.Y+y)))
		}
	}
	return dst
}

// turnPoint is where orientation o takes pixel (x, y) of a w×h image.
func turnPoint(x, y, w, h, o int) (int, int) {
	switch o {
	case 2:
		return w - 1 - x, y
	case 3:
		return w - 1 - x, h - 1 - y
	case 4:
		return x, h - 1 - y
	case 5:
		return y, x
	case 6:
		return h - 1 - y, x
	case 7:
		return h - 1 - y, w - 1 - x
	case 8:
		return y, w - 1 - x
	}
	return x, y
}

// turnPlane turns a w×h plane of bpp bytes a pixel, starting at src[0] with the given stride, and
// returns the new plane and its stride. turnPoint is linear in x and y, so each pixel's place is
// one addition away from the previous one's.
func turnPlane(src []byte, stride, w, h, bpp, o int) ([]byte, int) {
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	ds := dw * bpp
	dst := make([]byte, ds*dh)
	if w == 0 || h == 0 {
		return dst, ds
	}
	x0, y0 := turnPoint(0, 0, w, h, o)
	x1, y1 := turnPoint(1, 0, w, h, o)
	x2, y2 := turnPoint(0, 1, w, h, o)
	base := y0*ds + x0*bpp
	stepX := (y1-y0)*ds + (x1-x0)*bpp
	stepY := (y2-y0)*ds + (x2-x0)*bpp
	for y := 0; y < h; y++ {
		row := src[y*stride : y*stride+w*bpp]
		d := base + y*stepY
		if bpp == 1 {
			for _, v := range row {
				dst[d] = v
				d += stepX
			}
			continue
		}
		for x := 0; x < len(row); x += bpp {
			copy(dst[d:d+bpp], row[x:x+bpp])
			d += stepX
		}
	}
	return dst, ds
}

// turnedRatio is the subsampling of a YCbCr image's planes once turned: exchanging width and
// height exchanges 4:2:2 and 4:4:0. 4:1:1 and 4:1:0 have no turned counterpart.
func turnedRatio(r image.YCbCrSubsampleRatio, o int) (image.YCbCrSubsampleRatio, bool) {
	switch r {
	case image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio420:
		return r, true
	case image.YCbCrSubsampleRatio422:
		if o >= 5 {
			return image.YCbCrSubsampleRatio440, true
		}
		return r, true
	case image.YCbCrSubsampleRatio440:
		if o >= 5 {
			return image.YCbCrSubsampleRatio422, true
		}
		return r, true
	}
	return r, false
}

// ratioSteps is how many luma samples across and down share one chroma sample.
func ratioSteps(r image.YCbCrSubsampleRatio) (int, int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return 2, 1
	case image.YCbCrSubsampleRatio420:
		return 2, 2
	case image.YCbCrSubsampleRatio440:
		return 1, 2
	case image.YCbCrSubsampleRatio411:
		return 4, 1
	case image.YCbCrSubsampleRatio410:
		return 4, 2
	}
	return 1, 1
}
