package screenshot

import (
	"bytes"
	"encoding/binary"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// maxScans bounds a progressive JPEG's scans: each scan walks every block of the image again, so
// a small file of thousands of tiny scans costs minutes of CPU. Encoders write about ten
// (libjpeg's and mozjpeg's progressive scripts); libjpeg-turbo's tools refuse more than 100 when
// asked to be safe.
const maxScans = 100

// jpegFrame is what the markers before and between a JPEG's scans say, read without decoding:
// what the decode will allocate depends on them.
type jpegFrame struct {
	sof           byte // the SOFn marker: 0xc2 is progressive
	width, height int
	comps         []jpegComp
	scans         int
	exif          []byte // the first APP1 Exif segment's TIFF data
	jfif          bool   // an APP0 JFIF segment: then three components are YCbCr
	adobe         bool   // an APP14 Adobe segment, with its transform
	adobeXform    byte
}

type jpegComp struct {
	id   byte
	h, v int
}

// scanJPEG walks a JPEG's markers, skipping the entropy-coded data between them, up to EOI or the
// end of data. It reads nothing outside data and allocates only the frame's components.
func scanJPEG(data []byte) (jpegFrame, error) {
	var f jpegFrame
	i := 2 // after SOI
	for i+1 < len(data) {
		if data[i] != 0xff {
			// Bytes where a marker is due: Go's decoder, like libjpeg, skips them to the next
			// 0xff, and so does this walk, to see the frame the decoder will see.
			j := bytes.IndexByte(data[i:], 0xff)
			if j < 0 {
				return f, nil
			}
			i += j
			continue
		}
		m := data[i+1]
		i += 2
		switch {
		case m == 0xff: // fill byte
			i--
			continue
		case m == 0xd9: // EOI: what follows is no part of the image
			return f, nil
		case m == 0x00 || m == 0x01 || (m >= 0xd0 && m <= 0xd7):
			continue
		case m == 0xd8:
			return f, errs.Invalidf("the screenshot is a damaged JPEG image (a misplaced marker)")
		}
		if i+2 > len(data) {
			return f, nil
		}
		n := int(binary.BigEndian.Uint16(data[i:]))
		if n < 2 || i+n > len(data) {
			return f, errs.Invalidf("the screenshot is a truncated JPEG image")
		}
		seg := data[i+2 : i+n]
		i += n
		switch {
		case m == 0xe0 && bytes.HasPrefix(seg, []byte("JFIF\x00")):
			f.jfif = true
		case m == 0xe1 && f.exif == nil && bytes.HasPrefix(seg, []byte("Exif\x00\x00")):
			f.exif = seg[6:]
		case m == 0xee && len(seg) >= 12 && bytes.HasPrefix(seg, []byte("Adobe")):
			f.adobe, f.adobeXform = true, seg[11]
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			if f.comps != nil {
				return f, errs.Invalidf("the screenshot is a damaged JPEG image (two frames)")
			}
			if len(seg) < 6 {
				return f, errs.Invalidf("the screenshot is a damaged JPEG image (a short frame header)")
			}
			f.sof = m
			f.height = int(binary.BigEndian.Uint16(seg[1:]))
			f.width = int(binary.BigEndian.Uint16(seg[3:]))
			nc := int(seg[5])
			if (nc != 1 && nc != 3 && nc != 4) || len(seg) < 6+3*nc {
				return f, errs.Invalidf("the screenshot is a JPEG image of %d components, which Slipway does not read", nc)
			}
			f.comps = make([]jpegComp, nc)
			for c := range f.comps {
				hv := seg[7+3*c]
				f.comps[c] = jpegComp{id: seg[6+3*c], h: max(int(hv>>4), 1), v: max(int(hv&0xf), 1)}
			}
		case m == 0xda:
			f.scans++
			if f.scans > maxScans {
				return f, errs.Invalidf("the screenshot is a JPEG image of more than %d scans, which no camera or editor writes", maxScans)
			}
			i = skipEntropy(data, i)
		}
	}
	return f, nil
}

// skipEntropy returns where the next marker after a scan's entropy-coded data starts: the first
// 0xff followed by neither a stuffed 0x00, a restart marker nor another 0xff.
func skipEntropy(data []byte, i int) int {
	for {
		j := bytes.IndexByte(data[i:], 0xff)
		if j < 0 || i+j+1 >= len(data) {
			return len(data)
		}
		i += j
		switch next := data[i+1]; {
		case next == 0x00 || (next >= 0xd0 && next <= 0xd7):
			i += 2
		case next == 0xff:
			i++
		default:
			return i
		}
	}
}

// isRGB says, as Go's decoder does, whether three components are RGB rather than YCbCr: then the
// decode converts them to an RGBA image, four more bytes a pixel.
func (f *jpegFrame) isRGB() bool {
	if len(f.comps) != 3 || f.jfif {
		return false
	}
	if f.adobe && f.adobeXform == 0 {
		return true
	}
	return f.comps[0].id == 'R' && f.comps[1].id == 'G' && f.comps[2].id == 'B'
}

// exifOrientation returns the Orientation tag (0x0112) of the TIFF data's first IFD, 1 to 8, or 1
// when there is none or it is out of range. It reads at most the first IFD's entries that data
// really holds, whatever the counts and offsets declare.
func exifOrientation(tiff []byte) int {
	if bytes.HasPrefix(tiff, []byte("Exif\x00\x00")) { // a WebP EXIF chunk may keep the JPEG prefix
		tiff = tiff[6:]
	}
	if len(tiff) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(tiff[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int64(bo.Uint32(tiff[4:]))
	if off < 8 || off+2 > int64(len(tiff)) {
		return 1
	}
	count := int64(bo.Uint16(tiff[off:]))
	entries := tiff[off+2:]
	count = min(count, int64(len(entries)/12))
	for k := int64(0); k < count; k++ {
		e := entries[12*k : 12*k+12]
		if bo.Uint16(e) != 0x0112 {
			continue
		}
		// SHORT (3), one value, kept in the entry's value field; some writers use LONG (4).
		var o uint32
		switch bo.Uint16(e[2:]) {
		case 3:
			o = uint32(bo.Uint16(e[8:]))
		case 4:
			o = bo.Uint32(e[8:])
		default:
			return 1
		}
		if o >= 1 && o <= 8 {
			return int(o)
		}
		return 1
	}
	return 1
}
