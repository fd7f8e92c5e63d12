package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/pkg/feeds/appinstallertest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// Windows' App Installer file of an MSIX channel, on the filesystem and on S3: read back against
// the schema, it names the newest MSIX build with the identity of its manifest and a download URL
// that fetches those very bytes as application/msix; HEAD declares the length; a newer build,
// the channel's check interval, a critical build, a staged one, a bundle and a deletion each show
// at once; a protected channel's file answers only to its feed token and carries it; a channel of
// another platform is 404.
func TestAppInstallerFile(t *testing.T) {
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			m := newMgmt(t, apptest.Options{Storage: storage})
			const publisher = "CN=Acme Labs, O=Acme Labs, C=US"
			msix := func(version, arch string) []byte {
				return windowstest.BuildMSIX(windowstest.MSIXOptions{Name: "Acme.FieldTool", Publisher: publisher, Version: version, Arch: arch})
			}
			upload := func(name string, data []byte, fields ...apptest.Part) map[string]any {
				t.Helper()
				rel := m.e.UploadApp(t, name, data, fields...)
				return m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
			}
			first := upload("FieldTool-1.2.3.0.msix", msix("1.2.3.0", "x64"))
			ch := first["channel"].(map[string]any)
			slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
			if ch["appinstaller_hours"] != float64(24) {
				t.Fatalf("a new channel's appinstaller_hours: %v", ch["appinstaller_hours"])
			}
			path := "/channels/" + slug + "/app.appinstaller"
			read := func(p string) (*appinstallertest.File, *apptest.Response) {
				t.Helper()
				r := m.e.Get(t, p)
				if r.Status != 200 || r.Header.Get("Content-Type") != "application/appinstaller" {
					t.Fatalf("GET %s: %d %s: %s", p, r.Status, r.Header.Get("Content-Type"), r.Body)
				}
				f, err := appinstallertest.Parse(r.Body)
				if err != nil {
					t.Fatalf("the file does not follow the schema: %v\n%s", err, r.Body)
				}
				return f, r
			}
			f, r := read(path)
			if f.URI != m.e.URL+path || f.Version != "1.2.3.0" ||
				f.Main != (appinstallertest.Package{Name: "Acme.FieldTool", Publisher: publisher, Version: "1.2.3.0", ProcessorArchitecture: "x64", URI: f.Main.URI}) {
				t.Fatalf("file: %+v\n%s", f, r.Body)
			}
			if f.OnLaunch == nil || f.OnLaunch.Hours != 24 || !f.OnLaunch.ShowPrompt || f.OnLaunch.UpdateBlocksActivation {
				t.Fatalf("update settings: %+v", f.OnLaunch)
			}
			got := m.e.Follow(t, f.Main.URI)
			if got.Status != 200 || string(got.Body) != string(msix("1.2.3.0", "x64")) || got.Header.Get("Content-Type") != "application/msix" {
				t.Fatalf("the package's Uri: %d %s, %d bytes", got.Status, got.Header.Get("Content-Type"), len(got.Body))
			}
			head := m.e.Do(t, http.MethodHead, path, nil, nil)
			if n, _ := strconv.Atoi(head.Header.Get("Content-Length")); head.Status != 200 || n != len(r.Body) || n == 0 {
				t.Fatalf("HEAD: %d, Content-Length %q (body %d)", head.Status, head.Header.Get("Content-Length"), len(r.Body))
			}
			if nm := m.e.Do(t, http.MethodGet, path, nil, http.Header{"If-None-Match": {r.Header.Get("ETag")}}); nm.Status != 304 {
				t.Fatalf("If-None-Match: %d", nm.Status)
			}

			// A newer build replaces it; a staged one is not offered (the file cannot stage).
			second := upload("FieldTool-1.3.0.0.msix", msix("1.3.0.0", "x64"), apptest.Field("channel_key", slug))
			upload("FieldTool-1.4.0.0.msix", msix("1.4.0.0", "x64"), apptest.Field("channel_key", slug), apptest.Field("rollout", "20"))
			if f, _ := read(path); f.Main.Version != "1.3.0.0" || f.Version != "1.3.0.0" {
				t.Fatalf("after a newer and a staged build: %+v", f.Main)
			}
			// The channel's interval, and a critical build, change the settings.
			m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", chID), m.e.AdminToken, `{"appinstaller_hours": 0}`), 200, "set appinstaller_hours")
			m.want(m.call("PATCH", fmt.Sprintf("/api/releases/%d", id(second)), m.e.AdminToken, `{"critical": true}`), 200, "mark critical")
			if f, _ := read(path); f.OnLaunch.Hours != 0 || !f.OnLaunch.UpdateBlocksActivation {
				t.Fatalf("after hours 0 and a critical build: %+v", f.OnLaunch)
			}
			m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", chID), m.e.AdminToken, `{"appinstaller_hours": 256}`), 422, "appinstaller_hours over 255")
			// Deleting the newest offered build offers the one before it.
			m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(second)), m.e.AdminToken, ""), 200, "delete")
			if f, _ := read(path); f.Main.Version != "1.2.3.0" {
				t.Fatalf("after deleting 1.3.0.0: %+v", f.Main)
			}
			// A bundle is a MainBundle, with no architecture.
			bundle := windowstest.BuildMSIXBundle(windowstest.BundleOptions{App: windowstest.MSIXOptions{Name: "Acme.FieldTool", Publisher: publisher, Version: "2.0.0.0"}})
			upload("FieldTool-2.0.0.0.msixbundle", bundle, apptest.Field("channel_key", slug))
			if f, _ := read(path); !f.Main.Bundle || f.Main.Version != "2.0.0.0" || f.Main.ProcessorArchitecture != "" {
				t.Fatalf("bundle: %+v", f.Main)
			} else if got := m.e.Follow(t, f.Main.URI); got.Status != 200 || string(got.Body) != string(bundle) || got.Header.Get("Content-Type") != "application/msixbundle" {
				t.Fatalf("the bundle's Uri: %d %s", got.Status, got.Header.Get("Content-Type"))
			}

			// A protected channel: 401 without the feed token; with it, both Uris carry it.
			m.want(m.call("PATCH", fmt.Sprintf("/api/channels/%d", chID), m.e.AdminToken, `{"password": "sesame"}`), 200, "set a password")
			if r := m.e.Get(t, path); r.Status != 401 {
				t.Fatalf("protected without a token: %d", r.Status)
			}
			tok := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), m.e.AdminToken, ""), 201, "feed token")["feed_token"].(string)
			f, _ = read(path + "?token=" + tok)
			if !strings.HasSuffix(f.URI, path+"?token="+tok) || !strings.Contains(f.Main.URI, "feed_token="+tok) {
				t.Fatalf("protected file's Uris: %s, %s", f.URI, f.Main.URI)
			}
			if got := m.e.Follow(t, f.Main.URI); got.Status != 200 || string(got.Body) != string(bundle) {
				t.Fatalf("protected download: %d", got.Status)
			}
			if strings.Contains(m.e.LogText(), tok) {
				t.Fatal("the feed token was logged")
			}

			// Another platform's channel, and a Windows channel without MSIX builds: 404 saying why.
			exe := m.e.UploadApp(t, "Desk-1.0.0.exe", windowstest.BuildPE(windowstest.PEOptions{}))
			if r := m.e.Get(t, "/channels/"+exe["channel"].(map[string]any)["slug"].(string)+"/app.appinstaller"); r.Status != 404 || !strings.Contains(r.Error(t), "MSIX") {
				t.Errorf("a Windows channel without MSIX: %d %s", r.Status, r.Body)
			}
			mac, _ := feedEnv{m, nil}.macBuildUnsigned()
			if r := m.e.Get(t, "/channels/"+mac+"/app.appinstaller"); r.Status != 404 || !strings.Contains(r.Error(t), "windows") {
				t.Errorf("a macOS channel: %d %s", r.Status, r.Body)
			}
		})
	}
}
