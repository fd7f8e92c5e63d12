package httpapi_test

// Uploads shaped like Zealot's real clients (issue 3): fastlane-plugin-zealot (Faraday multipart),
// Gradle upload plugins (OkHttp), curl -F, and the other ways of presenting the token.

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// rawPart is one multipart part written byte for byte as a client library writes it.
type rawPart struct {
	headers []string // header lines, without CRLF
	body    []byte
}

// rawMultipart writes parts with the given boundary, as Ruby's multipart-post (Faraday) and
// OkHttp do: CRLF line ends, a final boundary and a trailing CRLF.
func rawMultipart(boundary string, parts []rawPart) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n")
		for _, h := range p.headers {
			b.WriteString(h + "\r\n")
		}
		b.WriteString("\r\n")
		b.Write(p.body)
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n\r\n")
	return b.Bytes()
}

// fastlane posts as fastlane-plugin-zealot does through Faraday: token and channel_key first
// (channel_key empty when not configured), the optional fields, custom_fields defaulting to
// ["[]"], and the file last as application/octet-stream with Content-Length and
// Content-Transfer-Encoding part headers.
func fastlane(t *testing.T, e *testEnv, channelKey, filename string, data []byte, fields ...[2]string) *apptest.Response {
	t.Helper()
	boundary := "-----------RubyMultipartPost-" + testkit.RandomHex(16)
	field := func(name, value string) rawPart {
		return rawPart{headers: []string{`Content-Disposition: form-data; name="` + name + `"`}, body: []byte(value)}
	}
	parts := []rawPart{field("token", e.UploadToken), field("channel_key", channelKey)}
	for _, f := range fields {
		parts = append(parts, field(f[0], f[1]))
	}
	parts = append(parts, field("custom_fields", `["[]"]`), rawPart{headers: []string{
		`Content-Disposition: form-data; name="file"; filename="` + filename + `"`,
		fmt.Sprintf("Content-Length: %d", len(data)),
		"Content-Type: application/octet-stream",
		"Content-Transfer-Encoding: binary",
	}, body: data})
	return e.Do(t, http.MethodPost, "/api/apps/upload", bytes.NewReader(rawMultipart(boundary, parts)), http.Header{
		"Content-Type":    {"multipart/form-data; boundary=" + boundary},
		"User-Agent":      {"Faraday v1.10.3"},
		"Accept":          {"*/*"},
		"Accept-Encoding": {"gzip;q=1.0,deflate;q=0.6,identity;q=0.3"},
	})
}

// fastlaneSucceeded is the plugin's test of success: status 201 and a JSON body (Faraday parses
// bodies whose media type ends in "json"), from which it reads these fields.
func fastlaneSucceeded(t *testing.T, e *testEnv, r *apptest.Response) release {
	t.Helper()
	if r.Status != http.StatusCreated {
		t.Fatalf("fastlane upload: %d %s", r.Status, r.Body)
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !strings.HasSuffix(mt, "json") {
		t.Fatalf("fastlane would not parse a %q body", r.Header.Get("Content-Type"))
	}
	rel := e.fullRelease(t, r)
	if rel.ReleaseURL == "" || rel.QRCodeURL == "" || rel.InstallURL == "" || rel.ID == 0 || rel.App.ID == 0 {
		t.Fatalf("fastlane reads release_url, qrcode_url, install_url, id and app.id: %+v", rel)
	}
	return rel
}

func TestRealClients(t *testing.T) {
	e := newEnv(t, apptest.Options{})

	t.Run("fastlane-plugin-zealot", func(t *testing.T) {
		t.Parallel()
		data := appletest.BuildIPA(appletest.IPAOptions{AppName: "Lane", BundleID: "com.example.lane", Version: "1.0", Build: "1"})
		rel := fastlaneSucceeded(t, e, fastlane(t, e, "", "Lane.ipa", data,
			[2]string{"changelog", "- Fixed the login\n- Faster start"}, [2]string{"release_type", "adhoc"},
			[2]string{"branch", "origin/main"}, [2]string{"git_commit", "deadbeef"}, [2]string{"source", "jenkins"},
			[2]string{"ci_url", "https://jenkins.example.com/job/lane/42/"}))
		if rel.App.Name != "Lane" || rel.Scheme.Name != "Adhoc" || rel.Branch != "main" || rel.Source != "jenkins" ||
			len(rel.CustomFields) != 0 || rel.TextChangelog != "- Fixed the login\n- Faster start" {
			t.Fatalf("fastlane release %+v", rel)
		}
		if got := e.install(t, rel, nil); !bytes.Equal(got, data) {
			t.Fatal("fastlane upload differs on download")
		}
		// The next build, to the configured channel.
		data2 := appletest.BuildIPA(appletest.IPAOptions{AppName: "Lane", BundleID: "com.example.lane", Version: "1.0", Build: "2"})
		rel2 := fastlaneSucceeded(t, e, fastlane(t, e, rel.Channel.Slug, "Lane.ipa", data2))
		if rel2.Channel.Slug != rel.Channel.Slug || rel2.Version != 2 {
			t.Fatalf("second fastlane upload %+v", rel2)
		}
		// zealot_version_check: version_exist with the token in the query.
		q := url.Values{"token": {e.UploadToken}, "channel_key": {rel.Channel.Slug}, "bundle_id": {"com.example.lane"}}
		q2 := url.Values{"release_version": {"1.0"}, "build_version": {"2"}}
		for k, v := range q {
			q2[k] = v
		}
		if r := e.Get(t, "/api/apps/version_exist?"+q2.Encode()); r.Status != http.StatusOK {
			t.Fatalf("version check: %d %s", r.Status, r.Body)
		}
		q.Set("git_commit", "cafebabe")
		wantError(t, e.Get(t, "/api/apps/version_exist?"+q.Encode()), http.StatusNotFound)
		// A failure is told by its status and JSON error, which the plugin prints.
		r := fastlane(t, e, rel.Channel.Slug, "Lane.apk", apk("com.example.lane", "1.0", 1))
		wantError(t, r, http.StatusUnprocessableEntity)
	})

	t.Run("gradle plugin", func(t *testing.T) {
		t.Parallel()
		data := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
			Package: "com.example.gradle", VersionCode: 12, VersionName: "1.2.0", Label: "Gradle"}})
		boundary := "b" + testkit.RandomHex(18)
		field := func(name, value string) rawPart {
			return rawPart{headers: []string{`Content-Disposition: form-data; name="` + name + `"`, fmt.Sprintf("Content-Length: %d", len(value))}, body: []byte(value)}
		}
		send := func(channelKey string) *apptest.Response {
			body := rawMultipart(boundary, []rawPart{
				field("token", e.UploadToken), field("channel_key", channelKey), field("password", ""),
				field("changelog", "Gradle build\nfrom CI"),
				{headers: []string{`Content-Disposition: form-data; name="file"; filename="app-release.apk"`,
					"Content-Type: application/vnd.android.package-archive", fmt.Sprintf("Content-Length: %d", len(data))}, body: data},
			})
			return e.Do(t, http.MethodPost, "/api/apps/upload", bytes.NewReader(body), http.Header{
				"Content-Type": {"multipart/form-data; boundary=" + boundary}, "Connection": {"Keep-Alive"},
				"User-Agent": {"okhttp/4.12.0"}, "Accept-Encoding": {"gzip"},
			})
		}
		rel := e.fullRelease(t, send(""))
		if rel.App.Name != "Gradle" || rel.Channel.HasPassword || len(rel.Changelog) != 2 || rel.Channel.DeviceType != "android" {
			t.Fatalf("gradle release %+v", rel)
		}
		// The same connection carries the next upload; the empty password still changes nothing.
		rel2 := e.fullRelease(t, send(rel.Channel.Slug))
		if rel2.Version != 2 || rel2.Channel.HasPassword {
			t.Fatalf("second gradle upload %+v", rel2)
		}
		if got := e.install(t, rel2, nil); !bytes.Equal(got, data) {
			t.Fatal("gradle upload differs on download")
		}
	})

	t.Run("curl -F", func(t *testing.T) {
		t.Parallel()
		curl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("no curl binary")
		}
		// Over 1 MiB, so curl sends Expect: 100-continue.
		data := appletest.BuildIPA(appletest.IPAOptions{AppName: "Curled", BundleID: "com.example.curl", Version: "9.0", Build: "900", FillerBytes: 2 << 20})
		dir := t.TempDir()
		file := filepath.Join(dir, "Curled App.ipa")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "response.json")
		e.secret(e.UploadToken)
		// The token goes before the file: a file before any credential is refused unread
		// (TestUploadForm).
		cmd := exec.Command(curl, "-sS", "-o", out, "-w", "%{http_code} %{content_type}",
			"-F", "token="+e.UploadToken, "-F", "file=@"+file, "-F", "changelog=from curl", "-F", "branch=origin/release/9",
			e.URL+"/api/apps/upload")
		status, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v: %s", err, status)
		}
		body, _ := os.ReadFile(out)
		if !strings.HasPrefix(string(status), "201 application/json") {
			t.Fatalf("curl: %s: %s", status, body)
		}
		rel := e.fullRelease(t, &apptest.Response{Status: http.StatusCreated, Header: http.Header{
			"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}}, Body: body})
		if rel.App.Name != "Curled" || rel.Branch != "release/9" || rel.Size != int64(len(data)) || rel.Changelog[0].Message != "from curl" {
			t.Fatalf("curl release %+v", rel)
		}
		if got := e.install(t, rel, nil); !bytes.Equal(got, data) {
			t.Fatal("curl upload differs on download")
		}
		// curl's own download of the install link, following the redirect.
		dl := filepath.Join(dir, "download.ipa")
		if outp, err := exec.Command(curl, "-sSfL", "-o", dl, fmt.Sprintf("%s/download/releases/%d", e.URL, rel.ID)).CombinedOutput(); err != nil {
			t.Fatalf("curl download: %v %s", err, outp)
		}
		if got, _ := os.ReadFile(dl); !bytes.Equal(got, data) {
			t.Fatal("curl download differs")
		}
	})

	t.Run("token in the query string", func(t *testing.T) {
		t.Parallel()
		r := e.Upload(t, "/api/apps/upload?token="+url.QueryEscape(e.UploadToken), "", apptest.File("q.apk", apk("com.example.query", "1.0", 1)))
		if rel := e.fullRelease(t, r); rel.BundleID != "com.example.query" {
			t.Fatalf("query token upload %+v", rel)
		}
		wantError(t, e.Upload(t, "/api/apps/upload?token=slw_wrong", "", apptest.File("q.apk", apk("com.example.query", "1.0", 1))), http.StatusUnauthorized)
	})

	t.Run("fields after the file", func(t *testing.T) {
		t.Parallel()
		r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.File("after.apk", apk("com.example.after", "2.0", 2)),
			apptest.Field("name", "After"), apptest.Field("release_type", "beta"), apptest.Field("changelog", "late"),
			apptest.Field("custom_fields", `[{"name":"k","value":"v","icon":"i"}]`), apptest.Field("git_commit", "abc"))
		rel := e.fullRelease(t, r)
		if rel.App.Name != "After" || rel.Scheme.Name != "Beta" || rel.Changelog[0].Message != "late" || len(rel.CustomFields) != 1 || rel.GitCommit != "abc" {
			t.Fatalf("fields after the file %+v", rel)
		}
	})

	t.Run("Authorization: Bearer", func(t *testing.T) {
		t.Parallel()
		body, ctype := apptest.Multipart(apptest.File("b.apk", apk("com.example.bearer", "1.0", 1)))
		r := e.Do(t, http.MethodPost, "/api/apps/upload", body, http.Header{"Content-Type": {ctype}, "Authorization": {"Bearer " + e.UploadToken}})
		if rel := e.fullRelease(t, r); rel.BundleID != "com.example.bearer" {
			t.Fatalf("bearer upload %+v", rel)
		}
		body, ctype = apptest.Multipart(apptest.File("b.apk", apk("com.example.bearer", "1.0", 1)))
		r = e.Do(t, http.MethodPost, "/api/apps/upload", body, http.Header{"Content-Type": {ctype}, "Authorization": {"Bearer slw_wrong"}})
		wantError(t, r, http.StatusUnauthorized)
	})
}
