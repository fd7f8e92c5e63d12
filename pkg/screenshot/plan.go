package screenshot

import (
	"github.com/slipwayhq/slipway/pkg/errs"
)

// A plan is what cleaning one screenshot will do and allocate, worked out from its header alone:
// the decoder's allocations are computed from the same header fields the decoder allocates from
// (Go's image/jpeg and image/png, x/image/webp), so that the reservation bounds the work.
type plan struct {
	format        format
	width, height int // as stored, before orientation
	orient        int // EXIF orientation, 1 to 8
	png           bool

	image     int64 // the decoded image
	transient int64 // what the decoder allocates beyond the image and frees when done
	rotated   int64 // the image turned to its orientation (0 when it is upright)
	encoder   int64 // the encoder's own state
	outCap    int64 // the most the encoded image may take; more is refused
}

// Fixed costs, measured on Go 1.26's encoders and decoders and rounded up: a zlib writer's
// compressor (hash chains, window, tokens) with the PNG writer's buffers; a zlib reader and the
// PNG reader's; the JPEG reader's Huffman and quantisation tables; a JPEG writer's.
const (
	pngEncoderState = 2 << 20
	pngDecoderState = 256 << 10
	jpegCodecState  = 256 << 10
	workOverhead    = 256 << 10 // the Image, the thumbnail's scaler, the small reads
)

// What x/image/vp8l allocates for its Huffman groups, at most vp8lMaxGroups (it refuses more): a
// group's five trees, each a 128-entry table and a slice, allocated at once for every group; each
// tree's nodes, 2*n-1 of 8 bytes for n symbols up to 256+24+2048 (green with the largest colour
// cache), 256 (red, blue, alpha) and 40 (distance); and for a tree not of the simple kind, its
// code lengths read into a slice as long as its alphabet. The nodes and code lengths are also
// bounded by the data: a tree of that kind costs at least 17 bits and each 2 bits more may
// repeat a code length 6 times, so under 5 KiB a byte.
const (
	vp8lMaxGroups     = 2600
	vp8lGroupTables   = 5 * (128*4 + 24)
	vp8lGroupTrees    = 8*(2*(256+24+2048)+3*2*256+2*40) + 4*(256+24+2048+3*256+40)
	vp8lBytesPerInput = 5 << 10
)

// plan reads data's header, checks its dimensions against l and works out the plan.
func planFor(f format, data []byte, l Limits) (*plan, error) {
	c, err := decodeConfig(f, data)
	if err != nil {
		return nil, err
	}
	if err := checkSize(c.Width, c.Height, l); err != nil {
		return nil, err
	}
	p := &plan{format: f, width: c.Width, height: c.Height, orient: 1}
	w, h := int64(c.Width), int64(c.Height)
	px := w * h
	switch f {
	case formatPNG:
		p.png = true
		bpp := int64(4)
		if len(data) > 24 && data[24] == 16 { // IHDR's bit depth
			bpp = 8
		}
		p.image = px * bpp
		p.transient = 2*(w*bpp+1) + pngDecoderState
		if len(data) > 28 && data[28] == 1 { // Adam7: each pass decoded apart, then merged
			p.transient += px * bpp
		}
	case formatJPEG:
		fr, err := scanJPEG(data)
		if err != nil {
			return nil, err
		}
		if fr.comps == nil || fr.width != c.Width || fr.height != c.Height {
			return nil, errs.Invalidf("the screenshot is a damaged JPEG image (its frame header)")
		}
		p.orient = exifOrientation(fr.exif)
		p.image, p.transient = jpegDecodeBytes(&fr)
		if p.orient != 1 && len(fr.comps) == 3 && !fr.isRGB() {
			hr, vr := fr.ratio()
			p.rotated = yCbCrBytes(fr.width, fr.height, hr, vr)
			if hr == 4 {
				p.rotated = 4 * px // 4:1:1 and 4:1:0 are turned through RGBA
			}
		}
	case formatWebP:
		wf, err := scanWebP(data)
		if err != nil {
			return nil, err
		}
		p.orient = exifOrientation(wf.exif)
		if wf.lossless {
			p.png = true
			p.image = 4 * px
			p.transient = vp8lTransient(w, h, wf.imageLen)
		} else {
			mbs := ((w + 15) / 16) * ((h + 15) / 16)
			p.image = 384 * mbs // 4:2:0 over whole macroblocks
			p.transient = 64*mbs + int64(len(data))
			if wf.alpha {
				p.image += px
				p.transient += 4*px + vp8lTransient(w, h, wf.alphaLen)
			}
		}
	}
	if p.orient != 1 && p.rotated == 0 {
		p.rotated = p.image
	}
	raw := 3 * px
	if p.png {
		p.encoder = pngEncoderState + 6*(8*w+1)
		raw = (p.image/h + 1) * h
		raw += raw/1024 + 64<<10 // stored deflate blocks and IDAT chunks at worst
	} else {
		p.encoder = jpegCodecState
		raw += 64 << 10
	}
	// The encoding is bounded by the pixels' raw size and, much tighter in practice, by the
	// input's: a screenshot re-encodes to about its own size; 4× leaves room for a source far
	// more compressed (a JPEG of quality 50) than quality 88.
	p.outCap = min(raw, 4*int64(len(data))+1<<20)
	return p, nil
}

// need is what the work allocates in all, the input included: every phase's allocations added
// up, not the largest phase, since the collector does not give back at once what a phase drops
// (the parsers' bounds count the same way, TestParseWithinBound). The output is counted twice:
// its chunks as written, and the one slice they are copied into.
func (p *plan) need(input int64) int64 {
	w, h := p.width, p.height
	return input + workOverhead + p.image + p.transient + p.rotated + thumbBytes(w, h) + p.encoder + 2*p.outCap
}

// jpegDecodeBytes returns what Go's image/jpeg allocates for the frame: the image over whole MCUs
// and, besides, a progressive frame's coefficients (a 64-entry int32 block per 8×8 block of each
// component, kept across scans) and the conversion of RGB or CMYK to an interleaved image.
func jpegDecodeBytes(f *jpegFrame) (image, transient int64) {
	w, h := int64(f.width), int64(f.height)
	h0, v0 := int64(f.comps[0].h), int64(f.comps[0].v)
	if len(f.comps) == 1 {
		h0, v0 = 1, 1
	}
	mxx, myy := (w+8*h0-1)/(8*h0), (h+8*v0-1)/(8*v0)
	transient = jpegCodecState
	if f.sof == 0xc2 || f.sof == 0xc6 || f.sof == 0xca || f.sof == 0xce {
		for _, c := range f.comps {
			ch, cv := int64(c.h), int64(c.v)
			if len(f.comps) == 1 {
				ch, cv = 1, 1
			}
			transient += mxx * myy * ch * cv * 256
		}
	}
	pw, ph := 8*h0*mxx, 8*v0*myy
	hr, vr := f.ratio()
	switch len(f.comps) {
	case 1:
		return pw * ph, transient
	case 3:
		image = yCbCrBytes(int(pw), int(ph), hr, vr)
		if f.isRGB() {
			transient += image
			image = 4 * w * h
		}
		return image, transient
	default: // YCbCr or CMY, then K, then the CMYK image
		h3, v3 := int64(f.comps[3].h), int64(f.comps[3].v)
		transient += yCbCrBytes(int(pw), int(ph), hr, vr) + 8*h3*mxx*8*v3*myy
		return 4 * w * h, transient
	}
}

// ratio is the frame's chroma subsampling, luma samples per chroma sample across and down, as
// Go's decoder works it out (it refuses a frame where chroma is sampled more than luma).
func (f *jpegFrame) ratio() (hr, vr int) {
	if len(f.comps) < 2 {
		return 1, 1
	}
	return max(f.comps[0].h/f.comps[1].h, 1), max(f.comps[0].v/f.comps[1].v, 1)
}

// yCbCrBytes is an image.YCbCr's size for w×h pixels, with hr×vr luma samples a chroma sample.
func yCbCrBytes(w, h, hr, vr int) int64 {
	cw, ch := (int64(w)+int64(hr)-1)/int64(hr), (int64(h)+int64(vr)-1)/int64(vr)
	return int64(w)*int64(h) + 2*cw*ch
}

// vp8lTransient bounds x/image/vp8l's allocations beyond the returned image for w×h from n bytes:
// the colour indexing transform's second pixel buffer, the transforms' and the entropy image's
// tiles (at least 4×4 pixels each) and the Huffman groups, at most one a tile.
func vp8lTransient(w, h, n int64) int64 {
	tiles := ((w + 3) / 4) * ((h + 3) / 4)
	groups := min(tiles, vp8lMaxGroups)
	return 4*w*h + 3*4*tiles + groups*vp8lGroupTables + min(groups*vp8lGroupTrees, vp8lBytesPerInput*n) + 1<<20
}
