package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// Issue 20, finding 2: an upload without a token took an upload slot and streamed its file into
// storage before its 401 (one unauthenticated 2 GB upload wrote 1.8 GB). Now a request with no
// credential before its file is refused at once: it takes no slot and no place in line (with the
// only slot held and no line, it gets 401, not 429), and stores nothing.
func TestUploadWithoutTokenTakesNothing(t *testing.T) {
	e := newEnv(t, apptest.Options{Configure: func(c *config.Config) {
		c.MaxConcurrentUploads, c.UploadsPerToken, c.UploadQueueTimeout = 1, 1, 0
	}})
	data := apk("com.example.noauth", "1.0", 1)
	held := holdUpload(t, e, data)
	waitGauge(t, e.Metrics.UploadsActive, 1, "the held upload taking the only slot")
	before := testutil.ToFloat64(e.Metrics.UploadBytes.WithLabelValues("packages"))

	big := bytes.Repeat([]byte("x"), 8<<20)
	for _, tc := range []struct {
		name  string
		parts []apptest.Part
		want  string
	}{
		{"file first, token after", []apptest.Part{apptest.File("big.ipa", big), apptest.Field("token", e.UploadToken)}, "before the file"},
		{"no token at all", []apptest.Part{apptest.Field("name", "x"), apptest.File("big.ipa", big)}, "before the file"},
		{"only fields", []apptest.Part{apptest.Field("name", "x")}, "no token"},
		{"a wrong token first", []apptest.Part{apptest.Field("token", "slw_not_a_token"), apptest.File("big.ipa", big)}, ""},
		{"fields over the pre-token budget", []apptest.Part{apptest.Field("changelog", strings.Repeat("c", 70<<10)), apptest.Field("token", e.UploadToken), apptest.File("big.ipa", big)}, "first"},
	} {
		r := e.upload(t, tc.parts...)
		msg := wantError(t, r, http.StatusUnauthorized)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.name, msg, tc.want)
		}
	}
	if got := testutil.ToFloat64(e.Metrics.UploadBytes.WithLabelValues("packages")); got != before {
		t.Errorf("%v file bytes stored for uploads without a token", got-before)
	}
	if n := gaugeValue(e.Metrics.UploadsWaiting); n != 0 {
		t.Errorf("%v uploads without a token waiting in line", n)
	}
	if res := held.finish(t); res.status != http.StatusCreated {
		t.Fatalf("held upload: %v %d %s", res.err, res.status, res.body)
	}
	if n := e.rows(t, "storage_objects"); n != 0 {
		t.Errorf("%d pending objects left", n)
	}
}

// One token's uploads hold at most SLIPWAY_UPLOADS_PER_TOKEN slots: beyond, they wait in line
// A multipart part with no name is no form field, but its bytes count against the bound on what
// is read before the token: a 64 MiB nameless part first is refused with 401 after a small part
// of it, not drained to its end.
func TestNamelessPartBeforeTheToken(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	const size = 64 << 20
	var sent countingZeros
	sent.left = size
	body := io.MultiReader(strings.NewReader("--b\r\nContent-Type: application/octet-stream\r\n\r\n"), &sent,
		strings.NewReader("\r\n--b\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\n"+e.UploadToken+"\r\n--b--\r\n"))
	req, err := http.NewRequest(http.MethodPost, e.URL+"/api/apps/upload", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(msg), "first") {
		t.Fatalf("a nameless part first: %d %s", resp.StatusCode, msg)
	}
	// What the client could send before the answer: the bound, the server's read buffer and the
	// sockets' buffers, far below the part's 64 MiB.
	if n := sent.read.Load(); n > 16<<20 {
		t.Fatalf("%d MiB of a nameless part were read before the 401", n>>20)
	}
}

// countingZeros yields left zero bytes and counts what was read.
type countingZeros struct {
	left int64
	read atomic.Int64
}

func (z *countingZeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), z.left))
	clear(p[:n])
	z.left -= int64(n)
	z.read.Add(int64(n))
	return n, nil
}

// while other tokens' uploads go by, so one client (or one stolen token) cannot take every slot.
func TestUploadsPerToken(t *testing.T) {
	e := newEnv(t, apptest.Options{Configure: func(c *config.Config) {
		c.MaxConcurrentUploads, c.UploadsPerToken, c.UploadQueueTimeout = 2, 1, time.Minute
	}})
	data := apk("com.example.pertoken", "1.0", 1)
	held := holdUploadAs(t, e, e.UploadToken, data)
	waitGauge(t, e.Metrics.UploadsActive, 1, "the first token's upload taking a slot")

	second := make(chan *apptest.Response, 1)
	go func() { second <- e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("b.apk", data)) }()
	waitGauge(t, e.Metrics.UploadsWaiting, 1, "the token's second upload waiting, a slot still free")

	// Another token's upload takes the free slot and completes meanwhile.
	other := e.Upload(t, "/api/apps/upload", e.AdminToken, apptest.File("o.apk", data))
	if other.Status != http.StatusCreated {
		t.Fatalf("another token's upload: %d %s", other.Status, other.Body)
	}
	if gaugeValue(e.Metrics.UploadsWaiting) != 1 {
		t.Fatal("the token's second upload stopped waiting while its first held the token's slot")
	}
	if res := held.finish(t); res.status != http.StatusCreated {
		t.Fatalf("held upload: %v %d %s", res.err, res.status, res.body)
	}
	if r := <-second; r.Status != http.StatusCreated {
		t.Fatalf("the token's second upload: %d %s", r.Status, r.Body)
	}
}

// An upload trickling in slower than SLIPWAY_UPLOAD_MIN_RATE, though never idle for long, is cut
// once its grace (one idle timeout) has passed: 422 saying so, a warning in the log, its slot
// freed and nothing kept (issue 20: a byte every 30 s held a slot indefinitely).
func TestUploadTrickleIsCut(t *testing.T) {
	e := newEnv(t, apptest.Options{Configure: func(c *config.Config) {
		c.MaxConcurrentUploads, c.UploadQueueTimeout = 1, 0
		c.UploadIdleTimeout, c.UploadMinRate = 500*time.Millisecond, 64<<10
	}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\x03\x04"
	fmt.Fprintf(conn, "POST /api/apps/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Token %s\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000000\r\n\r\n%s", e.UploadToken, head)
	// 1 KiB every 50 ms (20 KiB/s): never idle for the 500 ms timeout, far below 64 KiB/s.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		chunk := bytes.Repeat([]byte("t"), 1<<10)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound, not an assertion
	resp, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(resp), "HTTP/1.1 422") || !strings.Contains(string(resp), "slower than") {
		t.Fatalf("response to a trickle: %.300q", resp)
	}
	if !strings.Contains(e.LogText(), "upload cut: it arrived slower than the minimum rate") {
		t.Error("the cut is not in the log")
	}
	waitGauge(t, e.Metrics.UploadsActive, 0, "the trickle's slot to be freed")
	if r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("a.apk", apk("com.example.fast", "1.0", 1))); r.Status != http.StatusCreated {
		t.Fatalf("an upload after the cut: %d %s", r.Status, r.Body)
	}
	if n := e.rows(t, "storage_objects"); n != 0 {
		t.Errorf("%d pending objects left by the cut upload", n)
	}
}
