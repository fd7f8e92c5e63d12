package apple

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"github.com/slipwayhq/slipway/pkg/appinfo"
	"slices"
)

// icnsIcon returns the largest PNG-encoded image of a macOS .icns file, nil when it holds only
// legacy (RLE, JPEG 2000) images, which Slipway does not convert.
//
// An .icns file is "icns", a big-endian total length, then entries of a 4-byte type, a length that
// includes the 8-byte entry header, and the data. Modern types (ic07–ic14, icp4–icp6) usually hold
// a PNG; the data's signature tells.
func icnsIcon(data []byte) (*appinfo.Icon, error) {
	if len(data) < 8 || string(data[:4]) != "icns" {
		return nil, errors.New("not an .icns file")
	}
	if n := binary.BigEndian.Uint32(data[4:]); n >= 8 && uint64(n) < uint64(len(data)) {
		data = data[:n]
	}
	type entry struct {
		png    []byte
		pixels int
	}
	var pngs []entry
	for p := data[8:]; len(p) >= 8; {
		n := binary.BigEndian.Uint32(p[4:])
		if n < 8 || uint64(n) > uint64(len(p)) {
			break // a bad length ends the walk; keep what was found before it
		}
		body := p[8:n]
		if w, h, _, ok := applePNGHeader(body); ok && bytes.HasPrefix(body, applePNGSig) {
			pngs = append(pngs, entry{body, w * h})
		}
		p = p[n:]
	}
	slices.SortStableFunc(pngs, func(a, b entry) int { return cmp.Compare(b.pixels, a.pixels) })
	for _, e := range pngs[:min(len(pngs), maxAppleIconAttempts)] {
		if icon, err := appleIconFromPNG(e.png); err == nil {
			return icon, nil
		}
	}
	return nil, nil
}
