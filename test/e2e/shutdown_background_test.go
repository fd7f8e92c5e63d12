package e2e_test

import (
	"bytes"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/webhook"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestShutdownStopsBackgroundWorkCleanly sends SIGTERM while a webhook delivery is in flight (the
// receiver holds the request) and while retention is deleting (storage answers each DELETE
// slowly), and checks that the server stops cleanly and loses nothing:
//   - it waits for the delivery in flight, which is recorded as delivered; the deliveries made due
//     meanwhile are not started and stay due, and the next server on the same database delivers
//     each of them, once;
//   - every channel retention had started is done (its rows and their objects gone) and every
//     other is untouched: no release row without its object, and no object that neither a row nor
//     the collector's ledger knows;
//   - it exits 0 after logging its background components' stops, in the stated order, and
//     "stopped", without "handlers still running".
func TestShutdownStopsBackgroundWorkCleanly(t *testing.T) {
	t.Parallel()
	// Storage behind a proxy that makes every object DELETE take a while, so that retention is
	// caught in the middle of a run.
	bucket := testenv.S3(t)
	slow := slowDeletes(t, bucket.Endpoint, 500*time.Millisecond)
	proxied := bucket
	proxied.Endpoint = slow
	proxied.URL = "s3://" + bucket.Bucket + "?" + url.Values{"region": {bucket.Region}, "endpoint": {slow}, "path_style": {"true"}}.Encode()
	h := e2e.New(t, e2e.Options{Storage: e2e.S3, S3: &proxied, Env: []string{
		"SLIPWAY_WEBHOOK_ALLOW_PRIVATE=true", "SLIPWAY_WEBHOOK_POLL_INTERVAL=100ms", "SLIPWAY_WEBHOOK_RETRY_BASE=200ms",
		"SLIPWAY_WEBHOOK_TIMEOUT=30s", "SLIPWAY_RETENTION_INTERVAL=300ms", "SLIPWAY_DRAIN_TIMEOUT=10s"}})
	rcv := newHoldingReceiver(t)
	s := h.Start(t)
	admin := h.CreateToken(t, "ops", "admin")
	upload := h.CreateToken(t, "ci", "upload")

	// Six apps of three builds each, one channel each, and a webhook on every app.
	const apps, builds = 6, 3
	for a := 0; a < apps; a++ {
		for b := 1; b <= builds; b++ {
			uploadBuild(t, s, upload, a, b)
		}
	}
	for _, appID := range queryAll[int64](t, h, `SELECT id FROM apps ORDER BY id`) {
		if r := call(t, s, "POST", fmt.Sprintf("/api/apps/%d/webhooks", appID), admin, `{"url":"`+rcv.URL+`"}`); r.Status != http.StatusCreated {
			t.Fatalf("create webhook: %d %s", r.Status, r.Body)
		}
	}

	// A delivery in flight: the receiver holds the next request until released.
	rcv.hold.Store(true)
	uploadBuild(t, s, upload, 0, builds+1)
	select {
	case <-rcv.held:
	case <-time.After(e2e.WaitTimeout):
		t.Fatal("the release.created delivery never reached the receiver")
	}

	// Retention in progress: keep one build per channel, and wait until the first channel is done.
	before := map[int64]int64{}
	for _, ch := range queryAll[int64](t, h, `SELECT id FROM channels ORDER BY id`) {
		before[ch] = h.QueryInt(t, `SELECT count(*) FROM releases WHERE channel_id = $1`, ch)
		if r := call(t, s, "PUT", fmt.Sprintf("/api/channels/%d/retention", ch), admin, `{"keep_builds":1}`); r.Status != http.StatusOK {
			t.Fatalf("set policy: %d %s", r.Status, r.Body)
		}
	}
	var total int64
	for _, n := range before {
		total += n
	}
	testkit.Eventually(t, e2e.WaitTimeout, "retention to delete a channel's old builds", func() bool {
		return h.QueryInt(t, `SELECT count(*) FROM releases`) < total
	})

	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The server stops retention and the download counter, then waits for the delivery in
	// flight: it is still running while the receiver holds the request.
	s.WaitLog(t, `"component":"download counts"`)
	select {
	case <-s.Done():
		t.Fatalf("the server exited with a webhook delivery in flight:\n%s", s.Logs())
	case <-time.After(500 * time.Millisecond):
	}
	if strings.Contains(s.Logs(), `"component":"webhook delivery"`) {
		t.Fatal("webhook delivery stopped with a delivery in flight")
	}
	rcv.letGo()
	if code := s.Wait(t); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, s.Logs())
	}
	logs := s.Logs()
	if !strings.Contains(logs, `"msg":"stopped"`) || strings.Contains(logs, "handlers still running") ||
		strings.Contains(logs, "ended with an error") {
		t.Errorf("not a clean stop:\n%s", logs)
	}
	var order []string
	for _, line := range strings.Split(logs, "\n") {
		if _, rest, ok := strings.Cut(line, `"msg":"background component stopped","component":"`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			order = append(order, name)
		}
	}
	if want := []string{"retention", "collector", "checksum verifier", "download counts", "tester mail", "webhook delivery", "mail delivery", "read-cache invalidation"}; !slices.Equal(order, want) {
		t.Errorf("components stopped in the order %v, want %v", order, want)
	}

	// The delivery in flight is recorded as delivered; nothing failed; the rest is still due.
	if st := h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries WHERE event = 'release.created' AND state = 'delivered'`); st != 1 {
		t.Errorf("the delivery in flight at SIGTERM: %d recorded delivered, want 1", st)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries WHERE state = 'failed'`); n != 0 {
		t.Errorf("%d deliveries failed", n)
	}
	due := h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND attempts = 0`)
	pending := h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`)
	if due != pending || due == 0 {
		t.Errorf("%d deliveries pending, %d of them never tried (want all, and some: retention's events)", pending, due)
	}

	// Retention: each channel done or untouched, and storage matching the rows.
	done := 0
	for ch, n := range before {
		switch left := h.QueryInt(t, `SELECT count(*) FROM releases WHERE channel_id = $1`, ch); left {
		case 1:
			done++
		case n:
		default:
			t.Errorf("channel %d left half done: %d of %d releases", ch, left, n)
		}
	}
	t.Logf("at SIGTERM retention had done %d of %d channels; %d deliveries were left due", done, len(before), due)
	checkStorageMatchesRows(t, h, true)

	// The next server on the same database delivers what was due, each delivery once, and
	// finishes retention.
	next := h.Start(t, "SLIPWAY_RETENTION_INTERVAL=200ms")
	testkit.Eventually(t, e2e.WaitTimeout, "the next server to deliver what was due and finish retention", func() bool {
		return h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'`) == 0 &&
			h.QueryInt(t, `SELECT count(*) FROM (SELECT channel_id FROM releases GROUP BY channel_id HAVING count(*) > 1) c`) == 0
	})
	if code := next.Stop(t); code != 0 {
		t.Errorf("the next server's exit code: %d", code)
	}
	rows := h.QueryInt(t, `SELECT count(*) FROM webhook_deliveries`)
	got := rcv.received()
	if int64(len(got)) != rows {
		t.Errorf("the receiver got %d deliveries, the outbox holds %d", len(got), rows)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("delivery %s received %d times", id, n)
		}
	}
	checkStorageMatchesRows(t, h, true)
}

// holdingReceiver answers webhooks with 204, counting each delivery (by its Slipway-Delivery
// header); while hold is set, it holds the next request until release is closed.
type holdingReceiver struct {
	*httptest.Server
	hold    atomic.Bool
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	got     map[string]int
}

func newHoldingReceiver(t *testing.T) *holdingReceiver {
	r := &holdingReceiver{held: make(chan struct{}), release: make(chan struct{}), got: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.hold.CompareAndSwap(true, false) {
			close(r.held)
			<-r.release
		}
		r.mu.Lock()
		r.got[req.Header.Get(webhook.DeliveryHeader)]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	t.Cleanup(r.letGo) // before Close, which waits for the held request
	return r
}

// letGo releases the held request.
func (r *holdingReceiver) letGo() { r.once.Do(func() { close(r.release) }) }

func (r *holdingReceiver) received() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.got)
}

// slowDeletes starts a proxy to the S3 endpoint that delays every object DELETE by d, and returns
// its URL. Requests keep their Host, so their signatures hold.
func slowDeletes(t *testing.T, endpoint string, d time.Duration) string {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && !r.URL.Query().Has("uploadId") {
			time.Sleep(d)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	return proxy.URL
}

// uploadBuild uploads build b of app a (each app its own bundle id, hence its own channel).
func uploadBuild(t *testing.T, s *e2e.Server, token string, a, b int) {
	t.Helper()
	pkg := appletest.BuildIPA(appletest.IPAOptions{AppName: fmt.Sprintf("Term%d", a), BundleID: fmt.Sprintf("com.example.term%d", a),
		Version: "1.0", Build: fmt.Sprint(b)})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "app.ipa")
	_, _ = fw.Write(pkg)
	_ = mw.Close()
	if r := s.Do(t, "POST", "/api/apps/upload", &body, "Content-Type", mw.FormDataContentType(), "Authorization", "Token "+token); r.Status != http.StatusCreated {
		t.Fatalf("upload %d/%d: %d %s", a, b, r.Status, r.Body)
	}
}

// queryAll returns the first column of every row sql returns.
func queryAll[T any](t *testing.T, h *e2e.Harness, sql string) []T {
	t.Helper()
	rows, err := h.DB(t).Query(t.Context(), sql)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkStorageMatchesRows checks that every object a release row names is in the bucket, and
// that every object in the bucket is named by a row or recorded in the collector's ledger; with
// settled, also that the ledger is empty (no deletion was left half done).
func checkStorageMatchesRows(t *testing.T, h *e2e.Harness, settled bool) {
	t.Helper()
	named := map[string]bool{}
	for _, k := range queryAll[string](t, h, `SELECT object_key FROM releases UNION ALL SELECT icon_key FROM releases
		WHERE icon_key IS NOT NULL UNION ALL SELECT object_key FROM debug_files`) {
		named[k] = true
	}
	ledger := map[string]bool{}
	for _, k := range queryAll[string](t, h, `SELECT key FROM storage_objects`) {
		ledger[k] = true
	}
	stored := map[string]bool{}
	for _, k := range h.Objects(t) {
		stored[k] = true
		if !named[k] && !ledger[k] {
			t.Errorf("object %s is named by no row and unknown to the collector", k)
		}
	}
	for k := range named {
		if !stored[k] {
			t.Errorf("a row names object %s, which is not in storage", k)
		}
	}
	if settled && len(ledger) != 0 {
		t.Errorf("objects left in the collector's ledger: %v", ledger)
	}
}
