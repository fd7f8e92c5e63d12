package hostile_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/pkg/zipread/ziptest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

func TestMain(m *testing.M) { e2e.Main(m) }

// Bounds of the suite (docs/security.md, "Hostile-client suite", says why each is what it is).
// Each is on what a busy machine cannot change: answers, counts, memory, CPU-seconds, what is
// stored. How fast `latest` answers under attack is measured, not asserted: other processes on
// the machine move it as much as the attack does (test/bench -scenarios attack reports it, in
// docs/benchmarks.md).
const (
	// attackFor is how long the attacks run.
	attackFor = 20 * time.Second
	// quietSamples is the number of sequential `latest` requests of each quiet sample.
	quietSamples = 200
	// rssMargin is added to the replica's configured memory limit for the executable's own pages,
	// which no Go limit covers (the same bound as test/reliability's TestUploadBurst).
	rssMargin = 32 << 20
	// cpuPerSecond bounds the replica's CPU during the attack, in CPU-seconds per second of
	// attack: at most one of the machine's cores, whatever the attackers send.
	cpuPerSecond = 1.0
	// metricsBound bounds the size of /metrics after the attack.
	metricsBound = 256 << 10
	// sessionCap is SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN's default.
	sessionCap = 32
)

// idle is SLIPWAY_UPLOAD_IDLE_TIMEOUT for the suite: short, so that a trickle is cut within the
// attack (grace of one span, then one span below the minimum rate).
const idle = 4 * time.Second

// TestHostileClients runs issue 20's attacks at once against one replica, with honest clients
// beside them.
func TestHostileClients(t *testing.T) {
	if testing.Short() {
		t.Skip("runs attacks against a replica for 20 s")
	}
	// Built without -race even under -race: the race detector multiplies memory and CPU, and the
	// bounds are those of a real replica.
	h := e2e.New(t, e2e.Options{Storage: e2e.S3, NoRace: true})
	env := []string{"SLIPWAY_INTERNAL_ADDR=auto", "SLIPWAY_UPLOAD_IDLE_TIMEOUT=" + idle.String()}
	s := h.Start(t, env...)
	ci := h.CreateToken(t, "ci", "upload")
	flood := h.CreateToken(t, "flood", "upload")
	admin := h.CreateToken(t, "admin", "admin")
	a := &attack{t: t, s: s, h: h}

	// The control: an identical replica, with a database and storage of its own, that nobody
	// attacks. Its `latest` is asked in alternation with the attacked one's, so both see the same
	// machine (other jobs, the test's own clients) at the same moments, and only the attack differs.
	hc := e2e.New(t, e2e.Options{NoRace: true})
	sc := hc.Start(t, env...)
	ac := &attack{t: t, s: sc, h: hc}
	ctl := ac.decode(ac.upload(hc.CreateToken(t, "ci", "upload"), "Control.apk", writeAPK("com.example.public", 1, 0)))
	controlURL := sc.URL + "/api/apps/latest?" + url.Values{"channel_key": {ctl.Channel.Slug},
		"release_version": {"1.0"}, "build_version": {"1"}}.Encode()

	// Honest state: a public build (its page and `latest`), and a build in a password channel.
	public := a.decode(a.upload(ci, "Public.apk", writeAPK("com.example.public", 1, 0)))
	secret := a.decode(a.upload(ci, "Secret.apk", writeAPK("com.example.secret", 1, 0), "password", "the right one"))
	latestURL := s.URL + "/api/apps/latest?" + url.Values{"channel_key": {public.Channel.Slug},
		"release_version": {"1.0"}, "build_version": {"1"}}.Encode()
	pageURL := fmt.Sprintf("%s/channels/%s/releases/%d", s.URL, public.Channel.Slug, public.ID)
	cookie := a.consoleSession()
	metricsBefore := a.metrics()
	const forgedUDID = "00008101-000A1B2C3D4E5F99"
	forged := profileservicetest.Answer(t, map[string]string{"UDID": forgedUDID, "DEVICE_NAME": "Forged",
		"CHALLENGE": profileservicetest.Challenge(t, a.get(s.URL+"/udid/profile").Body)})

	// Quiet sample before.
	quiet := a.sampleLatest(latestURL, quietSamples)

	// The attack, with honest clients beside it.
	cpu0 := testkit.CPU(t, s.PID)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), attackFor)
	defer cancel()
	var wg sync.WaitGroup
	run := func(name string, f func(context.Context)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx)
			t.Logf("%s: done after %v", name, time.Since(start).Round(100*time.Millisecond))
		}()
	}
	var underAttack, control []time.Duration
	run("latest sampler", func(ctx context.Context) {
		for ctx.Err() == nil {
			underAttack = append(underAttack, a.timeLatest(latestURL))
			control = append(control, ac.timeLatest(controlURL))
		}
	})
	var pages atomic.Int64
	run("page sampler", func(ctx context.Context) {
		for ctx.Err() == nil {
			if r := a.get(pageURL); r.Status != http.StatusOK {
				a.errorf("release page under attack: %d", r.Status)
			}
			pages.Add(1)
			sleep(ctx, 200*time.Millisecond)
		}
	})
	var honest *response
	var honestTook time.Duration
	run("honest 64 MiB upload", func(ctx context.Context) {
		sleep(ctx, 2*time.Second)
		t0 := time.Now()
		honest = a.upload(ci, "Big.apk", writeAPK("com.example.big", 2, 64<<20))
		honestTook = time.Since(t0)
	})
	var methods atomic.Int64
	run("invented methods", func(ctx context.Context) { methods.Store(a.inventedMethods(ctx)) })
	run("tokenless uploads", func(ctx context.Context) { a.tokenlessUploads(ctx, ci) })
	run("authenticated trickle", func(ctx context.Context) { a.trickle(ci) })
	var guessed guessResult
	run("password guesses", func(ctx context.Context) { guessed = a.passwordGuesses(ctx, secret.ID) })
	run("zip with a lying entry count", func(ctx context.Context) { a.zipBombs(ctx, ci) })
	run("xar TOC bomb", func(ctx context.Context) { a.pkgBombs(ctx, ci) })
	run("huge console forms", func(ctx context.Context) { a.consoleForms(ctx, cookie) })
	run("upload-session flood", func(ctx context.Context) { a.sessionFlood(flood) })
	run("UDID replay", func(ctx context.Context) { a.udidReplay(ctx, forged) })
	wg.Wait()
	took := time.Since(start)
	cpu := (testkit.CPU(t, s.PID) - cpu0).Seconds()

	// Quiet sample after: the quiet figure is both samples together, so that a machine that got
	// busier or quieter during the run (other jobs on a shared box) moves it as it moves the rest.
	quiet = append(quiet, a.sampleLatest(latestURL, quietSamples)...)

	// Honest clients were served.
	if honest == nil || honest.Status != http.StatusCreated {
		t.Errorf("the honest 64 MiB upload during the attack: %v", honest)
	} else if rel := a.decode(honest); rel.Size < 64<<20 {
		t.Errorf("the honest upload's release is %d bytes", rel.Size)
	}
	// `latest` answered throughout (each answer was checked to be 200 as it came): its latency is
	// a figure, reported beside the control replica's, asked in alternation with it.
	if len(underAttack) == 0 || pages.Load() == 0 {
		t.Errorf("during the attack %d `latest` and %d release page requests were answered", len(underAttack), pages.Load())
	}
	fig := figures{Quiet: summarize(quiet), Control: summarize(control), Attacked: summarize(underAttack),
		Pages: pages.Load(), Methods: methods.Load(), Guesses: guessed.checked, Attack: took.Seconds(), HonestUpload: honestTook.Seconds()}
	t.Logf("latest: quiet %v, control during the attack %v, attacked during the attack %v; %d release pages served",
		fig.Quiet, fig.Control, fig.Attacked, pages.Load())

	// Every attack was refused (each attack's own checks ran in its goroutine), and what it
	// tried to leave behind is not there.
	limit := allowed(access.ClientPasswordLimit, guessed.took)
	if guessed.right {
		limit += access.ClientPasswordLimit.Free
	}
	if n := guessed.checked; n > limit {
		t.Errorf("%d password guesses from one address (each with its own X-Forwarded-For) were compared in %v (the right one among them: %v); at most %d may be",
			n, guessed.took, guessed.right, limit)
	}
	var clients []string
	rows, err := h.DB(t).Query(context.Background(), `SELECT client FROM password_failures ORDER BY client`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if !slices.Equal(clients, []string{"*", "127.0.0.1"}) {
		t.Errorf("password_failures clients %v: spoofed X-Forwarded-For was believed", clients)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM upload_sessions WHERE state IN ('open', 'completing')`); n != sessionCap {
		t.Errorf("%d upload sessions open after the flood, want the cap %d", n, sessionCap)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM devices WHERE udid = $1 AND unverified`, forgedUDID); n != 1 {
		t.Errorf("the forged device is not recorded once, unverified (%d)", n)
	}
	if ex := a.get(s.URL+"/api/devices/export", "Authorization", "Token "+admin); ex.Status != http.StatusOK || strings.Contains(string(ex.Body), forgedUDID) {
		t.Errorf("the export with the forged device awaiting approval: %s", ex)
	}
	if !strings.Contains(s.Logs(), "upload cut: it arrived slower than the minimum rate") {
		t.Error("the trickle's cut is not in the log")
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM releases`); n != 3 {
		t.Errorf("%d releases, want the 3 honest ones", n)
	}

	// Bounded: /metrics, memory, CPU.
	metricsAfter := a.metrics()
	t.Logf("/metrics: %d bytes before, %d after %d requests with invented methods", len(metricsBefore), len(metricsAfter), methods.Load())
	if len(metricsAfter) > metricsBound || regexp.MustCompile(`method="M\d`).MatchString(metricsAfter) {
		t.Errorf("/metrics is %d bytes after the attack (bound %d), or has an invented method", len(metricsAfter), metricsBound)
	}
	cfg, err := config.Load(func(string) string { return "" }) // the memory settings are the defaults
	if err != nil {
		t.Fatal(err)
	}
	peak, rssBound := testkit.PeakRSS(t, s.PID), cfg.MemorySoftLimit()+rssMargin
	fig.PeakRSS, fig.CPU = peak, cpu
	fig.write(t)
	t.Logf("replica: peak RSS %d MiB (bound %d MiB), %.1f CPU-s in %v of attack (bound %.1f)",
		peak>>20, rssBound>>20, cpu, took.Round(100*time.Millisecond), cpuPerSecond*took.Seconds())
	if peak > rssBound {
		t.Errorf("peak RSS %d MiB over %d MiB", peak>>20, rssBound>>20)
	}
	if cpu > cpuPerSecond*took.Seconds() {
		t.Errorf("the replica used %.1f CPU-s in %v of attack", cpu, took)
	}
	serverErrors(t, s)
}

// ---- attacks ----------------------------------------------------------------------------------

type attack struct {
	t *testing.T
	s *e2e.Server
	h *e2e.Harness
}

// errorf is t.Errorf for the attack goroutines.
func (a *attack) errorf(format string, args ...any) { a.t.Errorf(format, args...) }

var client = &http.Client{
	Timeout:       2 * time.Minute,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) String() string {
	if r == nil {
		return "no response"
	}
	return fmt.Sprintf("%d %.300s", r.Status, r.Body)
}

func (a *attack) do(req *http.Request) *response {
	resp, err := client.Do(req)
	if err != nil {
		a.errorf("%s %s: %v", req.Method, req.URL.Path, err)
		return &response{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (a *attack) get(u string, header ...string) *response {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.do(req)
}

// expect checks a refusal: one of the statuses, with a JSON error body.
func (a *attack) expect(what string, r *response, statuses ...int) bool {
	var e struct {
		Error string `json:"error"`
	}
	if !slices.Contains(statuses, r.Status) || json.Unmarshal(r.Body, &e) != nil || e.Error == "" {
		a.errorf("%s: %s, want %v with an error", what, r, statuses)
		return false
	}
	return true
}

type release struct {
	ID      int64 `json:"id"`
	Size    int64 `json:"size"`
	Channel struct {
		Slug string `json:"slug"`
	} `json:"channel"`
}

func (a *attack) decode(r *response) release {
	var rel release
	if r.Status != http.StatusCreated || json.Unmarshal(r.Body, &rel) != nil || rel.ID == 0 {
		a.t.Fatalf("upload: %s", r)
	}
	return rel
}

// upload posts a package to /api/apps/upload, the token first, then fields, then the file, which
// write produces while it is sent.
func (a *attack) upload(token, name string, write func(io.Writer) error, fields ...string) *response {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		_ = mw.WriteField("token", token)
		for i := 0; i+1 < len(fields); i += 2 {
			_ = mw.WriteField(fields[i], fields[i+1])
		}
		fw, err := mw.CreateFormFile("file", name)
		if err == nil {
			err = write(fw)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest(http.MethodPost, a.s.URL+"/api/apps/upload", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r := a.do(req)
	_ = pr.Close()
	return r
}

func writeAPK(pkg string, code int, filler int64) func(io.Writer) error {
	return func(w io.Writer) error {
		return androidtest.WriteAPK(w, androidtest.APKOptions{FillerBytes: filler, AndroidManifest: androidtest.AndroidManifest{
			Package: pkg, VersionCode: code, VersionName: fmt.Sprintf("%d.0", code), Label: "Demo"}})
	}
}

func (a *attack) timeLatest(u string) time.Duration {
	start := time.Now()
	r := a.get(u)
	d := time.Since(start)
	if r.Status != http.StatusOK {
		a.errorf("latest: %s", r)
	}
	return d
}

func (a *attack) sampleLatest(u string, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = a.timeLatest(u)
	}
	return out
}

// latency summarizes one sample of `latest` round trips, in milliseconds.
type latency struct {
	N                  int
	P50, P90, P99, Max float64
}

func (l latency) String() string {
	return fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.1f ms (%d requests)", l.P50, l.P99, l.Max, l.N)
}

func summarize(d []time.Duration) latency {
	if len(d) == 0 {
		return latency{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[int(math.Ceil(float64(len(s))*q))-1]) / float64(time.Millisecond)
	}
	return latency{N: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: at(1)}
}

// figures are what one run measured, written as JSON to $SLIPWAY_HOSTILE_FIGURES when it is set
// (test/bench -scenarios attack runs the suite and reports them).
type figures struct {
	Quiet, Control, Attacked latency
	Pages, Methods           int64
	Guesses                  int
	Attack, HonestUpload     float64 // seconds
	CPU                      float64 // the attacked replica's CPU-seconds during the attack
	PeakRSS                  int64   // bytes
}

func (f figures) write(t *testing.T) {
	path := os.Getenv("SLIPWAY_HOSTILE_FIGURES")
	if path == "" {
		return
	}
	b, err := json.Marshal(f)
	if err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Errorf("writing the figures to %s: %v", path, err)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Finding 1: requests with invented methods, each new, on one connection as fast as the server
// answers. Each is refused (404 or 405); none may add a metric series.
func (a *attack) inventedMethods(ctx context.Context) int64 {
	var n int64
	for ctx.Err() == nil {
		req, _ := http.NewRequest(fmt.Sprintf("M%d", n), a.s.URL+"/upload", nil)
		r := a.do(req)
		if r.Status < 400 || r.Status >= 500 {
			a.errorf("invented method %s: %d", req.Method, r.Status)
			return n
		}
		n++
	}
	return n
}

// rawRequest writes head and then body bit by bit (chunk every gap) on a connection of its own,
// and returns the status line and body of the answer, which may come before the body is sent.
func (a *attack) rawRequest(ctx context.Context, head string, chunk []byte, gap time.Duration) string {
	conn, err := net.Dial("tcp", a.s.Addr)
	if err != nil {
		a.errorf("dial: %v", err)
		return ""
	}
	defer conn.Close()
	stop := make(chan struct{})
	defer close(stop)
	// Written beside the read: the server may answer (and stop reading) before the head is sent.
	go func() {
		if _, err := io.WriteString(conn, head); err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(gap):
			}
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound, not an assertion
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return fmt.Sprintf("%d %s", resp.StatusCode, b)
}

func multipartHead(auth string, parts string) string {
	return "POST /api/apps/upload HTTP/1.1\r\nHost: x\r\n" + auth +
		"Content-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000000\r\n\r\n" + parts
}

// Finding 2: 32 connections at a time (twice the replica's upload slots) start uploads without a
// token, the file first (one with the token after it), and trickle a byte a second: each is
// answered 401 at once, holding nothing; then they come again.
func (a *attack) tokenlessUploads(ctx context.Context, token string) {
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for ctx.Err() == nil {
				parts := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\x03\x04"
				if i == 0 {
					parts = "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\x03\x04" + strings.Repeat("x", 1<<20) +
						"\r\n--B\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n" + token + "\r\n"
				}
				if got := a.rawRequest(ctx, multipartHead("", parts), []byte("x"), time.Second); !strings.HasPrefix(got, "401 ") {
					a.errorf("an upload without a token before its file: %.300s", got)
					return
				}
				sleep(ctx, 500*time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// Finding 2: an upload with a real token trickling 1 KiB every 100 ms (10 KiB/s, under the
// 16 KiB/s minimum) is cut after its grace: 422 saying so.
func (a *attack) trickle(token string) {
	head := multipartHead("Authorization: Token "+token+"\r\n",
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\x03\x04")
	got := a.rawRequest(context.Background(), head, bytes.Repeat([]byte("t"), 1<<10), 100*time.Millisecond)
	if !strings.HasPrefix(got, "422 ") || !strings.Contains(got, "slower than") {
		a.errorf("a trickling upload with a token: %.300s", got)
	}
}

type guessResult struct {
	checked int
	took    time.Duration
	// right: the right password was compared (not limited). It clears its address's count, so
	// the free attempts start again after it (soak run 1 on 7c38415: the right one was among the
	// first five compared, and 14 guesses were, against a bound of 10 that ignored the reset).
	right bool
}

// allowed is how many attempts a limit lets through in d: the free ones, then one per doubling
// wait that fits (1 s, 2 s, 4 s, ...), and one more for the boundary.
func allowed(l access.AttemptLimit, d time.Duration) int {
	return l.Free + int(math.Log2(d.Seconds()+1)) + 1
}

// Findings 3 and 7: 100 guesses at a channel's password at once from one address, each naming a
// different client in X-Forwarded-For, the right one among them; then one guess every 100 ms
// until the end, each with a new forged address. Every attempt past the limit is 429 and is not
// compared; the forged addresses are not believed.
func (a *attack) passwordGuesses(ctx context.Context, releaseID int64) guessResult {
	start := time.Now()
	var checked atomic.Int64
	var right atomic.Bool
	guess := func(i int, pw string) {
		r := a.get(fmt.Sprintf("%s/download/releases/%d?password=%s", a.s.URL, releaseID, url.QueryEscape(pw)),
			"X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", i/250%250, i%250+1), "X-Real-IP", fmt.Sprintf("203.0.113.%d", i%250+1))
		switch r.Status {
		case http.StatusTooManyRequests:
			if r.Header.Get("Retry-After") == "" {
				a.errorf("a limited guess without Retry-After")
			}
		case http.StatusFound:
			right.Store(true)
			checked.Add(1)
		case http.StatusForbidden:
			checked.Add(1)
		default:
			a.errorf("a password guess: %s", r)
		}
	}
	var wg sync.WaitGroup
	for i := range 100 {
		pw := fmt.Sprintf("guess-%d", i)
		if i == 57 {
			pw = "the right one"
		}
		wg.Go(func() { guess(i, pw) })
	}
	wg.Wait()
	for i := 100; ctx.Err() == nil; i++ {
		guess(i, fmt.Sprintf("guess-%d", i))
		sleep(ctx, 100*time.Millisecond)
	}
	return guessResult{int(checked.Load()), time.Since(start), right.Load()}
}

// Finding 5: a zip whose end record declares n mod 65536 entries and whose central directory
// holds a million (47 MB), uploaded as an .ipa two at a time, twice each: 422 every time.
func (a *attack) zipBombs(ctx context.Context, token string) {
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 2 {
				if ctx.Err() != nil {
					return
				}
				r := a.upload(token, "Hidden.ipa", func(w io.Writer) error { _, err := ziptest.WriteHiddenEntries(w, 1_000_000); return err })
				a.expect("a zip hiding a million entries", r, http.StatusUnprocessableEntity)
			}
		})
	}
	wg.Wait()
}

// Finding 6: the 24 KB .pkg whose table of contents inflates to 16 MiB of empty elements, with its
// header stating the size and with the header understating it, four at a time every second: 422.
func (a *attack) pkgBombs(ctx context.Context, token string) {
	honest := appletest.BuildTOCBomb("", "<file/>", 16<<20, nil)
	understated := slices.Clone(honest)
	for i := range 8 {
		understated[16+i] = 0
	}
	understated[23] = 100 // a 100-byte TOC, so that only the streamed parse refuses it
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for i := range 4 {
			data := honest
			if i%2 == 1 {
				data = understated
			}
			wg.Go(func() {
				r := a.upload(token, "Bomb.pkg", func(w io.Writer) error { _, err := w.Write(data); return err })
				a.expect("a .pkg TOC bomb", r, http.StatusUnprocessableEntity)
			})
		}
		wg.Wait()
		sleep(ctx, time.Second)
	}
}

// consoleSession signs in to the console with `slipway admin login-link` and returns the session
// cookie.
func (a *attack) consoleSession() string {
	res := a.h.MustRun(a.t, "admin", "login-link")
	// The command prints the link under its own SLIPWAY_PUBLIC_URL; the path is what counts.
	_, secret, _ := strings.Cut(res.LastLine(), "/console/login-link?token=")
	r := a.get(a.s.URL + "/console/login-link?token=" + secret)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "slipway_session" {
			return c.Name + "=" + c.Value
		}
	}
	a.t.Fatalf("the login link: %d %v", r.Status, r.Header)
	return ""
}

type filler byte

func (f filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// Finding 11: a signed-in console user posts 50 MB forms, multipart and urlencoded, with and
// without a length, every half second: 413 or 415, nothing read past the limit.
func (a *attack) consoleForms(ctx context.Context, cookie string) {
	const big = 50 << 20
	for i := 0; ctx.Err() == nil; i++ {
		ctype, length, want := "multipart/form-data; boundary=B", int64(big), http.StatusRequestEntityTooLarge
		switch i % 3 {
		case 1:
			ctype, length = "application/x-www-form-urlencoded", -1
		case 2:
			length, want = -1, http.StatusUnsupportedMediaType
		}
		req, _ := http.NewRequest(http.MethodPost, a.s.URL+"/console/tokens", io.LimitReader(filler('a'), big))
		req.ContentLength = length
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Cookie", cookie)
		resp, err := client.Do(req)
		if err != nil {
			// The server may close the connection on a body it will not read; the status came first.
			if !strings.Contains(err.Error(), "connection reset") && !strings.Contains(err.Error(), "broken pipe") {
				a.errorf("a 50 MB console form: %v", err)
			}
		} else {
			resp.Body.Close()
			if resp.StatusCode != want {
				a.errorf("a 50 MB console form (%s, length %d): %d, want %d", ctype, length, resp.StatusCode, want)
			}
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

// Finding 12: 40 upload sessions of 4 GiB started at once with one token: the cap's worth are
// 201, the rest 429 with Retry-After.
func (a *attack) sessionFlood(token string) {
	var wg sync.WaitGroup
	var created, refused atomic.Int64
	for range 40 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, a.s.URL+"/api/uploads", strings.NewReader(`{"filename":"big.ipa","size":4294967295}`))
			req.Header.Set("Authorization", "Token "+token)
			req.Header.Set("Content-Type", "application/json")
			r := a.do(req)
			switch r.Status {
			case http.StatusCreated:
				created.Add(1)
			default:
				if a.expect("an upload session past the cap", r, http.StatusTooManyRequests) && r.Header.Get("Retry-After") == "" {
					a.errorf("429 without Retry-After")
				}
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if created.Load() != sessionCap || refused.Load() != 40-sessionCap {
		a.errorf("40 session starts at once: %d created, %d refused; want %d and %d", created.Load(), refused.Load(), sessionCap, 40-sessionCap)
	}
}

// Finding 8: a self-signed answer to a fresh challenge registers an unverified device (left out
// of the export); the same answer replayed, 8 at a time every second until the end, is never
// taken again.
func (a *attack) udidReplay(ctx context.Context, answer []byte) {
	post := func() *response {
		req, _ := http.NewRequest(http.MethodPost, a.s.URL+"/udid/callback", bytes.NewReader(answer))
		req.Header.Set("Content-Type", "application/pkcs7-signature")
		return a.do(req)
	}
	if r := post(); r.Status != http.StatusMovedPermanently {
		a.errorf("a self-signed answer: %s", r)
	}
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				a.expect("a replayed UDID answer", post(), http.StatusUnprocessableEntity, http.StatusTooManyRequests)
			})
		}
		wg.Wait()
		sleep(ctx, time.Second)
	}
}

// ---- measurements -----------------------------------------------------------------------------

// metrics reads /metrics from the internal listener.
func (a *attack) metrics() string {
	r := a.get(a.s.InternalURL + "/metrics")
	if r.Status != http.StatusOK {
		a.t.Fatalf("/metrics: %s", r)
	}
	return string(r.Body)
}

// serverErrorLine matches an access-log line of a 5xx other than 503, an internal error or a panic.
var serverErrorLine = regexp.MustCompile(`"status":5(0[0-24-9]|[1-9]\d)|"msg":"internal error"|panic:`)

func serverErrors(t *testing.T, s *e2e.Server) {
	t.Helper()
	for _, line := range strings.Split(s.Logs(), "\n") {
		if serverErrorLine.MatchString(line) {
			t.Errorf("the replica logged a server error: %.1000s", line)
		}
	}
}
