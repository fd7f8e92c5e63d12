package android

// The launcher icon of an Android package: the largest raster (PNG or WebP) file the
// application's android:icon resolves to in any configuration, else android:roundIcon's. Adaptive
// icons (XML, anydpi-v26) are skipped: decisions.md has them fall back to the largest raster icon.

import (
	"archive/zip"
	"encoding/binary"
	"io"
	"sort"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

const (
	androidMaxIconSide  = 4096 // pixels; larger "icons" are ignored
	androidMaxIconReads = 4    // whole icon files read before giving up
)

// androidIconSource is a file an icon resource resolves to, with its configuration's density.
type androidIconSource struct {
	path    string
	density uint16
}

// androidIcon returns the package's largest raster launcher icon, nil when it has none. Icon
// files are read from the archive under prefix ("" for an APK, "base/" for an AAB). A candidate
// that is missing, over MaxIconBytes, corrupt or not a PNG/WebP image is skipped, not an error:
// the icon is optional and a bad one should not reject an otherwise valid package.
func androidIcon(a *zipread.Archive, prefix string, m *androidManifest, res androidResources) (*appinfo.Icon, error) {
	for _, f := range []androidField{androidFieldIcon, androidFieldRoundIcon} {
		srcs, err := androidIconSources(m.fields[f], res)
		if err != nil {
			return nil, err
		}
		if icon := androidLargestRaster(a, prefix, srcs); icon != nil {
			return icon, nil
		}
	}
	return nil, nil
}

// androidIconSources lists the files v resolves to across all configurations, following
// references (a mipmap aliasing a drawable, say), highest density first.
func androidIconSources(v androidValue, res androidResources) ([]androidIconSource, error) {
	var (
		out    []androidIconSource
		seen   = map[string]bool{}
		looked = map[uint32]bool{}
		budget = 4 * androidMaxConfigs // values visited, bounding fan-out through references
	)
	var walk func(v androidValue, density uint16, depth int) error
	walk = func(v androidValue, density uint16, depth int) error {
		budget--
		switch {
		case budget < 0:
		case v.kind == androidString:
			if !seen[v.str] {
				seen[v.str] = true
				out = append(out, androidIconSource{path: v.str, density: density})
			}
		case v.kind == androidRef && res != nil && depth < androidMaxRefDepth && !looked[v.num]:
			looked[v.num] = true
			entries, err := res.lookup(v.num)
			if err != nil {
				return err
			}
			for _, e := range entries {
				d := e.cfg.Density
				if d == 0 {
					d = density
				}
				if err := walk(e.val, d, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(v, 0, 0); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		return androidDensityRank(out[i].density) > androidDensityRank(out[j].density)
	})
	return out, nil
}

// androidDensityRank orders densities for probing: unspecified counts as mdpi, and anydpi (usually
// adaptive XML) and nodpi come last.
func androidDensityRank(d uint16) int {
	switch d {
	case 0:
		return 160
	case 0xfffe, 0xffff:
		return 0
	}
	return int(d)
}

// androidLargestRaster reads the header of each raster candidate and returns the one with the
// most pixels, read whole.
func androidLargestRaster(a *zipread.Archive, prefix string, srcs []androidIconSource) *appinfo.Icon {
	type probe struct {
		f    *zip.File
		area int
	}
	var probes []probe
	tried := 0
	for _, s := range srcs {
		if tried == androidMaxIconProbes {
			break
		}
		f := a.File(prefix + s.path)
		if f == nil || strings.HasSuffix(strings.ToLower(s.path), ".xml") {
			continue
		}
		tried++
		if _, w, h, ok := androidRasterSize(androidReadHead(a, f, 32)); ok {
			probes = append(probes, probe{f, w * h})
		}
	}
	sort.SliceStable(probes, func(i, j int) bool { return probes[i].area > probes[j].area })
	for i, p := range probes {
		if i == androidMaxIconReads {
			break
		}
		data, err := a.ReadFile(p.f, appinfo.MaxIconBytes)
		if err != nil {
			continue
		}
		if ctype, w, h, ok := androidRasterSize(data); ok {
			return &appinfo.Icon{Data: data, ContentType: ctype, Width: w, Height: h}
		}
	}
	return nil
}

// androidReadHead returns up to n first bytes of f, nil when it cannot be read within the caps.
func androidReadHead(a *zipread.Archive, f *zip.File, n int) []byte {
	rc, err := a.Open(f, appinfo.MaxIconBytes)
	if err != nil {
		return nil
	}
	defer rc.Close()
	head := make([]byte, n)
	k, _ := io.ReadFull(rc, head)
	return head[:k]
}

// androidRasterSize reads the pixel size of a PNG (IHDR) or WebP (VP8, VP8L or VP8X) image from
// its first bytes; ok is false for anything else, including CgBI PNGs and absurd sizes.
func androidRasterSize(b []byte) (ctype string, w, h int, ok bool) {
	switch {
	case len(b) >= 24 && string(b[:8]) == "\x89PNG\r\n\x1a\n" && string(b[12:16]) == "IHDR":
		ctype = "image/png"
		w, h = int(binary.BigEndian.Uint32(b[16:])), int(binary.BigEndian.Uint32(b[20:]))
	case len(b) >= 30 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		ctype = "image/webp"
		switch string(b[12:16]) {
		case "VP8 ": // lossy: 3-byte frame tag, start code 9d 01 2a, 14-bit width and height
			if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
				return "", 0, 0, false
			}
			w, h = int(binary.LittleEndian.Uint16(b[26:])&0x3fff), int(binary.LittleEndian.Uint16(b[28:])&0x3fff)
		case "VP8L": // lossless: signature 0x2f, then 14-bit width-1 and height-1
			if b[20] != 0x2f {
				return "", 0, 0, false
			}
			v := binary.LittleEndian.Uint32(b[21:])
			w, h = int(v&0x3fff)+1, int(v>>14&0x3fff)+1
		case "VP8X": // extended: 4 bytes of flags, then 24-bit canvas width-1 and height-1
			w = (int(b[24]) | int(b[25])<<8 | int(b[26])<<16) + 1
			h = (int(b[27]) | int(b[28])<<8 | int(b[29])<<16) + 1
		}
	}
	if w <= 0 || h <= 0 || w > androidMaxIconSide || h > androidMaxIconSide {
		return "", 0, 0, false
	}
	return ctype, w, h, true
}
