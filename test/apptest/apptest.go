// Package apptest starts Slipway's real HTTP handler on an httptest server, backed by a fresh
// Postgres database and either filesystem storage or a fresh MinIO bucket, with an admin and an
// upload token, plus helpers to call it the way clients do. Integration tests of httpapi, web and
// the end-to-end suites share it.
package apptest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"strings"
	"testing"
	"time"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/slipwayhq/slipway/pkg/background"
	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/backends"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// Storage kinds for Options.Storage.
const (
	FS = "fs"
	S3 = "s3"
)

// Options shape a test environment.
type Options struct {
	// Storage is FS (default) or S3 (a fresh MinIO bucket).
	Storage string
	// Configure may change the configuration before the server starts.
	Configure func(*config.Config)
	// NoOpenAPICheck turns off checking requests and responses against docs/openapi.yaml
	// (openapi.go), which is on by default.
	NoOpenAPICheck bool
	// SessionPartSize is the part size of upload sessions (default 5 MiB).
	SessionPartSize int64
}

// sessionPartSize is the part size of upload sessions in tests: 5 MiB (S3's smallest), so that
// tests make several parts out of small files, unless the options ask for another.
func sessionPartSize(opts Options) int64 {
	if opts.SessionPartSize > 0 {
		return opts.SessionPartSize
	}
	return 5 << 20
}

// Env is a running Slipway for one test.
type Env struct {
	URL         string
	Config      *config.Config
	DB          *postgres.DB
	Storage     blob.Backend
	Service     *service.Service
	Metrics     *metrics.Metrics
	AdminToken  string
	UploadToken string
	Server      *httptest.Server
	// Client does not follow redirects, so tests see the 302s.
	Client *http.Client
	logs   *testkit.LockedBuffer
	s3     *testenv.S3Env
}

// New starts a Slipway for the test and stops it at cleanup.
func New(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx := context.Background()
	db := testenv.DB(t)
	storageURL := "file://" + t.TempDir()
	var s3ref *testenv.S3Env
	bopts := []backends.Option{backends.WithMemoryBudget(128 << 20)}
	if opts.Storage == S3 {
		s3env := testenv.S3(t)
		s3ref = &s3env
		storageURL = s3env.URL
		bopts = append(bopts, backends.WithS3Credentials(s3env.AccessKey, s3env.SecretKey))
	}
	cfg, err := config.Load(func(k string) string {
		switch k {
		case "SLIPWAY_STORAGE_URL":
			return storageURL
		case "SLIPWAY_SECRET":
			return "test-secret-test-secret-test-secret-0123"
		case "SLIPWAY_GC_INTERVAL":
			return "0"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := backends.Open(ctx, storageURL, bopts...)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := metrics.New()
	e := &Env{Config: cfg, DB: db, Storage: st, Metrics: m, logs: logs, s3: s3ref,
		Client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Minute}}
	ts := httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + ts.Listener.Addr().String()
	if opts.Configure != nil {
		opts.Configure(cfg)
	}
	svc := service.New(cfg, db, st, m, log)
	svc.Sessions.Config.PartSize = sessionPartSize(opts)
	e.Service = svc
	// The background components serve runs (cmd/slipway/serve.go), stopped in the same order.
	bg := background.Start(ctx, log,
		background.Stage{{Name: "retention", Component: svc.Retention}, {Name: "collector", Component: svc.Collector},
			{Name: "checksum verifier", Component: svc.Verifier}},
		background.Stage{{Name: "download counts", Component: svc.Downloads}, {Name: "tester mail", Component: svc.Mailings}},
		background.Stage{{Name: "webhook delivery", Component: svc.Sender}},
		background.Stage{{Name: "read-cache invalidation", Component: svc.Watcher}})
	t.Cleanup(bg.Stop)
	ts.Config.Handler = httpapi.New(httpapi.Deps{Config: cfg, Service: svc, Metrics: m, Log: log})
	ts.Start()
	t.Cleanup(ts.Close)
	e.Server, e.URL = ts, ts.URL
	e.checkOpenAPI(t, opts)
	if e.AdminToken, _, err = db.CreateToken(ctx, "admin", distribution.ScopeAdmin); err != nil {
		t.Fatal(err)
	}
	if e.UploadToken, _, err = db.CreateToken(ctx, "ci", distribution.ScopeUpload); err != nil {
		t.Fatal(err)
	}
	return e
}

// Part is one part of a multipart form, written in order.
type Part struct {
	Name     string
	Value    string
	Filename string // set for a file part
	Data     []byte // file content
	// ContentType of a file part (default application/octet-stream).
	ContentType string
}

// Field is a form-field Part.
func Field(name, value string) Part { return Part{Name: name, Value: value} }

// File is a file Part named "file".
func File(filename string, data []byte) Part {
	return Part{Name: "file", Filename: filename, Data: data}
}

// Multipart encodes parts as a multipart/form-data body and returns it with its content type.
func Multipart(parts ...Part) (*bytes.Buffer, string) {
	body := &bytes.Buffer{}
	w := multipart.NewWriter(body)
	for _, p := range parts {
		if p.Filename != "" || p.Data != nil {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="`+p.Name+`"; filename="`+p.Filename+`"`)
			ct := p.ContentType
			if ct == "" {
				ct = "application/octet-stream"
			}
			h.Set("Content-Type", ct)
			pw, _ := w.CreatePart(h)
			_, _ = pw.Write(p.Data)
			continue
		}
		_ = w.WriteField(p.Name, p.Value)
	}
	_ = w.Close()
	return body, w.FormDataContentType()
}

// Response is a decoded HTTP response.
type Response = testkit.Response

// Do sends a request to the server (path relative to its URL) and reads the whole response.
func (e *Env) Do(t testing.TB, method, path string, body io.Reader, header http.Header) *Response {
	t.Helper()
	url := path
	if !strings.HasPrefix(path, "http") {
		url = e.URL + path
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// GetWith is Get with a token in the Authorization header.
func (e *Env) GetWith(t testing.TB, path, token string) *Response {
	return e.Do(t, http.MethodGet, path, nil, http.Header{"Authorization": {"Token " + token}})
}

// Get is Do with GET and no body.
func (e *Env) Get(t testing.TB, path string) *Response {
	return e.Do(t, http.MethodGet, path, nil, nil)
}

// Upload posts parts to path as multipart, with token in the Authorization header when non-empty.
func (e *Env) Upload(t testing.TB, path, token string, parts ...Part) *Response {
	t.Helper()
	body, ctype := Multipart(parts...)
	h := http.Header{"Content-Type": {ctype}}
	if token != "" {
		h.Set("Authorization", "Token "+token)
	}
	return e.Do(t, http.MethodPost, path, body, h)
}

// UploadApp uploads a package as fastlane does (token and fields first, the file last) and
// returns the decoded full Release, failing unless the answer is 201.
func (e *Env) UploadApp(t testing.TB, filename string, data []byte, fields ...Part) map[string]any {
	t.Helper()
	parts := append([]Part{Field("token", e.UploadToken)}, fields...)
	parts = append(parts, File(filename, data))
	r := e.Upload(t, "/api/apps/upload", "", parts...)
	if r.Status != http.StatusCreated {
		t.Fatalf("upload %s: status %d: %s", filename, r.Status, r.Body)
	}
	return r.Map(t)
}

// Follow fetches url following redirects (through presigned or signed URLs) and returns the body.
func (e *Env) Follow(t testing.TB, url string) *Response {
	t.Helper()
	resp, err := e.followClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Objects lists every object key in storage, failing the test on error.
func (e *Env) Objects(t testing.TB) []string {
	t.Helper()
	keys, err := e.ListObjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// ListObjects lists every object key in the environment's storage (filesystem folder or bucket).
func (e *Env) ListObjects(ctx context.Context) ([]string, error) {
	if l, ok := e.Storage.(interface{ Dir() string }); ok {
		var keys []string
		root := l.Dir()
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
				rel, _ := filepath.Rel(root, p)
				keys = append(keys, filepath.ToSlash(rel))
			}
			return err
		})
		return keys, err
	}
	if e.s3 == nil {
		return nil, fmt.Errorf("apptest: no way to list %T", e.Storage)
	}
	var keys []string
	p := awss3.NewListObjectsV2Paginator(e.s3.Client(), &awss3.ListObjectsV2Input{Bucket: &e.s3.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys, nil
}

// LogText returns what the server has logged so far.
func (e *Env) LogText() string { return e.logs.String() }

// AsSystem returns ctx acting as the system (the command line on the server): what a test sets
// up by calling the domain directly is allowed as the operator's.
func AsSystem(ctx context.Context) context.Context {
	return distribution.WithActor(ctx, distribution.SystemActor("test"))
}
