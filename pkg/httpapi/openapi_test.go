package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/docs"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/distribution/access"
	"github.com/slipwayhq/slipway/pkg/httpapi"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/imagetest"
	"github.com/slipwayhq/slipway/test/testkit"
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
	return newServerWith(t)
}

// newServerWith is newServer with environment variables set (name, value, name, value...).
func newServerWith(t *testing.T, env ...string) *httpapi.Server {
	t.Helper()
	cfg, err := config.Load(func(name string) string {
		for i := 0; i+1 < len(env); i += 2 {
			if env[i] == name {
				return env[i+1]
			}
		}
		return ""
	})
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

// Every documented operation, driven through the checked client against the real server on
// Postgres and filesystem storage: each response (success and the usual errors) is validated
// against docs/openapi.yaml by apptest, and the test fails if an operation was never exercised.
func TestOpenAPIEveryOperation(t *testing.T) {
	repoKey := testRepoKey(t)
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) {
		c.MaxUploadBytes = 1 << 20
		c.WebhookAllowPrivate = true
		c.RepoKey = repoKey
	}})
	admin := http.Header{"Authorization": {"Token " + e.AdminToken}}
	upload := http.Header{"Authorization": {"Bearer " + e.UploadToken}}
	jsonBody := func(tok string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Token " + tok}}
	}
	expect := func(r *apptest.Response, status int, what string) *apptest.Response {
		t.Helper()
		if r.Status != status {
			t.Fatalf("%s: status %d, want %d: %.300s", what, r.Status, status, r.Body)
		}
		return r
	}
	get := func(path string, status int) *apptest.Response {
		t.Helper()
		return expect(e.Get(t, path), status, "GET "+path)
	}

	// Operations.
	for _, p := range []string{"/healthz", "/readyz", "/internal/readyz", "/metrics", "/api/version", "/api/health", "/api/openapi.json", "/static/slipway.css"} {
		get(p, 200)
	}
	expect(e.Do(t, "HEAD", "/static/slipway.css", nil, nil), 200, "HEAD static")

	// Apps.
	r := expect(e.Do(t, "POST", "/api/apps", strings.NewReader(`{"name":"Empty"}`), jsonBody(e.AdminToken)), 201, "create")
	emptyID := int64(r.Map(t)["id"].(float64))
	expect(e.Do(t, "PUT", fmt.Sprintf("/api/apps/%d", emptyID), strings.NewReader(`{"name":"Renamed"}`), jsonBody(e.AdminToken)), 200, "update")
	expect(e.Do(t, "POST", "/api/apps", strings.NewReader(`{"name":"x"}`), jsonBody(e.UploadToken)), 403, "create with upload scope")

	// Releases: an iOS build with an icon, changelog and custom fields, twice with one
	// Idempotency-Key; an Android build into a protected channel of its own.
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Demo", BundleID: "com.example.demo", Version: "1.0", Build: "1",
		Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}})
	fields := []apptest.Part{apptest.Field("changelog", `[{"message":"Fix","author":"A","email":"a@example.com","date":"2026-11-21 05:18:00"}]`),
		apptest.Field("custom_fields", `[{"name":"Env","value":"staging","icon":"fa fa-flask"}]`), apptest.Field("branch", "origin/main"),
		apptest.Field("git_commit", "abc123"), apptest.Field("ci_url", "https://ci.example.com/1"), apptest.File("demo.ipa", ipa)}
	body, ctype := apptest.Multipart(fields...)
	idem := http.Header{"Content-Type": {ctype}, "Authorization": {"Token " + e.UploadToken}, "Idempotency-Key": {"build-1"}}
	rel := expect(e.Do(t, "POST", "/api/apps/upload", body, idem), 201, "upload ipa").Map(t)
	body, ctype = apptest.Multipart(fields...)
	idem.Set("Content-Type", ctype)
	if again := expect(e.Do(t, "POST", "/api/apps/upload", body, idem), 201, "upload ipa again").Map(t); again["id"] != rel["id"] {
		t.Fatalf("idempotent replay made release %v, first was %v", again["id"], rel["id"])
	}
	relID := int64(rel["id"].(float64))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	slug := rel["channel"].(map[string]any)["slug"].(string)
	apk := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.droid", VersionCode: 3, VersionName: "1.2", MinSDK: 21, Label: "Droid"}})
	arel := e.UploadApp(t, "droid.apk", apk, apptest.Field("password", "secret"))
	apkID := int64(arel["id"].(float64))
	apkSlug := arel["channel"].(map[string]any)["slug"].(string)
	expect(e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.Field("channel_key", "nope"), apptest.File("demo.ipa", ipa)), 404, "upload to unknown channel")
	expect(e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.File("big.ipa", make([]byte, 2<<20))), 413, "upload over the limit")
	expect(e.Upload(t, "/api/apps/upload", "", apptest.File("demo.ipa", ipa)), 401, "upload without token")

	// Desktop update feeds (issue 23): a macOS build, once its checksums are verified.
	// (Signed for Tauri: its feeds offer signed builds only.)
	mac := e.UploadApp(t, "Desk.zip", appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0", Build: "1"}),
		apptest.Field("tauri_signature", base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))))
	macSlug := mac["channel"].(map[string]any)["slug"].(string)
	testkit.Eventually(t, time.Minute, "the macOS build's checksums to be verified", func() bool {
		return expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d", int64(mac["id"].(float64))), nil, admin), 200, "get").Map(t)["checksum_state"] == "verified"
	})
	for _, p := range []string{"/appcast.xml", "/electron/latest-mac.yml", "/tauri.json", "/tauri/darwin/aarch64/0.9"} {
		get("/channels/"+macSlug+p, 200)
		expect(e.Do(t, "HEAD", "/channels/"+macSlug+p, nil, nil), 200, "HEAD "+p)
	}
	get("/channels/"+macSlug+"/tauri/darwin/aarch64/1.0", 204)
	get("/channels/"+macSlug+"/tauri/darwin/sparc/1.0", 422)
	get("/channels/"+macSlug+"/electron/latest.yml", 404)
	get("/channels/"+slug+"/appcast.xml", 404)
	get("/channels/"+macSlug+"/squirrel/RELEASES", 404) // a macOS channel; TestSquirrelReleases has the 200
	expect(e.Do(t, "HEAD", "/channels/"+macSlug+"/squirrel/RELEASES", nil, nil), 404, "HEAD RELEASES")
	get("/channels/"+macSlug+"/app.appinstaller", 404) // a macOS channel; TestAppInstallerFile has the 200
	expect(e.Do(t, "HEAD", "/channels/"+macSlug+"/app.appinstaller", nil, nil), 404, "HEAD app.appinstaller")
	get(fmt.Sprintf("/download/releases/%d/Desk.zip", int64(mac["id"].(float64))), 302)
	// The repository signing key (repos.go); the repositories' own files: TestAPT*.
	for _, p := range []string{"/keys/slipway.asc", "/channels/" + macSlug + "/apt/key.asc"} {
		get(p, 200)
		expect(e.Do(t, "HEAD", p, nil, nil), 200, "HEAD "+p)
	}
	get("/channels/nope/apt/key.asc", 404)
	get("/channels/"+apkSlug+"/tauri.json", 401)
	expect(e.Do(t, "POST", fmt.Sprintf("/api/channels/%d/feed_token", int64(arel["channel"].(map[string]any)["id"].(float64))), nil, admin), 201, "feed token")
	// A Linux channel's DNF repository (rpm_test.go).
	exerciseRPMRepository(t, e, admin)

	get("/api/apps", 401)
	expect(e.Do(t, "GET", "/api/apps", nil, upload), 200, "list apps")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/apps/%d", appID), nil, upload), 200, "get app")
	get("/api/apps/versions?channel_key="+slug, 200)
	get("/api/apps/versions?channel_key=nope", 404)
	get("/api/apps/latest?channel_key="+slug+"&release_version=0.9&build_version=1", 200)
	get("/api/apps/latest?channel_key="+slug+"&sdk=ios&release_version=0.9&build_version=1", 200)
	get("/api/apps/version_exist?channel_key="+slug+"&bundle_id=com.example.demo&release_version=1.0&build_version=1", 200)
	get("/api/apps/version_exist?channel_key="+slug+"&bundle_id=com.example.demo&git_commit=abc123", 200)
	get("/api/apps/version_exist?channel_key="+slug+"&bundle_id=com.example.demo&git_commit=zzz", 404)
	get("/api/apps/version_exist?channel_key="+slug+"&bundle_id=com.example.demo", 422)
	// The update check and its neighbours answer HEAD, and 304 to the ETag they gave.
	for _, path := range []string{"/api/apps/versions?channel_key=" + slug, "/api/apps/latest?channel_key=" + slug + "&release_version=0.9&build_version=1",
		"/api/apps/version_exist?channel_key=" + slug + "&bundle_id=com.example.demo&git_commit=abc123"} {
		etag := expect(e.Do(t, "HEAD", path, nil, nil), 200, "HEAD "+path).Header.Get("ETag")
		expect(e.Do(t, "GET", path, nil, http.Header{"If-None-Match": {etag}}), 304, "If-None-Match "+path)
		expect(e.Do(t, "HEAD", path, nil, http.Header{"If-None-Match": {etag}}), 304, "HEAD If-None-Match "+path)
	}

	// Downloads: 302 to the signed /objects URL, which serves the bytes (and ranges).
	loc := get(fmt.Sprintf("/download/releases/%d", relID), 302).Header.Get("Location")
	if got := e.Follow(t, loc); got.Status != 200 || len(got.Body) != len(ipa) {
		t.Fatalf("package download: %d, %d bytes", got.Status, len(got.Body))
	}
	expect(e.Do(t, "GET", loc, nil, http.Header{"Range": {"bytes=0-1"}}), 206, "range")
	get("/objects/packages/forged?t=x", 403)
	get(fmt.Sprintf("/releases/%d/icon", relID), 302)
	get(fmt.Sprintf("/channels/%s/releases/%d/install", slug, relID), 200)
	get(fmt.Sprintf("/channels/%s/releases/%d/install", apkSlug, apkID), 401)
	get(fmt.Sprintf("/channels/%s/releases/%d/install?password=secret", apkSlug, apkID), 404)
	get(fmt.Sprintf("/download/releases/%d", apkID), 401)
	get(fmt.Sprintf("/download/releases/%d?password=wrong", apkID), 403)
	get(fmt.Sprintf("/download/releases/%d?password=secret", apkID), 302)
	get(fmt.Sprintf("/releases/%d/icon?password=secret", apkID), 302)
	get("/download/releases/999", 404)

	// Pages.
	get("/channels/"+slug, 200)
	get("/channels/nope", 404)
	get(fmt.Sprintf("/channels/%s/releases/%d", slug, relID), 200)
	get(fmt.Sprintf("/channels/%s/releases/%d", apkSlug, apkID), 200) // the password form
	formHeader := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	expect(e.Do(t, "POST", "/channels/"+apkSlug, strings.NewReader("password=secret"), formHeader), 303, "channel password")
	expect(e.Do(t, "POST", fmt.Sprintf("/channels/%s/releases/%d", apkSlug, apkID), strings.NewReader("password=wrong"), formHeader), 403, "wrong password")
	qr := get(fmt.Sprintf("/channels/%s/releases/%d/qrcode?size=medium", slug, relID), 200)
	expect(e.Do(t, "GET", fmt.Sprintf("/channels/%s/releases/%d/qrcode?size=medium", slug, relID), nil, http.Header{"If-None-Match": {qr.Header.Get("ETag")}}), 304, "qrcode etag")
	get(fmt.Sprintf("/channels/%s/releases/%d/qrcode?size=huge", slug, relID), 422)

	// Debug files.
	dsym := func(build string) []byte {
		return debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Demo.app.dSYM", Identifier: "com.example.demo", ReleaseVersion: "1.0", BuildVersion: build,
			Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "12345678-1234-1234-1234-12345678900" + build}}})
	}
	df := expect(e.Upload(t, "/api/debug_files/upload", e.UploadToken, apptest.Field("channel_key", slug), apptest.File("d.zip", dsym("1"))), 201, "debug upload").Map(t)
	dfID := int64(df["id"].(float64))
	expect(e.Upload(t, "/api/debug_files/upload", e.UploadToken, apptest.Field("channel_key", slug), apptest.File("d.zip", dsym("1"))), 409, "duplicate debug file")
	get("/api/debug_files?channel_key="+slug, 200)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/debug_files/%d?channel_key=%s", dfID, slug), nil, upload), 200, "get debug file")
	get(fmt.Sprintf("/api/debug_files/%d?channel_key=%s", dfID, slug), 401)
	body, ctype = apptest.Multipart(apptest.Field("channel_key", slug), apptest.File("d.zip", dsym("2")))
	expect(e.Do(t, "PUT", fmt.Sprintf("/api/debug_files/%d", dfID), body, http.Header{"Content-Type": {ctype}, "Authorization": {"Token " + e.UploadToken}}), 200, "replace debug file")
	get("/api/debug_files/download?channel_key="+slug+"&release_version=latest", 302)
	get("/api/debug_files/download?channel_key="+slug+"&release_version=9", 404)
	get(fmt.Sprintf("/download/debug_files/%d", dfID), 302)
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/debug_files/%d?channel_key=%s", dfID, slug), nil, upload), 403, "delete debug file with upload scope")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/debug_files/%d?channel_key=%s", dfID, slug), nil, admin), 200, "delete debug file")

	// Management.
	dfJSON := func(method, path, body, tok string, status int) *apptest.Response {
		t.Helper()
		return expect(e.Do(t, method, path, strings.NewReader(body), jsonBody(tok)), status, method+" "+path)
	}
	dfID = int64(expect(e.Upload(t, "/api/debug_files/upload", e.UploadToken, apptest.Field("channel_key", slug), apptest.File("d.zip", dsym("3"))), 201, "debug upload").Map(t)["id"].(float64))
	get("/api/debug_files/exists/version?channel_key="+slug+"&release_version=1.0&build_version=3", 200)
	get("/api/debug_files/exists/version?channel_key="+slug+"&release_version=1.0", 422)
	get("/api/debug_files/exists/uuid?uuid=12345678-1234-1234-1234-123456789003", 200)
	get("/api/debug_files/exists/uuid?uuid=12345678-1234-1234-1234-123456789009", 404)
	get("/api/debug_files/exists/binary?checksum="+strings.Repeat("0", 32), 404)
	sc := dfJSON("POST", fmt.Sprintf("/api/apps/%d/schemes", appID), `{"name":"Beta","retained_builds":5}`, e.AdminToken, 201).Map(t)
	scID := int64(sc["id"].(float64))
	dfJSON("POST", fmt.Sprintf("/api/apps/%d/schemes", appID), `{"name":"Beta"}`, e.AdminToken, 409)
	dfJSON("POST", fmt.Sprintf("/api/apps/%d/schemes", appID), `{"name":" "}`, e.AdminToken, 422)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/schemes", appID), nil, upload), 200, "list schemes")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/schemes/%d", scID), nil, upload), 200, "get scheme")
	get(fmt.Sprintf("/api/schemes/%d", scID), 401)
	dfJSON("PUT", fmt.Sprintf("/api/schemes/%d", scID), `{"new_build_callout":false}`, e.AdminToken, 200)
	dfJSON("PATCH", fmt.Sprintf("/api/schemes/%d", scID), `{"retained_builds":-1}`, e.AdminToken, 422)
	dfJSON("PATCH", fmt.Sprintf("/api/schemes/%d", scID), `{"name":"Beta 2"}`, e.UploadToken, 403)
	ch := dfJSON("POST", fmt.Sprintf("/api/schemes/%d/channels", scID), `{"name":"Beta iOS","slug":"beta-ios","device_type":"ios","password":"pw"}`, e.AdminToken, 201).Map(t)
	chID := int64(ch["id"].(float64))
	dfJSON("POST", fmt.Sprintf("/api/schemes/%d/channels", scID), `{"name":"Twin","slug":"beta-ios","device_type":"ios"}`, e.AdminToken, 409)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/schemes/%d/channels", scID), nil, upload), 200, "list channels")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/channels/%d", chID), nil, upload), 200, "get channel")
	dfJSON("PUT", fmt.Sprintf("/api/channels/%d", chID), `{"password":""}`, e.AdminToken, 200)
	dfJSON("PATCH", fmt.Sprintf("/api/channels/%d", chID), `{"device_type":"symbian"}`, e.AdminToken, 422)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d", relID), nil, upload), 200, "get release")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/insights", relID), nil, upload), 200, "release insights")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/insights", 1<<40), nil, upload), 404, "insights of an unknown release")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/diff?against=%d", relID, relID), nil, upload), 200, "release diff")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/diff?against=%d", relID, apkID), nil, upload), 422, "diff across platforms")
	dfJSON("PUT", fmt.Sprintf("/api/releases/%d", relID), `{"changelog":[{"message":"Edited"}]}`, e.UploadToken, 200)
	dfJSON("PATCH", fmt.Sprintf("/api/releases/%d", relID), `{"ci_url":"javascript:alert(1)"}`, e.AdminToken, 422)
	dfJSON("PUT", "/api/devices/00008030-001A2B3C4D5E6F70", `{"name":"QA iPhone","model":"iPhone 15"}`, e.UploadToken, 201)
	dfJSON("PATCH", "/api/devices/00008030-001A2B3C4D5E6F70", `{"name":"QA iPhone 15"}`, e.UploadToken, 200)
	dfJSON("PUT", "/api/devices/not-a-udid", `{"name":"x"}`, e.UploadToken, 422)
	expect(e.Do(t, "GET", "/api/devices", nil, upload), 200, "list devices")
	expect(e.Do(t, "GET", "/api/devices/00008030-001A2B3C4D5E6F70", nil, upload), 200, "get device")
	expect(e.Do(t, "GET", "/api/devices/export", nil, upload), 200, "export devices")
	// UDID collection: the page, the profile, a device's signed answer, the device's page.
	expect(e.Do(t, "GET", "/udid", nil, nil), 200, "udid page")
	profile := expect(e.Do(t, "GET", "/udid/profile", nil, nil), 200, "udid profile")
	answer := profileservicetest.Answer(t, map[string]string{"UDID": "00008110-000A1B2C3D4E5F60", "PRODUCT": "iPhone14,5",
		"CHALLENGE": profileservicetest.Challenge(t, profile.Body)})
	expect(e.Do(t, "POST", "/udid/callback", bytes.NewReader(answer), http.Header{"Content-Type": {"application/pkcs7-signature"}}), 301, "udid callback")
	expect(e.Do(t, "POST", "/udid/callback", strings.NewReader("junk"), http.Header{"Content-Type": {"application/pkcs7-signature"}}), 422, "bad udid callback")
	expect(e.Do(t, "GET", "/udid/00008110-000A1B2C3D4E5F60", nil, nil), 200, "device page")
	// A self-signed answer registers an unverified device; an admin approves it.
	expect(e.Do(t, "POST", "/api/devices/00008110-000A1B2C3D4E5F60/approve", nil, upload), 403, "approve device with an upload token")
	expect(e.Do(t, "POST", "/api/devices/00008110-000A1B2C3D4E5F60/approve", nil, admin), 200, "approve device")
	expect(e.Do(t, "POST", "/api/devices/00008110-000A1B2C3D4E5F61/approve", nil, admin), 404, "approve an unknown device")
	expect(e.Do(t, "DELETE", "/api/devices/00008110-000A1B2C3D4E5F60", nil, admin), 200, "delete device")
	// The console's sign-in (no identity provider here: the login link).
	expect(e.Do(t, "GET", "/console", nil, nil), 302, "console without a session")
	expect(e.Do(t, "GET", "/console/login", nil, nil), 200, "sign-in page")
	expect(e.Do(t, "GET", "/console/callback?code=x&state=y", nil, nil), 404, "callback without a provider")
	link, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	signedIn := expect(e.Do(t, "GET", "/console/login-link?token="+link, nil, nil), 302, "login link")
	expect(e.Do(t, "GET", "/console/login-link?token="+link, nil, nil), 401, "login link again")
	session := http.Header{"Cookie": {strings.Split(signedIn.Header.Get("Set-Cookie"), ";")[0]}}
	expect(e.Do(t, "GET", "/console", nil, session), 200, "console")
	expect(e.Do(t, "GET", "/console/tokens", nil, session), 200, "console tokens")
	expect(e.Do(t, "GET", "/console/audit", nil, session), 200, "console audit")
	expect(e.Do(t, "GET", fmt.Sprintf("/console/apps/%d", appID), nil, session), 200, "console app")
	expect(e.Do(t, "GET", fmt.Sprintf("/console/channels/%d", chID), nil, session), 200, "console channel")
	expect(e.Do(t, "GET", fmt.Sprintf("/console/releases/%d", relID), nil, session), 200, "console build")
	expect(e.Do(t, "GET", "/console/releases/999999", nil, session), 404, "console build unknown")
	for _, path := range []string{fmt.Sprintf("/console/apps/%d/channels", appID), fmt.Sprintf("/console/apps/%d/members", appID),
		fmt.Sprintf("/console/channels/%d/retention", chID), fmt.Sprintf("/console/channels/%d/webhooks", chID), fmt.Sprintf("/console/releases/%d", relID)} {
		expect(e.Do(t, "POST", path, strings.NewReader("csrf=forged"), consoleFormHeader(session)), 403, "console form without the CSRF token: "+path)
	}
	for _, path := range []string{fmt.Sprintf("/console/apps/%d", appID), fmt.Sprintf("/console/apps/%d/delete", appID),
		fmt.Sprintf("/console/apps/%d/members/1/remove", appID), fmt.Sprintf("/console/channels/%d", chID), fmt.Sprintf("/console/channels/%d/delete", chID),
		fmt.Sprintf("/console/releases/%d/pin", relID), fmt.Sprintf("/console/releases/%d/delete", relID), "/console/devices/00008030-001A2B3C4D5E6F70/delete", "/console/devices/00008030-001A2B3C4D5E6F70/approve",
		"/console/users/1", fmt.Sprintf("/console/apps/%d/webhooks", appID), "/console/webhooks/1", "/console/webhooks/1/test", "/console/webhooks/1/enabled", "/console/webhooks/1/delete", "/console/apps", fmt.Sprintf("/console/schemes/%d", scID),
		fmt.Sprintf("/console/schemes/%d/delete", scID), fmt.Sprintf("/console/channels/%d/feed_token", chID), fmt.Sprintf("/console/releases/%d/updates", relID),
		fmt.Sprintf("/console/channels/%d/signing", chID), fmt.Sprintf("/console/channels/%d/appinstaller", chID),
		fmt.Sprintf("/console/channels/%d/apt", chID)} {
		expect(e.Do(t, "POST", path, strings.NewReader("csrf=forged&confirm=1"), consoleFormHeader(session)), 403, "console form without the CSRF token: "+path)
	}
	expect(e.Do(t, "GET", "/console/devices", nil, session), 200, "console devices")
	expect(e.Do(t, "GET", "/console/devices/export", nil, session), 200, "console devices export")
	expect(e.Do(t, "GET", "/console/users", nil, session), 200, "console people")
	expect(e.Do(t, "GET", "/console/webhooks/999999", nil, session), 404, "console webhook unknown")
	// The web upload's script calls: refused without the X-CSRF-Token header (console_upload_test.go
	// in pkg/web walks a whole upload through them).
	expect(e.Do(t, "POST", fmt.Sprintf("/console/channels/%d/uploads", chID), strings.NewReader("filename=a.ipa&size=10"), consoleFormHeader(session)), 403, "start a web upload without the CSRF token")
	expect(e.Do(t, "POST", "/console/uploads", strings.NewReader("filename=a.ipa&size=10"), consoleFormHeader(session)), 403, "start a first upload without the CSRF token")
	expect(e.Do(t, "POST", "/console/upload", strings.NewReader("--x\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\nforged\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.ipa\"\r\n\r\nPK\r\n--x--\r\n"),
		http.Header{"Cookie": session["Cookie"], "Content-Type": {"multipart/form-data; boundary=x"}}), 403, "the upload box without the CSRF token")
	expect(e.Do(t, "GET", "/console/uploads/ups_nothing", nil, session), 403, "web upload session without the CSRF token")
	expect(e.Do(t, "POST", "/console/uploads/ups_nothing/complete", nil, session), 403, "complete a web upload without the CSRF token")
	expect(e.Do(t, "POST", "/console/tokens", strings.NewReader("name=x&scope=upload"), consoleFormHeader(session)), 403, "create a token without the CSRF token")
	expect(e.Do(t, "POST", "/console/tokens/1/revoke", strings.NewReader("csrf=forged"), consoleFormHeader(session)), 403, "revoke a token without the CSRF token")
	expect(e.Do(t, "POST", "/console/logout", strings.NewReader("csrf=forged"), consoleFormHeader(session)), 403, "sign out without the CSRF token")
	expect(e.Do(t, "POST", "/console/logout", strings.NewReader("csrf=x"), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}), 401, "sign out without a session")
	tok := dfJSON("POST", "/api/tokens", `{"name":"ci-2","scope":"upload"}`, e.AdminToken, 201).Map(t)
	dfJSON("POST", "/api/tokens", `{"name":"ci-2"}`, e.AdminToken, 409)
	expect(e.Do(t, "GET", "/api/tokens", nil, admin), 200, "list tokens")
	expect(e.Do(t, "GET", "/api/tokens", nil, upload), 403, "list tokens with upload scope")
	expect(e.Do(t, "GET", "/api/users/me", nil, upload), 200, "me")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/tokens/%d", int64(tok["id"].(float64))), nil, admin), 200, "revoke token")
	// Zealot's users and collaborators.
	if _, _, err := e.Service.Logins.SignIn(context.Background(), access.Identity{Issuer: "https://idp.example", Subject: "carol",
		Email: "carol@example.com", Name: "Carol", EmailVerified: true}, access.SignInPolicy{AllowAnyone: true}); err != nil {
		t.Fatal(err)
	}
	expect(e.Do(t, "GET", "/api/users", nil, admin), 200, "users")
	expect(e.Do(t, "GET", "/api/users", nil, upload), 403, "users with upload scope")
	dfJSON("POST", "/api/users", `{"email":"x@example.com","password":"pw"}`, e.AdminToken, 422)
	carol := dfJSON("GET", "/api/users/search?email=CAROL@example.com", "", e.AdminToken, 200).Map(t)
	carolID := int64(carol["id"].(float64))
	expect(e.Do(t, "GET", "/api/users/search?email=nobody@example.com", nil, admin), 404, "search nobody")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/users/%d", carolID), nil, admin), 200, "get user")
	dfJSON("PUT", fmt.Sprintf("/api/users/%d", carolID), `{"role":"member"}`, e.AdminToken, 200)
	dfJSON("PATCH", fmt.Sprintf("/api/users/%d", carolID), `{"role":"owner"}`, e.AdminToken, 422)
	expect(e.Do(t, "POST", fmt.Sprintf("/api/users/%d/lock", carolID), nil, admin), 202, "lock user")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/users/%d/unlock", carolID), nil, admin), 202, "unlock user")
	dfJSON("POST", fmt.Sprintf("/api/apps/%d/collaborators", appID), fmt.Sprintf(`{"user_id":%d,"role":"member"}`, carolID), e.AdminToken, 201)
	dfJSON("POST", fmt.Sprintf("/api/apps/%d/collaborators", appID), fmt.Sprintf(`{"user_id":%d}`, carolID), e.AdminToken, 409)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/collaborators/%d", appID, carolID), nil, admin), 200, "get collaborator")
	dfJSON("PUT", fmt.Sprintf("/api/apps/%d/collaborators/%d", appID, carolID), `{"role":"developer"}`, e.AdminToken, 200)
	dfJSON("PATCH", fmt.Sprintf("/api/apps/%d/collaborators/%d", appID, carolID), `{"role":"member"}`, e.AdminToken, 200)
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/apps/%d/collaborators/%d", appID, carolID), nil, admin), 200, "remove collaborator")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/users/%d", carolID), nil, admin), 200, "delete user")
	// Upload sessions.
	small := appletest.BuildIPA(appletest.IPAOptions{AppName: "Sess", BundleID: "com.example.sess", Version: "1.0", Build: "1"})
	sum := sha256.Sum256(small)
	sess := dfJSON("POST", "/api/uploads", fmt.Sprintf(`{"filename":"s.ipa","size":%d,"sha256":"%x"}`, len(small), sum), e.UploadToken, 201).Map(t)
	sessID := sess["id"].(string)
	partURL := sess["parts"].([]any)[0].(map[string]any)["url"].(string)
	expect(e.Do(t, "GET", "/api/uploads/"+sessID, nil, upload), 200, "get session")
	expect(e.Do(t, "PUT", partURL, bytes.NewReader(small), http.Header{"Content-Type": {"application/octet-stream"}}), 200, "put part")
	expect(e.Do(t, "PUT", partURL+"x", bytes.NewReader(small), http.Header{"Content-Type": {"application/octet-stream"}}), 403, "put part, bad signature")
	expect(e.Do(t, "POST", "/api/uploads/"+sessID+"/complete", nil, upload), 201, "complete session")
	expect(e.Do(t, "DELETE", "/api/uploads/"+sessID, nil, upload), 409, "abort a completed session")
	other := dfJSON("POST", "/api/uploads", `{"filename":"o.ipa","size":10}`, e.UploadToken, 201).Map(t)
	expect(e.Do(t, "DELETE", "/api/uploads/"+other["id"].(string), nil, upload), 200, "abort session")

	// Retention.
	dfJSON("PUT", fmt.Sprintf("/api/schemes/%d/retention", scID), `{"keep_builds":5,"max_age_days":30}`, e.AdminToken, 200)
	dfJSON("PUT", fmt.Sprintf("/api/schemes/%d/retention", scID), `{"keep_builds":-1}`, e.AdminToken, 422)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/schemes/%d/retention", scID), nil, upload), 200, "get scheme retention")
	dfJSON("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), `{"max_bytes":1073741824,"keep_builds":null}`, e.AdminToken, 200)
	dfJSON("PUT", fmt.Sprintf("/api/channels/%d/retention", chID), `{"max_bytes":1}`, e.UploadToken, 403)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/channels/%d/retention", chID), nil, upload), 200, "get channel retention")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/channels/%d/retention/plan", chID), nil, upload), 200, "plan")
	dfJSON("POST", fmt.Sprintf("/api/channels/%d/retention/plan", chID), `{"keep_builds":1}`, e.UploadToken, 200)
	expect(e.Do(t, "GET", "/api/retention/plan", nil, upload), 200, "plan everything")
	// Webhooks (to a receiver on loopback, allowed in this test).
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer receiver.Close()
	hook := dfJSON("POST", fmt.Sprintf("/api/channels/%d/webhooks", chID), `{"url":"`+receiver.URL+`/hook","format":"slack"}`, e.AdminToken, 201).Map(t)
	hookID := int64(hook["id"].(float64))
	dfJSON("POST", fmt.Sprintf("/api/channels/%d/webhooks", chID), `{"url":"`+receiver.URL+`","events":["release.exploded"]}`, e.AdminToken, 422)
	dfJSON("POST", fmt.Sprintf("/api/apps/%d/webhooks", appID), `{"url":"`+receiver.URL+`/app","events":["debug_file.created"]}`, e.AdminToken, 201)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/webhooks", appID), nil, admin), 200, "app webhooks")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/channels/%d/webhooks", chID), nil, admin), 200, "channel webhooks")
	expect(e.Do(t, "GET", "/api/webhooks", nil, admin), 200, "all webhooks")
	expect(e.Do(t, "GET", "/api/webhooks", nil, upload), 403, "webhooks with upload scope")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/webhooks/%d", hookID), nil, admin), 200, "get webhook")
	dfJSON("PATCH", fmt.Sprintf("/api/webhooks/%d", hookID), `{"format":"discord"}`, e.AdminToken, 200)
	dfJSON("PUT", fmt.Sprintf("/api/webhooks/%d", hookID), `{"format":"telegram"}`, e.AdminToken, 422)
	expect(e.Do(t, "POST", fmt.Sprintf("/api/webhooks/%d/test", hookID), nil, admin), 200, "send test")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/webhooks/%d/deliveries", hookID), nil, admin), 200, "deliveries")
	expect(e.Do(t, "GET", fmt.Sprintf("/console/webhooks/%d", hookID), nil, session), 200, "console webhook deliveries")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/webhooks/%d", hookID), nil, admin), 200, "delete webhook")

	// Testers and groups.
	dfJSON("POST", "/api/groups", `{"alias":"qa","name":"QA"}`, e.AdminToken, 201)
	dfJSON("POST", "/api/groups", `{"alias":"qa"}`, e.AdminToken, 409)
	dfJSON("POST", "/api/groups/qa/testers", `{"emails":["ada@example.com","bob@example.com"]}`, e.AdminToken, 200)
	dfJSON("POST", "/api/groups/qa/testers", `{"emails":["nope"]}`, e.AdminToken, 422)
	expect(e.Do(t, "GET", "/api/groups", nil, admin), 200, "groups")
	expect(e.Do(t, "GET", "/api/testers?group=qa", nil, admin), 200, "testers")
	dfJSON("POST", fmt.Sprintf("/api/releases/%d/distribute", relID), `{"groups":["qa"],"testers":["carol@example.com"]}`, e.UploadToken, 200)
	dfJSON("POST", fmt.Sprintf("/api/releases/%d/distribute", relID), `{"groups":["nope"]}`, e.UploadToken, 422)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/testers", relID), nil, upload), 200, "release testers")
	expect(e.Do(t, "DELETE", "/api/groups/qa/testers/bob@example.com", nil, admin), 200, "remove a tester")
	expect(e.Do(t, "DELETE", "/api/groups/qa/testers/bob@example.com", nil, admin), 404, "remove them again")
	expect(e.Do(t, "DELETE", "/api/groups/qa", nil, admin), 200, "delete a group")
	// Feedback.
	fbBody, fbType := apptest.Multipart(apptest.Field("text", "It crashes"), apptest.Field("device", "iPhone15,2"),
		shot("s.png", imagetest.PNG(t, 40, 80)))
	fb := expect(e.Do(t, "POST", fmt.Sprintf("/api/releases/%d/feedback", relID), fbBody, http.Header{"Content-Type": {fbType}}), 201, "send feedback").Map(t)
	fbID := int64(fb["id"].(float64))
	dfJSON("POST", fmt.Sprintf("/api/releases/%d/feedback", relID), `{"text":""}`, e.UploadToken, 422)
	dfJSON("POST", "/api/feedback?channel_key="+slug+"&release_version=1.0&build_version=1", `{"text":"By version"}`, e.UploadToken, 201)
	expect(e.Do(t, "GET", fmt.Sprintf("/api/releases/%d/feedback", relID), nil, upload), 200, "a build's feedback")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/apps/%d/feedback?state=open&q=crash", appID), nil, upload), 200, "an app's feedback")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/feedback/%d", fbID), nil, upload), 200, "a report")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/feedback/%d/screenshots/1?size=thumb", fbID), nil, upload), 302, "a report's screenshot")
	expect(e.Do(t, "GET", fmt.Sprintf("/api/feedback/%d/screenshots/9", fbID), nil, upload), 422, "no such screenshot")
	dfJSON("PATCH", fmt.Sprintf("/api/feedback/%d", fbID), `{"state":"resolved"}`, e.AdminToken, 200)
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/feedback/%d", fbID), nil, admin), 200, "delete a report")
	// The tester pages (pkg/web's tester tests walk them whole).
	expect(e.Do(t, "GET", "/", nil, nil), 302, "the site's address")
	expect(e.Do(t, "GET", "/docs", nil, nil), 200, "the guides")
	expect(e.Do(t, "GET", "/docs/webhooks", nil, nil), 200, "a guide")
	expect(e.Do(t, "GET", "/docs/nope", nil, nil), 404, "no such guide")
	expect(e.Do(t, "GET", "/t", nil, nil), 303, "tester home without a session")
	expect(e.Do(t, "GET", "/t/signin?next=/t", nil, nil), 200, "tester sign-in")
	expect(e.Do(t, "POST", "/t/signin", strings.NewReader("email=ada%40example.com"), formHeader), 303, "ask for a sign-in link")
	expect(e.Do(t, "POST", "/t/signin", strings.NewReader("email=ada"), formHeader), 422, "ask for a sign-in link, malformed")
	expect(e.Do(t, "GET", "/t/in/forged", nil, nil), 200, "a sign-in link's page")
	expect(e.Do(t, "POST", "/t/in/forged", nil, nil), 401, "a forged sign-in link")
	expect(e.Do(t, "POST", "/t/signout", nil, nil), 303, "tester sign-out")
	expect(e.Do(t, "POST", fmt.Sprintf("/t/apps/%d/mail", appID), strings.NewReader("mail=none"), formHeader), 401, "mail choice without a session")
	// Feedback from the release page and the tester's home (pkg/web's feedback tests walk them whole).
	pageFB, pageFBType := apptest.Multipart(apptest.Field("text", "From the page"), apptest.Field("device", "iPhone"), shot("s.png", imagetest.PNG(t, 20, 20)))
	expect(e.Do(t, "POST", fmt.Sprintf("/channels/%s/releases/%d/feedback", slug, relID), pageFB, http.Header{"Content-Type": {pageFBType}}), 303, "feedback from the release page")
	pageFB, pageFBType = apptest.Multipart(apptest.Field("text", " "))
	expect(e.Do(t, "POST", fmt.Sprintf("/channels/%s/releases/%d/feedback", slug, relID), pageFB, http.Header{"Content-Type": {pageFBType}}), 422, "empty feedback from the release page")
	expect(e.Do(t, "POST", fmt.Sprintf("/t/feedback/%d/delete", fbID), nil, nil), 401, "delete feedback without a tester session")
	expect(e.Do(t, "GET", "/t/unsubscribe/forged", nil, nil), 200, "unsubscribe page")
	expect(e.Do(t, "POST", "/t/unsubscribe/forged", strings.NewReader("List-Unsubscribe=One-Click"), formHeader), 404, "unsubscribe, forged")
	expect(e.Do(t, "GET", "/console/testers", nil, session), 200, "console testers")
	// Colleagues' pages (pkg/web's colleagues_test.go walks an invitation whole).
	expect(e.Do(t, "GET", "/console/login/email?sent=1", nil, nil), 200, "console sign-in by mail")
	expect(e.Do(t, "POST", "/console/login/email", strings.NewReader("email=ann%40example.com"), formHeader), 303, "ask for a console login link")
	expect(e.Do(t, "POST", "/console/login/email", strings.NewReader("email=ann"), formHeader), 422, "ask for a console login link, malformed")
	expect(e.Do(t, "GET", "/console/signin/forged", nil, nil), 200, "a console login link's page")
	expect(e.Do(t, "POST", "/console/signin/forged", nil, formHeader), 401, "a forged console login link")
	expect(e.Do(t, "GET", "/console/invitations/forged", nil, nil), 401, "a forged invitation's page")
	expect(e.Do(t, "POST", "/console/invitations/forged", nil, formHeader), 401, "a forged invitation")
	for _, path := range []string{"/console/users/invitations", "/console/users/invitations/1/withdraw"} {
		expect(e.Do(t, "POST", path, strings.NewReader("csrf=forged&email=x%40example.com&role=viewer"), consoleFormHeader(session)), 403, "console form without the CSRF token: "+path)
	}
	for _, path := range []string{"/console/testers/groups", "/console/testers/groups/qa/delete", "/console/testers/groups/qa/testers",
		"/console/testers/groups/qa/remove", fmt.Sprintf("/console/channels/%d/testers", chID)} {
		expect(e.Do(t, "POST", path, strings.NewReader("csrf=forged&confirm=1"), consoleFormHeader(session)), 403, "console form without the CSRF token: "+path)
	}

	// Feedback in the console (pkg/web's console_feedback_test.go drives its forms whole).
	expect(e.Do(t, "GET", fmt.Sprintf("/console/apps/%d/feedback?state=open&q=crash", appID), nil, session), 200, "console feedback inbox")
	expect(e.Do(t, "GET", fmt.Sprintf("/console/apps/%d/feedback?state=sideways", appID), nil, session), 422, "console feedback inbox, bad state")
	for _, path := range []string{fmt.Sprintf("/console/apps/%d/feedback-mail", appID), "/console/feedback/1/state", "/console/feedback/1/delete"} {
		expect(e.Do(t, "POST", path, strings.NewReader("csrf=forged&state=resolved&mail=1"), consoleFormHeader(session)), 403, "console form without the CSRF token: "+path)
	}

	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/releases/%d", apkID), nil, upload), 403, "delete release with upload scope")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/releases/%d", apkID), nil, admin), 200, "delete release")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/channels/%d", chID), nil, admin), 200, "delete channel")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/schemes/%d", scID), nil, admin), 200, "delete scheme")

	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/apps/%d", appID), nil, admin), 200, "destroy")
	expect(e.Do(t, "DELETE", fmt.Sprintf("/api/apps/%d", emptyID), nil, admin), 200, "destroy empty")

	ops, err := apptest.OpenAPIOperations()
	if err != nil {
		t.Fatal(err)
	}
	seen := e.OpenAPISeen()
	for _, op := range ops {
		if len(seen[op]) == 0 {
			t.Errorf("no request exercised %s", op)
		}
	}
}

// consoleFormHeader is a console form post with the session's cookie.
func consoleFormHeader(session http.Header) http.Header {
	return http.Header{"Cookie": session["Cookie"], "Content-Type": {"application/x-www-form-urlencoded"}}
}
