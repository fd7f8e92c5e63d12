package web_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// Issue 34: a desktop build's console page says, per update framework, whether that framework can
// use it, instead of "Update feeds: offered" beside "Sparkle signature: none": a macOS build
// without signatures and with a version that is not semver is usable by none of Sparkle (no
// EdDSA signature), Tauri (no tauri_signature: its feeds leave it out) and electron-updater
// (Invalid Version); a signed build of a semver version is usable by all three.
func TestConsoleBuildSaysWhichFrameworksCanUseIt(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	build := func(version string, fields ...apptest.Part) string {
		zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: version, Build: "1", MinOS: "12.0"})
		if len(fields) > 0 {
			_, key, _ := ed25519.GenerateKey(nil)
			fields = append(fields, apptest.Field("ed_signature", base64.StdEncoding.EncodeToString(ed25519.Sign(key, zip))))
		}
		rel := e.UploadApp(t, "Desk-"+version+".zip", zip, fields...)
		relID := int64(rel["id"].(float64))
		testkit.Eventually(t, time.Minute, "the build to be verified", func() bool {
			state, _, _ := releaseRow(t, e, relID)
			return state == "verified"
		})
		_, page := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, relID), nil)
		return between(page, `id="updates"`, "</section>")
	}

	bare := build("1.0")
	for id, want := range map[string]string{
		"updates-offered":         "no framework can use it",
		"usable-sparkle":          "no: it has no EdDSA signature",
		"usable-tauri":            "no: it was uploaded without tauri_signature",
		"usable-electron-updater": "Invalid Version",
	} {
		if got := between(bare, `id="`+id+`">`, "</dd>"); !strings.Contains(got, want) {
			t.Errorf("unsigned 1.0: %s says %q, want %q in it: %s", id, got, want, bare)
		}
	}
	if strings.Contains(bare, `id="updates-offered">offered`) {
		t.Errorf("an unusable build is said to be offered: %s", bare)
	}

	sig := base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))
	signed := build("1.2.0", apptest.Field("tauri_signature", sig))
	for id, want := range map[string]string{
		"updates-offered":         "offered to Sparkle, electron-updater and Tauri",
		"usable-sparkle":          "yes",
		"usable-tauri":            "yes",
		"usable-electron-updater": "yes",
	} {
		if got := between(signed, `id="`+id+`">`, "</dd>"); !strings.HasPrefix(got, want) {
			t.Errorf("signed 1.2.0: %s says %q, want it to start with %q: %s", id, got, want, signed)
		}
	}
}

// Issue 34: the console's upload box takes the signatures the API's upload takes, with and
// without its script: a desktop channel's box has the fields, and the build keeps what was sent.
func TestConsoleUploadBoxTakesSignatures(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	zip := func(build string) []byte {
		return appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0.0", Build: build, MinOS: "12.0"})
	}
	first := e.UploadApp(t, "Desk.zip", zip("1"))
	chID := int64(first["channel"].(map[string]any)["id"].(float64))
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	_, page := fetch(t, admin, http.MethodGet, chURL, nil)
	box := between(page, fmt.Sprintf(`id="upload-%d"`, chID), "</form>")
	if !strings.Contains(box, `name="ed_signature"`) || !strings.Contains(box, `name="tauri_signature"`) {
		t.Fatalf("a macOS channel's upload box has no signature fields: %s", box)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	data := zip("2")
	ed := base64.StdEncoding.EncodeToString(ed25519.Sign(key, data))
	tauri := base64.StdEncoding.EncodeToString([]byte("untrusted comment: signature from tauri secret key\nRUQf\ntrusted comment: x\nabc\n"))
	hidden := formOf(t, page, fmt.Sprintf("upload-%d", chID))
	hidden.Set("channel_id", fmt.Sprint(chID))
	resp, body := postUpload(t, e, admin, hidden, "Desk.zip", data, "ed_signature", ed, "tauri_signature", tauri)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("upload with signatures without the script: %d %.2000s", resp.StatusCode, body)
	}
	var gotEd, gotTauri string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT ed_signature, tauri_signature FROM releases WHERE channel_id = $1 AND build_version = '2'`, chID).
		Scan(&gotEd, &gotTauri); err != nil {
		t.Fatal(err)
	}
	if gotEd != ed || gotTauri != tauri {
		t.Errorf("kept signatures %q %q", gotEd, gotTauri)
	}
	// The script's path: the session takes them at its start (a bad one is refused there).
	csrf := csrfOf(t, admin, chURL)
	if s, out := script(t, admin, http.MethodPost, chURL+"/uploads", csrf, url.Values{"filename": {"Desk.zip"}, "size": {"100"}, "tauri_signature": {"c2lnbmF0dXJl"}}); s != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(out["error"]), "tauri_signature") {
		t.Errorf("a bad Tauri signature at the session's start: %d %v", s, out)
	}
	if s, out := script(t, admin, http.MethodPost, chURL+"/uploads", csrf, url.Values{"filename": {"Desk.zip"}, "size": {"100"}, "ed_signature": {ed}, "tauri_signature": {tauri}}); s != http.StatusCreated {
		t.Errorf("a session with signatures: %d %v", s, out)
	}
}
