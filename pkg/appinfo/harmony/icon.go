package harmony

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
	"path"
	"sort"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

const (
	// maxIconSide bounds an icon's width and height; larger images are skipped.
	maxIconSide = 4096
	// maxIconPixels bounds the images decoded (a JPEG to re-encode, the layers of a layered
	// icon): 4 MiB as RGBA, and a bounded CPU cost. HarmonyOS asks for 1024×1024 layers.
	maxIconPixels = 1024 * 1024
	// iconDecodeBytes is the most decoding the icon allocates (appinfo.Family.DecodeBytes): a
	// layered icon's two layers (16-bit at most), the composite, and the PNG encoded from it.
	iconDecodeBytes = 24 * maxIconPixels
	// maxIconReads is how many image or layered-image files one parse reads at most.
	maxIconReads = 6
	// maxLayeredJSONBytes bounds a layered-image description; real ones are under 100 bytes.
	maxLayeredJSONBytes = 64 << 10
	// fallbackIcon is the file app-info takes as the icon; used when the index has none.
	fallbackIcon = "resources/base/media/app_icon.png"
)

// iconSearch is the state of one icon search: the reads left.
type iconSearch struct {
	h     *hap
	reads int
}

// icon finds the app's icon (see the package doc): app.iconId/app.icon resolved through the
// index, else the main ability's icon, else resources/base/media/<name>.png for a "$media:name"
// reference and resources/base/media/app_icon.png. An icon that is missing, unreadable or not
// an image is skipped, never an error: only a malformed index is.
func (h *hap) icon() (*appinfo.Icon, error) {
	s := &iconSearch{h: h, reads: maxIconReads}
	type ref struct {
		id  uint32
		ref string
	}
	var refs []ref
	if app := h.m.App; app != nil {
		refs = append(refs, ref{numberID(app.IconID), app.Icon})
	}
	if ab := h.mainAbility(); ab != nil {
		refs = append(refs, ref{numberID(ab.IconID), ab.Icon})
	}
	var fallbacks []string
	for _, r := range refs {
		icon, err := s.media(r.id, r.ref)
		if icon != nil || err != nil {
			return icon, err
		}
		if kind, name, _, _ := parseRef(r.ref); kind == "media" && name != "" {
			fallbacks = append(fallbacks, "resources/base/media/"+name+".png")
		}
	}
	for _, p := range append(fallbacks, fallbackIcon) {
		if icon := s.raster(p); icon != nil {
			return icon, nil
		}
	}
	return nil, nil
}

// media resolves a media resource (by id, else by the reference "$media:name" or
// "$media:16777217") to an icon: an image, or a layered image composed of its layers.
func (s *iconSearch) media(id uint32, ref string) (*appinfo.Icon, error) {
	kind, name, refID, isRef := parseRef(ref)
	if id == 0 && isRef && kind == "media" {
		id = refID
	}
	if id == 0 && (name == "" || kind != "media") {
		return nil, nil
	}
	vals, err := s.h.index.lookup(resTypeMedia, id, name)
	if err != nil {
		return nil, err
	}
	for _, v := range orderMedia(vals) {
		p := s.h.mediaPath(v.value)
		if p == "" {
			continue
		}
		if strings.EqualFold(path.Ext(p), ".json") {
			icon, err := s.layered(p)
			if icon != nil || err != nil {
				return icon, err
			}
			continue
		}
		if icon := s.raster(p); icon != nil {
			return icon, nil
		}
	}
	return nil, nil
}

// orderMedia sorts the values of a media resource for probing: light (or unqualified) before
// dark, then highest screen density first (base counts as mdpi), then index order.
func orderMedia(vals []resValue) []resValue {
	rank := func(v resValue) (dark bool, dpi uint32) {
		mode, ok := v.config.param(keyColorMode)
		dark = ok && mode == 0
		dpi, ok = v.config.param(keyDensity)
		if !ok {
			dpi = 160
		}
		return dark, dpi
	}
	out := append([]resValue(nil), vals...)
	sort.SliceStable(out, func(i, j int) bool {
		di, pi := rank(out[i])
		dj, pj := rank(out[j])
		if di != dj {
			return !di
		}
		return pi > pj
	})
	return out
}

// mediaPath maps a media value of the index ("entry/resources/base/media/app_icon.png": the
// module name, then the path inside the HAP) to an entry of the HAP; "" when there is none.
func (h *hap) mediaPath(v string) string {
	if v == "" {
		return ""
	}
	var cands []string
	if mod := h.m.Module; mod != nil && mod.Name != "" {
		if rest, ok := strings.CutPrefix(v, mod.Name+"/"); ok {
			cands = append(cands, rest)
		}
	}
	if i := strings.Index(v, "resources/"); i > 0 {
		cands = append(cands, v[i:])
	}
	cands = append(cands, v)
	for _, c := range cands {
		if h.a.File(c) != nil {
			return c
		}
	}
	return ""
}

// read returns the bytes of the entry at p, within max bytes and the search's read budget.
func (s *iconSearch) read(p string, max int64) []byte {
	f := s.h.a.File(p)
	if f == nil || s.reads == 0 {
		return nil
	}
	s.reads--
	b, err := s.h.a.ReadFile(f, max)
	if err != nil {
		return nil
	}
	return b
}

// raster returns the image at p as an icon: a PNG as it is, a JPEG re-encoded as PNG, a WebP
// as it is; nil for anything else or an image too large.
func (s *iconSearch) raster(p string) *appinfo.Icon {
	b := s.read(p, appinfo.MaxIconBytes)
	if b == nil {
		return nil
	}
	return iconFromImage(b)
}

// iconFromImage checks an image file and returns it as an Icon, nil when it is not a usable
// PNG, JPEG or WebP image.
func iconFromImage(b []byte) *appinfo.Icon {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		cfg, err := png.DecodeConfig(bytes.NewReader(b))
		if err != nil || !sizeOK(cfg.Width, cfg.Height) {
			return nil
		}
		return &appinfo.Icon{Data: b, ContentType: "image/png", Width: cfg.Width, Height: cfg.Height}
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		img := decodeImage(b)
		if img == nil {
			return nil
		}
		return encodeIcon(img)
	default:
		if w, h, ok := webpSize(b); ok && sizeOK(w, h) {
			return &appinfo.Icon{Data: b, ContentType: "image/webp", Width: w, Height: h}
		}
	}
	return nil
}

func sizeOK(w, h int) bool {
	return w > 0 && h > 0 && w <= maxIconSide && h <= maxIconSide
}

// decodeImage decodes a PNG or JPEG image of at most maxIconPixels, nil otherwise. The header
// is checked before the pixels are allocated.
func decodeImage(b []byte) image.Image {
	var (
		cfg image.Config
		err error
	)
	isPNG := bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n"))
	if isPNG {
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	} else {
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	}
	if err != nil || !sizeOK(cfg.Width, cfg.Height) || cfg.Width*cfg.Height > maxIconPixels {
		return nil
	}
	var img image.Image
	if isPNG {
		img, err = png.Decode(bytes.NewReader(b))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(b))
	}
	if err != nil {
		return nil
	}
	return img
}

func encodeIcon(img image.Image) *appinfo.Icon {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil
	}
	r := img.Bounds()
	return &appinfo.Icon{Data: buf.Bytes(), ContentType: "image/png", Width: r.Dx(), Height: r.Dy()}
}

// layered reads a layered-image description ({"layered-image": {"foreground": "$media:…",
// "background": "$media:…"}}, the adaptive launcher icon of HarmonyOS) and composes its layers
// as the launcher shows them before masking: the foreground drawn centred over the background.
// Without a usable background the foreground alone is the icon.
func (s *iconSearch) layered(p string) (*appinfo.Icon, error) {
	b := s.read(p, maxLayeredJSONBytes)
	if b == nil {
		return nil, nil
	}
	var doc struct {
		Layered struct {
			Foreground string `json:"foreground"`
			Background string `json:"background"`
		} `json:"layered-image"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return nil, nil
	}
	fg, err := s.layer(doc.Layered.Foreground)
	if fg == nil || err != nil {
		return nil, err
	}
	bg, err := s.layer(doc.Layered.Background)
	if err != nil {
		return nil, err
	}
	if bg == nil {
		return encodeIcon(fg), nil
	}
	canvas := image.NewNRGBA(image.Rect(0, 0, bg.Bounds().Dx(), bg.Bounds().Dy()))
	draw.Draw(canvas, canvas.Bounds(), bg, bg.Bounds().Min, draw.Src)
	fr := fg.Bounds()
	at := image.Pt((canvas.Bounds().Dx()-fr.Dx())/2, (canvas.Bounds().Dy()-fr.Dy())/2)
	draw.Draw(canvas, fr.Sub(fr.Min).Add(at), fg, fr.Min, draw.Over)
	return encodeIcon(canvas), nil
}

// layer resolves and decodes one layer of a layered image.
func (s *iconSearch) layer(ref string) (image.Image, error) {
	kind, name, id, isRef := parseRef(ref)
	if !isRef || kind != "media" || (id == 0 && name == "") {
		return nil, nil
	}
	vals, err := s.h.index.lookup(resTypeMedia, id, name)
	if err != nil {
		return nil, err
	}
	for _, v := range orderMedia(vals) {
		p := s.h.mediaPath(v.value)
		if p == "" || strings.EqualFold(path.Ext(p), ".json") {
			continue
		}
		if b := s.read(p, appinfo.MaxIconBytes); b != nil {
			if img := decodeImage(b); img != nil {
				return img, nil
			}
		}
	}
	return nil, nil
}

// webpSize reads the canvas size of a WebP image (VP8, VP8L or VP8X) from its header.
func webpSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, false
		}
		w, h = int(binary.LittleEndian.Uint16(b[26:])&0x3fff), int(binary.LittleEndian.Uint16(b[28:])&0x3fff)
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, false
		}
		v := binary.LittleEndian.Uint32(b[21:])
		w, h = int(v&0x3fff)+1, int(v>>14&0x3fff)+1
	case "VP8X":
		w = (int(b[24]) | int(b[25])<<8 | int(b[26])<<16) + 1
		h = (int(b[27]) | int(b[28])<<8 | int(b[29])<<16) + 1
	default:
		return 0, 0, false
	}
	return w, h, w > 0 && h > 0
}
