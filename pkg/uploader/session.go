package uploader

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Upload sessions (the server's POST /api/uploads): the file's parts go straight to object storage,
// several at a time, each retried on its own, and an upload cut by a network failure or a killed
// process resumes where it stopped: the session's id is kept in a small state file beside the file
// (FILE.slipway-upload), and the next run asks the server which parts are done. The file's SHA-256
// is computed beside the sending and given with the completion.

// DefaultSessionThreshold is the size from which uploads go through a session by default.
const DefaultSessionThreshold = 64 << 20

// SessionParts is how many parts are sent at once.
const SessionParts = 3

// ErrNoSessions is returned when the server has no upload sessions (an older Slipway, or Zealot):
// the caller falls back to the one-request upload.
var ErrNoSessions = errors.New("the server has no upload sessions")

// sessionState is what the state file keeps: enough to find the session again and to know the
// file has not changed since.
type sessionState struct {
	Server    string    `json:"server"`
	SessionID string    `json:"session_id"`
	Size      int64     `json:"size"`
	ModTime   time.Time `json:"mod_time"`
}

// StatePath is the state file of an upload of path.
func StatePath(path string) string { return path + ".slipway-upload" }

type sessionJSON struct {
	ID       string `json:"id"`
	State    string `json:"state"`
	Size     int64  `json:"size"`
	PartSize int64  `json:"part_size"`
	Parts    []struct {
		Number int    `json:"number"`
		Size   int64  `json:"size"`
		Done   bool   `json:"done"`
		URL    string `json:"url"`
	} `json:"parts"`
	ResultID *int64  `json:"result_id"`
	Error    *string `json:"error"`
}

// UploadAppSession uploads the package at path through an upload session, resuming one an earlier
// run left (see the state file), and returns the release. ErrNoSessions means the server cannot.
func (c *Client) UploadAppSession(ctx context.Context, path string, form AppForm, progress ProgressFunc) (*Release, error) {
	fields := map[string]any{}
	for _, f := range appFields(form) {
		if f.value != "" {
			fields[f.name] = f.value
		}
	}
	raw, err := c.uploadSession(ctx, path, "app", fields, progress)
	if err != nil {
		return nil, err
	}
	var rel Release
	if err := json.Unmarshal(raw, &rel); err != nil || rel.ReleaseURL == "" {
		return nil, fmt.Errorf("the server's answer is not a release: %.200s", raw)
	}
	rel.Raw = raw
	return &rel, nil
}

func (c *Client) uploadSession(ctx context.Context, path, kind string, fields map[string]any, progress ProgressFunc) (_ []byte, err error) {
	secrets := []string{c.Token}
	if p, ok := fields["password"].(string); ok {
		secrets = append(secrets, p)
	}
	defer func() {
		if err != nil {
			err = redactErr(err, secrets)
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return nil, fmt.Errorf("%s is not a non-empty file", path)
	}
	state := c.resumable(path, st)
	var sess *sessionJSON
	if state != nil {
		sess, err = c.getSession(ctx, state.SessionID)
		if err != nil || (sess.State != "open" && sess.State != "completed") {
			sess, state = nil, nil // gone, expired, failed: start again
		}
	}
	// The file's SHA-256 is computed while the parts go (another core, the page cache), and given
	// with the completion.
	hashed := make(chan string, 1)
	hashErr := make(chan error, 1)
	go func() {
		sum, err := fileSHA256(f)
		hashErr <- err
		hashed <- sum
	}()
	if sess == nil {
		body := map[string]any{"kind": kind, "filename": st.Name(), "size": st.Size()}
		for k, v := range fields {
			body[k] = v
		}
		sess = &sessionJSON{}
		if err := c.doJSON(ctx, http.MethodPost, "/api/uploads", body, sess); err != nil {
			var api *APIError
			// A server without sessions answers 404 (or 405) for the route itself; a 404 about
			// the channel is the upload's own error.
			if errors.As(err, &api) && (api.Status == http.StatusNotFound || api.Status == http.StatusMethodNotAllowed) &&
				!strings.Contains(strings.ToLower(api.Message), "channel") {
				return nil, ErrNoSessions
			}
			return nil, err
		}
		state = &sessionState{Server: c.BaseURL, SessionID: sess.ID, Size: st.Size(), ModTime: st.ModTime()}
		if b, err := json.Marshal(state); err == nil {
			_ = os.WriteFile(StatePath(path), b, 0o600) // best effort: without it, a rerun starts over
		}
	}
	if sess.State == "open" {
		if err := c.sendParts(ctx, f, sess, progress); err != nil {
			return nil, err
		}
	}
	if err := <-hashErr; err != nil {
		return nil, err
	}
	sum := <-hashed
	var raw []byte
	for attempt := 0; ; attempt++ {
		raw, err = c.completeSession(ctx, sess.ID, sum)
		var api *APIError
		if err == nil || attempt > 0 || !errors.As(err, &api) || api.Status != http.StatusUnprocessableEntity || api.Entry["missing_parts"] == nil {
			break
		}
		// A part the server does not see (lost on the way): ask again and send what is missing.
		if sess, err = c.getSession(ctx, sess.ID); err != nil {
			return nil, err
		}
		if err := c.sendParts(ctx, f, sess, progress); err != nil {
			return nil, err
		}
	}
	if err == nil {
		_ = os.Remove(StatePath(path))
	}
	return raw, err
}

// resumable returns the state an earlier run left for this file and server, when the file has not
// changed since.
func (c *Client) resumable(path string, st os.FileInfo) *sessionState {
	b, err := os.ReadFile(StatePath(path))
	if err != nil {
		return nil
	}
	var s sessionState
	if json.Unmarshal(b, &s) != nil || s.Server != c.BaseURL || s.Size != st.Size() || !s.ModTime.Equal(st.ModTime()) || s.SessionID == "" {
		return nil
	}
	return &s
}

func (c *Client) getSession(ctx context.Context, id string) (*sessionJSON, error) {
	var s sessionJSON
	if err := c.doJSON(ctx, http.MethodGet, "/api/uploads/"+id, nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// completeSession asks the server to record the session, retrying while it is busy.
func (c *Client) completeSession(ctx context.Context, id, sha256 string) ([]byte, error) {
	var raw json.RawMessage
	err := c.retry(ctx, true, func() error {
		return c.doJSON(ctx, http.MethodPost, "/api/uploads/"+id+"/complete", map[string]string{"sha256": sha256}, &raw)
	})
	return raw, err
}

// sendParts PUTs the session's parts that are not done, SessionParts at a time, each retried on
// its own; progress counts the done parts as sent.
func (c *Client) sendParts(ctx context.Context, f *os.File, sess *sessionJSON, progress ProgressFunc) error {
	var sent atomic.Int64
	for _, p := range sess.Parts {
		if p.Done {
			sent.Add(p.Size)
		}
	}
	report := func() {
		if progress != nil {
			progress(sent.Load(), sess.Size)
		}
	}
	report()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int, len(sess.Parts))
	for i, p := range sess.Parts {
		if !p.Done {
			work <- i
		}
	}
	close(work)
	var wg sync.WaitGroup
	for range SessionParts {
		wg.Go(func() {
			buf := make([]byte, sess.PartSize)
			for i := range work {
				if ctx.Err() != nil {
					return
				}
				p := sess.Parts[i]
				off := int64(p.Number-1) * sess.PartSize
				data := buf[:p.Size]
				if _, err := f.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
					cancel(err)
					return
				}
				if err := c.putPart(ctx, sess.ID, p.Number, p.URL, data); err != nil {
					cancel(fmt.Errorf("part %d: %w", p.Number, err))
					return
				}
				sent.Add(p.Size)
				report()
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// putPart PUTs one part, retrying a busy store or a broken connection; an expired URL is replaced
// by a fresh one from the session. Integrity in transit rests on TLS, as for the server's own
// uploads to S3; the file's SHA-256, recorded with the release, is given at completion.
func (c *Client) putPart(ctx context.Context, sessionID string, number int, url string, data []byte) error {
	return c.retry(ctx, true, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(data))
		if err != nil {
			return err
		}
		req.ContentLength = int64(len(data))
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, err := c.httpClient().Do(req)
		if err != nil {
			return unwrapURLError(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 == 2 {
			return nil
		}
		if resp.StatusCode == http.StatusForbidden {
			// The URL expired (presigned URLs live minutes): take a fresh one and go again.
			if s, err := c.getSession(ctx, sessionID); err == nil {
				for _, p := range s.Parts {
					if p.Number == number && p.URL != "" {
						url = p.URL
						return &APIError{Status: http.StatusServiceUnavailable, Message: "part URL renewed"}
					}
				}
			}
		}
		return apiError(resp, raw)
	})
}

// fileSHA256 hashes a file from its start.
func fileSHA256(f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
