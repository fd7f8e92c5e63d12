package httpapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/docs"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		t.Fatalf("load docs/openapi.yaml: %v", err)
	}
	return doc
}

// The document is valid OpenAPI 3.1, its examples and defaults included.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi: %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(t.Context(), openapi3.EnableExamplesValidation(), openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableSchemaPatternValidation()); err != nil {
		t.Fatal(err)
	}
	// Every operation has an id, a tag and a documented error or success status.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" || len(op.Tags) == 0 || op.Responses.Len() == 0 {
				t.Errorf("%s %s: operationId %q, tags %v, %d responses", method, path, op.OperationID, op.Tags, op.Responses.Len())
			}
		}
	}
}

// newServer is a Server with no database or storage behind it: enough to list routes and serve
// what needs neither.
func newServer(t *testing.T) *httpapi.Server {
	t.Helper()
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return httpapi.New(httpapi.Deps{Config: cfg, Metrics: metrics.New(), Log: slog.New(slog.DiscardHandler)})
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z_][A-Za-z0-9_]*)`)

// Every route the router registers is documented, and every documented operation is routed.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	routed := map[string]bool{}
	for _, r := range newServer(t).Routes() {
		routed[r.Method+" "+ginParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	var missing, extra []string
	for k := range routed {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !routed[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	if len(missing) > 0 {
		t.Errorf("routes missing from docs/openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("operations in docs/openapi.yaml that no route answers:\n  %s", strings.Join(extra, "\n  "))
	}
}

// GET /api/openapi.json serves the YAML document as JSON.
func TestOpenAPIServedAsJSON(t *testing.T) {
	rec := httptest.NewRecorder()
	newServer(t).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/openapi.json", nil))
	resp := rec.Result()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	want, err := yaml.YAMLToJSON(docs.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(body) || string(body) != string(want) {
		t.Fatalf("served document differs from docs/openapi.yaml converted to JSON")
	}
	// And the JSON loads as the same OpenAPI document.
	doc, err := openapi3.NewLoader().LoadFromData(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
}
