package httpapi_test

// Integration tests of resumable upload sessions (POST /api/uploads) on the filesystem and MinIO.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/apptest"
)

type session struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	PartSize int64  `json:"part_size"`
	Parts    []struct {
		Number int    `json:"number"`
		Size   int64  `json:"size"`
		Done   bool   `json:"done"`
		URL    string `json:"url"`
	} `json:"parts"`
	ResultID *int64 `json:"result_id"`
}

// sessions drives the session API of one test server.
type sessions struct {
	*mgmt
}

func (s sessions) start(body string, status int) session {
	s.t.Helper()
	r := s.call("POST", "/api/uploads", s.e.UploadToken, body)
	s.want(r, status, "start session")
	var sess session
	if status == 201 {
		r.JSON(s.t, &sess)
	}
	return sess
}

func (s sessions) get(id string) session {
	s.t.Helper()
	r := s.call("GET", "/api/uploads/"+id, s.e.UploadToken, "")
	s.want(r, 200, "get session")
	var sess session
	r.JSON(s.t, &sess)
	return sess
}

// put PUTs data to a part URL the way a client does, with a plain HTTP client (the URL is the
// credential: presigned S3, or the service's own signed URL). Requests to the service go through
// the checked client.
func (s sessions) put(url string, data []byte, header ...string) int {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(data))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := http.DefaultClient
	if strings.HasPrefix(url, s.e.URL) {
		client = s.e.Client
	}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func startBody(name string, size int, sum string, fields map[string]any) string {
	m := map[string]any{"filename": name, "size": size, "sha256": sum}
	for k, v := range fields {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func sha(data []byte) string { s := sha256.Sum256(data); return hex.EncodeToString(s[:]) }

// A build through a session, on both storages: parts put out of order, the session asked after a
// "crash" says what is missing, completing answers the release as the upload does, and the bytes
// downloaded back are the file's.
func TestUploadSessionRoundTrip(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			s := sessions{newMgmt(t, apptest.Options{Storage: storage})}
			ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Big", BundleID: "com.example.big", Version: "3.0", Build: "30",
				FillerBytes: 12 << 20, Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}})
			sess := s.start(startBody("Big.ipa", len(ipa), sha(ipa), map[string]any{"changelog": []map[string]string{{"message": "Big build"}},
				"custom_fields": `[{"name":"QA","value":"ok","icon":"fa fa-check"}]`, "branch": "origin/main"}), 201)
			if sess.State != "open" || len(sess.Parts) != 3 || sess.Parts[2].Size != int64(len(ipa))-2*sess.PartSize {
				t.Fatalf("session: %+v", sess)
			}
			chunk := func(n int) []byte {
				return ipa[int64(n-1)*sess.PartSize : int64(n-1)*sess.PartSize+sess.Parts[n-1].Size]
			}
			for _, n := range []int{3, 1} {
				if st := s.put(sess.Parts[n-1].URL, chunk(n)); st != 200 {
					t.Fatalf("part %d: %d", n, st)
				}
			}
			// A complete now names the missing part and leaves the session open.
			r := s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, "")
			s.want(r, 422, "complete with a part missing")
			if !strings.Contains(string(r.Body), `"missing_parts":["2"]`) {
				t.Fatalf("missing parts not named: %s", r.Body)
			}
			// After a "crash", the session says which parts are done and where to put the others.
			again := s.get(sess.ID)
			if again.State != "open" || !again.Parts[0].Done || again.Parts[1].Done || !again.Parts[2].Done || again.Parts[1].URL == "" || again.Parts[0].URL != "" {
				t.Fatalf("resumed session: %+v", again)
			}
			if st := s.put(again.Parts[1].URL, chunk(2)); st != 200 {
				t.Fatalf("part 2: %d", st)
			}
			rel := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete")
			if rel["release_version"] != "3.0" || rel["size"] != float64(len(ipa)) || rel["text_changelog"] != "- Big build" || rel["branch"] != "main" {
				t.Fatalf("release: %v", rel)
			}
			// Completing again answers the same release; the session shows it.
			if again := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete again"); again["id"] != rel["id"] {
				t.Fatalf("second complete made release %v, first %v", again["id"], rel["id"])
			}
			if done := s.get(sess.ID); done.State != "completed" || done.ResultID == nil || *done.ResultID != id(rel) {
				t.Fatalf("completed session: %+v", done)
			}
			loc := s.e.Get(t, fmt.Sprintf("/download/releases/%d", id(rel))).Header.Get("Location")
			if got := s.e.Follow(t, loc); got.Status != 200 || !bytes.Equal(got.Body, ipa) {
				t.Fatalf("download: %d, %d bytes, equal %v", got.Status, len(got.Body), bytes.Equal(got.Body, ipa))
			}
			var stored string
			if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT sha256 FROM releases WHERE id = $1`, id(rel)).Scan(&stored); err != nil || stored != sha(ipa) {
				t.Fatalf("stored checksum %q %v", stored, err)
			}
			assertCollected(t, s.e, nil)
			if objs := s.e.Objects(t); len(objs) != 2 { // the package and its icon
				t.Fatalf("objects after gc: %v", objs)
			}
		})
	}
}

// A debug file through a session, and a session into a channel key.
func TestUploadSessionDebugFileAndChannel(t *testing.T) {
	s := sessions{newMgmt(t, apptest.Options{Storage: apptest.S3})}
	_, _, _, _ = s.fixture()
	zip := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Harbor.app.dSYM", Identifier: "com.example.harbor", ReleaseVersion: "1.0", BuildVersion: "1",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"}}})
	// The checksum may come with the completion (a client hashing while it sends); a debug file
	// needs one, since duplicates are found by it.
	sess := s.start(startBody("d.zip", len(zip), "", map[string]any{"kind": "debug_file", "channel_key": "harbor-ios"}), 201)
	if st := s.put(sess.Parts[0].URL, zip); st != 200 {
		t.Fatalf("part: %d", st)
	}
	s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 422, "debug file without a checksum")
	s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, `{"sha256":"abc"}`), 422, "malformed checksum")
	df := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, `{"sha256":"`+sha(zip)+`"}`), 201, "complete debug file")
	if df["metadata"].([]any)[0].(map[string]any)["uuid"] != "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9" {
		t.Fatalf("debug file: %v", df)
	}
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"})
	sess = s.start(startBody("h.ipa", len(ipa), "", map[string]any{"channel_key": "harbor-ios"}), 201)
	s.put(sess.Parts[0].URL, ipa)
	rel := s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete into the channel")
	if rel["channel"].(map[string]any)["slug"] != "harbor-ios" || rel["version"] != float64(2) {
		t.Fatalf("release: %v", rel)
	}
}

// Bad input at every step is a 4xx with {"error"}: nothing is recorded, and after the collector
// nothing is left in storage.
func TestUploadSessionRefusals(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			s := sessions{newMgmt(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) { c.MaxUploadBytes = 64 << 20 }})}
			data := appletest.BuildIPA(appletest.IPAOptions{AppName: "R", BundleID: "com.example.r", Version: "1", Build: "1", FillerBytes: 6 << 20})
			// Refused at the start.
			for body, status := range map[string]int{
				`{"size":10}`: 422, `{"filename":"a.ipa"}`: 422, `{"filename":"a.ipa","size":0}`: 422,
				`{"filename":"a.ipa","size":"big"}`:                          422,
				`{"filename":"a.ipa","size":10,"kind":"movie"}`:              422,
				`{"filename":"a.ipa","size":10,"sha256":"abc"}`:              422,
				`{"filename":"a.ipa","size":10,"changelog":[{"message":1}]}`: 422,
				`{"filename":"a.ipa","size":10,"ci_url":"javascript:x"}`:     422,
				`{"filename":"a.ipa","size":10,"channel_key":"nope"}`:        404,
				`{"filename":"a.ipa","size":999999999999}`:                   413,
			} {
				s.want(s.call("POST", "/api/uploads", s.e.UploadToken, body), status, body)
			}
			s.want(s.call("POST", "/api/uploads", "", `{"filename":"a.ipa","size":10}`), 401, "no token")

			sess := s.start(startBody("a.ipa", len(data), "", nil), 201)
			p1 := data[:sess.PartSize]
			// A part of the wrong size is refused (by the service, or by S3 for its signed length).
			if st := s.put(sess.Parts[0].URL, p1[:1000]); st/100 == 2 {
				t.Fatalf("short part accepted: %d", st)
			}
			if storage == apptest.FS {
				sum := md5.Sum([]byte("other bytes"))
				if st := s.put(sess.Parts[0].URL, p1, "Content-MD5", base64.StdEncoding.EncodeToString(sum[:])); st != 422 {
					t.Fatalf("part with a wrong Content-MD5: %d", st)
				}
				if st := s.put(strings.Replace(sess.Parts[0].URL, "t=", "t=x", 1), p1); st != 403 {
					t.Fatalf("forged part URL: %d", st)
				}
				if st := s.put(strings.Replace(sess.Parts[0].URL, "/parts/1?", "/parts/2?", 1), p1); st != 403 {
					t.Fatalf("a part URL used for another part: %d", st)
				}
			}
			// Another token's session is not found; complete with parts missing is refused.
			other := s.want(s.call("POST", "/api/tokens", s.e.AdminToken, `{"name":"other"}`), 201, "other token")["token"].(string)
			s.want(s.call("GET", "/api/uploads/"+sess.ID, other, ""), 404, "another token's session")
			s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", other, ""), 404, "another token completes")
			s.want(s.call("DELETE", "/api/uploads/"+sess.ID, other, ""), 404, "another token aborts")
			s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 422, "complete with nothing")
			s.want(s.call("GET", "/api/uploads/ups_nope", s.e.UploadToken, ""), 404, "unknown session")
			// Abort: the session ends, nothing is left.
			s.put(sess.Parts[0].URL, p1)
			s.want(s.call("DELETE", "/api/uploads/"+sess.ID, s.e.UploadToken, ""), 200, "abort")
			s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 404, "complete an aborted session")

			// A file that is not a package: refused at completion, the session fails, the object goes.
			junk := bytes.Repeat([]byte("not a package "), 1000)
			bad := s.start(startBody("junk.ipa", len(junk), "", nil), 201)
			s.put(bad.Parts[0].URL, junk)
			s.want(s.call("POST", "/api/uploads/"+bad.ID+"/complete", s.e.UploadToken, ""), 422, "complete junk")
			if st := s.get(bad.ID); st.State != "failed" {
				t.Fatalf("session after a refused package: %+v", st)
			}
			// An open session left alone expires, and the collector removes it all.
			left := s.start(startBody("left.ipa", len(data), "", nil), 201)
			s.put(left.Parts[0].URL, p1)
			if _, err := s.e.DB.Pool.Exec(context.Background(), `UPDATE upload_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, left.ID); err != nil {
				t.Fatal(err)
			}
			s.want(s.call("GET", "/api/uploads/"+left.ID+"/complete", s.e.UploadToken, ""), 405, "GET on complete")
			s.want(s.call("POST", "/api/uploads/"+left.ID+"/complete", s.e.UploadToken, ""), 404, "complete an expired session")
			assertCollected(t, s.e, nil)
			if objs := s.e.Objects(t); len(objs) != 0 {
				t.Fatalf("objects left: %v", objs)
			}
			if st := s.get(left.ID); st.State != "expired" {
				t.Fatalf("session after the collector: %+v", st)
			}
			var releases int
			_ = s.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM releases`).Scan(&releases)
			if releases != 0 {
				t.Fatalf("%d releases recorded from refused sessions", releases)
			}
		})
	}
}

// A session still open is not collected as an abandoned upload after the collector's grace
// period: it may take as long as its expiry allows.
func TestUploadSessionOutlivesGrace(t *testing.T) {
	s := sessions{newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.UploadSessionTTL = time.Hour }})}
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Slow", BundleID: "com.example.slow", Version: "1", Build: "1"})
	sess := s.start(startBody("s.ipa", len(ipa), "", nil), 201)
	s.put(sess.Parts[0].URL, ipa)
	if _, err := s.e.Service.Collector.CollectGarbage(context.Background(), 0); err != nil { // grace 0: every pending object is old
		t.Fatal(err)
	}
	s.want(s.call("POST", "/api/uploads/"+sess.ID+"/complete", s.e.UploadToken, ""), 201, "complete after a collector run")
}

// Issue 20, finding 12: 2,000 POST /api/uploads of 4 GiB each were all 201, each kept for 24 h.
// Now a token has at most SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN open sessions, however many starts
// race; the next is 429 saying how to get out of it; aborted and expired sessions do not count,
// and other tokens are not affected.
func TestUploadSessionsPerToken(t *testing.T) {
	t.Parallel()
	const limit = 4
	s := sessions{newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.UploadSessionsPerToken = limit }})}
	body := startBody("big.ipa", 4<<30-1, "", nil)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ids []string
	statuses := map[int]int{}
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.call("POST", "/api/uploads", s.e.UploadToken, body)
			mu.Lock()
			defer mu.Unlock()
			statuses[r.Status]++
			switch r.Status {
			case http.StatusCreated:
				var sess session
				r.JSON(t, &sess)
				ids = append(ids, sess.ID)
			case http.StatusTooManyRequests:
				msg := r.Error(t)
				if r.Header.Get("Retry-After") == "" || !strings.Contains(msg, fmt.Sprintf("%d open upload sessions", limit)) ||
					!strings.Contains(msg, "DELETE /api/uploads/") || !strings.Contains(msg, "ups_") || !strings.Contains(msg, "expires") {
					t.Errorf("429 without the way out: %v %q", r.Header, msg)
				}
			}
		}()
	}
	wg.Wait()
	if statuses[http.StatusCreated] != limit || statuses[http.StatusTooManyRequests] != 40-limit {
		t.Fatalf("40 simultaneous starts with one token: %v, want %d × 201 and the rest 429", statuses, limit)
	}
	// The refused starts left nothing behind: one pending object per session.
	var pending int
	if err := s.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM storage_objects WHERE state = 'pending'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if pending != limit {
		t.Errorf("%d pending objects, want %d", pending, limit)
	}
	// Another token starts its own.
	other := s.want(s.call("POST", "/api/tokens", s.e.AdminToken, `{"name":"other","scope":"upload"}`), 201, "other token")["token"].(string)
	s.want(s.call("POST", "/api/uploads", other, body), 201, "another token's session")
	// Aborting one makes room for one.
	s.want(s.call("DELETE", "/api/uploads/"+ids[0], s.e.UploadToken, ""), 200, "abort")
	s.start(body, 201)
	s.start(body, 429)
	// An expired session (the collector has not ended it yet) counts no more.
	if _, err := s.e.DB.Pool.Exec(context.Background(), `UPDATE upload_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, ids[1]); err != nil {
		t.Fatal(err)
	}
	s.start(body, 201)
	s.start(body, 429)
}
