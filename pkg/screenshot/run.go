package screenshot

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// run decodes data, turns it upright, makes the thumbnail and encodes both, within the plan's
// bounds (the caller holds their reservation).
func (p *plan) run(ctx context.Context, data []byte) (*Image, error) {
	var (
		m   image.Image
		err error
	)
	switch p.format {
	case formatPNG:
		m, err = png.Decode(bytes.NewReader(data))
	case formatJPEG:
		m, err = jpeg.Decode(bytes.NewReader(data))
	case formatWebP:
		m, err = webp.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return nil, corrupt(p.format, err)
	}
	if b := m.Bounds(); b.Dx() != p.width || b.Dy() != p.height {
		return nil, errs.Invalidf("the screenshot is a damaged %s image (its pixels are not the size its header declares)", p.format)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a, ok := m.(*image.NYCbCrA); ok && !p.png {
		m = &a.YCbCr // a lossy WebP's alpha: a JPEG has none
	}
	m = turn(m, p.orient)
	b := m.Bounds()
	out := &Image{Width: b.Dx(), Height: b.Dy()}
	if out.Thumb, out.ThumbWidth, out.ThumbHeight, err = thumbnail(m); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &boundedWriter{max: p.outCap}
	if p.png {
		out.ContentType = "image/png"
		// BestSpeed: a third of the default level's time for a screenshot, a fifth larger
		// (BenchmarkPNGLevel); the cleaning runs while the tester waits.
		err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, m)
	} else {
		out.ContentType = "image/jpeg"
		err = jpeg.Encode(w, m, &jpeg.Options{Quality: jpegQuality})
	}
	if err != nil {
		return nil, encodeError(err, p.outCap)
	}
	out.Data = w.Bytes() // m is no longer live: the pixels may be collected while this copies

	return out, nil
}

// thumbnail scales m to at most ThumbSide on its long side (never up), over white, since a JPEG
// has no transparency, and encodes it. It halves the image while it is more than twice the
// thumbnail, each halving an exact 2×2 average (ApproxBiLinear at a factor of two), then scales the
// rest of the way, less than two, bilinearly: as smooth as a kernel scaler over the whole image
// (no aliasing of a screenshot's text), at a fraction of its memory (x/image/draw's kernels keep a
// float64 RGBA for each column of the thumbnail and row of the source: 31 MiB for a 12 MP photo).
func thumbnail(m image.Image) ([]byte, int, int, error) {
	b := m.Bounds()
	tw, th := thumbSize(b.Dx(), b.Dy())
	src, sb := m, b
	for w, h := b.Dx(), b.Dy(); max(w, h) >= 2*ThumbSide; {
		w, h = (w+1)/2, (h+1)/2
		half := image.NewRGBA(image.Rect(0, 0, w, h))
		draw.ApproxBiLinear.Scale(half, half.Bounds(), src, sb, draw.Src, nil)
		src, sb = half, half.Bounds()
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, sb, draw.Over, nil)
	w := &boundedWriter{max: 3*int64(tw)*int64(th) + 64<<10}
	if err := jpeg.Encode(w, dst, &jpeg.Options{Quality: thumbQuality}); err != nil {
		return nil, 0, 0, encodeError(err, w.max)
	}
	return w.Bytes(), tw, th, nil
}

// thumbBytes is what thumbnail allocates for a w×h image: the halvings, the thumbnail's RGBA, its
// JPEG as written and copied.
func thumbBytes(w, h int) int64 {
	tw, th := thumbSize(w, h)
	var n int64
	for max(w, h) >= 2*ThumbSide {
		w, h = (w+1)/2, (h+1)/2
		n += 4 * int64(w) * int64(h)
	}
	t := int64(tw) * int64(th)
	return n + 4*t + 2*(3*t+64<<10) + jpegCodecState
}

// thumbSize fits w×h within ThumbSide on its long side, keeping its proportions.
func thumbSize(w, h int) (int, int) {
	long := max(w, h)
	if long <= ThumbSide {
		return w, h
	}
	scale := func(n int) int { return max(1, (n*ThumbSide+long/2)/long) }
	return scale(w), scale(h)
}

var errOutputBound = errors.New("encoded image over its bound")

func encodeError(err error, bound int64) error {
	if errors.Is(err, errOutputBound) {
		return errs.Wrap(errs.Invalid, err, "the screenshot does not re-encode within %d MiB; send it as a PNG or a JPEG of fewer pixels", mib(bound))
	}
	return errs.Wrap(errs.Internal, err, "encoding the screenshot")
}

// boundedWriter keeps what is written in chunks up to max bytes in all, and refuses more: what the
// plan reserved for the output is a bound, not a guess. Chunks, not one growing slice, so that
// growing never holds an old copy and a new one at once; Bytes copies them once into one slice.
type boundedWriter struct {
	max    int64
	n      int64
	chunks [][]byte
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.max {
		return 0, errOutputBound
	}
	w.n += int64(len(p))
	written := len(p)
	for len(p) > 0 {
		if k := len(w.chunks); k > 0 {
			last := w.chunks[k-1]
			c := copy(last[len(last):cap(last)], p)
			w.chunks[k-1] = last[:len(last)+c]
			p = p[c:]
			if len(p) == 0 {
				break
			}
		}
		size := int64(16 << 10)
		if k := len(w.chunks); k > 0 {
			size = min(2*int64(cap(w.chunks[k-1])), 1<<20)
		}
		size = min(size, w.max-(w.n-int64(len(p))))
		w.chunks = append(w.chunks, make([]byte, 0, size))
	}
	return written, nil
}

// Bytes returns everything written, in one slice of exactly that length.
func (w *boundedWriter) Bytes() []byte {
	b := make([]byte, 0, w.n)
	for _, c := range w.chunks {
		b = append(b, c...)
	}
	w.chunks = nil
	return b
}
