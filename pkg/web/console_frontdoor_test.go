package web_test

// The console's front door (issue 34): the first upload from the home page or an app's page,
// the builds list after an upload, a changelog edited in the console, and the builds list's
// format column.

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
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
