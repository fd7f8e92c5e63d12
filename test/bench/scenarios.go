package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/uploader"
	"github.com/slipwayhq/slipway/test/testkit"
)

type backendKind int

const (
	backendS3 backendKind = iota
	backendFS
)

// cpuSample is the CPU time each process used during one measured operation.
type cpuSample struct {
	Server, MinIO, Client time.Duration
}

// timedRun is one measured transfer of the package.
type timedRun struct {
	Took time.Duration
	CPU  cpuSample
	// Syscalls are the server's read and write system calls during the run.
	Syscalls syscalls
	// Switches is how often the scheduler put one of the server's threads on a CPU during the
	// run (the floor scenario's).
	Switches int64
	// AfterBody is, for uploads through Slipway, the time between the client's last byte and the
	// response; StoreTail is the part of it until the object was complete in storage (the server's
	// "upload stored" debug log line), the rest being parsing, the icon and the database.
	AfterBody, StoreTail time.Duration
}

// backendResult holds every figure measured on one storage backend.
type backendResult struct {
	Kind backendKind
	Name string
	Size int64

	// Upload throughput: Slipway, the direct baseline, (S3) Slipway's storage code alone, and
	// the -compare-bin server. First is the untimed first upload on a fresh server.
	Slipway, Direct, DirectStore, Compare []timedRun
	// Session is the resumable-session path (S3): parts straight to the bucket, then complete;
	// SessionCLI the same through pkg/uploader, which also hashes the file and each part.
	Session, SessionCLI         []timedRun
	First                       timedRun
	DirectName, DirectStoreName string

	// Server memory: at rest after start, after one upload, and after N concurrent uploads (each
	// scenario on a fresh process, since VmHWM is a lifetime peak).
	Baseline1, Peak1, Baseline4, Peak4 memory
	Concurrency                        int
	Concurrent, ConcurrentDirect       time.Duration // wall time of N uploads at once, through Slipway and direct
	Runtime1                           map[string]float64

	// Parsing the first upload: storage requests and bytes (Prometheus histogram deltas).
	ParseGETs, ParseBytes, ParseSeconds, ParseCount float64

	Load                    []loadResult
	Profile, CompareProfile *profileResult
}

// benchBackend runs every scenario on one backend with a fresh database.
func (e *env) benchBackend(ctx context.Context, kind backendKind) (*backendResult, error) {
	r := &backendResult{Kind: kind, Size: e.pkg.Size, Concurrency: e.opts.concurrency}
	if err := e.createDatabase(ctx); err != nil {
		return nil, err
	}
	var (
		storageURL string
		direct     func(ctx context.Context, key string) (time.Duration, error)
		store      blob.Backend
		cleanup    func()
		err        error
	)
	switch kind {
	case backendS3:
		r.Name = "S3 (MinIO on loopback)"
		storageURL = e.s3StorageURL()
		r.DirectName = "direct PutObject"
		r.DirectStoreName = "storage/s3 Put (Slipway's multipart code, no HTTP server)"
		direct = func(ctx context.Context, key string) (time.Duration, error) { return e.directPut(ctx, e.ipa, key) }
		if store, err = e.s3Backend(ctx); err != nil {
			return nil, err
		}
		cleanup = func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := e.emptyBucket(cctx, ""); err != nil {
				log.Printf("emptying the bucket: %v", err)
			}
		}
	case backendFS:
		r.Name = "filesystem"
		root := filepath.Join(e.tmp, "fs-objects")
		directRoot := filepath.Join(e.tmp, "fs-direct")
		for _, d := range []string{root, directRoot} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return nil, err
			}
		}
		storageURL = (&url.URL{Scheme: "file", Path: root}).String()
		r.DirectName = "storage/fs Put (write, fsync, rename; no HTTP server)"
		fsStore, err := fsBackend(directRoot)
		if err != nil {
			return nil, err
		}
		direct = func(ctx context.Context, key string) (time.Duration, error) {
			defer fsStore.Delete(context.Background(), key)
			return directStore(ctx, fsStore, e.ipa, key)
		}
		cleanup = func() { os.RemoveAll(root); os.RemoveAll(directRoot) }
	}
	defer cleanup()
	log.Printf("== %s", r.Name)

	token, err := e.createToken(ctx, storageURL, "bench")
	if err != nil {
		return nil, err
	}
	pkg := openFile(e.ipa)
	measure := func(srv *server, f func() error) (timedRun, error) {
		pid := 0
		if srv != nil {
			pid = srv.pid
		}
		s0, m0, c0, io0 := cpuTime(pid), cpuTime(e.minioPID), selfCPU(), readSyscalls(pid)
		start := time.Now()
		err := f()
		took := time.Since(start)
		io1 := readSyscalls(pid)
		return timedRun{Took: took, CPU: cpuSample{Server: cpuTime(pid) - s0, MinIO: cpuTime(e.minioPID) - m0, Client: selfCPU() - c0},
			Syscalls: syscalls{Reads: io1.Reads - io0.Reads, Writes: io1.Writes - io0.Writes,
				ReadBytes: io1.ReadBytes - io0.ReadBytes, WriteBytes: io1.WriteBytes - io0.WriteBytes}}, err
	}

	// Warm-up (not measured): the page cache holds the package, the store has seen a large write.
	if _, err := direct(ctx, "warmup/"+testkit.RandomHex(4)); err != nil {
		return nil, err
	}
	if kind == backendS3 {
		_ = e.emptyBucket(ctx, "warmup/")
	}

	// Scenario 1: a fresh server and one upload (peak RSS, parse reads; it also warms the server
	// up), then the timed rounds on the same server.
	// Debug logging adds one line per upload ("upload stored", when the object is complete), which
	// splits the time after the client's last byte; request logs stay at info.
	srv, err := e.startServer(ctx, storageURL, fmt.Sprintf("%d-single", kind), "SLIPWAY_LOG_LEVEL=debug")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	client := newUploadClient(srv.url, token)
	var cmpClient *uploadClient
	var cmpSrv *server
	if e.opts.compareBin != "" {
		if cmpSrv, err = e.startBinary(ctx, e.opts.compareBin, storageURL, fmt.Sprintf("%d-compare", kind), "SLIPWAY_LOG_LEVEL=debug"); err != nil {
			return nil, err
		}
		defer cmpSrv.stop()
		cmpClient = newUploadClient(cmpSrv.url, token)
	}
	settle()
	if r.Baseline1, err = readMemory(srv.pid); err != nil {
		return nil, err
	}
	before, err := srv.scrape()
	if err != nil {
		return nil, err
	}
	log.Printf("first upload through Slipway (peak RSS, parse reads)")
	r.First, err = measure(srv, func() error {
		_, _, err := client.upload(ctx, pkg, map[string]string{"changelog": "first upload", "release_type": "adhoc"})
		return err
	})
	if err != nil {
		return nil, err
	}
	if r.Peak1, err = readMemory(srv.pid); err != nil {
		return nil, err
	}
	after, err := srv.scrape()
	if err != nil {
		return nil, err
	}
	delta := func(name string) float64 { return after[name] - before[name] }
	r.ParseGETs, r.ParseBytes = delta("slipway_parse_storage_gets_sum"), delta("slipway_parse_storage_bytes_sum")
	r.ParseCount = delta("slipway_parse_storage_gets_count")
	r.ParseSeconds = delta(`slipway_parse_duration_seconds_sum{format="ipa"}`)
	r.Runtime1 = after
	if cmpClient != nil {
		if _, _, err := cmpClient.upload(ctx, pkg, map[string]string{"changelog": "warm-up"}); err != nil {
			return nil, err
		}
	}

	slipwayRun := func(s *server, c *uploadClient) (timedRun, error) {
		var t uploadTiming
		logAt := s.logSize()
		run, err := measure(s, func() error {
			var err error
			t, _, err = c.upload(ctx, pkg, map[string]string{"changelog": "benchmark upload", "release_type": "adhoc"})
			return err
		})
		run.AfterBody = t.AfterBody
		if at := s.storedAt(logAt); !at.IsZero() && at.After(t.LastByte) {
			run.StoreTail = at.Sub(t.LastByte)
		}
		return run, err
	}
	for i := range e.opts.runs {
		log.Printf("round %d/%d: upload through Slipway", i+1, e.opts.runs)
		run, err := slipwayRun(srv, client)
		if err != nil {
			return nil, err
		}
		r.Slipway = append(r.Slipway, run)

		log.Printf("round %d/%d: %s", i+1, e.opts.runs, r.DirectName)
		key := "direct/" + testkit.RandomHex(8)
		run, err = measure(nil, func() error { _, err := direct(ctx, key); return err })
		if err != nil {
			return nil, err
		}
		r.Direct = append(r.Direct, run)
		if kind == backendS3 {
			log.Printf("round %d/%d: upload session (parts straight to MinIO)", i+1, e.opts.runs)
			run, err = measure(srv, func() error { return client.sessionUpload(ctx, e.ipa, e.pkg.Size) })
			if err != nil {
				return nil, err
			}
			r.Session = append(r.Session, run)
			log.Printf("round %d/%d: upload session through the CLI's client", i+1, e.opts.runs)
			cli := &uploader.Client{BaseURL: srv.url, Token: token}
			run, err = measure(srv, func() error {
				_, err := cli.UploadAppSession(ctx, e.ipa, uploader.AppForm{Changelog: "session upload (CLI)"}, nil)
				return err
			})
			if err != nil {
				return nil, err
			}
			r.SessionCLI = append(r.SessionCLI, run)
			_ = store.Delete(ctx, key)
			log.Printf("round %d/%d: %s", i+1, e.opts.runs, r.DirectStoreName)
			run, err = measure(nil, func() error { _, err := directStore(ctx, store, e.ipa, key); return err })
			if err != nil {
				return nil, err
			}
			r.DirectStore = append(r.DirectStore, run)
			_ = store.Delete(ctx, key)
		}
		if cmpClient != nil {
			log.Printf("round %d/%d: upload through the -compare-bin server", i+1, e.opts.runs)
			run, err := slipwayRun(cmpSrv, cmpClient)
			if err != nil {
				return nil, err
			}
			r.Compare = append(r.Compare, run)
		}
	}
	if e.wantProfile(r) {
		r.Profile = e.profileUpload(ctx, srv, client, pkg)
		if cmpSrv != nil {
			r.CompareProfile = e.profileUpload(ctx, cmpSrv, cmpClient, pkg)
		}
	}
	if cmpSrv != nil {
		cmpSrv.stop()
	}
	srv.stop()

	// Scenario 2: a fresh server, N uploads at once.
	srv4, err := e.startServer(ctx, storageURL, fmt.Sprintf("%d-concurrent", kind))
	if err != nil {
		return nil, err
	}
	defer srv4.stop()
	client4 := newUploadClient(srv4.url, token)
	settle()
	if r.Baseline4, err = readMemory(srv4.pid); err != nil {
		return nil, err
	}
	log.Printf("%d concurrent uploads through Slipway", r.Concurrency)
	run, err := measure(srv4, func() error {
		return parallel(r.Concurrency, func(int) error {
			_, _, err := client4.upload(ctx, pkg, map[string]string{"changelog": "concurrent upload"})
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	r.Concurrent = run.Took
	if r.Peak4, err = readMemory(srv4.pid); err != nil {
		return nil, err
	}
	log.Printf("%d concurrent %s", r.Concurrency, r.DirectName)
	run, err = measure(nil, func() error {
		return parallel(r.Concurrency, func(i int) error {
			_, err := direct(ctx, fmt.Sprintf("direct/concurrent-%d", i))
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	r.ConcurrentDirect = run.Took
	if kind == backendS3 {
		_ = e.emptyBucket(ctx, "direct/")
	}

	// Scenario 3: the read API next to /healthz, on a channel with some releases.
	slug, newest, err := e.uploadSmallReleases(ctx, client4)
	if err != nil {
		return nil, err
	}
	q := url.Values{"channel_key": {slug}}
	latest := url.Values{"channel_key": {slug}, "release_version": {"1.0.0"}, "build_version": {"1"}}
	// As the Zealot iOS SDK asks, from a build a few releases old.
	sdk := url.Values{"channel_key": {slug}, "release_version": {fmt.Sprintf("1.%d.0", max(e.opts.releases-5, 0))},
		"build_version": {strconv.Itoa(max(e.opts.releases-4, 1))}, "bundle_id": {"com.example.reader"}, "sdk": {"ios-0.2.1"}}
	exist := url.Values{"channel_key": {slug}, "bundle_id": {"com.example.reader"}, "release_version": {"1.0.0"}, "build_version": {"1"}}
	// The desktop update feeds of a macOS channel with some releases.
	macSlug, err := e.uploadMacReleases(ctx, client4, srv4.url)
	if err != nil {
		return nil, err
	}
	for _, ep := range []struct{ name, path string }{
		{"/healthz", "/healthz"},
		{loadLatest, "/api/apps/latest?" + latest.Encode()},
		{loadLatestSDK, "/api/apps/latest?" + sdk.Encode()},
		{loadVersions, "/api/apps/versions?" + q.Encode() + "&per_page=25"},
		{loadVersionExist, "/api/apps/version_exist?" + exist.Encode()},
		// The newest release's insights and its diff against the one before (the
		// snapshots recorded at upload; nothing cached).
		{loadInsights, fmt.Sprintf("/api/releases/%d/insights?", newest) + url.Values{"token": {client4.token}}.Encode()},
		{loadDiff, fmt.Sprintf("/api/releases/%d/diff?", newest) + url.Values{"token": {client4.token}}.Encode()},
		{loadAppcast, "/channels/" + macSlug + "/appcast.xml"},
		{loadElectron, "/channels/" + macSlug + "/electron/latest-mac.yml"},
	} {
		log.Printf("load test %s: %d connections for %s", ep.name, e.opts.conns, e.opts.duration)
		lr := loadTest(ctx, ep.name, srv4.url, ep.path, e.opts.conns, e.opts.duration)
		if lr.Requests == 0 || lr.Errors > 0 {
			return nil, fmt.Errorf("load test %s: %d requests, %d errors", ep.path, lr.Requests, lr.Errors)
		}
		r.Load = append(r.Load, lr)
	}
	srv4.stop()
	return r, ctx.Err()
}

// uploadSmallReleases uploads opts.releases small .ipa builds to one channel and returns its key
// and the newest release's id.
func (e *env) uploadSmallReleases(ctx context.Context, c *uploadClient) (string, int64, error) {
	log.Printf("uploading %d small releases to one channel", e.opts.releases)
	slug, newest := "", int64(0)
	for i := range max(e.opts.releases, 1) {
		ipa := appletest.BuildIPA(appletest.IPAOptions{
			AppName: "Reader", BundleID: "com.example.reader", Version: fmt.Sprintf("1.%d.0", i), Build: strconv.Itoa(i + 1),
			Profile: &appletest.ProfileOptions{Devices: []string{"00008030-000A1B2C3D4E5F60"}},
			Icons:   []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true}},
		})
		fields := map[string]string{"changelog": fmt.Sprintf("- change %d\n- fix %d", i, i), "branch": "main",
			"git_commit": fmt.Sprintf("%040x", i+1), "ci_url": "https://ci.example.com/builds/" + strconv.Itoa(i+1)}
		if slug != "" {
			fields["channel_key"] = slug
		}
		_, rel, err := c.upload(ctx, openBytes(ipa), fields)
		if err != nil {
			return "", 0, err
		}
		slug, newest = rel.Channel.Slug, rel.ID
	}
	return slug, newest, nil
}

// macFeedReleases is how many macOS builds the feeds' load test channel holds.
const macFeedReleases = 20

// uploadMacReleases uploads small macOS .zip builds to one channel, waits until the checksum
// verifier has verified them all (the appcast lists every one), and returns the channel's key.
func (e *env) uploadMacReleases(ctx context.Context, c *uploadClient, base string) (string, error) {
	log.Printf("uploading %d small macOS releases to one channel", macFeedReleases)
	slug := ""
	for i := range macFeedReleases {
		zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk",
			Version: fmt.Sprintf("1.%d.0", i), Build: strconv.Itoa(i + 1)})
		fields := map[string]string{"changelog": fmt.Sprintf("- change %d\n- fix %d", i, i),
			"ed_signature": base64.StdEncoding.EncodeToString(make([]byte, 64))}
		if slug != "" {
			fields["channel_key"] = slug
		}
		_, rel, err := c.upload(ctx, openBytes(zip), fields)
		if err != nil {
			return "", err
		}
		slug = rel.Channel.Slug
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		resp, err := http.Get(base + "/channels/" + slug + "/appcast.xml")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Count(b, []byte("<item>")) == macFeedReleases {
				return slug, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the macOS releases were not all verified in time")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantProfile says whether to record the server with perf during one more upload.
func (e *env) wantProfile(r *backendResult) bool {
	switch e.opts.profile {
	case "on":
		return true
	case "off":
		return false
	}
	return r.Kind == backendS3 && r.ratio() < targetRatio
}

// parallel runs f(0..n-1) at once and returns the first error.
func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// settle lets a fresh server finish starting (migrations, pools) before its memory is read.
func settle() { time.Sleep(time.Second) }
