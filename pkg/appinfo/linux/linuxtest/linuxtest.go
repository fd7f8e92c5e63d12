// Package linuxtest builds Linux packages in code for tests, end-to-end tests and benchmarks:
// Debian packages (BuildDeb, WriteDeb), RPM packages (BuildRPM, WriteRPM), squashfs images
// (BuildSquashfs, WriteSquashfs) and type 2 AppImages (BuildAppImage, WriteAppImage), with
// chosen names, versions and icons. The Write variants stream a large payload (DataBytes,
// PayloadBytes) to an io.Writer without holding it in memory, for the 256 MiB benchmarks.
//
// The packages are laid out as the real tools lay them out (dpkg-deb, rpmbuild, mksquashfs and
// appimagetool), so parsers see the same structure, but they are only as complete as a parser
// needs: the payloads are opaque filler (a data.tar member holding one file of pseudo-random
// bytes; an RPM payload that is random bytes, not a cpio archive), the AppImage runtime is a
// minimal ELF header with a section header table and no code, and the squashfs writer supports
// one uid/gid, no xattrs and no export table. Output is deterministic: the same options give
// the same bytes.
package linuxtest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
)

// PNG returns a w×h PNG image with a simple pattern.
func PNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.NRGBA{uint8(x * 255 / max(w, 1)), uint8(y * 255 / max(h, 1)), 0x80, 0xff})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return b.Bytes()
}

// Filler returns a reader of n pseudo-random (incompressible) bytes, the same for the same seed.
func Filler(n int64, seed uint64) io.Reader {
	return io.LimitReader(&randReader{r: rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), byte(seed >> 24)})}, n)
}

type randReader struct{ r *rand.ChaCha8 }

func (r *randReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
