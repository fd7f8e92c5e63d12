package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/platforms/hostiletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// chartMemoryLimit is the chart's resources.limits.memory (charts/slipway/values.yaml, 640Mi), and
// chartGoMemLimit the GOMEMLIMIT it sets from it (goMemLimitPercent 90).
const (
	chartMemoryLimit = 640 << 20
	chartGoMemLimit  = chartMemoryLimit * 90 / 100
)

// TestHostilePackagesShareTheParseBudget sends, at once and from one upload token, 16 hostile
// packages of each kind (hostiletest: an APK and an app bundle whose resource tables are 64 MiB
// of deflated zeros, an MSIX with four 4096² 16-bit logos three of them truncated, a zipped .exe
// with a 64 MiB resource section, a HAP with a 16 MiB resources.index of zeros, an .app whose
// deflated HAP inflates to 32 MiB, an .ipa with a 4 MiB Info.plist) by the proxy path and as
// many by upload sessions, to a replica with the chart's GOMEMLIMIT, beside one honest upload.
// Every request is answered, 201 or 4xx; the honest upload is 201; and the replica's peak RSS
// stays under the chart's memory limit: its parses wait for the one parse budget instead of
// inflating together (once, 16 APKs alone took it past a gigabyte).
//
// For measuring (docs/benchmarks.md, "Parse memory"): SLIPWAY_PARSEMEM_ENV adds environment to
// the replica (e.g. SLIPWAY_PARSE_MEMORY=...), SLIPWAY_PARSEMEM_COPIES changes the 16, and
// SLIPWAY_PARSEMEM_KINDS (comma-separated hostiletest names) sends only those kinds.
func TestHostilePackagesShareTheParseBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of uploads")
	}
	copies := 16
	if n, err := strconv.Atoi(os.Getenv("SLIPWAY_PARSEMEM_COPIES")); err == nil && n > 0 {
		copies = n
	}
	env := []string{"GOMEMLIMIT=" + strconv.Itoa(chartGoMemLimit),
		// Every session of the burst is open at once, from one token.
		"SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN=1024"}
	if extra := os.Getenv("SLIPWAY_PARSEMEM_ENV"); extra != "" {
		env = append(env, strings.Fields(extra)...)
	}
	h := e2e.New(t, e2e.Options{Storage: e2e.S3, NoRace: true, Env: env})
	s := h.Start(t, "SLIPWAY_INTERNAL_ADDR=auto")
	token := h.CreateToken(t, "ci", "upload")
	var pkgs []hostiletest.Package
	for _, p := range hostiletest.Packages() {
		if kinds := os.Getenv("SLIPWAY_PARSEMEM_KINDS"); kinds == "" || slices.Contains(strings.Split(kinds, ","), p.Name) {
			pkgs = append(pkgs, p)
		}
	}
	honest := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.example.honest", VersionCode: 7, VersionName: "1.7", LabelStrings: map[string]string{"": "Honest"},
		Icons: []androidtest.AndroidIcon{{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(192, 192)}}}})

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}}
	type answer struct {
		pkg, via string
		status   int
		body     string
		err      error
	}
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	record := func(a answer) {
		mu.Lock()
		answers = append(answers, a)
		mu.Unlock()
	}
	start := make(chan struct{})
	for _, p := range pkgs {
		for range copies {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				st, body, err := proxyUpload(ctx, client, s.URL, token, p.File, p.Data)
				record(answer{p.Name, "proxy", st, body, err})
			}()
			go func() {
				defer wg.Done()
				<-start
				st, body, err := sessionUpload(ctx, client, s.URL, token, p.File, p.Data)
				record(answer{p.Name, "session", st, body, err})
			}()
		}
	}
	honestDone := make(chan answer, 1)
	go func() {
		<-start
		st, body, err := proxyUpload(ctx, client, s.URL, token, "honest.apk", honest)
		honestDone <- answer{"honest", "proxy", st, body, err}
	}()
	close(start)
	wg.Wait()
	ha := <-honestDone

	counts := map[string]map[int]int{}
	for _, a := range answers {
		key := a.pkg + " " + a.via
		if counts[key] == nil {
			counts[key] = map[int]int{}
		}
		counts[key][a.status]++
		if a.err != nil || a.status != http.StatusCreated && (a.status < 400 || a.status >= 500) {
			t.Errorf("%s by %s: %d %v %s", a.pkg, a.via, a.status, a.err, a.body)
		}
	}
	for key, c := range counts {
		t.Logf("%-32s %v", key, c)
	}
	if ha.err != nil || ha.status != http.StatusCreated {
		t.Errorf("the honest upload beside them: %d %v %s", ha.status, ha.err, ha.body)
	}
	peak := testkit.PeakRSS(t, s.PID)
	t.Logf("%d hostile packages (%d kinds × %d × proxy and session) and one honest: replica peak RSS %d MiB (limit %d MiB, GOMEMLIMIT %d MiB)",
		len(answers), len(pkgs), copies, peak>>20, chartMemoryLimit>>20, chartGoMemLimit>>20)
	if peak >= chartMemoryLimit {
		t.Errorf("peak RSS %d MiB: over the chart's memory limit of %d MiB, where the kernel kills the pod", peak>>20, chartMemoryLimit>>20)
	}

	// The budget is the one derived from GOMEMLIMIT, and every parse gave back what it held.
	cfg, err := config.Load(func(k string) string {
		if k == "GOMEMLIMIT" {
			return strconv.Itoa(chartGoMemLimit)
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	// (The checksum verifier may still be reading the sessions' packages, holding its share.)
	wants := []string{fmt.Sprintf("slipway_parse_memory_bytes %d", cfg.ParseBudget()), "slipway_parse_memory_held_bytes 0", "slipway_parses_waiting 0"}
	testkit.EventuallyOK(t, 3*time.Minute, "the parse budget to be given back", func() error {
		resp, err := http.Get(s.InternalURL + "/metrics")
		if err != nil {
			return err
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, want := range wants {
			if !containsGauge(string(metrics), want) {
				return fmt.Errorf("/metrics lacks %q", want)
			}
		}
		return nil
	})
}

// containsGauge reports whether the exposition text holds the gauge "name value", the value
// compared as a number (Prometheus writes 2.33e+08 for large ones).
func containsGauge(text, want string) bool {
	name, val, _ := strings.Cut(want, " ")
	w, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(text, "\n") {
		if n, v, ok := strings.Cut(line, " "); ok && n == name {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f == w {
				return true
			}
		}
	}
	return false
}

// proxyUpload sends data as the file of POST /api/apps/upload and returns the answer.
func proxyUpload(ctx context.Context, c *http.Client, base, token, name string, data []byte) (int, string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("token", token)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(data)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/apps/upload", &body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return send(c, req)
}

// sessionUpload sends data by an upload session: start, put its parts, complete.
func sessionUpload(ctx context.Context, c *http.Client, base, token, name string, data []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/uploads",
		strings.NewReader(fmt.Sprintf(`{"kind":"app","filename":%q,"size":%d}`, name, len(data))))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set("Content-Type", "application/json")
	st, body, err := send(c, req)
	if err != nil || st != http.StatusCreated {
		return st, body, err
	}
	var sess struct {
		ID    string
		Parts []struct {
			Size int64
			URL  string
		}
	}
	if err := json.Unmarshal([]byte(body), &sess); err != nil {
		return st, body, err
	}
	var off int64
	for _, p := range sess.Parts {
		put, err := http.NewRequestWithContext(ctx, http.MethodPut, p.URL, bytes.NewReader(data[off:off+p.Size]))
		if err != nil {
			return 0, "", err
		}
		put.ContentLength = p.Size
		if st, body, err := send(c, put); err != nil || st != http.StatusOK {
			return st, "part: " + body, err
		}
		off += p.Size
	}
	done, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/uploads/"+sess.ID+"/complete", strings.NewReader(`{}`))
	if err != nil {
		return 0, "", err
	}
	done.Header.Set("Authorization", "Token "+token)
	done.Header.Set("Content-Type", "application/json")
	return send(c, done)
}

func send(c *http.Client, req *http.Request) (int, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), err
}
