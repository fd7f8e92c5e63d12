package testkit

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Response is a whole HTTP response, read by a test's client (test/apptest, test/e2e).
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it is not JSON.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("status %d, body is not JSON (%v): %.500s", r.Status, err, r.Body)
	}
}

// Map decodes a JSON object body.
func (r *Response) Map(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Error returns the "error" field of a JSON error body, failing the test when there is none.
func (r *Response) Error(t testing.TB) string {
	t.Helper()
	m := r.Map(t)
	msg, ok := m["error"].(string)
	if !ok || msg == "" {
		t.Fatalf("status %d: no error message in %s", r.Status, r.Body)
	}
	return msg
}
