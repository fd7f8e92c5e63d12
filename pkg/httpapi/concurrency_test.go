package httpapi_test

// Concurrency (issue 3): concurrent uploads to one channel get distinct versions and all
// succeed, concurrent auto-creating uploads create one app, scheme and channel, destroying an app
// removes its objects, the upload slots bound concurrent uploads, and the collector finds
// nothing left over.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// goUpload uploads from a goroutine other than the test's (no t.Fatal there): it returns the
// status and body, or an error.
func goUpload(e *testEnv, parts ...apptest.Part) (int, []byte, error) {
	body, ctype := apptest.Multipart(parts...)
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/apps/upload", body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Token "+e.UploadToken)
	resp, err := e.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// parallelUploads runs n uploads at once (parts(i) for the i-th) and returns their releases,
// failing unless every one is a 201.
func parallelUploads(t *testing.T, e *testEnv, n int, parts func(i int) []apptest.Part) []release {
	t.Helper()
	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, b, err := goUpload(e, parts(i)...)
			results[i] = result{s, b, err}
		}()
	}
	close(start)
	wg.Wait()
	rels := make([]release, n)
	for i, r := range results {
		if r.err != nil || r.status != http.StatusCreated {
			t.Fatalf("upload %d: %v %d %s", i, r.err, r.status, r.body)
		}
		rels[i] = e.fullRelease(t, &apptest.Response{Status: r.status, Header: http.Header{
			"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}}, Body: r.body})
	}
	return rels
}

func sortedVersions(rels []release) []int {
	var vs []int
	for _, r := range rels {
		vs = append(vs, r.Version)
	}
	slices.Sort(vs)
	return vs
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// appObjects returns the object keys (packages and icons) of an app's releases.
func appObjects(t *testing.T, e *testEnv, appID int64) []string {
	t.Helper()
	rows, err := e.DB.Pool.Query(context.Background(), `SELECT k FROM (
		SELECT r.object_key AS k, s.app_id FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id
		UNION ALL
		SELECT r.icon_key, s.app_id FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id WHERE r.icon_key IS NOT NULL
	) x WHERE app_id = $1 ORDER BY k`, appID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

func TestConcurrentUploads(t *testing.T) {
	e := newEnv(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.MaxConcurrentUploads = 64 }})
	admin := http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}}

	// A channel made beforehand, as an admin would, so versions start at 1.
	r := e.Do(t, http.MethodPost, "/api/apps", strings.NewReader(`{"name":"Concurrent"}`), admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("create app: %d %s", r.Status, r.Body)
	}
	var app struct{ ID int64 }
	r.JSON(t, &app)
	const slug = "c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0"
	e.exec(t, `WITH s AS (INSERT INTO schemes (app_id, name) VALUES ($1, 'Release') RETURNING id)
		INSERT INTO channels (scheme_id, name, slug, device_type) SELECT id, 'android', $2, 'android' FROM s`, app.ID, slug)

	var objectsMu sync.Mutex
	packages := map[int64][]byte{}

	var herdApp int64
	t.Run("uploads", func(t *testing.T) {
		t.Run("20 uploads to one channel", func(t *testing.T) {
			t.Parallel()
			data := make([][]byte, 20)
			for i := range data {
				data[i] = apk("com.example.concurrent", fmt.Sprintf("1.0.%d", i), i+1)
			}
			rels := parallelUploads(t, e, 20, func(i int) []apptest.Part {
				return []apptest.Part{apptest.Field("channel_key", slug), apptest.File("c.apk", data[i])}
			})
			if vs := sortedVersions(rels); !slices.Equal(vs, seq(20)) {
				t.Fatalf("versions %v", vs)
			}
			var l listing
			r := e.Get(t, "/api/apps/versions?channel_key="+slug+"&per_page=100")
			r.JSON(t, &l)
			var listed []release
			if err := json.Unmarshal(l.Releases, &listed); err != nil || len(listed) != 20 {
				t.Fatalf("listed %d releases (%v)", len(listed), err)
			}
			// Every package is in the bucket and comes back intact.
			objs := e.Objects(t)
			for i, rel := range rels {
				var key string
				if err := e.DB.Pool.QueryRow(context.Background(), `SELECT object_key FROM releases WHERE id = $1`, rel.ID).Scan(&key); err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(objs, key) {
					t.Errorf("release %d: object missing from the bucket", rel.ID)
				}
				if got := e.install(t, rel, nil); !bytes.Equal(got, data[i]) {
					t.Errorf("release %d (upload %d) downloads other bytes", rel.ID, i)
				}
				objectsMu.Lock()
				packages[rel.ID] = data[i]
				objectsMu.Unlock()
			}
		})

		t.Run("10 auto-creating uploads of one new app", func(t *testing.T) {
			t.Parallel()
			rels := parallelUploads(t, e, 10, func(i int) []apptest.Part {
				return []apptest.Part{apptest.Field("name", "Herd"), apptest.File("h.ipa", iconIPA("Herd", "com.example.herd", fmt.Sprintf("1.%d", i)))}
			})
			if vs := sortedVersions(rels); !slices.Equal(vs, seq(10)) {
				t.Fatalf("versions %v", vs)
			}
			herdApp = rels[0].App.ID
			for _, rel := range rels {
				if rel.App.ID != herdApp || rel.Scheme.ID != rels[0].Scheme.ID || rel.Channel.Slug != rels[0].Channel.Slug {
					t.Fatalf("twins: %+v vs %+v", rel, rels[0])
				}
			}
			var apps []struct {
				ID      int64  `json:"id"`
				Name    string `json:"name"`
				Schemes []struct {
					Name     string    `json:"name"`
					Channels []channel `json:"channels"`
				} `json:"schemes"`
			}
			e.GetWith(t, "/api/apps?per_page=100", e.AdminToken).JSON(t, &apps)
			herds := 0
			for _, a := range apps {
				if a.Name == "Herd" {
					herds++
					if len(a.Schemes) != 1 || len(a.Schemes[0].Channels) != 1 {
						t.Fatalf("Herd app %+v", a)
					}
				}
			}
			if herds != 1 {
				t.Fatalf("%d apps named Herd", herds)
			}
		})

		t.Run("mixed platforms of one new app", func(t *testing.T) {
			t.Parallel()
			rels := parallelUploads(t, e, 10, func(i int) []apptest.Part {
				if i%2 == 0 {
					return []apptest.Part{apptest.Field("name", "Mixed"), apptest.File("m.ipa", ipa("com.example.mixed", "1.0", fmt.Sprint(i)))}
				}
				return []apptest.Part{apptest.Field("name", "Mixed"), apptest.File("m.apk", apk("com.example.mixed", "1.0", i))}
			})
			channels := map[string][]release{}
			for _, rel := range rels {
				if rel.App.ID != rels[0].App.ID {
					t.Fatalf("two apps named Mixed")
				}
				channels[rel.Scheme.Name+"/"+rel.Channel.Name+"/"+rel.Channel.Slug] = append(channels[rel.Scheme.Name+"/"+rel.Channel.Name+"/"+rel.Channel.Slug], rel)
			}
			if len(channels) != 2 {
				t.Fatalf("channels %v", channels)
			}
			for k, rs := range channels {
				if !slices.Equal(sortedVersions(rs), seq(5)) || !(strings.HasPrefix(k, "Debug/ios/") || strings.HasPrefix(k, "Adhoc/android/")) {
					t.Fatalf("channel %s: versions %v", k, sortedVersions(rs))
				}
			}
		})

	})
	if n := e.rows(t, "storage_objects"); n != 0 {
		t.Errorf("%d bookkeeping rows after the uploads", n)
	}

	t.Run("destroying apps removes their objects", func(t *testing.T) {
		if herdApp == 0 {
			t.Skip("needs the Herd app")
		}
		var apps []struct {
			ID int64 `json:"id"`
		}
		e.GetWith(t, "/api/apps?per_page=100", e.AdminToken).JSON(t, &apps)
		for _, a := range apps {
			keys := appObjects(t, e, a.ID)
			if a.ID == herdApp && len(keys) != 20 { // 10 packages, 10 icons
				t.Fatalf("Herd has %d objects", len(keys))
			}
			r := e.Do(t, http.MethodDelete, fmt.Sprintf("/api/apps/%d", a.ID), nil, http.Header{"Authorization": {"Token " + e.AdminToken}})
			if r.Status != http.StatusOK || string(r.Body) != `{"mesage":"OK"}` {
				t.Fatalf("destroy app %d: %d %s", a.ID, r.Status, r.Body)
			}
			objs := e.Objects(t)
			for _, k := range keys {
				if slices.Contains(objs, k) {
					t.Errorf("app %d destroyed, object %s still stored", a.ID, k)
				}
			}
			wantError(t, e.GetWith(t, fmt.Sprintf("/api/apps/%d", a.ID), e.AdminToken), http.StatusNotFound)
		}
		// Downloads of destroyed releases are gone.
		for id := range packages {
			wantError(t, e.Get(t, fmt.Sprintf("/download/releases/%d", id)), http.StatusNotFound)
		}
		if objs := e.Objects(t); len(objs) != 0 {
			t.Fatalf("objects left after destroying every app: %q", objs)
		}
		res, err := e.Service.Collector.CollectGarbage(context.Background(), 0)
		if err != nil || res.Failed != 0 || res.Deleted != 0 {
			t.Fatalf("collector after destroy: %+v %v", res, err)
		}
		for _, table := range []string{"apps", "schemes", "channels", "releases", "storage_objects"} {
			if n := e.rows(t, table); n != 0 {
				t.Errorf("%d rows left in %s", n, table)
			}
		}
	})
}

func gaugeValue(g prometheus.Gauge) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

// heldUpload starts an upload and sends only its first bytes, so that it holds a slot until
// finish sends the rest; it answers on done.
type heldUpload struct {
	pw   *io.PipeWriter
	raw  []byte
	done chan heldResult
}

type heldResult struct {
	status int
	body   []byte
	err    error
}

func holdUpload(t *testing.T, e *testEnv, data []byte) *heldUpload {
	t.Helper()
	return holdUploadAs(t, e, e.UploadToken, data)
}

// holdUploadAs is holdUpload with the given token.
func holdUploadAs(t *testing.T, e *testEnv, token string, data []byte) *heldUpload {
	t.Helper()
	body, ctype := apptest.Multipart(apptest.File("s.apk", data))
	h := &heldUpload{raw: body.Bytes(), done: make(chan heldResult, 1)}
	pr, pw := io.Pipe()
	h.pw = pw
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/apps/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Token "+token)
	go func() {
		resp, err := e.Client.Do(req)
		if err != nil {
			h.done <- heldResult{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		h.done <- heldResult{resp.StatusCode, b, err}
	}()
	if _, err := pw.Write(h.raw[:100]); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *heldUpload) finish(t *testing.T) heldResult {
	t.Helper()
	if _, err := h.pw.Write(h.raw[100:]); err != nil {
		t.Fatal(err)
	}
	h.pw.Close()
	return <-h.done
}

func waitGauge(t *testing.T, g prometheus.Gauge, want float64, what string) {
	t.Helper()
	testkit.EventuallyOK(t, time.Minute, what, func() error {
		if got := gaugeValue(g); got != want {
			return fmt.Errorf("the gauge is %v, want %v", got, want)
		}
		return nil
	})
}

// TestUploadQueue: beyond SLIPWAY_MAX_CONCURRENT_UPLOADS an upload waits in line for a slot
// instead of being refused, and completes once one frees up; only an upload that finds the line
// full (SLIPWAY_UPLOAD_QUEUE_LENGTH), or waits longer than SLIPWAY_UPLOAD_QUEUE_TIMEOUT, gets 429
// with Retry-After, and keeps nothing.
func TestUploadQueue(t *testing.T) {
	t.Run("waits, then completes", func(t *testing.T) {
		e := newEnv(t, apptest.Options{Configure: func(c *config.Config) {
			c.MaxConcurrentUploads, c.UploadQueueLength, c.UploadQueueTimeout = 1, 1, time.Minute
		}})
		data := apk("com.example.queue", "1.0", 1)
		held := holdUpload(t, e, data)
		waitGauge(t, e.Metrics.UploadsActive, 1, "the held upload taking the slot")

		queued := make(chan *apptest.Response, 1)
		go func() { queued <- e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("q.apk", data)) }()
		waitGauge(t, e.Metrics.UploadsWaiting, 1, "the second upload waiting in line")

		// The line holds one: a third upload is refused at once.
		r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("t.apk", data))
		wantError(t, r, http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}

		if res := held.finish(t); res.err != nil || res.status != http.StatusCreated {
			t.Fatalf("held upload: %v %d %s", res.err, res.status, res.body)
		}
		if r := <-queued; r.Status != http.StatusCreated {
			t.Fatalf("queued upload: %d %s", r.Status, r.Body)
		}
		if n := e.rows(t, "releases"); n != 2 {
			t.Fatalf("%d releases, want the held and the queued one", n)
		}
		if rel := e.uploadOK(t, "after.apk", data); rel.Version != 3 {
			t.Fatalf("upload after the line emptied: %+v", rel)
		}
	})

	t.Run("waits too long", func(t *testing.T) {
		e := newEnv(t, apptest.Options{Configure: func(c *config.Config) {
			c.MaxConcurrentUploads, c.UploadQueueTimeout = 1, 200*time.Millisecond
		}})
		data := apk("com.example.queue", "1.0", 1)
		held := holdUpload(t, e, data)
		waitGauge(t, e.Metrics.UploadsActive, 1, "the held upload taking the slot")
		r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("t.apk", data))
		wantError(t, r, http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		if res := held.finish(t); res.status != http.StatusCreated {
			t.Fatalf("held upload: %v %d %s", res.err, res.status, res.body)
		}
		if n := e.rows(t, "releases"); n != 1 {
			t.Fatalf("%d releases, want only the held one", n)
		}
	})
}

// TestConcurrentIdempotentRetries: retries with one Idempotency-Key that race each other record
// one release; every one answers 201 with it, and only its objects stay.
func TestConcurrentIdempotentRetries(t *testing.T) {
	e := newEnv(t, apptest.Options{Storage: apptest.S3})
	data := iconIPA("Retry", "com.example.retry", "1.0")
	const n = 8
	type result struct {
		status int
		body   []byte
		err    error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, ctype := apptest.Multipart(apptest.Field("name", "Retry"), apptest.File("r.ipa", data))
			req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/apps/upload", body)
			req.Header.Set("Content-Type", ctype)
			req.Header.Set("Authorization", "Token "+e.UploadToken)
			req.Header.Set("Idempotency-Key", "pipeline-7/attempt")
			<-start
			resp, err := e.Client.Do(req)
			if err != nil {
				results[i] = result{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			results[i] = result{resp.StatusCode, b, err}
		}()
	}
	close(start)
	wg.Wait()
	var id int64
	for i, r := range results {
		if r.err != nil || r.status != http.StatusCreated {
			t.Fatalf("retry %d: %v %d %s", i, r.err, r.status, r.body)
		}
		rel := e.fullRelease(t, &apptest.Response{Status: r.status, Header: http.Header{
			"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}}, Body: r.body})
		if id == 0 {
			id = rel.ID
		}
		if rel.ID != id || rel.Version != 1 {
			t.Fatalf("retry %d answered release %d v%d, another answered %d", i, rel.ID, rel.Version, id)
		}
	}
	if n := e.rows(t, "releases"); n != 1 {
		t.Fatalf("%d releases", n)
	}
	if n := e.rows(t, "storage_objects"); n != 0 {
		t.Fatalf("%d bookkeeping rows", n)
	}
	var app struct{ ID int64 }
	_ = e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM apps`).Scan(&app.ID)
	objs := e.Objects(t)
	slices.Sort(objs)
	if want := appObjects(t, e, app.ID); !slices.Equal(objs, want) || len(want) != 2 {
		t.Fatalf("bucket holds %q, the release owns %q", objs, want)
	}
}

// TestDestroyDuringUploads: an app destroyed while uploads to its channel are in flight ends with
// no release and, once the collector has run, no object: each upload either landed before the
// destroy (and went with it) or failed with 404.
func TestDestroyDuringUploads(t *testing.T) {
	e := newEnv(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) { c.MaxConcurrentUploads = 64 }})
	first := e.uploadOK(t, "d.apk", apk("com.example.doomed", "1.0", 1), apptest.Field("name", "Doomed"))
	const n = 12
	statuses := make([]int, n)
	errors := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i], _, errors[i] = goUpload(e, apptest.Field("channel_key", first.Channel.Slug),
				apptest.File("d.apk", apk("com.example.doomed", "1.0", i+2)))
		}()
	}
	wg.Add(1)
	destroyStatus := 0
	go func() {
		defer wg.Done()
		<-start
		req, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/api/apps/%d", e.URL, first.App.ID), nil)
		req.Header.Set("Authorization", "Token "+e.AdminToken)
		if resp, err := e.Client.Do(req); err == nil {
			destroyStatus = resp.StatusCode
			resp.Body.Close()
		}
	}()
	close(start)
	wg.Wait()
	if destroyStatus != http.StatusOK {
		t.Fatalf("destroy: %d", destroyStatus)
	}
	for i := range n {
		if errors[i] != nil || (statuses[i] != http.StatusCreated && statuses[i] != http.StatusNotFound) {
			t.Errorf("upload %d during the destroy: %v %d", i, errors[i], statuses[i])
		}
	}
	res, err := e.Service.Collector.CollectGarbage(context.Background(), 0)
	if err != nil || res.Failed != 0 {
		t.Fatalf("collector: %+v %v", res, err)
	}
	assertNothingKept(t, e)
}
