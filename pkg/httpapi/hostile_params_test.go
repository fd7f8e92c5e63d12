package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/test/apptest"
)

// A NUL byte or invalid UTF-8 in a query or form value could only reach Postgres as an error (a
// 500 before): every route answers 422 with {"error": ...}, and nothing is changed.
func TestNULAndInvalidUTF8AreRefusedEverywhere(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	rel := e.UploadApp(t, "a.apk", apk("com.example.keep", "1.0", 1), apptest.Field("name", "Keep"))
	slug := rel["channel"].(map[string]any)["slug"].(string)
	srv := e.Server.Config.Handler.(*httpapi.Server)
	admin := http.Header{"Authorization": {"Token " + e.AdminToken}}
	before := snapshot(t, e)
	for _, bad := range []string{"%00", "a%00b", "%ff", "%c3%28"} {
		for _, r := range srv.Routes() {
			path := strings.NewReplacer(":id", "1", ":slug", slug, ":udid", "00008030-001A2B3C4D5E6F70", "*key", "packages/x", "*filepath", "slipway.css").Replace(r.Path)
			for _, q := range []string{"channel_key=" + bad, bad + "=1"} {
				resp := e.Do(t, r.Method, path+"?"+q, nil, admin)
				if resp.Status != http.StatusUnprocessableEntity || (r.Method != "HEAD" && !strings.Contains(string(resp.Body), "NUL byte or invalid UTF-8")) {
					t.Errorf("%s %s?%s: %d %.200s, want 422 with an error", r.Method, path, q, resp.Status, resp.Body)
				}
			}
		}
		// In a path segment.
		for _, path := range []string{"/channels/" + bad, "/api/devices/" + bad, "/api/apps/" + bad} {
			if resp := e.Do(t, "GET", path, nil, admin); resp.Status != http.StatusUnprocessableEntity && resp.Status != http.StatusMethodNotAllowed {
				t.Errorf("GET %s: %d %.200s, want 422", path, resp.Status, resp.Body)
			}
		}
	}
	// In bodies: JSON, urlencoded, multipart.
	for _, c := range []struct{ method, path, ctype, body string }{
		{"POST", "/api/apps", "application/json", `{"name":"a\u0000b"}`},
		{"POST", "/api/apps", "application/x-www-form-urlencoded", "name=a%00b"},
		{"POST", "/api/apps", "application/x-www-form-urlencoded", "name=%ff"},
		{"PUT", "/api/apps/1", "application/json", `{"name":"ok","extra":["x\u0000"]}`},
		{"PUT", "/api/devices/00008030-001A2B3C4D5E6F70", "application/json", `{"name":"a\u0000"}`},
		{"POST", "/api/tokens", "application/json", `{"name":"t\u0000"}`},
	} {
		h := http.Header{"Content-Type": {c.ctype}, "Authorization": {"Token " + e.AdminToken}}
		if resp := e.Do(t, c.method, c.path, strings.NewReader(c.body), h); resp.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s %s %s: %d %.200s, want 422", c.method, c.path, c.body, resp.Status, resp.Body)
		}
	}
	resp := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.Field("changelog", "fix\x00"), apptest.File("a.apk", apk("com.example.keep", "1.0", 1)))
	if resp.Status != http.StatusUnprocessableEntity {
		t.Errorf("upload with a NUL in a field: %d %.200s", resp.Status, resp.Body)
	}
	if after := snapshot(t, e); after != before {
		t.Errorf("something changed:\nbefore %s\nafter  %s", before, after)
	}
}

// snapshot counts the rows a refused request must not have touched.
func snapshot(t *testing.T, e *apptest.Env) string {
	t.Helper()
	var apps, releases, devices, tokens, objects int
	err := e.DB.Pool.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM apps), (SELECT count(*) FROM releases),
		(SELECT count(*) FROM devices), (SELECT count(*) FROM api_tokens), (SELECT count(*) FROM storage_objects)`).
		Scan(&apps, &releases, &devices, &tokens, &objects)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("apps=%d releases=%d devices=%d tokens=%d pending=%d objects=%d", apps, releases, devices, tokens, objects, len(e.Objects(t)))
}
