// Package screenshot cleans the images testers attach to feedback. They come from a phone's photo
// picker, its camera or an app over the API, so they are untrusted: a photo's EXIF carries where it
// was taken, a file named .png may be a zip or a PDF, and a few hundred bytes may declare a
// gigapixel. Sanitize takes only PNG, JPEG and WebP, recognised by their bytes, checks the
// dimensions their header declares before it decodes a pixel, reserves what the decode really
// needs from the replica's parse-memory budget, and encodes the pixels again: nothing of the
// original file but its pixels (orientation applied) comes out, so no metadata and no payload
// appended to a valid image survive.
package screenshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"unicode/utf8"

	"golang.org/x/image/webp"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Limits bound one screenshot.
type Limits struct {
	MaxBytes  int64 // encoded size accepted (default 15 MiB)
	MaxSide   int   // widest side in pixels (default 8192)
	MaxPixels int64 // width*height (default 33_554_432, i.e. 32 Mi pixels)
}

// DefaultLimits take a phone's full-resolution photo (a 48 MP camera's default 12 MP output, a
// 4032×3024 JPEG of a few MiB) and any phone's or tablet's screenshot, with room to spare.
var DefaultLimits = Limits{MaxBytes: 15 << 20, MaxSide: 8192, MaxPixels: 32 << 20}

// withDefaults fills a zero field from DefaultLimits, so that Limits{MaxBytes: n} changes one.
func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxSide <= 0 {
		l.MaxSide = DefaultLimits.MaxSide
	}
	if l.MaxPixels <= 0 {
		l.MaxPixels = DefaultLimits.MaxPixels
	}
	return l
}

// Image is a screenshot re-encoded without any metadata.
type Image struct {
	Data                    []byte // PNG or JPEG, no EXIF/XMP/ICC/text chunks, orientation applied
	ContentType             string // "image/png" or "image/jpeg"
	Width, Height           int    // after orientation
	Thumb                   []byte // JPEG thumbnail, at most 320 px on its long side (never upscaled)
	ThumbWidth, ThumbHeight int
}

// ThumbSide is the long side of a thumbnail, in pixels.
const ThumbSide = 320

// Quality of the JPEGs written: 88 keeps a screenshot's text sharp at about a third of the size
// of quality 100; a thumbnail is only a preview.
const (
	jpegQuality  = 88
	thumbQuality = 80
)

// sniffBytes is how much of the input is read before anything else: enough for every magic
// number below, so that what is not an image is refused without reading the rest.
const sniffBytes = 64

// Sanitize reads one image (at most l.MaxBytes+1 bytes are read), refuses what is not a PNG, JPEG
// or WebP, checks the dimensions from the header against the limits before decoding any pixels,
// decodes, applies the EXIF orientation (JPEG and WebP), and re-encodes: PNG stays PNG (lossless
// source), JPEG and lossy WebP become JPEG (quality 88), lossless WebP becomes PNG. Zero fields of
// l take DefaultLimits'. The decode's memory need is reserved from budget for the whole of the
// work (a nil budget does not bound). Errors are *errs.Error: Unsupported for what is not one of
// the three formats (HEIC told how to send a JPEG instead), TooLarge over MaxBytes or over the
// budget, Invalid for dimensions over the limits and for a truncated or corrupt image.
func Sanitize(ctx context.Context, r io.Reader, l Limits, budget *appinfo.Budget) (*Image, error) {
	l = l.withDefaults()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	head := make([]byte, sniffBytes)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, errs.Wrap(errs.Invalid, err, "the screenshot could not be read")
	}
	head = head[:n]
	if n == 0 {
		return nil, errs.Invalidf("the screenshot is empty")
	}
	f, err := sniff(head)
	if err != nil {
		return nil, err
	}
	data, err := readRest(head, r, l.MaxBytes)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := planFor(f, data, l)
	if err != nil {
		return nil, err
	}
	need := p.need(int64(len(data)))
	if budget != nil && need > budget.Total() {
		return nil, errs.New(errs.TooLarge, "the screenshot (%d×%d) needs up to %d MiB of memory to clean, more than this server gives all parses together (%d MiB, SLIPWAY_PARSE_MEMORY)",
			p.width, p.height, mib(need), mib(budget.Total()))
	}
	res, err := budget.Reserve(ctx, need, "the screenshot's cleaning")
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return p.run(ctx, data)
}

// readRest reads what follows head, up to max bytes in all: one byte more than max tells the input
// is too large, whatever it declared. It reads into chunks and copies them once into one slice,
// so reading allocates twice the input at most, never an old and a new copy of a growing buffer.
func readRest(head []byte, r io.Reader, max int64) ([]byte, error) {
	if int64(len(head)) > max {
		return nil, tooLarge(max)
	}
	if len(head) < sniffBytes { // the input ended within head
		return head, nil
	}
	w := &boundedWriter{max: max}
	w.Write(head)
	if _, err := io.Copy(w, io.LimitReader(r, max+1-int64(len(head)))); err != nil {
		if errors.Is(err, errOutputBound) {
			return nil, tooLarge(max)
		}
		return nil, errs.Wrap(errs.Invalid, err, "the screenshot could not be read")
	}
	return w.Bytes(), nil
}

func tooLarge(max int64) error {
	return errs.New(errs.TooLarge, "the screenshot is larger than %s, the most Slipway takes", size(max))
}

// format is what the input's first bytes say it is.
type format int

const (
	formatPNG format = iota + 1
	formatJPEG
	formatWebP
)

// sniff tells the format from the magic bytes; a file's name or declared type says nothing.
func sniff(b []byte) (format, error) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG, nil
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		return formatJPEG, nil
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return formatWebP, nil
	}
	if len(b) >= 12 && string(b[4:8]) == "ftyp" {
		switch string(b[8:12]) {
		case "heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs", "mif1", "msf1", "mif2", "miaf":
			return 0, errs.New(errs.Unsupported, "this screenshot is a HEIC image, which Slipway does not take: send a PNG or a JPEG (on an iPhone, take a screenshot, which is a PNG, or set Settings › Camera › Formats to Most Compatible)")
		case "avif", "avis":
			return 0, errs.New(errs.Unsupported, "this screenshot is an AVIF image, which Slipway does not take: send a PNG or a JPEG")
		}
	}
	return 0, errs.New(errs.Unsupported, "screenshots must be PNG, JPEG or WebP images; this file is %s", describe(b))
}

// describe names what a refused file looks like, in words (never its bytes).
func describe(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("PK\x03\x04")), bytes.HasPrefix(b, []byte("PK\x05\x06")):
		return "a zip archive"
	case bytes.HasPrefix(b, []byte("%PDF")):
		return "a PDF document"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "a GIF image"
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "a TIFF image"
	case bytes.HasPrefix(b, []byte("BM")):
		return "a BMP image"
	case len(b) >= 8 && string(b[4:8]) == "ftyp":
		return "a video or another ISO media file"
	case bytes.HasPrefix(b, []byte("RIFF")):
		return "a RIFF file that is not WebP"
	case isText(b):
		return "text"
	}
	return "of no image format Slipway knows"
}

func isText(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 && len(b) >= utf8.UTFMax {
			return false
		}
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
		b = b[n:]
	}
	return true
}

// checkSize refuses dimensions over the limits: it runs on what the header declares, before any
// pixel is decoded.
func checkSize(w, h int, l Limits) error {
	if w <= 0 || h <= 0 {
		return errs.Invalidf("the screenshot declares a size of %d×%d pixels", w, h)
	}
	if w > l.MaxSide || h > l.MaxSide {
		return errs.Invalidf("the screenshot is %d×%d pixels; its sides may be at most %d pixels", w, h, l.MaxSide)
	}
	if int64(w)*int64(h) > l.MaxPixels {
		return errs.Invalidf("the screenshot is %d×%d pixels (%d); it may have at most %d pixels", w, h, int64(w)*int64(h), l.MaxPixels)
	}
	return nil
}

// decodeConfig reads the header's dimensions with the format's own DecodeConfig.
func decodeConfig(f format, data []byte) (image.Config, error) {
	var (
		c   image.Config
		err error
	)
	switch f {
	case formatPNG:
		c, err = png.DecodeConfig(bytes.NewReader(data))
	case formatJPEG:
		c, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case formatWebP:
		c, err = webp.DecodeConfig(bytes.NewReader(data))
	}
	if err != nil {
		return c, corrupt(f, err)
	}
	return c, nil
}

func (f format) String() string {
	switch f {
	case formatPNG:
		return "PNG"
	case formatJPEG:
		return "JPEG"
	case formatWebP:
		return "WebP"
	}
	return "image"
}

// corrupt is the error of a header or a decode that failed: the decoder's words stay in the
// log, the tester is told the file is damaged.
func corrupt(f format, err error) error {
	if e, ok := errs.AsError(err); ok {
		return e
	}
	return errs.Wrap(errs.Invalid, err, "the screenshot is a truncated or damaged %s image", f)
}

func mib(n int64) int64 { return (n + 1<<20 - 1) >> 20 }

func size(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
