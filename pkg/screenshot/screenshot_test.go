package screenshot

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// gpsMark is in the GPS IFD of the test EXIF; no output may carry it.
const gpsMark = "GPS 52.3731N 4.8922E"

// exifTIFF builds little-endian TIFF data whose IFD0 holds Orientation o and a GPS IFD pointer,
// the GPS IFD a latitude reference and a processing method carrying gpsMark.
func exifTIFF(o int) []byte {
	le := binary.LittleEndian
	var b []byte
	b = append(b, "II*\x00"...)
	b = le.AppendUint32(b, 8)
	// IFD0 at 8: two entries, then the next-IFD offset.
	const gpsIFD = 8 + 2 + 2*12 + 4
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 0x0112)
	b = le.AppendUint16(b, 3)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint16(b, uint16(o))
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0x8825) // GPSInfo
	b = le.AppendUint16(b, 4)
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, gpsIFD)
	b = le.AppendUint32(b, 0)
	// GPS IFD: GPSLatitudeRef "N", GPSProcessingMethod.
	const data = gpsIFD + 2 + 2*12 + 4
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 0x0001)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint32(b, 2)
	b = append(b, 'N', 0, 0, 0)
	b = le.AppendUint16(b, 0x001b)
	b = le.AppendUint16(b, 7)
	b = le.AppendUint32(b, uint32(8+len(gpsMark)))
	b = le.AppendUint32(b, data)
	b = le.AppendUint32(b, 0)
	b = append(b, "ASCII\x00\x00\x00"+gpsMark...)
	return b
}

// withAPP1 inserts an APP1 Exif segment holding tiff right after the JPEG's SOI.
func withAPP1(j, tiff []byte) []byte {
	seg := append([]byte("Exif\x00\x00"), tiff...)
	out := append([]byte{}, j[:2]...)
	out = append(out, 0xff, 0xe1)
	out = binary.BigEndian.AppendUint16(out, uint16(len(seg)+2))
	out = append(out, seg...)
	return append(out, j[2:]...)
}

// marked is a w×h image, blue but for a red square in its top-left corner.
func marked(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{0, 0, 255, 255}
			if x < w/4 && y < h/4 {
				c = color.RGBA{255, 0, 0, 255}
			}
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngChunk is one chunk with its CRC.
func pngChunk(typ string, data []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// pngChunks lists a PNG's chunk types.
func pngChunks(t *testing.T, b []byte) []string {
	t.Helper()
	var types []string
	for i := 8; i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		types = append(types, string(b[i+4:i+8]))
		i += 12 + n
	}
	return types
}

func sanitize(t testing.TB, data []byte) (*Image, error) {
	t.Helper()
	return Sanitize(context.Background(), bytes.NewReader(data), Limits{}, appinfo.NewBudget(192<<20))
}

func wantKind(t *testing.T, err error, k errs.Kind, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want kind %d", k)
	}
	e, ok := errs.AsError(err)
	if !ok || e.Kind != k {
		t.Fatalf("error %v (kind %d), want kind %d", err, errs.KindOf(err), k)
	}
	for _, w := range words {
		if !strings.Contains(e.Msg, w) {
			t.Errorf("message %q does not say %q", e.Msg, w)
		}
	}
}

func isRed(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r > 0xc000 && g < 0x4000 && b < 0x4000
}

func TestSanitizeJPEGAppliesOrientationAndDropsEXIF(t *testing.T) {
	const w, h = 160, 80
	src := encodeJPEG(t, marked(w, h))
	for o := 1; o <= 8; o++ {
		in := withAPP1(src, exifTIFF(o))
		if !bytes.Contains(in, []byte(gpsMark)) || exifOrientation(mustFrame(t, in).exif) != o {
			t.Fatalf("orientation %d: the test's input is not what it means to be", o)
		}
		img, err := sanitize(t, in)
		if err != nil {
			t.Fatalf("orientation %d: %v", o, err)
		}
		if img.ContentType != "image/jpeg" {
			t.Errorf("orientation %d: content type %q", o, img.ContentType)
		}
		for _, leak := range []string{gpsMark, "GPS", "Exif", "ASCII"} {
			if bytes.Contains(img.Data, []byte(leak)) || bytes.Contains(img.Thumb, []byte(leak)) {
				t.Errorf("orientation %d: the output carries %q", o, leak)
			}
		}
		if f := mustFrame(t, img.Data); f.exif != nil {
			t.Errorf("orientation %d: the output has an APP1 Exif segment", o)
		}
		ww, wh := w, h
		if o >= 5 {
			ww, wh = h, w
		}
		if img.Width != ww || img.Height != wh {
			t.Errorf("orientation %d: %d×%d, want %d×%d", o, img.Width, img.Height, ww, wh)
		}
		m, err := jpeg.Decode(bytes.NewReader(img.Data))
		if err != nil {
			t.Fatal(err)
		}
		if b := m.Bounds(); b.Dx() != ww || b.Dy() != wh {
			t.Fatalf("orientation %d: decoded %v", o, b)
		}
		// The red square, in the source's top-left corner, is where the orientation takes it.
		x, y := turnPoint(w/8, h/8, w, h, o)
		if !isRed(m.At(x, y)) {
			t.Errorf("orientation %d: (%d,%d) is %v, want red", o, x, y, m.At(x, y))
		}
		if o != 1 && isRed(m.At(w/8, h/8)) && (x != w/8 || y != h/8) {
			t.Errorf("orientation %d: the top-left corner is still red", o)
		}
		if img.ThumbWidth != ww || img.ThumbHeight != wh {
			t.Errorf("orientation %d: thumbnail %d×%d of a %d×%d image (never upscaled)", o, img.ThumbWidth, img.ThumbHeight, ww, wh)
		}
	}
}

func mustFrame(t *testing.T, b []byte) jpegFrame {
	t.Helper()
	f, err := scanJPEG(b)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSanitizePNGDropsTextAndExifChunks(t *testing.T) {
	src := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for i := range src.Pix {
		src.Pix[i] = byte(i * 7)
	}
	clean := encodePNG(t, src)
	ihdrEnd := 8 + 12 + 13
	var in []byte
	in = append(in, clean[:ihdrEnd]...)
	in = append(in, pngChunk("tEXt", []byte("Author\x00secret-author"))...)
	in = append(in, pngChunk("iTXt", []byte("XML:com.adobe.xmp\x00\x00\x00\x00\x00<x:xmpmeta>secret-xmp</x:xmpmeta>"))...)
	in = append(in, pngChunk("eXIf", exifTIFF(1))...)
	in = append(in, pngChunk("iCCP", []byte("Display P3\x00\x00secret-icc"))...)
	in = append(in, clean[ihdrEnd:]...)
	if _, err := png.Decode(bytes.NewReader(in)); err != nil {
		t.Fatalf("the test's PNG: %v", err)
	}
	img, err := sanitize(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if img.ContentType != "image/png" || img.Width != 40 || img.Height != 30 {
		t.Fatalf("%s %d×%d", img.ContentType, img.Width, img.Height)
	}
	for _, c := range pngChunks(t, img.Data) {
		if c != "IHDR" && c != "IDAT" && c != "IEND" {
			t.Errorf("the output has a %s chunk", c)
		}
	}
	for _, leak := range []string{"secret", gpsMark, "Author"} {
		if bytes.Contains(img.Data, []byte(leak)) {
			t.Errorf("the output carries %q", leak)
		}
	}
	m, err := png.Decode(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatal(err)
	}
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			if color.NRGBAModel.Convert(m.At(x, y)) != src.At(x, y) {
				t.Fatalf("(%d,%d) is %v, was %v: a PNG must come out lossless", x, y, m.At(x, y), src.At(x, y))
			}
		}
	}
}

func TestSanitizeWebP(t *testing.T) {
	for _, c := range []struct {
		file, contentType string
	}{
		{"blue-purple-pink.lossy.webp", "image/jpeg"},
		{"yellow_rose.lossy-with-alpha.webp", "image/jpeg"},
		{"gopher-doc.8bpp.lossless.webp", "image/png"},
	} {
		in, err := os.ReadFile("testdata/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := webp.DecodeConfig(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		img, err := sanitize(t, in)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if img.ContentType != c.contentType || img.Width != cfg.Width || img.Height != cfg.Height {
			t.Errorf("%s: %s %d×%d, want %s %d×%d", c.file, img.ContentType, img.Width, img.Height, c.contentType, cfg.Width, cfg.Height)
		}
		m, _, err := image.Decode(bytes.NewReader(img.Data))
		if err != nil {
			t.Fatalf("%s: the output does not decode: %v", c.file, err)
		}
		if m.Bounds().Dx() != cfg.Width || m.Bounds().Dy() != cfg.Height {
			t.Errorf("%s: the output is %v", c.file, m.Bounds())
		}
		if _, err := jpeg.Decode(bytes.NewReader(img.Thumb)); err != nil {
			t.Errorf("%s: the thumbnail: %v", c.file, err)
		}
	}
}

func TestSanitizeWebPOrientation(t *testing.T) {
	in, err := os.ReadFile("testdata/gopher-doc.8bpp.lossless.webp")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := webp.DecodeConfig(bytes.NewReader(in))
	// VP8X (no flags but EXIF's), the VP8L chunk as it is, then an EXIF chunk with Orientation 6.
	le := binary.LittleEndian
	vp8x := []byte{0x08, 0, 0, 0}
	vp8x = append(vp8x, byte(cfg.Width-1), byte((cfg.Width-1)>>8), byte((cfg.Width-1)>>16))
	vp8x = append(vp8x, byte(cfg.Height-1), byte((cfg.Height-1)>>8), byte((cfg.Height-1)>>16))
	chunk := func(id string, d []byte) []byte {
		b := append([]byte(id), le.AppendUint32(nil, uint32(len(d)))...)
		b = append(b, d...)
		if len(d)%2 == 1 {
			b = append(b, 0)
		}
		return b
	}
	body := append([]byte("WEBP"), chunk("VP8X", vp8x)...)
	body = append(body, in[12:]...)
	body = append(body, chunk("EXIF", exifTIFF(6))...)
	out := append([]byte("RIFF"), le.AppendUint32(nil, uint32(len(body)))...)
	out = append(out, body...)
	img, err := sanitize(t, out)
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != cfg.Height || img.Height != cfg.Width {
		t.Errorf("%d×%d, want %d×%d turned", img.Width, img.Height, cfg.Width, cfg.Height)
	}
	if bytes.Contains(img.Data, []byte(gpsMark)) {
		t.Error("the output carries the EXIF")
	}
}

// hugePNG is a PNG header declaring w×h pixels, then a little IDAT.
func hugePNG(w, h uint32) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 6, 0, 0, 0)
	b := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
	b = append(b, pngChunk("IDAT", []byte{0x78, 0x9c, 0x62, 0, 0, 0, 0xff, 0xff})...)
	return append(b, pngChunk("IEND", nil)...)
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

func TestSanitizeRefusesHugeDimensionsFromTheHeader(t *testing.T) {
	in := hugePNG(100_000, 100_000)
	var err error
	n := allocated(func() { _, err = sanitize(t, in) })
	wantKind(t, err, errs.Invalid, "100000×100000", "8192")
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	// Within the side limit but over the pixels'.
	_, err = sanitize(t, hugePNG(8192, 8000))
	wantKind(t, err, errs.Invalid, "8192×8000", "33554432")
	// Within the limits but over the budget: refused before decoding.
	b := appinfo.NewBudget(64 << 20)
	n = allocated(func() {
		_, err = Sanitize(context.Background(), bytes.NewReader(hugePNG(8192, 4096)), Limits{}, b)
	})
	wantKind(t, err, errs.TooLarge, "SLIPWAY_PARSE_MEMORY", "64 MiB")
	if n > 1<<20 || b.Held() != 0 {
		t.Errorf("refusing it allocated %d bytes, holds %d", n, b.Held())
	}
}

// jpegBomb is a JPEG of SOF marker sof declaring w×h in three 4:4:4 components, then no data.
func jpegBomb(sof byte, w, h int, scans int) []byte {
	b := []byte{0xff, 0xd8}
	b = append(b, 0xff, 0xdb, 0, 67, 0)
	for range 64 {
		b = append(b, 1)
	}
	b = append(b, 0xff, sof, 0, 17, 8, byte(h>>8), byte(h), byte(w>>8), byte(w), 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0)
	for range scans {
		b = append(b, 0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0, 0x12, 0x34)
	}
	return append(b, 0xff, 0xd9)
}

func TestSanitizeBoundsJPEGBombs(t *testing.T) {
	b := appinfo.NewBudget(192 << 20)
	// Progressive 4:4:4 at the pixel limit: its coefficients alone are 384 MiB.
	var err error
	n := allocated(func() {
		_, err = Sanitize(context.Background(), bytes.NewReader(jpegBomb(0xc2, 8192, 4096, 1)), Limits{}, b)
	})
	wantKind(t, err, errs.TooLarge, "8192×4096")
	if n > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", n)
	}
	// Many scans.
	_, err = Sanitize(context.Background(), bytes.NewReader(jpegBomb(0xc2, 64, 64, maxScans+1)), Limits{}, b)
	wantKind(t, err, errs.Invalid, "scans")
	// Baseline with no data: decoded within its reservation, then refused as damaged.
	in := jpegBomb(0xc0, 4096, 4096, 1)
	p, err := planFor(formatJPEG, in, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	n = allocated(func() {
		_, err = Sanitize(context.Background(), bytes.NewReader(in), Limits{}, b)
	})
	wantKind(t, err, errs.Invalid)
	if need := uint64(p.need(int64(len(in)))); n > need {
		t.Errorf("allocated %d bytes, over the %d reserved", n, need)
	}
	if b.Held() != 0 {
		t.Errorf("the budget still holds %d bytes", b.Held())
	}
}

func TestSanitizeRefusesOtherFormats(t *testing.T) {
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	f, _ := zw.Create("evil.sh")
	f.Write([]byte("#!/bin/sh\nrm -rf /\n"))
	zw.Close()
	heic := append([]byte{0, 0, 0, 0x18}, "ftypheic\x00\x00\x00\x00mif1heic"...)
	for _, c := range []struct {
		name  string
		in    []byte
		words []string
	}{
		{"zip renamed .png", z.Bytes(), []string{"zip"}},
		{"pdf", []byte("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n"), []string{"PDF"}},
		{"text", []byte("hello, this is not an image\n"), []string{"text"}},
		{"gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), []string{"GIF"}},
		{"heic", heic, []string{"HEIC", "PNG or a JPEG", "Most Compatible"}},
		{"heif mif1", append([]byte{0, 0, 0, 0x18}, "ftypmif1\x00\x00\x00\x00mif1heic"...), []string{"HEIC"}},
		{"avif", append([]byte{0, 0, 0, 0x1c}, "ftypavif\x00\x00\x00\x00avifmif1miaf"...), []string{"AVIF"}},
		{"one byte", []byte{0x89}, nil},
		{"riff not webp", []byte("RIFF\x04\x00\x00\x00WAVE"), []string{"RIFF"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := sanitize(t, c.in)
			wantKind(t, err, errs.Unsupported, c.words...)
		})
	}
	_, err := sanitize(t, nil)
	wantKind(t, err, errs.Invalid, "empty")
}

// countingReader yields n bytes of b repeated, and counts what is read.
type countingReader struct {
	head []byte
	n    int64
	read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.read)]
	k := 0
	if r.read < int64(len(r.head)) {
		k = copy(p, r.head[r.read:])
	}
	clear(p[k:])
	r.read += int64(len(p))
	return len(p), nil
}

func TestSanitizeReadsAtMostMaxBytesPlusOne(t *testing.T) {
	r := &countingReader{head: hugePNG(100, 100), n: 100 << 20}
	_, err := Sanitize(context.Background(), r, Limits{}, nil)
	wantKind(t, err, errs.TooLarge, "15 MiB")
	if r.read > DefaultLimits.MaxBytes+1 {
		t.Errorf("read %d bytes, more than %d", r.read, DefaultLimits.MaxBytes+1)
	}
	// What is no image is refused from its first bytes.
	r = &countingReader{n: 100 << 20}
	_, err = Sanitize(context.Background(), r, Limits{}, nil)
	wantKind(t, err, errs.Unsupported)
	if r.read > sniffBytes {
		t.Errorf("read %d bytes of what is no image", r.read)
	}
}

func TestSanitizePolyglotsComeOutClean(t *testing.T) {
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	f, _ := zw.Create("payload.txt")
	f.Write([]byte("ZIP-PAYLOAD-MARK"))
	zw.Close()
	webpIn, err := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	if err != nil {
		t.Fatal(err)
	}
	html := []byte("<html><script>alert('HTML-PAYLOAD-MARK')</script></html>")
	for _, c := range []struct {
		name     string
		in, mark []byte
	}{
		{"png+zip", append(encodePNG(t, marked(64, 48)), z.Bytes()...), []byte("payload.txt")},
		{"jpeg+html", append(encodeJPEG(t, marked(64, 48)), html...), []byte("HTML-PAYLOAD-MARK")},
		{"webp+html", append(append([]byte{}, webpIn...), html...), []byte("HTML-PAYLOAD-MARK")},
	} {
		t.Run(c.name, func(t *testing.T) {
			img, err := sanitize(t, c.in)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range [][]byte{img.Data, img.Thumb} {
				if bytes.Contains(b, c.mark) || bytes.Contains(b, []byte("PK\x03\x04")) || bytes.Contains(b, []byte("<html")) {
					t.Error("the output carries the appended payload")
				}
			}
			if _, _, err := image.Decode(bytes.NewReader(img.Data)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestSanitizeRefusesTruncatedImages(t *testing.T) {
	p := encodePNG(t, marked(64, 48))
	j := encodeJPEG(t, marked(64, 48))
	w, _ := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	for name, in := range map[string][]byte{
		"png":          p[:len(p)/2],
		"jpeg":         j[:len(j)/2],
		"webp":         w[:len(w)/2],
		"png header":   p[:30],
		"jpeg markers": j[:20],
	} {
		t.Run(name, func(t *testing.T) {
			_, err := sanitize(t, in)
			wantKind(t, err, errs.Invalid)
		})
	}
}

func TestSanitizeThumbnail(t *testing.T) {
	img, err := sanitize(t, encodePNG(t, marked(1290, 2796)))
	if err != nil {
		t.Fatal(err)
	}
	if img.ThumbHeight != ThumbSide || img.ThumbWidth != 148 {
		t.Errorf("thumbnail %d×%d, want 148×320", img.ThumbWidth, img.ThumbHeight)
	}
	m, err := jpeg.Decode(bytes.NewReader(img.Thumb))
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Bounds(); b.Dx() != img.ThumbWidth || b.Dy() != img.ThumbHeight {
		t.Errorf("the thumbnail decodes to %v", b)
	}
	if !isRed(m.At(5, 5)) || isRed(m.At(140, 300)) {
		t.Error("the thumbnail is not the image")
	}
}

// TestSanitizeWithinReservation measures what cleaning allocates in all, garbage included,
// against what it reserves.
func TestSanitizeWithinReservation(t *testing.T) {
	noise := image.NewRGBA(image.Rect(0, 0, 600, 400))
	for i := range noise.Pix {
		noise.Pix[i] = byte(uint32(i) * 2654435761 >> 24)
	}
	alpha, _ := os.ReadFile("testdata/yellow_rose.lossy-with-alpha.webp")
	lossless, _ := os.ReadFile("testdata/gopher-doc.8bpp.lossless.webp")
	lossy, _ := os.ReadFile("testdata/blue-purple-pink.lossy.webp")
	for name, in := range map[string][]byte{
		"png":            encodePNG(t, marked(1290, 2796)),
		"png noise":      encodePNG(t, noise),
		"jpeg":           encodeJPEG(t, marked(1600, 1200)),
		"jpeg noise":     encodeJPEG(t, noise),
		"jpeg turned":    withAPP1(encodeJPEG(t, marked(1600, 1200)), exifTIFF(6)),
		"webp alpha":     alpha,
		"webp lossless":  lossless,
		"webp lossy":     lossy,
		"jpeg grayscale": encodeJPEG(t, image.NewGray(image.Rect(0, 0, 999, 777))),
	} {
		t.Run(name, func(t *testing.T) {
			f, err := sniff(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := planFor(f, in, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			need := p.need(int64(len(in))) - int64(len(in))
			var img *Image
			n := allocated(func() { img, err = p.run(context.Background(), in) })
			if err != nil {
				t.Fatal(err)
			}
			if int64(n) > need {
				t.Errorf("allocated %d bytes, reserved %d", n, need)
			}
			t.Logf("%d×%d %s: allocated %d KiB, reserved %d KiB, out %d KiB", img.Width, img.Height, img.ContentType, n>>10, need>>10, len(img.Data)>>10)
		})
	}
}

func TestExifOrientation(t *testing.T) {
	be := binary.BigEndian
	mm := []byte("MM\x00*\x00\x00\x00\x08\x00\x01")
	mm = be.AppendUint16(mm, 0x0112)
	mm = be.AppendUint16(mm, 3)
	mm = be.AppendUint32(mm, 1)
	mm = append(mm, 0, 8, 0, 0)
	for _, c := range []struct {
		name string
		in   []byte
		want int
	}{
		{"little-endian", exifTIFF(6), 6},
		{"big-endian", mm, 8},
		{"with Exif prefix", append([]byte("Exif\x00\x00"), exifTIFF(3)...), 3},
		{"out of range", exifTIFF(9), 1},
		{"zero", exifTIFF(0), 1},
		{"empty", nil, 1},
		{"IFD offset past the end", []byte("II*\x00\xff\xff\xff\x7f"), 1},
		{"count past the end", []byte("II*\x00\x08\x00\x00\x00\xff\xff\x12\x01"), 1},
	} {
		if got := exifOrientation(c.in); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func seeds(f *testing.F) {
	f.Add(encodePNG(f, marked(16, 8)))
	f.Add(encodeJPEG(f, marked(16, 8)))
	f.Add(withAPP1(encodeJPEG(f, marked(16, 8)), exifTIFF(6)))
	f.Add(encodePNG(f, image.NewPaletted(image.Rect(0, 0, 5, 3), color.Palette{color.Black, color.White})))
	for _, name := range []string{"blue-purple-pink.lossy.webp", "gopher-doc.8bpp.lossless.webp", "yellow_rose.lossy-with-alpha.webp"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(hugePNG(100_000, 100_000))
	f.Add(hugePNG(1000, 1000))
	f.Add(jpegBomb(0xc2, 8192, 4096, 1))
	f.Add(jpegBomb(0xc0, 300, 200, 3))
	f.Add(append([]byte{0, 0, 0, 0x18}, "ftypheic\x00\x00\x00\x00mif1heic"...))
}

func FuzzSanitize(f *testing.F) {
	seeds(f)
	b := appinfo.NewBudget(64 << 20)
	l := Limits{MaxBytes: 1 << 20, MaxSide: 2048, MaxPixels: 1 << 20}
	f.Fuzz(func(t *testing.T, in []byte) {
		img, err := Sanitize(context.Background(), bytes.NewReader(in), l, b)
		if b.Held() != 0 {
			t.Fatalf("the budget holds %d bytes after the call", b.Held())
		}
		if err != nil {
			if k := errs.KindOf(err); k != errs.Invalid && k != errs.Unsupported && k != errs.TooLarge {
				t.Fatalf("error of kind %d: %v", k, err)
			}
			return
		}
		m, format, err := image.Decode(bytes.NewReader(img.Data))
		if err != nil || "image/"+format != img.ContentType {
			t.Fatalf("the output (%s) does not decode as such: %s %v", img.ContentType, format, err)
		}
		if m.Bounds().Dx() != img.Width || m.Bounds().Dy() != img.Height {
			t.Fatalf("the output is %v, said %d×%d", m.Bounds(), img.Width, img.Height)
		}
		if max(img.ThumbWidth, img.ThumbHeight) > ThumbSide || img.ThumbWidth > img.Width || img.ThumbHeight > img.Height {
			t.Fatalf("thumbnail %d×%d of %d×%d", img.ThumbWidth, img.ThumbHeight, img.Width, img.Height)
		}
	})
}

func FuzzOrientation(f *testing.F) {
	f.Add(exifTIFF(6))
	f.Add(append([]byte("Exif\x00\x00"), exifTIFF(8)...))
	f.Add([]byte("MM\x00*\x00\x00\x00\x08\x00\x01\x01\x12\x00\x03\x00\x00\x00\x01\x00\x05\x00\x00"))
	f.Add(withAPP1(jpegBomb(0xc0, 8, 8, 1), exifTIFF(3)))
	f.Fuzz(func(t *testing.T, in []byte) {
		if o := exifOrientation(in); o < 1 || o > 8 {
			t.Fatalf("orientation %d", o)
		}
		// The marker walk, on the bytes as a JPEG's.
		fr, err := scanJPEG(append([]byte{0xff, 0xd8}, in...))
		if err == nil && fr.exif != nil {
			if o := exifOrientation(fr.exif); o < 1 || o > 8 {
				t.Fatalf("orientation %d", o)
			}
		}
		if _, err := scanWebP(append([]byte("RIFF\x00\x00\x00\x00WEBP"), in...)); err == nil && len(in) == 0 {
			t.Fatal("an empty RIFF was taken")
		}
	})
}

// Bytes between a JPEG's segments are skipped by Go's decoder, and by the marker walk, so that
// the walk sees the frame the decoder decodes.
func TestSanitizeJPEGWithBytesBetweenSegments(t *testing.T) {
	j := encodeJPEG(t, marked(64, 48))
	cut := 4 + int(binary.BigEndian.Uint16(j[4:])) // after the first segment
	in := append(append(append([]byte{}, j[:cut]...), 0, 0, 0), j[cut:]...)
	if _, err := jpeg.Decode(bytes.NewReader(in)); err != nil {
		t.Skipf("Go's decoder no longer takes it: %v", err)
	}
	img, err := sanitize(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != 64 || img.Height != 48 {
		t.Errorf("%d×%d", img.Width, img.Height)
	}
}

// A screenshot waits for its reservation while the budget is held by others, and gives up with
// its request.
func TestSanitizeWaitsForTheBudget(t *testing.T) {
	in := encodePNG(t, marked(64, 48))
	b := appinfo.NewBudget(8 << 20)
	held, err := b.Reserve(context.Background(), 8<<20, "another parse")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Sanitize(ctx, bytes.NewReader(in), Limits{}, b)
		done <- err
	}()
	for b.Waiting() == 0 {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("%v, want the request's end", err)
	}
	held.Release()
	if _, err := Sanitize(context.Background(), bytes.NewReader(in), Limits{}, b); err != nil {
		t.Fatal(err)
	}
	if b.Held() != 0 {
		t.Errorf("the budget holds %d bytes", b.Held())
	}
}
