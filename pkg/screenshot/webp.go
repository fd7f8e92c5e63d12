package screenshot

import (
	"encoding/binary"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// webpFile is what a WebP's RIFF chunks say, read without decoding.
type webpFile struct {
	lossless bool   // the image is a VP8L chunk (else VP8)
	alpha    bool   // a VP8 image with an ALPH chunk
	exif     []byte // the EXIF chunk's data
	// The image's and the alpha's chunk sizes, what their lossless decoders read.
	imageLen, alphaLen int64
}

// scanWebP walks the RIFF chunks. Every length, the RIFF's own included, must fit in what data
// holds: x/image/webp allocates a VP8 partition from the chunk length a header declares (up to
// 128 MiB), so a length beyond the data is refused here, before the decoder sees it. Bytes after
// the RIFF (an appended payload) are left out.
func scanWebP(data []byte) (webpFile, error) {
	var w webpFile
	riff := int64(binary.LittleEndian.Uint32(data[4:8]))
	if riff < 4 || 8+riff > int64(len(data)) {
		return w, errs.Invalidf("the screenshot is a truncated WebP image")
	}
	body := data[12 : 8+riff]
	image := false
	for len(body) > 0 {
		if len(body) < 8 {
			return w, errs.Invalidf("the screenshot is a damaged WebP image (a short chunk)")
		}
		id, n := string(body[:4]), int64(binary.LittleEndian.Uint32(body[4:8]))
		if n > int64(len(body)-8) {
			return w, errs.Invalidf("the screenshot is a truncated WebP image")
		}
		chunk := body[8 : 8+n]
		body = body[8+n:]
		if n%2 == 1 && len(body) > 0 {
			body = body[1:]
		}
		switch id {
		case "VP8 ", "VP8L":
			if !image {
				image, w.lossless, w.imageLen = true, id == "VP8L", n
			}
		case "ALPH":
			w.alpha, w.alphaLen = true, n
		case "EXIF":
			if w.exif == nil {
				w.exif = chunk
			}
		case "ANIM", "ANMF":
			return w, errs.New(errs.Unsupported, "the screenshot is an animated WebP image; send a still PNG, JPEG or WebP")
		}
	}
	if !image {
		return w, errs.Invalidf("the screenshot is a WebP file without an image")
	}
	return w, nil
}
