package apptest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/slipwayhq/slipway/docs"
)

// The OpenAPI check: every request a test sends to its Env through Env.Client (and so Do, Get,
// Upload, UploadApp) or Follow, and the server's answer, are checked against docs/openapi.yaml.
// A failure is recorded and reported when the test ends, so the document cannot drift from what
// the server really does. It is on by default; Options.NoOpenAPICheck or SLIPWAY_TEST_OPENAPI=off
// turns it off, and benchmarks skip it.
//
// What counts as a failure:
//   - a request no operation of the document matches, unless the server answered it 404, 405 or a
//     redirect to another path (gin's trailing-slash redirects): then both agree nothing is there;
//   - a response whose status the operation does not list, whose Content-Type is not documented
//     for that status, whose documented headers (Location, Retry-After, WWW-Authenticate, ...) are
//     missing or malformed, or whose JSON body does not match the schema (the JSON views are
//     additionalProperties: false, so an undocumented field fails too);
//   - a request the document rejects (a missing required parameter, a wrong type) that the server
//     nevertheless accepted (status below 400). Requests the document rejects and the server
//     rejects too are what tests of bad input are made of, and pass.

// maxCheckedBody bounds the request and JSON response bodies the check reads; larger ones are not
// validated (their status and headers still are).
const maxCheckedBody = 64 << 20

// openAPIDoc is the document and its router, loaded once per test binary.
var openAPIDoc = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Match any host: the test server listens on a random port.
	doc.Servers = nil
	// Catch-all parameters (gin's /objects/*key) may span segments: give them gorilla/mux's
	// "match anything" pattern.
	for _, path := range doc.Paths.Keys() {
		item := doc.Paths.Value(path)
		newPath := path
		params := slices.Clone(item.Parameters)
		for _, op := range item.Operations() {
			params = append(params, op.Parameters...)
		}
		for _, p := range params {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath && p.Value.Extensions["x-slipway-catch-all"] == true {
				newPath = strings.Replace(newPath, "{"+p.Value.Name+"}", "{"+p.Value.Name+":.*}", 1)
			}
		}
		if newPath != path {
			doc.Paths.Delete(path)
			doc.Paths.Set(newPath, item)
		}
	}
	return gorillamux.NewRouter(doc)
})

// openAPICheck records the requests and responses of one Env that disagree with the document.
type openAPICheck struct {
	router   routers.Router
	host     string
	base     http.RoundTripper
	mu       sync.Mutex
	failures []string
	seen     map[string]map[int]bool // "GET /api/apps/{id}" → statuses answered
}

// checkOpenAPI installs the check on e.Client and reports its failures when t ends.
func (e *Env) checkOpenAPI(t testing.TB, opts Options) {
	t.Helper()
	if _, bench := t.(*testing.B); bench || opts.NoOpenAPICheck || os.Getenv("SLIPWAY_TEST_OPENAPI") == "off" {
		return
	}
	router, err := openAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	base := e.Client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c := &openAPICheck{router: router, host: u.Host, base: base, seen: map[string]map[int]bool{}}
	e.Client.Transport = c
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.failures) > 0 {
			t.Errorf("%d request(s) disagree with docs/openapi.yaml (fix the document or the server; see test/apptest/openapi.go):\n%s",
				len(c.failures), strings.Join(c.failures, "\n"))
		}
	})
}

// followClient is the client Follow uses: it follows redirects, through the same check for
// requests to the test server (presigned URLs of S3 go straight through).
func (e *Env) followClient() *http.Client {
	return &http.Client{Transport: e.Client.Transport}
}

// RoundTrip sends req and checks it and its response when it goes to the test server.
func (c *openAPICheck) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != c.host {
		return c.base.RoundTrip(req)
	}
	// Keep a copy of the request body for the check; streamed bodies are not read.
	var reqBody []byte
	bodyChecked := req.Body == nil || req.Body == http.NoBody
	if !bodyChecked && req.GetBody != nil && req.ContentLength >= 0 && req.ContentLength <= maxCheckedBody {
		if rc, err := req.GetBody(); err == nil {
			reqBody, err = io.ReadAll(rc)
			rc.Close()
			bodyChecked = err == nil
		}
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	var respBody []byte
	respChecked := false
	if isJSON(resp.Header.Get("Content-Type")) && resp.ContentLength <= maxCheckedBody {
		respBody, err = io.ReadAll(io.LimitReader(resp.Body, maxCheckedBody+1))
		switch {
		case err != nil:
			resp.Body.Close()
			resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(respBody), errReader{err}))
		case len(respBody) > maxCheckedBody:
			// Too large to check: hand the test the whole body, what was read first.
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(respBody), resp.Body), resp.Body}
		default:
			resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(respBody))
			respChecked = true
		}
	}
	if problem := c.check(req, reqBody, bodyChecked, resp, respBody, respChecked); problem != "" {
		c.mu.Lock()
		c.failures = append(c.failures, fmt.Sprintf("- %s %s → %d: %s", req.Method, redact(req.URL), resp.StatusCode, problem))
		c.mu.Unlock()
	}
	return resp, nil
}

type errReader struct{ err error }

type readCloser struct {
	io.Reader
	io.Closer
}

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// check returns what is wrong with the exchange, or "".
func (c *openAPICheck) check(req *http.Request, reqBody []byte, bodyChecked bool, resp *http.Response, respBody []byte, respChecked bool) string {
	ctx := context.Background()
	vreq := req.Clone(ctx)
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	vreq.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
	route, pathParams, err := c.router.FindRoute(vreq)
	if err != nil {
		switch resp.StatusCode {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			return ""
		case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
			if loc, _ := resp.Location(); loc != nil && loc.Path != req.URL.Path {
				return ""
			}
		}
		return "no operation of the document matches this request (" + err.Error() + ")"
	}
	c.record(route, resp.StatusCode)
	opts := &openapi3filter.Options{
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody:    !bodyChecked,
		ExcludeResponseBody:   !respChecked,
		IncludeResponseStatus: true,
		SkipSettingDefaults:   true,
		MultiError:            true,
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: pathParams, Route: route, Options: opts}
	var problems []string
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr != nil && resp.StatusCode < 400 {
		problems = append(problems, "the document rejects this request, yet the server accepted it: "+oneLine(reqErr))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		problems = append(problems, "response: "+oneLine(err))
	} else if !respChecked {
		// ValidateResponse checks the Content-Type only with the body: check it here.
		if ref := route.Operation.Responses.Status(resp.StatusCode); ref != nil && ref.Value != nil && len(ref.Value.Content) > 0 {
			if ct := resp.Header.Get("Content-Type"); ref.Value.Content.Get(ct) == nil {
				problems = append(problems, fmt.Sprintf("response: Content-Type %q is not documented for status %d", ct, resp.StatusCode))
			}
		}
	}
	if len(problems) == 0 {
		return ""
	}
	if len(respBody) > 0 {
		problems = append(problems, fmt.Sprintf("body: %.300s", respBody))
	}
	return fmt.Sprintf("[%s %s] %s", route.Method, route.Path, strings.Join(problems, "; "))
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// redact hides the values of query parameters that carry secrets.
func redact(u *url.URL) string {
	q := u.Query()
	for _, k := range []string{"token", "password", "access", "t"} {
		if q.Has(k) {
			q.Set(k, "REDACTED")
		}
	}
	s := u.Path
	if len(q) > 0 {
		s += "?" + q.Encode()
	}
	return s
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

var catchAll = regexp.MustCompile(`\{([A-Za-z_]+):\.\*\}`)

// operationName names an operation as "METHOD /path/{param}", the path as in the document.
func operationName(method, path string) string {
	return method + " " + catchAll.ReplaceAllString(path, "{$1}")
}

func (c *openAPICheck) record(route *routers.Route, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]map[int]bool{}
	}
	op := operationName(route.Method, route.Path)
	if c.seen[op] == nil {
		c.seen[op] = map[int]bool{}
	}
	c.seen[op][status] = true
}

// OpenAPIOperations lists the operations of docs/openapi.yaml, as "METHOD /path/{param}".
func OpenAPIOperations() ([]string, error) {
	doc, err := openapi3.NewLoader().LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		return nil, err
	}
	var ops []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, operationName(method, path))
		}
	}
	slices.Sort(ops)
	return ops, nil
}

// OpenAPISeen returns the operations this Env's checked requests matched so far, each with the
// statuses the server answered (nil when the check is off).
func (e *Env) OpenAPISeen() map[string]map[int]bool {
	c, ok := e.Client.Transport.(*openAPICheck)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]map[int]bool, len(c.seen))
	for op, statuses := range c.seen {
		out[op] = maps.Clone(statuses)
	}
	return out
}
