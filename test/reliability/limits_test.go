package reliability

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// nothingKept waits until no upload is pending and checks that no object, bookkeeping row or
// multipart upload was left by refused uploads (before any collector run).
func nothingKept(t *testing.T, e *env, wantObjects int) {
	t.Helper()
	testkit.Eventually(t, time.Minute, "refused uploads to be cleaned up", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM storage_objects`) == 0
	})
	if n := len(listStorage(t, e.h)); n != wantObjects {
		t.Errorf("%d objects in storage, want %d: %v", n, wantObjects, listStorage(t, e.h))
	}
	if e.h.S3 != nil {
		if mu := openUploads(t, e); len(mu) != 0 {
			t.Errorf("unfinished multipart uploads left: %v", mu)
		}
	}
}

// TestUploadSizeLimit: an upload over SLIPWAY_MAX_UPLOAD_BYTES gets a 413 while the client is still
// sending (the server does not read the rest), and nothing of it is kept: not its first part
// already in S3 (multipart upload aborted), not its bookkeeping. The limit is 6 MiB with 5 MiB
// parts, so a part is stored before the limit is crossed.
func TestUploadSizeLimit(t *testing.T) {
	t.Parallel()
	const limit = 6 << 20
	e := newEnv(t, e2e.Options{Storage: e2e.S3, S3Params: url.Values{"part_size_mib": {"5"}}}, 1,
		fmt.Sprintf("SLIPWAY_MAX_UPLOAD_BYTES=%d", limit))
	s := e.servers[0]
	big := ipa("com.example.big", "1", 50<<20)

	for _, chunked := range []bool{true, false} {
		st := uploadStream(t, s, e.upload, big, chunked)
		st.pump()
		r, err := st.wait(t)
		if err != nil {
			t.Fatalf("chunked=%v: no answer to an upload over the limit: %v", chunked, err)
		}
		expectError(t, fmt.Sprintf("upload over the limit (chunked=%v)", chunked), r, http.StatusRequestEntityTooLarge)
		// The answer came before the body was read: the client could not send it all.
		if sent := st.sent.Load(); sent >= int64(st.total) {
			t.Errorf("chunked=%v: the client sent the whole %d-byte body before the 413", chunked, st.total)
		} else {
			t.Logf("chunked=%v: the client sent %d of %d bytes before the 413", chunked, sent, st.total)
		}
	}

	// A debug file over the limit too.
	junk := make([]byte, 20<<20)
	_, _ = rand.Read(junk)
	ct, body := form([]string{"channel_key", "none"}, "file", "big.zip", junk)
	r := call(t, http.MethodPost, s.URL+"/api/debug_files/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	expectError(t, "debug file over the limit", r, http.StatusRequestEntityTooLarge)

	nothingKept(t, e, 0)
	if n := queryInt(t, e.db, `SELECT count(*) FROM releases`); n != 0 {
		t.Errorf("%d releases recorded from uploads over the limit", n)
	}

	// Under the limit, uploads work.
	decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.big", "2", 5<<20)))
	noServerErrors(t, s)
	checkConsistent(t, e)
}

// TestUploadConcurrencyCap: beyond SLIPWAY_MAX_CONCURRENT_UPLOADS uploads in flight on a replica,
// with the waiting line turned off (SLIPWAY_UPLOAD_QUEUE_TIMEOUT=0), further uploads (apps and
// debug files alike) get 429 with Retry-After and {"error"}, and keep nothing; other requests are
// served; the held uploads complete and the slots are reused. (With the line on, the default,
// they wait instead: TestUploadQueue in pkg/httpapi and TestUploadBurst.)
func TestUploadConcurrencyCap(t *testing.T) {
	t.Parallel()
	// Both held uploads use one token: its share is the whole cap here (SLIPWAY_UPLOADS_PER_TOKEN).
	e := newEnv(t, e2e.Options{Storage: e2e.S3}, 1, "SLIPWAY_MAX_CONCURRENT_UPLOADS=2", "SLIPWAY_UPLOADS_PER_TOKEN=2", "SLIPWAY_UPLOAD_QUEUE_TIMEOUT=0s")
	s := e.servers[0]
	seed := decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.cap", "0", 0)))
	dsym := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Demo.app.dSYM", Identifier: "com.example.cap",
		ReleaseVersion: "1.0", BuildVersion: "1", Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"}}})

	var held []*stream
	for i := range 2 {
		pkg := ipa("com.example.cap", fmt.Sprint(i+1), 1<<20)
		st := uploadStream(t, s, e.upload, pkg, false, "channel_key", seed.Channel.Slug)
		if err := st.send(len(pkg) / 2); err != nil {
			t.Fatal(err)
		}
		held = append(held, st)
	}
	testkit.Eventually(t, time.Minute, "both held uploads to take a slot", func() bool { return uploadsInFlight(t, s) == 2 })
	// A slot is taken before the body is read: wait until both have reached storage too (their
	// objects are recorded as pending), so the count below tells the refused uploads' part.
	testkit.Eventually(t, time.Minute, "both held uploads to reach storage", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM storage_objects`) == 2
	})

	r, err := uploadApp(s, e.upload, ipa("com.example.cap", "9", 0), "channel_key", seed.Channel.Slug)
	if err != nil {
		t.Fatal(err)
	}
	expectError(t, "third app upload", r, http.StatusTooManyRequests)
	ct, body := form([]string{"channel_key", seed.Channel.Slug}, "file", "Demo.app.dSYM.zip", dsym)
	r = call(t, http.MethodPost, s.URL+"/api/debug_files/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	expectError(t, "debug file upload beyond the cap", r, http.StatusTooManyRequests)
	if r := call(t, http.MethodGet, s.URL+"/api/apps/versions?channel_key="+seed.Channel.Slug, nil); r.Status != http.StatusOK {
		t.Errorf("reads while the uploads are capped: %s", r)
	}
	if n := queryInt(t, e.db, `SELECT count(*) FROM storage_objects`); n != 2 {
		t.Errorf("%d pending objects, want the 2 held uploads' (the refused ones must keep nothing)", n)
	}

	for _, st := range held {
		if err := st.finish(); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range held {
		r, err := st.wait(t)
		if err != nil {
			t.Fatal(err)
		}
		decodeRelease(t, r)
	}
	testkit.Eventually(t, time.Minute, "the slots to be freed", func() bool { return uploadsInFlight(t, s) == 0 })
	decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.cap", "10", 0), "channel_key", seed.Channel.Slug))
	noServerErrors(t, s)
	checkConsistent(t, e)
}

// TestRequestBodyLimits: JSON, urlencoded and multipart bodies of the non-upload endpoints are
// limited to 1 MiB (413), and an upload's form fields to 1 MiB each (422) and 4 MiB in all (413);
// nothing changes in the database or storage.
func TestRequestBodyLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{}, 1)
	s := e.servers[0]
	app := call(t, http.MethodPost, s.URL+"/api/apps", strings.NewReader(`{"name":"Kept"}`),
		"Content-Type", "application/json", "Authorization", "Token "+e.admin)
	if app.Status != http.StatusCreated {
		t.Fatalf("creating an app: %s", app)
	}
	var created struct{ ID int64 }
	_ = json.Unmarshal(app.Body, &created)
	before := tableSnapshot(t, e)

	huge := strings.Repeat("x", 2<<20)
	mpCT, mpBody := form([]string{"name", huge}, "", "", nil)
	auth := []string{"Authorization", "Token " + e.admin}
	cases := []struct {
		name, method, path, ct string
		body                   string
		header                 []string
	}{
		{"create, JSON", http.MethodPost, "/api/apps", "application/json", `{"name":"` + huge + `"}`, auth},
		{"create, urlencoded", http.MethodPost, "/api/apps", "application/x-www-form-urlencoded", "name=" + huge, auth},
		{"create, multipart", http.MethodPost, "/api/apps", mpCT, string(mpBody), auth},
		{"update, JSON", http.MethodPut, fmt.Sprintf("/api/apps/%d", created.ID), "application/json", `{"name":"` + huge + `"}`, auth},
		{"create, token in the huge JSON body", http.MethodPost, "/api/apps", "application/json",
			`{"token":"` + e.admin + `","name":"` + huge + `"}`, nil},
	}
	for _, c := range cases {
		r := call(t, c.method, s.URL+c.path, strings.NewReader(c.body), append([]string{"Content-Type", c.ct}, c.header...)...)
		expectError(t, c.name, r, http.StatusRequestEntityTooLarge)
	}

	// Upload form fields: one over 1 MiB is a 422 naming it; 4.5 MiB of fields in all is a 413.
	pkg := ipa("com.example.fields", "1", 0)
	ct, body := form([]string{"changelog", strings.Repeat("- line\n", 200_000)}, "file", "App.ipa", pkg)
	r := call(t, http.MethodPost, s.URL+"/api/apps/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	expectError(t, "upload with a 1.4 MiB changelog", r, http.StatusUnprocessableEntity)
	var fields []string
	for i := range 5 {
		fields = append(fields, fmt.Sprintf("custom_%d", i), strings.Repeat("y", 900<<10))
	}
	ct, body = form(fields, "file", "App.ipa", pkg)
	r = call(t, http.MethodPost, s.URL+"/api/apps/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	expectError(t, "upload with 4.5 MiB of fields", r, http.StatusRequestEntityTooLarge)
	// Fields after the file: the file is stored first, then discarded.
	ct, body = form(nil, "file", "App.ipa", pkg, fields...)
	r = call(t, http.MethodPost, s.URL+"/api/apps/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	expectError(t, "upload with 4.5 MiB of fields after the file", r, http.StatusRequestEntityTooLarge)

	waitQuiet(t, e)
	if after := tableSnapshot(t, e); after != before {
		t.Errorf("refused requests changed the database or storage:\nbefore: %s\nafter:  %s", before, after)
	}
	noServerErrors(t, s)
	checkConsistent(t, e)
}
