package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
)

func TestAppsAPI(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin := http.Header{"Authorization": {"Token " + e.AdminToken}}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Token " + e.AdminToken}}

	r := e.Do(t, "POST", "/api/apps", strings.NewReader("name=Demo"), form)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if got := string(r.Body); got != `{"id":1,"name":"Demo","schemes":[]}` {
		t.Fatalf("create body %s", got)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", r.Header)
	}
	// JSON body with the token in it.
	r = e.Do(t, "POST", "/api/apps", strings.NewReader(`{"name":"  Second  ","token":"`+e.AdminToken+`"}`), http.Header{"Content-Type": {"application/json"}})
	if r.Status != 201 || r.Map(t)["name"] != "Second" {
		t.Fatalf("create json: %d %s", r.Status, r.Body)
	}
	r = e.GetWith(t, "/api/apps", e.AdminToken)
	var apps []map[string]any
	r.JSON(t, &apps)
	if len(apps) != 2 || apps[0]["name"] != "Demo" {
		t.Fatalf("list %s", r.Body)
	}
	r = e.GetWith(t, "/api/apps?per_page=1&page=2", e.AdminToken)
	r.JSON(t, &apps)
	if len(apps) != 1 || apps[0]["name"] != "Second" {
		t.Fatalf("page 2: %s", r.Body)
	}
	if r = e.GetWith(t, "/api/apps?page=9", e.AdminToken); string(r.Body) != "[]" {
		t.Fatalf("past the end: %s", r.Body)
	}
	r = e.Do(t, "PUT", "/api/apps/1", strings.NewReader("name=Renamed"), form)
	if r.Status != 200 || r.Map(t)["name"] != "Renamed" {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	if r = e.GetWith(t, "/api/apps/1", e.AdminToken); r.Map(t)["name"] != "Renamed" {
		t.Fatalf("get: %s", r.Body)
	}
	r = e.Do(t, "DELETE", "/api/apps/1", nil, admin)
	if r.Status != 200 || string(r.Body) != `{"mesage":"OK"}` {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	if r = e.GetWith(t, "/api/apps/1", e.AdminToken); r.Status != 404 {
		t.Fatalf("get deleted: %d", r.Status)
	}
}

func TestAppsAPIBadInput(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	form := func(tok string) http.Header {
		return http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Authorization": {"Token " + tok}}
	}
	auth := http.Header{"Authorization": {"Token " + e.AdminToken}}
	cases := []struct {
		name, method, path, body string
		header                   http.Header
		status                   int
	}{
		{"non-integer id", "GET", "/api/apps/abc", "", auth, 422},
		{"negative id", "GET", "/api/apps/-1", "", auth, 422},
		{"unknown id", "GET", "/api/apps/999", "", auth, 404},
		{"page zero", "GET", "/api/apps?page=0", "", auth, 422},
		{"page text", "GET", "/api/apps?page=x", "", auth, 422},
		{"per_page negative", "GET", "/api/apps?per_page=-5", "", auth, 422},
		{"missing token", "POST", "/api/apps", "name=x", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 401},
		{"wrong token", "POST", "/api/apps", "name=x", form("slw_wrong"), 401},
		{"upload scope cannot create apps", "POST", "/api/apps", "name=x", form(e.UploadToken), 403},
		{"empty name", "POST", "/api/apps", "name=", form(e.AdminToken), 422},
		{"blank name", "POST", "/api/apps", "name=%20%20", form(e.AdminToken), 422},
		{"10 KB name", "POST", "/api/apps", "name=" + strings.Repeat("a", 10240), form(e.AdminToken), 422},
		{"name not a string", "POST", "/api/apps", `{"name": 5}`, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + e.AdminToken}}, 422},
		{"malformed JSON", "POST", "/api/apps", `{"name":`, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + e.AdminToken}}, 422},
		{"JSON array body", "POST", "/api/apps", `["x"]`, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + e.AdminToken}}, 422},
		{"unsupported content type", "POST", "/api/apps", `name=x`, http.Header{"Content-Type": {"text/plain"}, "Authorization": {"Token " + e.AdminToken}}, 422},
		{"update unknown app", "PUT", "/api/apps/999", "name=x", form(e.AdminToken), 404},
		{"delete unknown app", "DELETE", "/api/apps/999", "", form(e.AdminToken), 404},
		{"unknown API path", "GET", "/api/nothing", "", nil, 404},
		{"wrong method", "PATCH", "/api/apps", "", nil, 405},
		{"form where multipart upload expected", "POST", "/api/apps/upload", "file=x", form(e.UploadToken), 422},
		{"JSON where multipart upload expected", "POST", "/api/apps/upload", `{"file":"x"}`, http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + e.UploadToken}}, 422},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.Do(t, c.method, c.path, strings.NewReader(c.body), c.header)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			r.Error(t)
			if c.status == 401 && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Token") {
				t.Errorf("401 without WWW-Authenticate: Token")
			}
		})
	}
	// Nothing was changed by any of them.
	if r := e.GetWith(t, "/api/apps", e.AdminToken); string(r.Body) != "[]" {
		t.Fatalf("apps after bad requests: %s", r.Body)
	}
	// A body over the limit is a 413.
	r := e.Do(t, "POST", "/api/apps", strings.NewReader("name="+strings.Repeat("a", 2<<20)), form(e.AdminToken))
	if r.Status != 413 {
		t.Fatalf("huge body: %d %s", r.Status, r.Body)
	}
}
