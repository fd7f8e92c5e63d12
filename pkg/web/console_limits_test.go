package web_test

// Issue 20, finding 11: a viewer's console POST of any size was read whole (c.PostForm) before
// its CSRF token was checked; a multipart body was spooled to temporary files past 32 MiB (one
// request wrote 1.14 GB). Console forms are now urlencoded, at most 64 KiB, read before anything
// else and refused early otherwise.

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/test/apptest"
)

// countingReader counts the bytes the client's transport took from a body.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type filler byte

func (f filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(f)
	}
	return len(p), nil
}

// Not parallel: it points TMPDIR, which the server's multipart parser would write to, at a folder
// of its own and watches it.
func TestConsoleFormBodyLimits(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := apptest.New(t, apptest.Options{})
	signedIn(t, e, "admin") // the first user: in the admin group
	viewer, _ := signedIn(t, e, "viewer")
	csrf := csrfOf(t, viewer, e.URL+"/console")
	const big = 50 << 20

	// Whether a file appeared in TMPDIR while a request ran.
	var spooled atomic.Bool
	watch := func(stop <-chan struct{}, done *sync.WaitGroup) {
		defer done.Done()
		for {
			if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
				spooled.Store(true)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
	send := func(name, ctype string, length int64, head, tail string) (int, string, int64) {
		t.Helper()
		body := &countingReader{r: io.MultiReader(strings.NewReader(head), io.LimitReader(filler('a'), big), strings.NewReader(tail))}
		req, err := http.NewRequest(http.MethodPost, e.URL+"/console/tokens", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = length // -1: chunked, no length announced
		req.Header.Set("Content-Type", ctype)
		stop, done := make(chan struct{}), &sync.WaitGroup{}
		done.Add(1)
		go watch(stop, done)
		resp, err := viewer.Do(req)
		close(stop)
		done.Wait()
		if err != nil {
			t.Fatalf("%s: %v (after %d bytes)", name, err, body.n.Load())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		t.Logf("%s: %d after the client sent %d bytes", name, resp.StatusCode, body.n.Load())
		return resp.StatusCode, string(b), body.n.Load()
	}
	// Loopback's socket buffers take a few MiB whatever the server does; the server must not
	// read the body, nor most of it.
	const mostSent = 16 << 20

	head := "--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf +
		"\r\n--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nmine\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	tail := "\r\n--b--\r\n"
	for _, c := range []struct {
		name, ctype, head, tail string
		length                  int64
	}{
		{"multipart with a length", "multipart/form-data; boundary=b", head, tail, int64(len(head) + big + len(tail))},
		{"multipart, chunked", "multipart/form-data; boundary=b", head, tail, -1},
		{"urlencoded with a length", "application/x-www-form-urlencoded", "csrf=" + url.QueryEscape(csrf) + "&name=", "", int64(len(csrf) + 11 + big)},
		{"urlencoded, chunked", "application/x-www-form-urlencoded", "csrf=" + url.QueryEscape(csrf) + "&name=", "", -1},
	} {
		status, page, sent := send(c.name, c.ctype, c.length, c.head, c.tail)
		if status != http.StatusRequestEntityTooLarge && status != http.StatusUnsupportedMediaType {
			t.Errorf("%s of 50 MB: %d, want 413 or 415: %.300s", c.name, status, page)
		}
		if sent > mostSent {
			t.Errorf("%s: the server read %d bytes of the body before answering", c.name, sent)
		}
	}
	if spooled.Load() {
		t.Error("a console form was written to a temporary file")
	}

	// A small multipart form is refused for its type; urlencoded forms work as before, with the
	// CSRF token in the form or in the script's header.
	body := head + "x" + tail
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/console/tokens", strings.NewReader(body))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	resp, err := viewer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("a small multipart console form: %d, want 415", resp.StatusCode)
	}
	resp, page := fetch(t, viewer, http.MethodPost, e.URL+"/console/tokens", url.Values{"csrf": {csrf}, "name": {"mine"}})
	if resp.StatusCode != http.StatusForbidden || strings.Contains(page, "CSRF") {
		t.Errorf("a viewer's token form: %d %.300s, want 403 for the role", resp.StatusCode, page)
	}
	req = formRequest(t, http.MethodPost, e.URL+"/console/tokens", url.Values{"name": {"mine"}})
	req.Header.Set("X-CSRF-Token", csrf)
	resp, err = viewer.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || strings.Contains(string(b), "CSRF") {
		t.Errorf("the token in the header: %d %.300s, want 403 for the role", resp.StatusCode, b)
	}
	resp, page = fetch(t, viewer, http.MethodPost, e.URL+"/console/tokens", url.Values{"csrf": {"forged"}, "name": {strings.Repeat("n", 70<<10)}})
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 70 KiB form: %d %.300s", resp.StatusCode, page)
	}
	resp, _ = fetch(t, viewer, http.MethodPost, e.URL+"/console/logout", url.Values{"csrf": {csrf}})
	if resp.Request.URL.Path != "/console/login" {
		t.Errorf("sign out: %d at %s", resp.StatusCode, resp.Request.URL)
	}
}
