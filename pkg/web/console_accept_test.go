package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// The console's drop zone of each channel names and accepts the files of its device type
// (issue 22): windows and linux channels keep any file, so they accept everything (an empty
// filter).
func TestConsoleDropZoneAccepts(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	schemeID := int64(rel["scheme"].(map[string]any)["id"].(float64))
	ids := map[string]int64{"ios": int64(rel["channel"].(map[string]any)["id"].(float64))}
	for _, dt := range []string{"android", "macos", "harmonyos", "windows", "linux"} {
		body := fmt.Sprintf(`{"name":%q,"device_type":%q}`, dt, dt)
		r := e.Do(t, http.MethodPost, fmt.Sprintf("/api/schemes/%d/channels", schemeID), bytes.NewReader([]byte(body)),
			http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}})
		if r.Status != http.StatusCreated {
			t.Fatalf("create %s channel: %d %s", dt, r.Status, r.Body)
		}
		var ch struct{ ID int64 }
		if err := json.Unmarshal(r.Body, &ch); err != nil {
			t.Fatal(err)
		}
		ids[dt] = ch.ID
	}
	// Each channel's upload box is on the channel's own console page.
	page := ""
	for _, id := range ids {
		_, p := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, id), nil)
		page += p
	}
	if resp, _ := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/apps/%d", e.URL, appID), nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the app page: %d", resp.StatusCode)
	}
	for dt, want := range map[string]string{"ios": `accept=".ipa"`, "android": `accept=".apk,.aab"`, "macos": `accept=".zip,.dmg,.pkg"`,
		"harmonyos": `accept=".hap,.app"`, "windows": "", "linux": ""} {
		input := regexp.MustCompile(fmt.Sprintf(`<input type="file" name="file" id="upload-file-%d"[^>]*>`, ids[dt])).FindString(page)
		if input == "" {
			t.Errorf("%s: no drop zone input", dt)
			continue
		}
		if want == "" && regexp.MustCompile(`accept="[^"]`).MatchString(input) || want != "" && !bytes.Contains([]byte(input), []byte(want)) {
			t.Errorf("%s: %s, want %q", dt, input, want)
		}
	}
	for _, w := range []string{"HarmonyOS .hap or .app", ".deb, .rpm, .AppImage or any other file", ".msi, .msix, .appx"} {
		if !bytes.Contains([]byte(page), []byte(w)) {
			t.Errorf("no channel page says %q", w)
		}
	}
}
