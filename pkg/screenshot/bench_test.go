package screenshot

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/slipwayhq/slipway/pkg/appinfo"
)

// fakeScreenshot is a w×h image like an app's screen: a coloured bar, lines of dark "text" on
// white, a few flat buttons and a photo-like noisy gradient, so that it compresses as real
// screenshots do (hundreds of KiB, not a few, and not megabytes).
func fakeScreenshot(w, h int) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{255, 255, 255, 255}
			switch {
			case y < h/12:
				c = color.NRGBA{0, 122, 255, 255}
			case y > h/2 && y < h/2+h/5:
				c = color.NRGBA{uint8(x * 255 / w), uint8(y * 255 / h), uint8(rng.IntN(64) + 96), 255}
			case (y/40)%2 == 1 && x > w/20 && x < w*9/10 && rng.IntN(3) == 0:
				c = color.NRGBA{30, 30, 30, 255}
			case y > h*5/6 && (x/(w/4))%2 == 0:
				c = color.NRGBA{230, 230, 235, 255}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

// fakePhoto is a w×h photo-like image: smooth gradients with sensor-like noise, which a JPEG of
// quality 92 keeps at a few MiB, as a phone's camera does.
func fakePhoto(w, h int) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(3, 4))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			n := rng.IntN(24)
			i := m.PixOffset(x, y)
			m.Pix[i] = uint8(x*200/w + n)
			m.Pix[i+1] = uint8(y*200/h + n)
			m.Pix[i+2] = uint8((x+y)*100/(w+h) + 80 + n)
			m.Pix[i+3] = 255
		}
	}
	return m
}

// peakHeap samples the heap's live objects while f runs and returns the most above where it
// started.
func peakHeap(f func()) uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	if peak < base {
		return 0
	}
	return peak - base
}

// BenchmarkSanitize cleans a typical iPhone screenshot (1290×2796 PNG) and a 12 MP phone photo
// (4032×3024 JPEG), upright and turned (EXIF Orientation 6, as a phone held upright writes it),
// and reports, besides time and bytes allocated, the budget reservation and the heap's sampled
// peak above its start, per image.
func BenchmarkSanitize(b *testing.B) {
	photo := encodeJPEG(b, fakePhoto(4032, 3024))
	for _, c := range []struct {
		name string
		in   []byte
	}{
		{"png-1290x2796", encodePNG(b, fakeScreenshot(1290, 2796))},
		{"jpeg-4032x3024", photo},
		{"jpeg-4032x3024-turned", withAPP1(photo, exifTIFF(6))},
	} {
		b.Run(c.name, func(b *testing.B) {
			budget := appinfo.NewBudget(1 << 30)
			f, _ := sniff(c.in)
			p, err := planFor(f, c.in, DefaultLimits)
			if err != nil {
				b.Fatal(err)
			}
			var out *Image
			peak := peakHeap(func() {
				out, err = Sanitize(context.Background(), bytes.NewReader(c.in), Limits{}, budget)
			})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(c.in)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := Sanitize(context.Background(), bytes.NewReader(c.in), Limits{}, budget); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(p.need(int64(len(c.in))))/(1<<20), "reserved-MiB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(len(c.in))/(1<<10), "in-KiB")
			b.ReportMetric(float64(len(out.Data))/(1<<10), "out-KiB")
		})
	}
}

// BenchmarkThumbnail compares ways to make a thumbnail of a screenshot: the halvings thumbnail
// uses, and x/image/draw's scalers over the whole image.
func BenchmarkThumbnail(b *testing.B) {
	src := fakeScreenshot(1290, 2796)
	tw, th := thumbSize(1290, 2796)
	b.Run("halving+ApproxBiLinear", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, _, err := thumbnail(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	for name, s := range map[string]draw.Scaler{
		"ApproxBiLinear": draw.ApproxBiLinear,
		"BiLinear":       draw.BiLinear,
		"CatmullRom":     draw.CatmullRom,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dst := image.NewRGBA(image.Rect(0, 0, tw, th))
				s.Scale(dst, dst.Bounds(), src, src.Bounds(), draw.Over, nil)
			}
		})
	}
}

// BenchmarkPNGLevel compares the PNG encoder's levels on a screenshot.
func BenchmarkPNGLevel(b *testing.B) {
	src := fakeScreenshot(1290, 2796)
	for name, l := range map[string]png.CompressionLevel{"default": png.DefaultCompression, "best-speed": png.BestSpeed} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				var w bytes.Buffer
				if err := (&png.Encoder{CompressionLevel: l}).Encode(&w, src); err != nil {
					b.Fatal(err)
				}
				n = w.Len()
			}
			b.ReportMetric(float64(n)/(1<<10), "out-KiB")
		})
	}
}
