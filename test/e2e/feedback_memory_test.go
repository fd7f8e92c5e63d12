package e2e_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/imagetest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestHostileScreenshotsShareTheParseBudget sends, at once, 8 feedback reports of each hostile
// kind (a PNG declaring 100,000 × 100,000; a JPEG declaring 6000 × 5000 with 2 KiB of data,
// which the decoder would allocate 45 MB for; a JPEG over the pixel limit; a zip named .png; 20
// screenshots in one report; a 100 MB "image") to a replica with the chart's GOMEMLIMIT, beside
// honest reports of five phone-sized screenshots each. Every hostile report is a 4xx and leaves
// nothing; every honest one is 201; the replica's peak RSS stays under the chart's limit, since
// every decode reserves its memory from the one parse budget first.
//
// For measuring (the closing figures): SLIPWAY_SHOTMEM_COPIES changes the 8.
func TestHostileScreenshotsShareTheParseBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("dozens of large reports")
	}
	copies := 8
	if n, err := strconv.Atoi(os.Getenv("SLIPWAY_SHOTMEM_COPIES")); err == nil && n > 0 {
		copies = n
	}
	h := e2e.New(t, e2e.Options{Storage: e2e.S3, NoRace: true, Env: []string{"GOMEMLIMIT=" + strconv.Itoa(chartGoMemLimit)}})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	st, body, err := proxyUpload(ctx, client, s.URL, token, "h.ipa",
		appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	if err != nil || st != http.StatusCreated {
		t.Fatalf("upload: %d %v %s", st, err, body)
	}
	var rel struct{ ID int64 }
	_ = json.Unmarshal([]byte(body), &rel)
	baseline := testkit.RSS(t, s.PID)

	type shot struct {
		name string
		data []byte
	}
	screen := noisePNG(t, 1290, 2796)
	kinds := map[string][]shot{
		"png-100000x100000":   {{"huge.png", imagetest.DeclaredPNG(100_000, 100_000)}},
		"jpeg-bomb-6000x5000": {{"bomb.jpg", declaredJPEG(t, 6000, 5000)}},
		"jpeg-over-limit":     {{"over.jpg", declaredJPEG(t, 9000, 9000)}},
		"zip-named-png":       {{"z.png", append([]byte("PK\x03\x04\x14\x00"), bytes.Repeat([]byte{0}, 4096)...)}},
		"100-MB":              {{"big.png", append(imagetest.DeclaredPNG(4000, 4000), make([]byte, 100<<20)...)}},
	}
	twenty := make([]shot, 20)
	for i := range twenty {
		twenty[i] = shot{"s.png", screen}
	}
	kinds["20-screenshots"] = twenty
	honest := []shot{{"1.png", screen}, {"2.png", screen}, {"3.png", screen}, {"4.png", screen}, {"5.png", screen}}

	send := func(shots []shot) (int, string, error) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		_ = mw.WriteField("text", "what I saw")
		for _, sh := range shots {
			fw, _ := mw.CreateFormFile("screenshot", sh.name)
			_, _ = fw.Write(sh.data)
		}
		_ = mw.Close()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/api/releases/%d/feedback", s.URL, rel.ID), &b)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Token "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return resp.StatusCode, string(out), nil
	}
	type answer struct {
		kind   string
		status int
		body   string
		err    error
	}
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	run := func(kind string, shots []shot) {
		wg.Go(func() {
			<-start
			st, body, err := send(shots)
			mu.Lock()
			answers = append(answers, answer{kind, st, body, err})
			mu.Unlock()
		})
	}
	for kind, shots := range kinds {
		for range copies {
			run(kind, shots)
		}
	}
	for range copies {
		run("honest", honest)
	}
	close(start)
	wg.Wait()

	counts := map[string]map[int]int{}
	for _, a := range answers {
		if counts[a.kind] == nil {
			counts[a.kind] = map[int]int{}
		}
		counts[a.kind][a.status]++
		switch {
		case a.err != nil && a.kind == "100-MB" && (errors.Is(a.err, syscall.ECONNRESET) || errors.Is(a.err, syscall.EPIPE)):
			// The server answers 413 once the body passes the limit and closes the connection
			// without reading the rest: a client still writing may see the reset before the
			// answer (as Go's does; curl reads the answer while it sends).
		case a.err != nil:
			t.Errorf("%s: %v", a.kind, a.err)
		case a.kind == "honest" && a.status != http.StatusCreated:
			t.Errorf("an honest report: %d %s", a.status, a.body)
		case a.kind != "honest" && (a.status < 400 || a.status >= 500):
			t.Errorf("%s: %d %s", a.kind, a.status, a.body)
		}
	}
	for kind, c := range counts {
		t.Logf("%-22s %v", kind, c)
	}
	if counts["100-MB"][http.StatusRequestEntityTooLarge] == 0 {
		t.Error("no 100 MB report was answered 413")
	}
	peak := testkit.PeakRSS(t, s.PID)
	t.Logf("%d reports (%d hostile kinds × %d, and %d honest of 5 screenshots of 1290×2796): replica RSS before %d MiB, peak %d MiB (limit %d MiB, GOMEMLIMIT %d MiB)",
		len(answers), len(kinds), copies, copies, baseline>>20, peak>>20, chartMemoryLimit>>20, chartGoMemLimit>>20)
	if peak >= chartMemoryLimit {
		t.Errorf("peak RSS %d MiB: over the chart's memory limit of %d MiB", peak>>20, chartMemoryLimit>>20)
	}
	// Only the honest reports were kept: 5 screenshots and 5 thumbnails each, nothing pending.
	db, err := pgx.Connect(ctx, h.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var reports, shots, pending int
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM feedback), (SELECT count(*) FROM feedback_screenshots),
		(SELECT count(*) FROM storage_objects WHERE key LIKE 'feedback/%' AND state = 'pending')`).Scan(&reports, &shots, &pending); err != nil {
		t.Fatal(err)
	}
	if reports != copies || shots != 5*copies || pending != 0 {
		t.Errorf("kept %d reports with %d screenshots and %d pending objects, want %d, %d and 0", reports, shots, pending, copies, 5*copies)
	}
}

// noisePNG is a w×h PNG of noise (so it compresses as little as a photo-like screenshot).
func noisePNG(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = uint8(r.UintN(256)), uint8(r.UintN(64)), 128, 255
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// declaredJPEG is a small baseline JPEG whose frame header says w×h: the decoder sizes its
// image from the header, and the data runs out long before.
func declaredJPEG(t testing.TB, w, h uint16) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for i := range img.Pix {
		img.Pix[i] = 90
	}
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	out := b.Bytes()
	for i := 2; i+9 < len(out); {
		if out[i] != 0xFF {
			t.Fatal("not a JPEG segment")
		}
		marker, n := out[i+1], int(binary.BigEndian.Uint16(out[i+2:]))
		if marker == 0xC0 {
			binary.BigEndian.PutUint16(out[i+5:], h)
			binary.BigEndian.PutUint16(out[i+7:], w)
			return out
		}
		i += 2 + n
	}
	t.Fatal("no SOF0 in the JPEG")
	return nil
}
