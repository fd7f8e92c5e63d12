// Package uploader is the client side of Slipway's (and Zealot's) upload API: it sends an app
// package to POST /api/apps/upload or a debug archive to POST /api/debug_files/upload, streaming
// the file from disk. `slipway upload` and `slipway debug-file upload` are thin flag parsers over
// it. The same Client manages API tokens over HTTP (tokens.go) for `slipway token --url`. It uses
// net/http only, so it carries none of the server's dependencies.
//
// # Streaming
//
// The multipart body is the form fields, then the file part, then the closing boundary. The fields
// and the file part's header are encoded up front (they are small), the file is read from disk as
// the connection takes it, and the request carries the exact Content-Length. A known length (rather
// than chunked encoding from an io.Pipe) lets the server, and any proxy in front of it, refuse an
// over-limit upload before a byte of the file is sent, and passes proxies that buffer chunked
// bodies. The file part comes last, as in Zealot's own clients, so the server has every field by
// the time the file is stored.
//
// # Rejections before the body
//
// The token goes in the Authorization header (not the form), and the request asks for
// "Expect: 100-continue": a server that refuses the token, the size or the channel answers before
// the file is sent, instead of after gigabytes.
//
// # Timeouts
//
// There is no overall timeout: a multi-GB upload over a slow link may take hours. Instead each
// phase that can hang is bounded: dialing and the TLS handshake, the wait for the response once
// the body is sent (the server still parses the package), and the body itself, which fails when
// the connection takes no byte for StallTimeout (a server that stops reading would otherwise hold
// the upload for as long as TCP keeps the connection open).
//
// # Secrets
//
// Errors never carry the token or the channel password: they are replaced by "[REDACTED]" in any
// message this package returns, including the server's.
package uploader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Client's timeouts.
const (
	DefaultDialTimeout           = 30 * time.Second
	DefaultResponseHeaderTimeout = 10 * time.Minute
	DefaultStallTimeout          = 5 * time.Minute // longer than a server's upload queue timeout (2m)
	// expectContinueTimeout is how long to wait for "100 Continue" before sending the body anyway
	// (some proxies never answer it).
	expectContinueTimeout = 3 * time.Second
	// maxResponseBytes bounds how much of a response is read (a release is a few KiB).
	maxResponseBytes = 8 << 20
)

// Client uploads to one Slipway (or Zealot) server.
type Client struct {
	// BaseURL is the server's base URL, e.g. https://slipway.example.com (a trailing slash is
	// ignored).
	BaseURL string
	// Token is the API token, sent as "Authorization: Token <token>".
	Token string
	// UserAgent is sent as User-Agent (default "slipway-uploader").
	UserAgent string
	// HTTPClient, when set, replaces the default client built from the timeouts below. Its
	// Timeout should be zero: it would bound the whole upload.
	HTTPClient *http.Client
	// DialTimeout bounds connecting and the TLS handshake (default DefaultDialTimeout).
	DialTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the answer once the whole body is sent, while the
	// server parses and records the package (default DefaultResponseHeaderTimeout).
	ResponseHeaderTimeout time.Duration
	// StallTimeout fails an upload whose connection takes no byte of the body for that long
	// (default DefaultStallTimeout).
	StallTimeout time.Duration
	// MaxAttempts is how many times an upload is sent when the server is busy or unreachable
	// (default DefaultMaxAttempts; 1 disables retries). See retry.go.
	MaxAttempts int
	// OnRetry, when set, is told of each retry before its wait (for a progress line).
	OnRetry func(attempt int, wait time.Duration, cause error)
	// sleep waits between attempts (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error

	once   sync.Once
	client *http.Client
}

// ProgressFunc observes an upload: sent is the number of the file's bytes handed to the
// connection so far and total the file's size (-1 when unknown). It is called from the goroutine
// that writes the request, after every read from the file; it must be quick.
type ProgressFunc func(sent, total int64)

// CustomField is one entry of an upload's custom_fields: a title, a value and an optional
// icon-font class (e.g. "fa fa-check") shown on the release page.
type CustomField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

// AppForm holds the optional fields of an app upload (api.md, "Upload an app"). Empty fields are
// not sent, so the server applies its defaults.
type AppForm struct {
	ChannelKey  string
	Name        string
	ReleaseType string
	Source      string
	// Changelog is plain text (one entry per line) or Zealot's JSON array form.
	Changelog    string
	Branch       string
	GitCommit    string
	CIURL        string
	CustomFields []CustomField
	// Password sets the channel's download password.
	Password string
	// ReleaseVersion, BuildVersion and BundleID describe packages that carry no readable metadata
	// (a macOS .dmg).
	ReleaseVersion string
	BuildVersion   string
	BundleID       string
	// EdSignature is the Sparkle EdDSA signature sign_update printed (base64), TauriSignature the
	// content of the Tauri signer's .sig file: the update feeds carry them (docs/feeds.md).
	EdSignature    string
	TauriSignature string
	// Rollout is the staged-rollout percentage ("" leaves the server's default, 100); Critical
	// marks a critical update.
	Rollout  string
	Critical bool
	// Testers (emails) and Groups (tester group aliases) receive the build beyond its channel's
	// tester groups; NoNotify records where it went and mails nobody (the server's default is to
	// mail them). Lists go as one comma-separated field each, as the server reads them.
	Testers  []string
	Groups   []string
	NoNotify bool
	// AllowOtherBundleID is what the server does with a build of another app than its channel
	// holds: "" keeps it with a warning, "false" refuses it (422), "true" keeps it (Slipway 34+).
	AllowOtherBundleID string
}

// DebugFileForm holds the fields of a debug file upload (api.md, "Upload a debug file").
type DebugFileForm struct {
	ChannelKey string
	// ReleaseVersion and BuildVersion are ignored by the server for iOS and macOS (the dSYM
	// carries them), and needed for Android unless the archive holds an AndroidManifest.xml.
	ReleaseVersion string
	BuildVersion   string
}

// Release is the part of the server's full Release answer the CLI prints; Raw is the whole body.
type Release struct {
	ID             int64  `json:"id"`
	Version        int64  `json:"version"`
	AppName        string `json:"app_name"`
	BundleID       string `json:"bundle_id"`
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	ReleaseURL     string `json:"release_url"`
	InstallURL     string `json:"install_url"`
	Size           int64  `json:"size"`
	Channel        struct {
		Slug string `json:"slug"`
		Name string `json:"name"`
	} `json:"channel"`
	// Insights is what changed since the channel's previous build (Slipway 24+; nil from Zealot).
	Insights *UploadInsights `json:"insights"`
	// Testers says how many testers the build went to and how many were mailed; nil when it went
	// to none (or the server has no testers).
	Testers *Distributed `json:"testers"`
	// Warnings say what the upload kept that its uploader should look at (a build of another app
	// than its channel holds; Slipway 34+).
	Warnings []string        `json:"warnings"`
	Raw      json.RawMessage `json:"-"`
}

// Distributed is how many testers a release went to and how many of them were mailed (the
// upload's testers field, POST /api/releases/:id/distribute's answer).
type Distributed struct {
	Testers  int `json:"testers"`
	Notified int `json:"notified"`
}

// UploadInsights is the insights field of an upload's answer.
type UploadInsights struct {
	AgainstReleaseID *int64   `json:"against_release_id"`
	Summary          []string `json:"summary"`
	BudgetWarnings   []string `json:"budget_warnings"`
}

// DebugFile is the part of the server's Debug file answer the CLI prints; Raw is the whole body.
type DebugFile struct {
	ID             int64  `json:"id"`
	AppName        string `json:"app_name"`
	DeviceType     string `json:"device_type"`
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	FileURL        string `json:"file_url"`
	Metadata       []struct {
		UUID   string `json:"uuid"`
		Type   string `json:"type"`
		Object string `json:"object"`
	} `json:"metadata"`
	Raw json.RawMessage `json:"-"`
}

// APIError is a non-2xx answer from the server.
type APIError struct {
	Status int
	// Message is the server's "error" message, or a summary of a body that is not Slipway's JSON
	// (a proxy's error page).
	Message string
	// Entry maps form fields to their problems, when the server names them.
	Entry map[string][]string
	// RequestID identifies an internal error in the server's logs.
	RequestID string
	// RetryAfter is the server's Retry-After (429, 503), 0 when it sent none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	if e.RequestID != "" {
		msg += " (request id " + e.RequestID + ")"
	}
	return msg
}

// ErrStalled is the cause of an upload cut because the connection took no byte for StallTimeout.
var ErrStalled = errors.New("the connection took no data")

// UploadApp uploads the package at path to POST /api/apps/upload and returns the new release.
// A non-2xx answer is an *APIError. progress may be nil.
func (c *Client) UploadApp(ctx context.Context, path string, form AppForm, progress ProgressFunc) (*Release, error) {
	fields := appFields(form)
	var rel Release
	// One key for every attempt: a retry of an upload the server did record returns that release
	// instead of making a second one.
	idem := newIdempotencyKey()
	var raw []byte
	err := c.retry(ctx, true, func() (err error) {
		raw, err = c.send(ctx, "/api/apps/upload", path, fields, progress, []string{form.Password}, idem)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &rel); err != nil || rel.ReleaseURL == "" {
		return nil, fmt.Errorf("the server's answer is not a release: %.200s", raw)
	}
	rel.Raw = raw
	return &rel, nil
}

// UploadDebugFile uploads the zip archive at path to POST /api/debug_files/upload and returns the
// new debug file. A non-2xx answer is an *APIError. progress may be nil.
func (c *Client) UploadDebugFile(ctx context.Context, path string, form DebugFileForm, progress ProgressFunc) (*DebugFile, error) {
	fields := []field{{"channel_key", form.ChannelKey}, {"release_version", form.ReleaseVersion}, {"build_version", form.BuildVersion}}
	var df DebugFile
	// Debug files have no idempotency key: retry only answers that say nothing was recorded.
	var raw []byte
	err := c.retry(ctx, false, func() (err error) {
		raw, err = c.send(ctx, "/api/debug_files/upload", path, fields, progress, nil, "")
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &df); err != nil || df.ID == 0 {
		return nil, fmt.Errorf("the server's answer is not a debug file: %.200s", raw)
	}
	df.Raw = raw
	return &df, nil
}

type field struct{ name, value string }

// appFields are an app upload's form fields, empty ones included (envelope skips them).
func appFields(form AppForm) []field {
	fields := []field{
		{"channel_key", form.ChannelKey}, {"name", form.Name}, {"release_type", form.ReleaseType},
		{"source", form.Source}, {"changelog", form.Changelog}, {"branch", form.Branch},
		{"git_commit", form.GitCommit}, {"ci_url", form.CIURL}, {"password", form.Password},
		{"release_version", form.ReleaseVersion}, {"build_version", form.BuildVersion}, {"bundle_id", form.BundleID},
		{"ed_signature", form.EdSignature}, {"tauri_signature", form.TauriSignature}, {"rollout", form.Rollout},
		{"allow_other_bundle_id", form.AllowOtherBundleID},
	}
	if form.Critical {
		fields = append(fields, field{"critical", "true"})
	}
	fields = append(fields, field{"testers", strings.Join(form.Testers, ",")}, field{"groups", strings.Join(form.Groups, ",")})
	if form.NoNotify {
		fields = append(fields, field{"notify", "false"})
	}
	if len(form.CustomFields) > 0 {
		b, _ := json.Marshal(form.CustomFields) // strings only: cannot fail
		fields = append(fields, field{"custom_fields", string(b)})
	}
	return fields
}

// send posts fields and the file at path (as the "file" part, last) to apiPath and returns the
// body of a 2xx answer. secrets are redacted from every error, with the token.
// idem, when set, is sent as the Idempotency-Key header.
func (c *Client) send(ctx context.Context, apiPath, path string, fields []field, progress ProgressFunc, secrets []string, idem string) (_ []byte, err error) {
	secrets = append(secrets, c.Token)
	defer func() {
		if err != nil {
			err = redactErr(err, secrets)
		}
	}()
	endpoint, err := c.endpoint(apiPath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: zip it first (an .app or .dSYM bundle is uploaded as a zip)", path)
	}
	size := int64(-1)
	if st.Mode().IsRegular() {
		size = st.Size()
		if size == 0 {
			return nil, fmt.Errorf("%s is empty", path)
		}
	}

	head, tail, contentType, err := envelope(fields, filepath.Base(path))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	body := &fileReader{r: f, size: size, path: path, progress: progress}
	body.touch()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint,
		io.MultiReader(bytes.NewReader(head), body, bytes.NewReader(tail)))
	if err != nil {
		return nil, err
	}
	req.ContentLength = -1
	if size >= 0 {
		req.ContentLength = int64(len(head)) + size + int64(len(tail))
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Expect", "100-continue")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	req.Header.Set("User-Agent", or(c.UserAgent, "slipway-uploader"))
	if c.Token != "" {
		req.Header.Set("Authorization", "Token "+c.Token)
	}

	stopWatch := c.watchStall(body, cancel)
	resp, err := c.httpClient().Do(req)
	stopWatch()
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrStalled) {
			return nil, cause
		}
		if ferr := body.failed.Load(); ferr != nil {
			return nil, *ferr
		}
		return nil, fmt.Errorf("upload to %s failed: %w", endpoint, unwrapURLError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("reading the server's answer (status %d): %w", resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, apiError(resp, raw)
	}
	return raw, nil
}

// endpoint joins the base URL and an API path.
func (c *Client) endpoint(apiPath string) (string, error) {
	base := strings.TrimRight(strings.TrimSpace(c.BaseURL), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the server URL must be an absolute http:// or https:// URL, such as https://slipway.example.com")
	}
	return base + apiPath, nil
}

// envelope encodes the multipart form around the file: head is every non-empty field followed by
// the file part's header, tail the closing boundary.
func envelope(fields []field, filename string) (head, tail []byte, contentType string, err error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		if err := mw.WriteField(f.name, f.value); err != nil {
			return nil, nil, "", err
		}
	}
	if _, err := mw.CreateFormFile("file", filename); err != nil {
		return nil, nil, "", err
	}
	n := buf.Len()
	if err := mw.Close(); err != nil {
		return nil, nil, "", err
	}
	b := buf.Bytes()
	return b[:n:n], b[n:], mw.FormDataContentType(), nil
}

// fileReader reads the file for the request body, counts it for the progress and the stall
// watchdog, and fails loudly if the file changes size under it.
type fileReader struct {
	r        io.Reader
	size     int64 // -1: unknown (not a regular file)
	path     string
	progress ProgressFunc
	sent     int64
	lastRead atomic.Int64 // unix nanoseconds of the last read
	done     atomic.Bool  // the whole file was read
	// failed is why reading failed, for a clearer message than the transport's. It is set in the
	// transport's goroutine, which may still run when Do returns.
	failed atomic.Pointer[error]
}

func (f *fileReader) fail(err error) error {
	f.failed.Store(&err)
	return err
}

func (f *fileReader) touch() { f.lastRead.Store(time.Now().UnixNano()) }

func (f *fileReader) Read(p []byte) (int, error) {
	f.touch()
	if f.size >= 0 {
		if left := f.size - f.sent; int64(len(p)) > left {
			p = p[:left]
		}
		if len(p) == 0 {
			f.done.Store(true)
			return 0, io.EOF
		}
	}
	n, err := f.r.Read(p)
	f.sent += int64(n)
	if n > 0 && f.progress != nil {
		f.progress(f.sent, f.size)
	}
	switch {
	case errors.Is(err, io.EOF) && f.size >= 0 && f.sent < f.size:
		return n, f.fail(fmt.Errorf("%s shrank while it was being uploaded (%d of %d bytes read)", f.path, f.sent, f.size))
	case errors.Is(err, io.EOF):
		f.done.Store(true)
	case err != nil:
		return n, f.fail(fmt.Errorf("reading %s: %w", f.path, err))
	}
	if f.size >= 0 && f.sent == f.size {
		f.done.Store(true)
	}
	return n, err
}

// watchStall cancels the request with ErrStalled when the body is being sent but the connection
// has taken nothing for StallTimeout. Once the whole body is sent, ResponseHeaderTimeout applies
// instead. It returns the function that stops watching.
func (c *Client) watchStall(body *fileReader, cancel context.CancelCauseFunc) func() {
	limit := c.StallTimeout
	if limit <= 0 {
		limit = DefaultStallTimeout
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(min(limit/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if body.done.Load() {
					return
				}
				if idle := time.Since(time.Unix(0, body.lastRead.Load())); idle > limit {
					cancel(fmt.Errorf("upload stalled: %w for %s", ErrStalled, limit))
					return
				}
			}
		}
	}()
	return func() { close(stop); wg.Wait() }
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	c.once.Do(func() {
		dial := or(c.DialTimeout, DefaultDialTimeout)
		tr := &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   dial,
			ResponseHeaderTimeout: or(c.ResponseHeaderTimeout, DefaultResponseHeaderTimeout),
			ExpectContinueTimeout: expectContinueTimeout,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          4,
			IdleConnTimeout:       90 * time.Second,
			// Large writes make fewer syscalls for multi-GB bodies.
			WriteBufferSize: 256 << 10,
		}
		c.client = &http.Client{
			Transport: tr,
			// A redirected POST would be resent as a GET without its body (301/302) or need the
			// body again (307/308): name the target instead, so the user fixes --url.
			CheckRedirect: func(req *http.Request, _ []*http.Request) error {
				return fmt.Errorf("the server redirects to %s: use that address as the server URL", redactURL(req.URL))
			},
		}
	})
	return c.client
}

// apiError builds the error for a non-2xx answer, from Slipway's {"error": ...} body when there
// is one, else from the status and the start of the body (a proxy's page).
func apiError(resp *http.Response, raw []byte) *APIError {
	e := &APIError{Status: resp.StatusCode}
	var body struct {
		Error     string              `json:"error"`
		Entry     map[string][]string `json:"entry"`
		RequestID string              `json:"request_id"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		e.Message, e.Entry, e.RequestID = body.Error, body.Entry, body.RequestID
	} else {
		e.Message = summarize(raw)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if s, err := strconv.Atoi(ra); err == nil && s >= 0 {
			e.Message += fmt.Sprintf(" (retry after %ds)", s)
			e.RetryAfter = time.Duration(s) * time.Second
		}
	}
	return e
}

// htmlTitle finds the title of a proxy's HTML error page ("413 Request Entity Too Large").
var htmlTitle = regexp.MustCompile(`(?is)<title>\s*(.*?)\s*</title>`)

// summarize returns the title of an HTML body or the first line of another one, bounded, for an
// error message.
func summarize(raw []byte) string {
	if m := htmlTitle.FindSubmatch(raw); m != nil {
		raw = m[1]
	}
	s := strings.TrimSpace(string(raw))
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "..."
	}
	return s
}

// unwrapURLError drops *url.Error's "Post \"URL\": " prefix, which the caller states better.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactURL prints u without user info and query, which may hold credentials.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}

// redactErr replaces every non-empty secret in err's message with [REDACTED]. An *APIError stays
// one (with its texts redacted); any other error that held a secret becomes a plain error, so no
// wrapped error can give the secret back.
func redactErr(err error, secrets []string) error {
	redact := func(s string) string {
		for _, secret := range secrets {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "[REDACTED]")
			}
		}
		return s
	}
	var api *APIError
	if errors.As(err, &api) {
		c := *api
		c.Message, c.RequestID, c.Entry = redact(c.Message), redact(c.RequestID), nil
		for field, msgs := range api.Entry {
			if c.Entry == nil {
				c.Entry = map[string][]string{}
			}
			for _, m := range msgs {
				c.Entry[redact(field)] = append(c.Entry[redact(field)], redact(m))
			}
		}
		return &c
	}
	if msg := err.Error(); redact(msg) != msg {
		return errors.New(redact(msg))
	}
	return err
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
