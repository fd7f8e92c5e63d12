package httpapi_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// A client that stops sending in the middle of an upload is dropped after the idle timeout: its
// slot is freed and nothing is kept.
func TestStalledUploadIsDropped(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.UploadIdleTimeout = time.Second
		c.MaxConcurrentUploads = 1
		c.UploadQueueTimeout = 0
	}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\x03\x04 partial"
	fmt.Fprintf(conn, "POST /api/apps/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Token %s\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000\r\n\r\n%s", e.UploadToken, head)
	// The server answers once the idle timeout passes; the connection then closes.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, _ := io.ReadAll(conn)
	if !strings.Contains(string(resp), "stalled") {
		t.Fatalf("response to a stalled upload: %q", resp)
	}
	// The slot is free again, and nothing was kept.
	r := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.File("x.txt", []byte("not a package")))
	if r.Status != 422 {
		t.Fatalf("next upload: %d %s", r.Status, r.Body)
	}
	if objs := e.Objects(t); len(objs) != 0 {
		t.Fatalf("objects kept: %v", objs)
	}
}

// A client trickling a JSON body to a non-upload endpoint is dropped after the idle timeout too.
func TestStalledJSONBodyIsDropped(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.UploadIdleTimeout = time.Second }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/apps HTTP/1.1\r\nHost: x\r\nAuthorization: Token %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\": ", e.AdminToken)
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, _ := io.ReadAll(conn)
	if !strings.HasPrefix(string(resp), "HTTP/1.1 422") {
		t.Fatalf("response to a stalled JSON body: %q", resp)
	}
	if r := e.GetWith(t, "/api/apps", e.AdminToken); string(r.Body) != "[]" {
		t.Fatalf("apps after the stalled request: %s", r.Body)
	}
}
