package apptest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// cannedTransport answers every request with one response.
type cannedTransport struct {
	status int
	header http.Header
	body   string
}

func (c cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := c.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(strings.NewReader(c.body)), Request: req}, nil
}

var (
	jsonHeader  = http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	etagHeader  = http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Etag": {`"0123456789abcdef0123456789abcdef"`}}
	errorHeader = http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}, "X-Request-Id": {"abc"}}
	appJSON     = `{"id":1,"name":"Demo","schemes":[{"id":2,"name":"Adhoc","new_build_callout":true,"retained_builds":0,"channels":[{"id":3,"slug":"k","name":"ios","device_type":"ios","bundle_id":"*","git_url":null,"has_password":false,"download_filename_type":"original","max_size_bytes":null,"max_growth_percent":null,"enforce_budget":false,"sparkle_signing":false}]}]}`
	release     = `{"version":1,"app_name":"Demo Adhoc ios","bundle_id":"com.example","release_version":"1.0","build_version":"1","source":"api","branch":"","git_commit":"","ci_url":"","size":10,"icon_url":"http://x/static/default-icon.png","install_url":"itms-services://?action=download-manifest&url=http://x/channels/k/releases/1/install","changelog":[{"message":"m"}],"created_at":"2026-11-21T05:18:00.123+00:00"}`
)

// The check accepts what the document describes and records what it does not.
func TestOpenAPICheck(t *testing.T) {
	router, err := openAPIDoc()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, url, body, ctype string
		resp                           cannedTransport
		problem                        string // "" when the exchange must pass
	}{
		{"documented app", "GET", "/api/apps/1", "", "", cannedTransport{200, jsonHeader, appJSON}, ""},
		{"extra field", "GET", "/api/apps/1", "", "", cannedTransport{200, jsonHeader, `{"id":1,"name":"Demo","schemes":[],"extra":1}`}, "extra"},
		{"missing field", "GET", "/api/apps/1", "", "", cannedTransport{200, jsonHeader, `{"id":1,"name":"Demo"}`}, "schemes"},
		{"git_url of the wrong type", "GET", "/api/apps/1", "", "", cannedTransport{200, jsonHeader, strings.Replace(appJSON, `"git_url":null`, `"git_url":1`, 1)}, "git_url"},
		{"git_url string", "GET", "/api/apps/1", "", "", cannedTransport{200, jsonHeader, strings.Replace(appJSON, `"git_url":null`, `"git_url":"https://git"`, 1)}, ""},
		{"undocumented status", "GET", "/api/apps/1", "", "", cannedTransport{409, errorHeader, `{"error":"x"}`}, "status is not supported"},
		{"wrong content type", "GET", "/api/apps/1", "", "", cannedTransport{200, http.Header{"Content-Type": {"text/html"}}, "<p>"}, "text/html"},
		{"error with entry", "GET", "/api/apps/x", "", "", cannedTransport{422, errorHeader, `{"error":"id must be","entry":{"id":["must be"]}}`}, ""},
		{"error without message", "GET", "/api/apps/1", "", "", cannedTransport{404, errorHeader, `{"message":"x"}`}, "error"},
		{"401 without WWW-Authenticate", "POST", "/api/apps", "name=x", "application/x-www-form-urlencoded", cannedTransport{401, errorHeader, `{"error":"x"}`}, "WWW-Authenticate"},
		{"503 without Retry-After", "GET", "/api/apps", "", "", cannedTransport{503, errorHeader, `{"error":"x"}`}, "Retry-After"},
		{"302 without Location", "GET", "/download/releases/1", "", "", cannedTransport{302, http.Header{"Cache-Control": {"no-store"}}, ""}, "Location"},
		{"302", "GET", "/download/releases/1", "", "", cannedTransport{302, http.Header{"Cache-Control": {"no-store"}, "Location": {"http://s3/x?sig"}}, ""}, ""},
		{"timestamp without milliseconds", "GET", "/api/apps/version_exist?channel_key=k&bundle_id=b&git_commit=c", "", "", cannedTransport{200, etagHeader, strings.Replace(release, ".123+00:00", "+00:00", 1)}, "created_at"},
		{"short release", "GET", "/api/apps/version_exist?channel_key=k&bundle_id=b&git_commit=c", "", "", cannedTransport{200, etagHeader, release}, ""},
		{"no ETag", "GET", "/api/apps/version_exist?channel_key=k&bundle_id=b&git_commit=c", "", "", cannedTransport{200, jsonHeader, release}, "ETag"},
		{"latest as object", "GET", "/api/apps/latest?channel_key=k&release_version=1&build_version=1", "", "", cannedTransport{200, etagHeader, `{"app_name":"a","bundle_id":"*","git_url":null,"app":{"id":1,"name":"a"},"scheme":{"id":1,"name":"s"},"releases":` + release + `}`}, ""},
		{"latest as array (sdk)", "GET", "/api/apps/latest?channel_key=k&sdk=1&release_version=1&build_version=1", "", "", cannedTransport{200, etagHeader, `{"app_name":"a","bundle_id":"*","git_url":null,"app":{"id":1,"name":"a"},"scheme":{"id":1,"name":"s"},"releases":[` + release + `]}`}, ""},
		{"invalid request accepted", "GET", "/api/apps?page=0", "", "", cannedTransport{200, jsonHeader, `[]`}, "accepted"},
		{"invalid request rejected", "GET", "/api/apps?page=0", "", "", cannedTransport{422, errorHeader, `{"error":"page"}`}, ""},
		{"missing required parameter accepted", "GET", "/api/apps/versions", "", "", cannedTransport{200, jsonHeader, `{}`}, "channel_key"},
		{"unknown path answered 404", "GET", "/api/nothing", "", "", cannedTransport{404, errorHeader, `{"error":"x"}`}, ""},
		{"unknown method answered 405", "PATCH", "/api/apps", "", "", cannedTransport{405, errorHeader, `{"error":"x"}`}, ""},
		{"unknown path answered 200", "GET", "/api/nothing", "", "", cannedTransport{200, jsonHeader, `{}`}, "no operation"},
		{"object key with slashes", "GET", "/objects/packages/01/demo.ipa?t=x", "", "", cannedTransport{200, http.Header{"Content-Type": {"application/octet-stream"}}, "PK"}, ""},
		{"upload without file accepted", "POST", "/api/apps/upload", "--B\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nx\r\n--B--\r\n", "multipart/form-data; boundary=B", cannedTransport{201, jsonHeader, `{}`}, "file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk := &openAPICheck{router: router, host: "slipway.test", base: c.resp}
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, err := http.NewRequest(c.method, "http://slipway.test"+c.url, body)
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			resp, err := chk.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			if string(got) != c.resp.body {
				t.Errorf("the response body was not passed on: %q", got)
			}
			switch {
			case c.problem == "" && len(chk.failures) > 0:
				t.Errorf("unexpected failure: %v", chk.failures)
			case c.problem != "" && len(chk.failures) == 0:
				t.Errorf("no failure recorded, want one about %q", c.problem)
			case c.problem != "" && !strings.Contains(chk.failures[0], c.problem):
				t.Errorf("failure %q does not mention %q", chk.failures[0], c.problem)
			}
		})
	}
	// Requests to other hosts (presigned S3 URLs) are not checked.
	chk := &openAPICheck{router: router, host: "slipway.test", base: cannedTransport{status: 200, body: "x"}}
	req, _ := http.NewRequest("GET", "http://s3.test/bucket/key", nil)
	if _, err := chk.RoundTrip(req); err != nil || len(chk.failures) > 0 {
		t.Fatalf("other host: %v %v", err, chk.failures)
	}
}
