package web_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/test/apptest"
)

// TestConsoleUploadSniffRefusesEarly: the upload box's script sends the file's first and last
// bytes when it starts its session (issue 34), and a build of the wrong platform for the channel
// (an .apk to an iOS channel) is refused there, 422 in the user's words, before a part is sent:
// no session is made. A build of the channel's platform, or a start without them, is taken.
func TestConsoleUploadSniffRefusesEarly(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	real := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "20"}))
	chID := int64(real["channel"].(map[string]any)["id"].(float64))
	admin, _ := signedIn(t, e, "alice")
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	csrf := csrfOf(t, admin, chURL)
	start := func(name string, file []byte) (int, map[string]any) {
		head, tail := file[:min(len(file), 4096)], file[max(0, len(file)-64<<10):]
		return script(t, admin, http.MethodPost, chURL+"/uploads", csrf, url.Values{"filename": {name}, "size": {strconv.Itoa(len(file))},
			"head": {base64.StdEncoding.EncodeToString(head)}, "tail": {base64.StdEncoding.EncodeToString(tail)}})
	}
	sessions := func() (n int) {
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM upload_sessions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sessions()
	apk := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.harbor", VersionName: "2.1", VersionCode: 21}})
	s, out := start("harbor.apk", apk)
	msg := fmt.Sprint(out["error"])
	if s != http.StatusUnprocessableEntity || !strings.Contains(msg, "iOS") || !strings.Contains(msg, "Android") || strings.Contains(msg, "(ios)") {
		t.Errorf("an .apk's first bytes at an iOS channel's session start: %d %v (want 422 naming iOS and Android)", s, out)
	}
	if n := sessions(); n != before {
		t.Errorf("%d upload sessions made for the refused .apk", n-before)
	}
	ipa := appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.1", Build: "21"})
	if s, out := start("harbor.ipa", ipa); s != http.StatusCreated {
		t.Errorf("an .ipa's first bytes at an iOS channel's session start: %d %v", s, out)
	}
	if s, out := script(t, admin, http.MethodPost, chURL+"/uploads", csrf, url.Values{"filename": {"x.apk"}, "size": {"100"}}); s != http.StatusCreated {
		t.Errorf("a start without the file's bytes (an older page): %d %v", s, out)
	}
}

// Without its script, a channel's upload box streams the file: a build of another platform that
// its first bytes tell (a Linux .deb on an iOS channel) is refused from them, nothing stored; a
// zip (whose directory is at its end) is still told once stored, and discarded.
func TestConsoleUploadFormRefusesOtherPlatformEarly(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	real := e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "20"}))
	chID := int64(real["channel"].(map[string]any)["id"].(float64))
	admin, _ := signedIn(t, e, "alice")
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	_, page := fetch(t, admin, http.MethodGet, chURL, nil)
	box := formOf(t, page, fmt.Sprintf("upload-%d", chID))
	box.Set("channel_id", strconv.FormatInt(chID, 10))
	objects := len(e.Objects(t))
	resp, page := postUpload(t, e, admin, box, "tool.deb", linuxtest.BuildDeb(linuxtest.DebOptions{}))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "this channel takes iOS builds, and this file is a Linux build") {
		t.Errorf("a .deb on an iOS channel without the script: %d %.3000s", resp.StatusCode, between(page, fmt.Sprintf(`id="upload-%d"`, chID), "</form>"))
	}
	if got := len(e.Objects(t)); got != objects {
		t.Errorf("%d objects stored for the refused .deb", got-objects)
	}
}
