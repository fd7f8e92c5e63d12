package web_test

// The console's front door (issue 34): the first upload from the home page or an app's page,
// the builds list after an upload, a changelog edited in the console, and the builds list's
// format column.

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// A changelog edited in the console came back with a "- " before every line: the form showed
// the API's text_changelog ("- " bullets) as the text to edit. Saving the form as it is shown
// keeps the changelog as it was, and what is typed comes back as typed.
func TestConsoleChangelogEditRoundTrip(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "droid.apk", apk("Droid", "1.0", 1), apptest.Field("changelog", "Fixed the login\nFaster start"))
	relID := int64(rel["id"].(float64))
	page := fmt.Sprintf("%s/console/releases/%d", e.URL, relID)
	textarea := func(body string) string {
		t.Helper()
		start := strings.Index(body, fmt.Sprintf(`id="changelog-%d"`, relID))
		if start < 0 {
			t.Fatalf("no changelog field on the build page: %.300s", body)
		}
		from := strings.Index(body[start:], ">") + start + 1
		return html.UnescapeString(body[from : from+strings.Index(body[from:], "</textarea>")])
	}
	_, body := fetch(t, admin, http.MethodGet, page, nil)
	if got := textarea(body); got != "Fixed the login\nFaster start" {
		t.Errorf("the changelog field shows %q, want the messages as typed", got)
	}
	formID := fmt.Sprintf("release-form-%d", relID)
	// Saved as shown, twice: nothing is added.
	for i := range 2 {
		_, body = fetch(t, admin, http.MethodGet, page, nil)
		resp, after := fetch(t, admin, http.MethodPost, page, with(formOf(t, body, formID), "changelog", textarea(body)))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("save %d: %d", i+1, resp.StatusCode)
		}
		if got := textarea(after); got != "Fixed the login\nFaster start" {
			t.Errorf("after save %d the changelog field shows %q", i+1, got)
		}
	}
	var stored string
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT changelog::text FROM releases WHERE id = $1`, relID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, `"- `) {
		t.Errorf("the stored changelog has a bullet in a message: %s", stored)
	}
}

// Two builds of one version, an .apk and an .aab, told apart in a channel's builds list by a
// format column.
func TestConsoleBuildsFormatColumn(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	first := e.UploadApp(t, "droid.apk", apk("Droid", "2.1.0", 10))
	chID := int64(first["channel"].(map[string]any)["id"].(float64))
	key := first["channel"].(map[string]any)["slug"].(string)
	aab := androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.example.droid", VersionCode: 10, VersionName: "2.1.0", MinSDK: 21, Label: "Droid"}})
	second := e.UploadApp(t, "droid.aab", aab, apptest.Field("channel_key", key))
	_, body := fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, chID), nil)
	list := between(body, `id="build-list"`, "</table>")
	if !strings.Contains(list, "<th>Format</th>") {
		t.Errorf("the builds list has no format column: %s", list)
	}
	for id, want := range map[any]string{first["id"]: ".apk", second["id"]: ".aab"} {
		row := between(list, fmt.Sprintf(`id="release-%d"`, int64(id.(float64))), "</tr>")
		if !strings.Contains(row, `<td data-label="Format">`+want+`</td>`) {
			t.Errorf("build %v's row does not say %s: %s", id, want, row)
		}
	}
}

// postUpload sends the upload box (form id on page) as a browser without the script does: its
// hidden fields, then the file, then extra fields, as one multipart POST; it follows no redirect.
func postUpload(t *testing.T, e *apptest.Env, c *http.Client, hidden url.Values, filename string, data []byte, extra ...string) (*http.Response, string) {
	t.Helper()
	var parts []apptest.Part
	for _, k := range []string{"csrf", "form_token", "app_id", "channel_id"} {
		if v := hidden.Get(k); v != "" {
			parts = append(parts, apptest.Field(k, v))
		}
	}
	parts = append(parts, apptest.File(filename, data))
	for i := 0; i+1 < len(extra); i += 2 {
		parts = append(parts, apptest.Field(extra[i], extra[i+1]))
	}
	body, ctype := apptest.Multipart(parts...)
	req, err := http.NewRequest(http.MethodPost, e.URL+"/console/upload", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := noRedirects(c).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// uploadBox returns the hidden fields of the upload box on the page at u.
func uploadBox(t *testing.T, c *http.Client, u string) url.Values {
	t.Helper()
	_, page := fetch(t, c, http.MethodGet, u, nil)
	v := formOf(t, page, "upload-build")
	for _, k := range []string{"app_id", "channel_id"} {
		if m := regexp.MustCompile(`name="` + k + `" value="(\d+)"`).FindStringSubmatch(between(page, `id="upload-build"`, "</form>")); m != nil {
			v.Set(k, m[1])
		}
	}
	return v
}

// The console's home takes the first build without its script: a plain multipart POST makes
// the app, scheme and channel as the API's upload without channel_key does, and answers 303 to
// the new build's page; names are chosen only when wanted; a resent form records nothing again;
// a refused file is said in place with what was typed kept, and nothing is stored.
func TestConsoleUploadFromHomeWithoutScript(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	_, home := fetch(t, admin, http.MethodGet, e.URL+"/console", nil)
	box := between(home, `id="upload-build"`, "</form>")
	if !strings.Contains(home, `enctype="multipart/form-data"`) || !strings.Contains(box, `type="file"`) || strings.Contains(box, `name="name" required`) {
		t.Fatalf("the console's home has no upload box: %.2000s", home)
	}
	hidden := uploadBox(t, admin, e.URL+"/console")
	resp, _ := postUpload(t, e, admin, hidden, "droid.apk", apk("Droid", "1.0", 1), "changelog", "First build")
	var relID int64
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT coalesce(max(id), 0) FROM releases`).Scan(&relID); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != fmt.Sprintf("%s/console/releases/%d", e.URL, relID) {
		t.Fatalf("upload from the home page: %d to %q (release %d)", resp.StatusCode, resp.Header.Get("Location"), relID)
	}
	if got := count(t, e, `SELECT count(*) FROM apps a JOIN schemes s ON s.app_id = a.id JOIN channels c ON c.scheme_id = s.id
		WHERE a.name = 'Droid' AND c.device_type = 'android'`); got != 1 {
		t.Errorf("%d apps Droid with an android channel, want 1", got)
	}
	if _, page := fetch(t, admin, http.MethodGet, resp.Header.Get("Location"), nil); !strings.Contains(between(page, `id="notice"`, "</div>"), "Uploaded 1.0 (1)") {
		t.Errorf("the build's page does not say the upload worked: %.500s", between(page, "<main", "</main>"))
	}
	// The same form sent again (a reload of the POST): the same build, nothing new.
	again, _ := postUpload(t, e, admin, hidden, "droid.apk", apk("Droid", "1.0", 1))
	if again.StatusCode != http.StatusSeeOther || again.Header.Get("Location") != resp.Header.Get("Location") || count(t, e, `SELECT count(*) FROM releases`) != 1 {
		t.Errorf("the form sent again: %d to %q, %d releases", again.StatusCode, again.Header.Get("Location"), count(t, e, `SELECT count(*) FROM releases`))
	}
	// A chosen name.
	resp, _ = postUpload(t, e, admin, uploadBox(t, admin, e.URL+"/console"), "droid.apk", apk("Droid", "1.1", 2), "name", "Field Kit")
	if resp.StatusCode != http.StatusSeeOther || count(t, e, `SELECT count(*) FROM apps WHERE name = 'Field Kit'`) != 1 {
		t.Errorf("upload with a chosen name: %d, apps %d", resp.StatusCode, count(t, e, `SELECT count(*) FROM apps WHERE name = 'Field Kit'`))
	}
	// A file that is no build: said beside the box (422), the name typed kept, nothing stored.
	objects := len(e.Objects(t))
	resp, page := postUpload(t, e, admin, uploadBox(t, admin, e.URL+"/console"), "notes.txt", []byte("just some notes\n"), "name", "Kept Name")
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(between(page, `id="upload-build"`, "</form>"), `role="alert"`) ||
		!strings.Contains(page, `value="Kept Name"`) {
		t.Errorf("a text file: %d %.1500s", resp.StatusCode, between(page, `id="upload-build"`, "</form>"))
	}
	if got := len(e.Objects(t)); got != objects {
		t.Errorf("a refused file left %d objects, want %d", got, objects)
	}
	// Without the CSRF token: refused before anything is stored.
	noCSRF := uploadBox(t, admin, e.URL+"/console")
	noCSRF.Del("csrf")
	if resp, _ := postUpload(t, e, admin, noCSRF, "droid.apk", apk("Droid", "1.2", 3)); resp.StatusCode != http.StatusForbidden || len(e.Objects(t)) != objects {
		t.Errorf("without CSRF: %d, %d objects (want 403, %d)", resp.StatusCode, len(e.Objects(t)), objects)
	}
}

// A developer may not make apps, so the console's home offers them no upload box and refuses
// the form; an app's page takes their build into that app (its scheme and channel made as
// needed), whatever the package calls itself.
func TestConsoleUploadIntoAnApp(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol")
	rel := e.UploadApp(t, "droid.apk", apk("Droid", "1.0", 1))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	acsrf := csrfOf(t, admin, e.URL+"/console")
	if s, _ := fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/apps/%d/members", e.URL, appID), url.Values{"email": {"carol@example.com"}, "csrf": {acsrf}}); s.StatusCode != 200 {
		t.Fatalf("add carol: %d", s.StatusCode)
	}
	if _, home := fetch(t, carol, http.MethodGet, e.URL+"/console", nil); strings.Contains(home, `id="upload-build"`) || !strings.Contains(home, `id="upload-elsewhere"`) {
		t.Errorf("a developer's home: upload box %v, note %v", strings.Contains(home, `id="upload-build"`), strings.Contains(home, `id="upload-elsewhere"`))
	}
	objects := len(e.Objects(t))
	if resp, page := postUpload(t, e, carol, url.Values{"csrf": {csrfOf(t, carol, e.URL+"/console")}}, "droid.apk", apk("Droid", "1.1", 2)); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(page, "page of an app you are a member of") || len(e.Objects(t)) != objects {
		t.Errorf("a developer's upload that makes an app: %d, %d objects (want 403, %d): %.300s", resp.StatusCode, len(e.Objects(t)), objects, between(page, "<main", "</main>"))
	}
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	hidden := uploadBox(t, carol, appURL)
	if hidden.Get("app_id") != fmt.Sprint(appID) {
		t.Fatalf("the app page's upload box names app %q, want %d", hidden.Get("app_id"), appID)
	}
	resp, _ := postUpload(t, e, carol, hidden, "h.ipa", ipa("Harbor", "2.0", "7"))
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/console/releases/") {
		t.Fatalf("a developer's upload on the app page: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := count(t, e, `SELECT count(*) FROM releases r JOIN channels c ON c.id = r.channel_id JOIN schemes s ON s.id = c.scheme_id
		WHERE s.app_id = $1 AND c.device_type = 'ios' AND r.release_version = '2.0'`, appID); got != 1 || count(t, e, `SELECT count(*) FROM apps`) != 1 {
		t.Errorf("the build went elsewhere: %d in the app's iOS channel, %d apps", got, count(t, e, `SELECT count(*) FROM apps`))
	}
}

// The upload box's POST is refused before its file is read when the person may not upload there
// (a viewer): its hidden fields come first, and the policy answers before a byte is stored.
func TestConsoleUploadRefusedBeforeTheFile(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	signedIn(t, e, "admin") // the first user: in the admin group
	viewer, _ := signedIn(t, e, "viewer")
	csrf := csrfOf(t, viewer, e.URL+"/console")
	const big = 50 << 20
	head := "--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n" + csrf + "\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.apk\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	body := &countingReader{r: io.MultiReader(strings.NewReader(head), io.LimitReader(filler('a'), big), strings.NewReader("\r\n--b--\r\n"))}
	req, err := http.NewRequest(http.MethodPost, e.URL+"/console/upload", body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	req.ContentLength = -1
	resp, err := viewer.Do(req)
	if err != nil {
		t.Fatalf("after %d bytes: %v", body.n.Load(), err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || body.n.Load() > 16<<20 || len(e.Objects(t)) != 0 {
		t.Errorf("a viewer's 50 MB upload: %d after %d bytes sent, %d objects (want 403, most unread, none)", resp.StatusCode, body.n.Load(), len(e.Objects(t)))
	}
}

// A channel page's upload box without its script: the build goes into that channel, the answer
// is 303 to the build's page, and the channel's builds list shows it.
func TestConsoleChannelUploadWithoutScript(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "droid.apk", apk("Droid", "1.0", 1))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	_, page := fetch(t, admin, http.MethodGet, chURL, nil)
	formID := fmt.Sprintf("upload-%d", chID)
	hidden := formOf(t, page, formID)
	hidden.Set("channel_id", fmt.Sprint(chID))
	if !strings.Contains(between(page, `id="`+formID+`"`, "</form>"), fmt.Sprintf(`name="channel_id" value="%d"`, chID)) {
		t.Fatalf("the channel's upload box does not name its channel: %s", between(page, `id="`+formID+`"`, "</form>"))
	}
	resp, _ := postUpload(t, e, admin, hidden, "droid.apk", apk("Droid", "1.2.3", 5))
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "/console/releases/") {
		t.Fatalf("upload on the channel page: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, page := fetch(t, admin, http.MethodGet, chURL, nil); !strings.Contains(between(page, `id="build-list"`, "</table>"), "1.2.3 (5)") {
		t.Errorf("the channel's builds list lacks the build: %s", between(page, `id="builds"`, "</section>"))
	}
	if n := count(t, e, `SELECT count(*) FROM releases WHERE channel_id = $1`, chID); n != 2 {
		t.Errorf("%d builds in the channel, want 2", n)
	}
}

// The upload box's POST may not stall: a body that stops arriving for SLIPWAY_UPLOAD_IDLE_TIMEOUT
// is dropped, as the API's upload is, and nothing is kept.
func TestConsoleUploadStalled(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.UploadIdleTimeout = 300 * time.Millisecond }})
	admin, _ := signedIn(t, e, "alice")
	hidden := uploadBox(t, admin, e.URL+"/console")
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = io.WriteString(pw, "--b\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n"+hidden.Get("csrf")+"\r\n"+
			"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.apk\"\r\nContent-Type: application/octet-stream\r\n\r\nPK")
		// ... and nothing more.
	}()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/console/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=b")
	done := make(chan error, 1)
	go func() {
		resp, err := noRedirects(admin).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a stalled upload is still being read after 20 s")
	}
	if n := count(t, e, `SELECT count(*) FROM releases`); n != 0 || len(e.Objects(t)) != 0 {
		t.Errorf("a stalled upload left %d releases, %d objects", n, len(e.Objects(t)))
	}
}

// An upload that keeps arriving may take longer than SLIPWAY_UPLOAD_IDLE_TIMEOUT in all (that
// bounds a stall, not a whole upload): the box's POST over a slow link had only the idle timeout
// from its start to send the whole build.
func TestConsoleUploadSlowButSteady(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.UploadIdleTimeout = time.Second }})
	admin, _ := signedIn(t, e, "alice")
	hidden := uploadBox(t, admin, e.URL+"/console")
	body, ctype := apptest.Multipart(apptest.Field("csrf", hidden.Get("csrf")), apptest.Field("form_token", hidden.Get("form_token")),
		apptest.File("droid.apk", apk("Droid", "1.0", 1)))
	whole := body.Bytes()
	pr, pw := io.Pipe()
	go func() {
		// In 8 pieces, 400 ms apart: 2.8 s in all, never a second without bytes.
		step := (len(whole) + 7) / 8
		for i := 0; i < len(whole); i += step {
			if _, err := pw.Write(whole[i:min(i+step, len(whole))]); err != nil {
				return
			}
			time.Sleep(400 * time.Millisecond)
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/console/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := noRedirects(admin).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || count(t, e, `SELECT count(*) FROM releases`) != 1 {
		t.Errorf("a slow, steady upload: %d, %d releases (want 303, 1)", resp.StatusCode, count(t, e, `SELECT count(*) FROM releases`))
	}
}
