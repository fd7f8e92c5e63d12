package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestMinIOKilledMidUpload: object storage dies (SIGKILL) in the middle of a 64 MiB upload. The
// client gets a 503 with {"error"} and Retry-After; the replica keeps running and stays ready
// (/readyz 200, naming no dependency: an outage must not empty the Service), while its internal
// readiness report names storage; the update check keeps answering and a new upload gets a 503
// with Retry-After. When MinIO is back (same port, same data) the multipart upload left behind is
// aborted by the replica's collector, a new upload to the same replica succeeds, and storage
// matches the database.
func TestMinIOKilledMidUpload(t *testing.T) {
	t.Parallel()
	m := startMinIO(t)
	e := newEnv(t, e2e.Options{Storage: e2e.S3, S3: m.bucket(t), S3Params: url.Values{"part_size_mib": {"5"}}}, 1,
		"SLIPWAY_GC_INTERVAL=1s", "SLIPWAY_INTERNAL_ADDR=auto")
	s := e.servers[0]
	first := decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.outage", "1", 0)))
	latestURL := s.URL + "/api/apps/latest?release_version=0.1&build_version=0&channel_key=" + first.Channel.Slug
	if r := call(t, http.MethodGet, latestURL, nil); r.Status != http.StatusOK {
		t.Fatalf("latest before the outage: %s", r)
	}

	pkg := ipa("com.example.outage", "2", 64<<20)
	st := uploadStream(t, s, e.upload, pkg, true)
	st.pump()
	testkit.Eventually(t, requestTimeout, "16 MiB sent and a multipart upload started", func() bool {
		return st.sent.Load() >= 16<<20 && len(e.h.MultipartUploads(t)) == 1
	})
	cut := openUploads(t, e)
	if len(cut) != 1 {
		t.Fatalf("%d multipart uploads in flight, want 1", len(cut))
	}
	m.kill(t)

	r, err := st.wait(t)
	if err != nil {
		t.Fatalf("the upload got no response when storage died: %v", err)
	}
	expectError(t, "upload while MinIO is down", r, http.StatusServiceUnavailable)
	if st.sent.Load() >= int64(st.total) {
		t.Logf("note: the whole body was sent before the server answered")
	}
	ready := call(t, http.MethodGet, s.URL+"/readyz", nil)
	if ready.Status != http.StatusOK || strings.Contains(string(ready.Body), "storage") {
		t.Errorf("public readyz while MinIO is down: %s, want 200 naming no dependency", ready)
	}
	report := call(t, http.MethodGet, s.InternalURL+"/internal/readyz", nil)
	if report.Status != http.StatusOK || !strings.Contains(string(report.Body), `"name":"storage","state":"unavailable"`) ||
		!strings.Contains(string(report.Body), `"name":"database","state":"ok"`) {
		t.Errorf("internal readyz while MinIO is down: %s, want 200 naming storage unavailable", report)
	}
	r = call(t, http.MethodGet, s.URL+"/healthz", nil)
	if r.Status != http.StatusOK {
		t.Errorf("healthz while MinIO is down: %s (liveness must not depend on storage)", r)
	}
	// The update check needs no storage: it keeps answering, from the read cache or the database.
	for range 3 {
		if r := call(t, http.MethodGet, latestURL, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"releases"`) {
			t.Errorf("latest while MinIO is down: %s", r)
		}
	}
	up, err := uploadApp(s, e.upload, ipa("com.example.outage", "2b", 6<<20))
	if err != nil {
		t.Fatalf("upload while MinIO is down: %v", err)
	}
	expectError(t, "upload while MinIO is down", up, http.StatusServiceUnavailable)

	m.start(t)
	// (A restarted MinIO lists multipart uploads only by key, so the one cut is looked up by id.)
	testkit.Eventually(t, time.Minute, "the replica's collector to abort the multipart upload", func() bool {
		return uploadAborted(t, e, cut[0])
	})
	testkit.Eventually(t, time.Minute, "the internal readyz to see storage again", func() bool {
		r, err := request(http.MethodGet, s.InternalURL+"/internal/readyz", nil)
		return err == nil && strings.Contains(string(r.Body), `"name":"storage","state":"ok"`)
	})
	decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.outage", "3", 6<<20)))
	if s.Exited() {
		t.Fatal("the replica exited")
	}
	if n := queryInt(t, e.db, `SELECT count(*) FROM releases`); n != 2 {
		t.Errorf("%d releases, want 2 (the one cut by the outage must not be recorded)", n)
	}
	noServerErrors(t, s)
	checkConsistent(t, e)
}

// TestMinIOHungMidUpload: object storage hangs (SIGSTOP: connections stay open, nothing answers,
// as with a network partition) in the middle of an upload. Readiness says so (503) while requests
// that do not need storage are still served; the upload's stuck S3 request hits its deadline
// (request_timeout, 3s here) and the client gets a 503 while MinIO still hangs, so the upload does
// not hold its slot for as long as the hang lasts. When MinIO resumes, the replica serves uploads
// again without a restart, and after gc storage matches the database (the multipart upload whose
// abort could not reach the hung MinIO is aborted by the collector).
func TestMinIOHungMidUpload(t *testing.T) {
	t.Parallel()
	m := startMinIO(t)
	e := newEnv(t, e2e.Options{Storage: e2e.S3, S3: m.bucket(t), S3Params: url.Values{"part_size_mib": {"5"}, "request_timeout": {"3s"}}}, 1,
		"SLIPWAY_INTERNAL_ADDR=auto")
	s := e.servers[0]
	st := uploadStream(t, s, e.upload, ipa("com.example.hang", "1", 32<<20), true)
	st.pump()
	testkit.Eventually(t, requestTimeout, "12 MiB sent and a multipart upload started", func() bool {
		return st.sent.Load() >= 12<<20 && len(e.h.MultipartUploads(t)) == 1
	})
	if err := m.proc.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// SIGSTOP takes effect when each thread next runs; on a loaded machine a readyz sent at once
	// was answered 200 by a MinIO not yet stopped (once in a soak). Wait until every thread is.
	testkit.Eventually(t, time.Minute, "every MinIO thread to be stopped", func() bool { return stopped(m.proc.cmd.Process.Pid) })
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = m.proc.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	defer resume()

	// A hung storage does not make the replica unready (readiness is about the replica itself);
	// the internal report says storage is unavailable.
	if ready := call(t, http.MethodGet, s.URL+"/readyz", nil); ready.Status != http.StatusOK {
		t.Errorf("readyz while MinIO hangs: %s, want 200", ready)
	}
	if report := call(t, http.MethodGet, s.InternalURL+"/internal/readyz", nil); !strings.Contains(string(report.Body), `"name":"storage","state":"unavailable"`) {
		t.Errorf("the internal readyz does not name storage: %s", report)
	}
	if r := call(t, http.MethodGet, s.URL+"/api/apps", nil, "Authorization", "Token "+e.admin); r.Status != http.StatusOK {
		t.Errorf("a read that needs no storage, while MinIO hangs: %s", r)
	}
	// The answer comes while MinIO still hangs.
	r, err := st.wait(t)
	if err != nil {
		t.Fatalf("the upload during the hang got no answer: %v", err)
	}
	expectError(t, "upload during the hang", r, http.StatusServiceUnavailable)
	resume()
	testkit.Eventually(t, time.Minute, "the internal readyz to see storage again", func() bool {
		r, err := request(http.MethodGet, s.InternalURL+"/internal/readyz", nil)
		return err == nil && strings.Contains(string(r.Body), `"name":"storage","state":"ok"`)
	})
	decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.hang", "2", 6<<20)))
	noServerErrors(t, s)
	checkConsistent(t, e)
}

// stopped reports whether every thread of process pid is stopped (state T in /proc).
func stopped(pid int) bool {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if len(stats) == 0 {
		return false
	}
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses and may hold spaces.
		_, rest, ok := strings.Cut(string(b), ") ")
		if !ok || !strings.HasPrefix(rest, "T") {
			return false
		}
	}
	return true
}

// trafficOp is one kind of request the traffic generators send, with the statuses it may get
// while a dependency fails: success, or 503.
type trafficOp struct {
	name string
	ok   int
	do   func(s *e2e.Server, i int) (*response, error)
}

// trafficOps are reads, writes and uploads against the channel slug, as clients send them.
func (e *env) trafficOps(slug string, releaseID int64) []trafficOp {
	return []trafficOp{
		{"upload", http.StatusCreated, func(s *e2e.Server, i int) (*response, error) {
			return uploadApp(s, e.upload, ipa("com.example.traffic", fmt.Sprint(i), 0), "channel_key", slug)
		}},
		{"versions", http.StatusOK, func(s *e2e.Server, _ int) (*response, error) {
			return request(http.MethodGet, s.URL+"/api/apps/versions?channel_key="+slug, nil)
		}},
		{"latest", http.StatusOK, func(s *e2e.Server, _ int) (*response, error) {
			return request(http.MethodGet, s.URL+"/api/apps/latest?release_version=1.0&build_version=1&channel_key="+slug, nil)
		}},
		{"list apps", http.StatusOK, func(s *e2e.Server, _ int) (*response, error) {
			return request(http.MethodGet, s.URL+"/api/apps", nil, "Authorization", "Token "+e.admin)
		}},
		{"create app", http.StatusCreated, func(s *e2e.Server, i int) (*response, error) {
			return request(http.MethodPost, s.URL+"/api/apps", strings.NewReader(fmt.Sprintf(`{"name":"Traffic %d"}`, i)),
				"Content-Type", "application/json", "Authorization", "Token "+e.admin)
		}},
		{"download", http.StatusFound, func(s *e2e.Server, _ int) (*response, error) {
			return request(http.MethodGet, fmt.Sprintf("%s/download/releases/%d", s.URL, releaseID), nil)
		}},
		{"readyz", http.StatusOK, func(s *e2e.Server, _ int) (*response, error) {
			return request(http.MethodGet, s.URL+"/readyz", nil)
		}},
	}
}

// traffic sends requests from workers goroutines, spread over the replicas, until stopped. Every
// answer must be the operation's success or a well-formed 503; anything else (a 500, an error
// without a JSON body, a dropped connection) is recorded as a failure.
type traffic struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	failures []string
	counts   map[string]int
	n        atomic.Int64
}

func (e *env) startTraffic(t *testing.T, workers int, ops []trafficOp) *traffic {
	tr := &traffic{stop: make(chan struct{}), counts: map[string]int{}}
	for w := range workers {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for i := w; ; i += workers {
				select {
				case <-tr.stop:
					return
				default:
				}
				op := ops[i%len(ops)]
				s := e.server(i / len(ops))
				r, err := op.do(s, int(tr.n.Add(1)))
				tr.record(op, s, r, err)
			}
		}()
	}
	t.Cleanup(tr.halt)
	return tr
}

func (tr *traffic) record(op trafficOp, s *e2e.Server, r *response, err error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch {
	case err != nil:
		tr.failures = append(tr.failures, fmt.Sprintf("%s on %s: %v", op.name, s.Addr, err))
	case r.Status == op.ok:
		tr.counts[op.name+" ok"]++
	case r.Status == http.StatusServiceUnavailable:
		tr.counts[op.name+" 503"]++
		if r.Header.Get("Retry-After") == "" || r.jsonField("error") == "" {
			tr.failures = append(tr.failures, fmt.Sprintf("%s on %s: 503 without Retry-After or {\"error\"}: %s", op.name, s.Addr, r))
		}
	default:
		tr.failures = append(tr.failures, fmt.Sprintf("%s on %s: %s, want %d or 503", op.name, s.Addr, r, op.ok))
	}
}

// halt stops the workers and waits for their last requests.
func (tr *traffic) halt() {
	select {
	case <-tr.stop:
	default:
		close(tr.stop)
	}
	tr.wg.Wait()
}

// check halts the traffic and reports failures and what was seen.
func (tr *traffic) check(t *testing.T) {
	t.Helper()
	tr.halt()
	for _, f := range tr.failures {
		t.Error(f)
	}
	counts, _ := json.Marshal(tr.counts)
	t.Logf("traffic: %d requests: %s", tr.n.Load(), counts)
}

// settle waits for connections broken by a database fault to be replaced: pgxpool pings a
// connection idle for over a second before handing it out, and drops it if the ping fails.
func settle() { time.Sleep(1500 * time.Millisecond) }

// verifyAllSucceed sends every operation to every replica once; all must succeed.
func (e *env) verifyAllSucceed(t *testing.T, ops []trafficOp) {
	t.Helper()
	for si, s := range e.servers {
		if s.Exited() {
			t.Fatalf("replica %s exited", s.Addr)
		}
		for oi, op := range ops {
			r, err := op.do(s, 1_000_000+si*100+oi)
			if err != nil {
				t.Errorf("after the fault, %s on %s: %v", op.name, s.Addr, err)
			} else if r.Status != op.ok {
				t.Errorf("after the fault, %s on %s: %s, want %d", op.name, s.Addr, r, op.ok)
			}
		}
	}
}

// TestPostgresConnectionsKilled: while three replicas serve mixed traffic, every connection they
// hold to the database is terminated (pg_terminate_backend) again and again for a few seconds.
// Requests succeed or get a 503 with Retry-After, never a 500; afterwards every request succeeds
// on every replica, none restarted; storage matches the database.
func TestPostgresConnectionsKilled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{Storage: e2e.S3}, 3)
	seed := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.traffic", "0", 0)))
	ops := e.trafficOps(seed.Channel.Slug, seed.ID)

	u, err := url.Parse(e.h.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, os.Getenv("SLIPWAY_TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	tr := e.startTraffic(t, 6, ops)
	var terminated int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		var n int64
		err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = $1 AND application_name <> $2 AND pid <> pg_backend_pid()`, dbName, checkerApp).Scan(&n)
		if err != nil {
			t.Fatalf("terminating connections: %v", err)
		}
		terminated += n
		time.Sleep(30 * time.Millisecond)
	}
	tr.check(t)
	t.Logf("%d database connections terminated", terminated)
	if terminated == 0 {
		t.Fatal("no connection was terminated: the fault was not injected")
	}

	settle()
	e.verifyAllSucceed(t, ops)
	noServerErrors(t, e.servers...)
	checkConsistent(t, e)
}

// TestPostgresRestart: the database server (a private cluster) is shut down under traffic and
// started again. While it is down, liveness stays 200, readiness and every request needing the
// database answer 503 with Retry-After and {"error"}; once it is back, every request succeeds
// again on both replicas without restarting them; storage matches the database.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	e := newEnv(t, e2e.Options{DatabaseURL: c.URL("slipway")}, 2, "SLIPWAY_INTERNAL_ADDR=auto")
	seed := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.traffic", "0", 0)))
	ops := e.trafficOps(seed.Channel.Slug, seed.ID)
	pids := []int{e.servers[0].PID, e.servers[1].PID}

	tr := e.startTraffic(t, 4, ops)
	time.Sleep(500 * time.Millisecond) // some traffic before the fault
	c.stop(t)

	for _, s := range e.servers {
		if r := call(t, http.MethodGet, s.URL+"/healthz", nil); r.Status != http.StatusOK {
			t.Errorf("healthz while Postgres is down: %s", r)
		}
		if r := call(t, http.MethodGet, s.URL+"/readyz", nil); r.Status != http.StatusOK {
			t.Errorf("readyz while Postgres is down: %s, want 200 (an outage must not empty the Service)", r)
		}
		r := call(t, http.MethodGet, s.InternalURL+"/internal/readyz", nil)
		if !strings.Contains(string(r.Body), `"name":"database","state":"unavailable"`) {
			t.Errorf("the internal readyz does not name the database: %s", r.Body)
		}
		for i, op := range ops {
			if op.name == "readyz" {
				continue
			}
			r, err := op.do(s, 500_000+i)
			if err != nil {
				t.Fatalf("%s while Postgres is down: %v", op.name, err)
			}
			// The update check may be answered from the replica's read cache, which nothing can
			// make stale while the database is down (docs/operations.md, The read cache).
			if (op.name == "versions" || op.name == "latest") && r.Status == http.StatusOK {
				continue
			}
			expectError(t, op.name+" while Postgres is down", r, http.StatusServiceUnavailable)
		}
	}

	c.start(t)
	for _, s := range e.servers {
		testkit.Eventually(t, time.Minute, "the internal readyz on "+s.Addr+" to see Postgres again", func() bool {
			r, err := request(http.MethodGet, s.InternalURL+"/internal/readyz", nil)
			return err == nil && strings.Contains(string(r.Body), `"name":"database","state":"ok"`)
		})
	}
	tr.check(t)
	settle()
	e.verifyAllSucceed(t, ops)
	for i, s := range e.servers {
		if s.Exited() || s.PID != pids[i] {
			t.Errorf("replica %d was restarted", i)
		}
	}
	noServerErrors(t, e.servers...)
	checkConsistent(t, e)
}

// TestReplicaKilledMidUpload: a replica dies (SIGKILL) in the middle of an upload. Nothing is
// recorded, the other replicas keep serving, and the object left pending (an S3 multipart upload
// with a part stored, or a filesystem temporary file) is collected by `slipway gc`.
func TestReplicaKilledMidUpload(t *testing.T) {
	t.Parallel()
	for _, storage := range []string{e2e.S3, e2e.FS} {
		t.Run(storage, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, e2e.Options{Storage: storage, S3Params: url.Values{"part_size_mib": {"5"}}}, 3)
			victim := e.servers[0]
			pkg := ipa("com.example.crash", "1", 12<<20)
			st := uploadStream(t, victim, e.upload, pkg, false)
			if err := st.send(7 << 20); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, requestTimeout, "the upload to reach storage", func() bool { return uploadInStorage(t, e) })
			var cut []multipartUpload
			if e.h.S3 != nil {
				cut = openUploads(t, e)
			}
			victim.Kill(t)
			st.pump() // the client notices when it sends more
			if _, err := st.wait(t); err == nil {
				t.Errorf("the upload to the killed replica got a response: %s", st.resp)
			}

			if n := queryInt(t, e.db, `SELECT count(*) FROM releases`); n != 0 {
				t.Errorf("%d releases recorded by the killed upload", n)
			}
			if n := queryInt(t, e.db, `SELECT count(*) FROM storage_objects WHERE state = 'pending'`); n != 1 {
				t.Errorf("%d pending objects, want the killed upload's one", n)
			}
			for i, s := range e.servers[1:] {
				decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.survivor", fmt.Sprint(i), 0)))
			}
			if !uploadInStorage(t, e) {
				t.Errorf("the killed upload left nothing in storage; the test no longer shows it collected")
			}
			noServerErrors(t, e.servers[1:]...)
			e.servers = e.servers[1:]
			checkConsistent(t, e)
			for _, u := range cut {
				if !uploadAborted(t, e, u) {
					t.Errorf("the killed upload's multipart upload %s was not aborted by gc", u.key)
				}
			}
		})
	}
}

// uploadInStorage reports whether an unfinished upload is in storage: an S3 multipart upload, or
// a temporary file of the filesystem backend.
func uploadInStorage(t *testing.T, e *env) bool {
	if e.h.S3 != nil {
		return len(e.h.MultipartUploads(t)) > 0
	}
	for key := range listStorage(t, e.h) {
		if strings.Contains(key, ".slipway-tmp-") {
			return true
		}
	}
	return false
}

// TestClientDisconnectMidUpload: a client drops its connection in the middle of an upload. The
// server aborts: no multipart upload, no object, no bookkeeping row, no release is left, without
// waiting for the collector.
func TestClientDisconnectMidUpload(t *testing.T) {
	t.Parallel()
	for _, storage := range []string{e2e.S3, e2e.FS} {
		t.Run(storage, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, e2e.Options{Storage: storage, S3Params: url.Values{"part_size_mib": {"5"}}}, 1)
			s := e.servers[0]
			pkg := ipa("com.example.gone", "1", 12<<20)
			st := uploadStream(t, s, e.upload, pkg, false)
			if err := st.send(7 << 20); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, requestTimeout, "the upload to reach storage", func() bool { return uploadInStorage(t, e) })
			var cut []multipartUpload
			if e.h.S3 != nil {
				cut = openUploads(t, e)
			}
			st.disconnect()
			if _, err := st.wait(t); err == nil {
				t.Errorf("the disconnected upload got a response: %s", st.resp)
			}
			testkit.Eventually(t, time.Minute, "the server to clean up after the disconnect", func() bool {
				for _, u := range cut {
					if !uploadAborted(t, e, u) {
						return false
					}
				}
				return !uploadInStorage(t, e) && len(listStorage(t, e.h)) == 0 &&
					queryInt(t, e.db, `SELECT count(*) FROM storage_objects`) == 0
			})
			s.WaitLog(t, `"route":"/api/apps/upload"`)
			if n := queryInt(t, e.db, `SELECT count(*) FROM releases`); n != 0 {
				t.Errorf("%d releases recorded by a disconnected upload", n)
			}
			noServerErrors(t, s)
			checkConsistent(t, e)
		})
	}
}

// TestStartWhilePostgresDown: a replica started while Postgres is down (its first start: the
// database does not even exist yet) does not exit nor crash-loop. It listens at once: /healthz
// answers 200, /readyz 503 (it is starting), the API 503 with Retry-After and {"error"}, and the
// internal report says what it waits for. Once Postgres answers it creates the database, migrates
// it and serves, without a restart.
func TestStartWhilePostgresDown(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	h := e2e.New(t, e2e.Options{DatabaseURL: c.URL("slipway_late")})
	c.stop(t)

	s := h.StartListening(t, "SLIPWAY_INTERNAL_ADDR=auto")
	pid := s.PID
	if r := call(t, http.MethodGet, s.URL+"/healthz", nil); r.Status != http.StatusOK {
		t.Errorf("healthz while Postgres is down at start: %s", r)
	}
	r := call(t, http.MethodGet, s.URL+"/readyz", nil)
	expectError(t, "readyz while starting", r, http.StatusServiceUnavailable)
	if strings.Contains(string(r.Body), "database") {
		t.Errorf("the public readyz names a dependency: %s", r.Body)
	}
	for _, path := range []string{"/api/apps", "/api/apps/latest?channel_key=x&release_version=1&build_version=1", "/api/health"} {
		expectError(t, path+" while starting", call(t, http.MethodGet, s.URL+path, nil), http.StatusServiceUnavailable)
	}
	up, err := uploadApp(s, "no-token-yet", ipa("com.example.late", "1", 0))
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, "upload while starting", up, http.StatusServiceUnavailable)
	report := call(t, http.MethodGet, s.InternalURL+"/internal/readyz", nil)
	if report.Status != http.StatusServiceUnavailable || !strings.Contains(string(report.Body), `"status":"starting"`) ||
		!strings.Contains(string(report.Body), `"name":"database","state":"unavailable"`) {
		t.Errorf("internal readyz while starting: %s", report)
	}
	if r := call(t, http.MethodGet, s.URL+"/metrics", nil); r.Status != http.StatusNotFound {
		t.Errorf("public /metrics with an internal port: %s, want 404", r)
	}
	if r := call(t, http.MethodGet, s.InternalURL+"/metrics", nil); r.Status != http.StatusOK {
		t.Errorf("internal /metrics: %s", r)
	}
	testkit.Eventually(t, time.Minute, "the replica to log that it waits for the database", func() bool {
		return strings.Contains(s.Logs(), "not ready: waiting for the database")
	})

	c.start(t)
	testkit.Eventually(t, 2*time.Minute, "readyz once Postgres is up", func() bool {
		r, err := request(http.MethodGet, s.URL+"/readyz", nil)
		return err == nil && r.Status == http.StatusOK
	})
	upload := h.CreateToken(t, "ci", "upload")
	rel := decodeRelease(t, mustUpload(t, s, upload, ipa("com.example.late", "1", 0)))
	if r := call(t, http.MethodGet, s.URL+"/api/apps/latest?release_version=0.1&build_version=0&channel_key="+rel.Channel.Slug, nil); r.Status != http.StatusOK {
		t.Errorf("latest once started: %s", r)
	}
	if s.Exited() || s.PID != pid {
		t.Fatal("the replica exited or was restarted")
	}
	noServerErrors(t, s)
}

// TestReadOnlyDatabaseKeepsReplicaReady plays a replica left on a standby after a failover (here
// with default_transaction_read_only, which makes Postgres answer writes with SQLSTATE 25006 as a
// standby does, and every connection made afresh). The replica stays ready (a read-only database
// is the same for every replica: docs/operations.md, Health), its internal report says the
// database is read-only, writes answer 503 with Retry-After and reads are served; once the
// database accepts writes again, writes succeed without a restart.
func TestReadOnlyDatabaseKeepsReplicaReady(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{}, 1, "SLIPWAY_INTERNAL_ADDR=auto")
	s := e.servers[0]
	seed := decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.standby", "1", 0)))
	u, err := url.Parse(e.h.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, os.Getenv("SLIPWAY_TEST_DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	setReadOnly := func(on bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s SET default_transaction_read_only = %v`, pgx.Identifier{dbName}.Sanitize(), on)); err != nil {
			t.Fatal(err)
		}
		// Connections made before keep their setting: end the replica's, as a failover does.
		if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND application_name <> $2 AND pid <> pg_backend_pid()`, dbName, checkerApp); err != nil {
			t.Fatal(err)
		}
	}
	setReadOnly(true)

	testkit.Eventually(t, time.Minute, "the internal readyz to report the database read-only", func() bool {
		r, err := request(http.MethodGet, s.InternalURL+"/internal/readyz", nil)
		return err == nil && strings.Contains(string(r.Body), `"name":"database","state":"read-only"`)
	})
	if r := call(t, http.MethodGet, s.URL+"/readyz", nil); r.Status != http.StatusOK {
		t.Errorf("readyz on a read-only database: %s, want 200", r)
	}
	create := func() (*response, error) {
		return request(http.MethodPost, s.URL+"/api/apps", strings.NewReader(`{"name":"During"}`),
			"Content-Type", "application/json", "Authorization", "Token "+e.admin)
	}
	r, err := create()
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, "a write on a read-only database", r, http.StatusServiceUnavailable)
	if r := call(t, http.MethodGet, fmt.Sprintf("%s/api/apps/latest?release_version=0.1&build_version=0&channel_key=%s", s.URL, seed.Channel.Slug), nil); r.Status != http.StatusOK {
		t.Errorf("latest on a read-only database: %s", r)
	}

	setReadOnly(false)
	testkit.Eventually(t, time.Minute, "writes to succeed again", func() bool {
		r, err := create()
		return err == nil && r.Status == http.StatusCreated
	})
	noServerErrors(t, s)
}
