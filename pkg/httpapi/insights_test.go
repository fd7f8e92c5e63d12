package httpapi_test

// Integration tests of issue 24 through the API: each upload records its build's insights and
// compares it with the channel's previous build (the answer's insights, the release.created
// event), GET /api/releases/:id/insights and /diff on pairs made from the real fixtures, the
// snapshot of a release recorded before insights existed, and the channels' size budgets.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// incompressible returns n bytes that deflate cannot shrink.
func incompressible(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// politeAPK is the politedroid fixture with a manifest asking for perms and a native library
// for each of abis.
func politeAPK(t testing.TB, perms []string, abis ...string) []byte {
	apk := fixtures.Read(t, "android/politedroid-1.3-4.apk")
	manifest := androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.politedroid", VersionCode: 4, VersionName: "1.3", MinSDK: 3, Label: "Polite Droid", Permissions: perms}})
	var libs [][2]any
	for _, abi := range abis {
		libs = append(libs, [2]any{"lib/" + abi + "/libpolite.so", incompressible(80<<10, 4)})
	}
	return fixtures.Rezip(t, apk, nil, map[string][]byte{"AndroidManifest.xml": manifest}, libs...)
}

// uploadInsights is the insights field of an upload's answer.
type uploadInsights struct {
	AgainstReleaseID *int64   `json:"against_release_id"`
	Summary          []string `json:"summary"`
	BudgetWarnings   []string `json:"budget_warnings"`
}

// uploadNews uploads data (to channel when set) and returns the release, its channel key and what
// the answer says changed.
func (e *testEnv) uploadNews(t *testing.T, filename string, data []byte, channel string) (int64, string, uploadInsights) {
	t.Helper()
	parts := []apptest.Part{apptest.Field("token", e.UploadToken)}
	if channel != "" {
		parts = append(parts, apptest.Field("channel_key", channel))
	}
	r := e.upload(t, append(parts, apptest.File(filename, data))...)
	rel := e.fullRelease(t, r)
	var body struct {
		Insights *uploadInsights `json:"insights"`
	}
	r.JSON(t, &body)
	if body.Insights == nil {
		t.Fatalf("upload %s: no insights in %.300s", filename, r.Body)
	}
	return rel.ID, rel.Channel.Slug, *body.Insights
}

// getJSON GETs path with the upload token and decodes a 200 answer.
func (e *testEnv) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	r := e.Do(t, http.MethodGet, path, nil, http.Header{"Authorization": {"Token " + e.UploadToken}})
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %.500s", path, r.Status, r.Body)
	}
	r.JSON(t, v)
}

// diff GETs /api/releases/:id/diff (query: "?against=N" or "").
func (e *testEnv) diff(t *testing.T, id int64, query string) diffAnswer {
	t.Helper()
	var d diffAnswer
	e.getJSON(t, fmt.Sprintf("/api/releases/%d/diff%s", id, query), &d)
	return d
}

// diffAnswer is GET /api/releases/:id/diff.
type diffAnswer struct {
	Release  struct{ ID int64 } `json:"release"`
	Against  struct{ ID int64 } `json:"against"`
	Summary  []string           `json:"summary"`
	Markdown string             `json:"markdown"`
	Diff     struct {
		Permissions   *struct{ Added, Removed []string } `json:"permissions"`
		Architectures *struct{ Added, Removed []string } `json:"architectures"`
		Size          *struct {
			Download   struct{ Change int64 } `json:"download"`
			Components []struct {
				Name, Kind, Status string
			} `json:"components"`
		} `json:"size"`
		Files []struct {
			Path, Status string
		} `json:"files"`
		Signing *struct {
			Team *struct{ Old, New string } `json:"team"`
		} `json:"signing"`
	} `json:"diff"`
}

// insightsAnswer is GET /api/releases/:id/insights.
type insightsAnswer struct {
	Release  struct{ ID int64 } `json:"release"`
	Insights struct {
		Platform      string   `json:"platform"`
		BundleID      string   `json:"bundle_id"`
		Permissions   []string `json:"permissions"`
		Architectures []string `json:"architectures"`
		Sizes         *struct {
			Download, Install int64
			Components        []struct {
				Name              string
				Download, Install int64
			}
		} `json:"sizes"`
	} `json:"insights"`
}

// TestInsightsFixturePairs uploads pairs made from the real packages to one channel each (an APK
// with a new permission and a dropped ABI, an .ipa with a framework added, a profile from another
// team) and checks what the upload answers, what the release.created event carries and what
// GET /api/releases/:id/insights and /diff report: exactly those changes.
func TestInsightsFixturePairs(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	perms := []string{"android.permission.READ_CALENDAR", "android.permission.RECEIVE_BOOT_COMPLETED"}

	// The APK pair, with a webhook on its channel to see the event's payload.
	oldAPK, chAPK, news := e.uploadNews(t, "old.apk", politeAPK(t, perms, "armeabi-v7a", "x86"), "")
	if news.AgainstReleaseID != nil || len(news.Summary) != 0 || len(news.BudgetWarnings) != 0 {
		t.Errorf("first build's insights %+v, want none", news)
	}
	e.exec(t, `INSERT INTO webhooks (channel_id, url, format, events, secret)
		SELECT id, 'https://hooks.invalid/x', 'slack', '{release.created}', 'whsec-insights' FROM channels WHERE slug = $1`, chAPK)
	newAPK, _, news := e.uploadNews(t, "new.apk", politeAPK(t, append(perms, "android.permission.CAMERA"), "armeabi-v7a"), chAPK)
	if news.AgainstReleaseID == nil || *news.AgainstReleaseID != oldAPK {
		t.Errorf("against %v, want %d", news.AgainstReleaseID, oldAPK)
	}
	for _, want := range []string{"new permission: android.permission.CAMERA", "dropped architecture: x86"} {
		if !slices.ContainsFunc(news.Summary, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("upload summary %q lacks %q", news.Summary, want)
		}
	}
	var payload []byte
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT payload FROM webhook_deliveries WHERE event = 'release.created'`).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var env struct {
		Release struct {
			ID       int64
			Insights struct {
				AgainstReleaseID int64    `json:"against_release_id"`
				Summary          []string `json:"summary"`
			} `json:"insights"`
		} `json:"release"`
	}
	if err := json.Unmarshal(payload, &env); err != nil {
		t.Fatal(err)
	}
	if env.Release.ID != newAPK || env.Release.Insights.AgainstReleaseID != oldAPK || !slices.Equal(env.Release.Insights.Summary, news.Summary) {
		t.Errorf("release.created payload %s, want the upload's summary %q", payload, news.Summary)
	}

	d := e.diff(t, newAPK, "")
	if d.Release.ID != newAPK || d.Against.ID != oldAPK {
		t.Errorf("diff of %d against %d, want %d against %d", d.Release.ID, d.Against.ID, newAPK, oldAPK)
	}
	if p := d.Diff.Permissions; p == nil || !slices.Equal(p.Added, []string{"android.permission.CAMERA"}) || len(p.Removed) != 0 {
		t.Errorf("permissions %+v", p)
	}
	if a := d.Diff.Architectures; a == nil || !slices.Equal(a.Removed, []string{"x86"}) || len(a.Added) != 0 {
		t.Errorf("architectures %+v", a)
	}
	if d.Diff.Size == nil || d.Diff.Size.Download.Change >= 0 {
		t.Errorf("size %+v: the build lost a library", d.Diff.Size)
	}
	if !slices.Equal(d.Summary, news.Summary) || !strings.Contains(d.Markdown, "android.permission.CAMERA") {
		t.Errorf("summary %q (upload said %q), markdown %q", d.Summary, news.Summary, d.Markdown)
	}
	// Against itself, explicitly: nothing changed.
	d = e.diff(t, oldAPK, fmt.Sprintf("?against=%d", oldAPK))
	if len(d.Summary) != 0 || d.Diff.Permissions != nil {
		t.Errorf("a release against itself: %q", d.Summary)
	}
	var in insightsAnswer
	e.getJSON(t, fmt.Sprintf("/api/releases/%d/insights", newAPK), &in)
	if in.Insights.BundleID != "com.politedroid" || !slices.Contains(in.Insights.Permissions, "android.permission.CAMERA") ||
		!slices.Equal(in.Insights.Architectures, []string{"armeabi-v7a"}) || in.Insights.Sizes == nil {
		t.Fatalf("insights %+v", in.Insights)
	}
	var download, install int64
	for _, c := range in.Insights.Sizes.Components {
		download, install = download+c.Download, install+c.Install
	}
	if download != in.Insights.Sizes.Download || install != in.Insights.Sizes.Install {
		t.Errorf("components add up to %d/%d, want %d/%d", download, install, in.Insights.Sizes.Download, in.Insights.Sizes.Install)
	}

	// The .ipa pair: a framework added.
	ipa := fixtures.Read(t, "ios/demo-universal-enterprise-1.0-1.ipa")
	oldIPA, chIPA, _ := e.uploadNews(t, "old.ipa", fixtures.Rezip(t, ipa, nil, nil), "")
	newIPA, _, news := e.uploadNews(t, "new.ipa", fixtures.Rezip(t, ipa, nil, nil,
		[2]any{"Payload/Demo.app/Frameworks/Lottie.framework/Lottie", incompressible(250<<10, 3)},
		[2]any{"Payload/Demo.app/Frameworks/Lottie.framework/Info.plist", []byte("<plist/>")}), chIPA)
	if !slices.ContainsFunc(news.Summary, func(s string) bool { return strings.HasPrefix(s, "new framework: Frameworks/Lottie.framework") }) ||
		!strings.HasPrefix(news.Summary[0], "+") {
		t.Errorf("upload summary %q", news.Summary)
	}
	d = e.diff(t, newIPA, "")
	var added []string
	for _, c := range d.Diff.Size.Components {
		if c.Status == "added" {
			added = append(added, c.Name)
		}
	}
	var files []string
	for _, f := range d.Diff.Files {
		files = append(files, f.Status+" "+f.Path)
	}
	if d.Against.ID != oldIPA || !slices.Equal(added, []string{"Frameworks/Lottie.framework"}) || d.Diff.Permissions != nil ||
		!slices.Equal(files, []string{"added Payload/Demo.app/Frameworks/Lottie.framework/Lottie", "added Payload/Demo.app/Frameworks/Lottie.framework/Info.plist"}) {
		t.Errorf("ipa diff against %d: components added %q, files %q", d.Against.ID, added, files)
	}

	// A profile from another team.
	capable := fixtures.Read(t, "ios/very-capable-app-1.0-1.ipa")
	const profile = "Payload/very-capable-app.app/embedded.mobileprovision"
	real := fixtures.ZipEntry(t, capable, profile)
	teamOld, chTeam, _ := e.uploadNews(t, "team.ipa", fixtures.Rezip(t, capable, nil, map[string][]byte{profile: real}), "")
	teamNew, _, _ := e.uploadNews(t, "team2.ipa", fixtures.Rezip(t, capable, nil,
		map[string][]byte{profile: bytes.ReplaceAll(real, []byte("TestFixture"), []byte("OtherTeam99"))}), chTeam)
	d = e.diff(t, teamNew, "")
	if s := d.Diff.Signing; d.Against.ID != teamOld || s == nil || s.Team == nil || *s.Team != (struct{ Old, New string }{"TestFixture", "OtherTeam99"}) {
		t.Errorf("signing %+v", d.Diff.Signing)
	}

	// Errors: JSON, nothing else touched.
	upload := http.Header{"Authorization": {"Token " + e.UploadToken}}
	for _, c := range []struct {
		path   string
		header http.Header
		status int
		want   string
	}{
		{fmt.Sprintf("/api/releases/%d/diff", oldAPK), upload, 422, "first in its channel"},
		{fmt.Sprintf("/api/releases/%d/diff?against=%d", newAPK, newIPA), upload, 422, "cannot be compared"},
		{fmt.Sprintf("/api/releases/%d/diff?against=99999999", newAPK), upload, 404, "not found"},
		{fmt.Sprintf("/api/releases/%d/diff?against=abc", newAPK), upload, 422, "against"},
		{fmt.Sprintf("/api/releases/%d/diff?against=-1", newAPK), upload, 422, "against"},
		{"/api/releases/99999999/diff", upload, 404, "not found"},
		{"/api/releases/99999999/insights", upload, 404, "not found"},
		{"/api/releases/x/insights", upload, 422, "id"},
		{fmt.Sprintf("/api/releases/%d/insights", newAPK), nil, 401, ""},
		{fmt.Sprintf("/api/releases/%d/diff", newAPK), nil, 401, ""},
	} {
		r := e.Do(t, http.MethodGet, c.path, nil, c.header)
		if msg := wantError(t, r, c.status); !strings.Contains(msg, c.want) {
			t.Errorf("GET %s: error %q, want it to say %q", c.path, msg, c.want)
		}
	}
}

// TestInsightsRecordedLater: a release recorded before insights existed (no snapshot row) gets
// its snapshot on the first request, the same as an upload records, and keeps it; the diff of the
// next build works against it.
func TestInsightsRecordedLater(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	perms := []string{"android.permission.INTERNET"}
	first, ch, _ := e.uploadNews(t, "a.apk", politeAPK(t, perms, "arm64-v8a"), "")
	var recorded []byte
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT snapshot FROM release_insights WHERE release_id = $1`, first).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	e.exec(t, `DELETE FROM release_insights`)
	// The next upload finds no snapshot to compare with: no summary, no failure.
	second, _, news := e.uploadNews(t, "b.apk", politeAPK(t, append(perms, "android.permission.CAMERA"), "arm64-v8a"), ch)
	if news.AgainstReleaseID != nil || len(news.Summary) != 0 {
		t.Errorf("insights %+v against a release without a snapshot", news)
	}
	d := e.diff(t, second, "")
	if d.Diff.Permissions == nil || !slices.Equal(d.Diff.Permissions.Added, []string{"android.permission.CAMERA"}) {
		t.Errorf("diff against a release given its snapshot late: %+v", d.Diff.Permissions)
	}
	var again []byte
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT snapshot FROM release_insights WHERE release_id = $1`, first).Scan(&again); err != nil {
		t.Fatalf("the snapshot computed on request was not recorded: %v", err)
	}
	var a, b any
	if json.Unmarshal(recorded, &a) != nil || json.Unmarshal(again, &b) != nil || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("snapshot computed later\n%s\ndiffers from the upload's\n%s", again, recorded)
	}
}

// TestInsightsSizeBudget: a channel's size budget set through the API warns in the upload's answer
// and the event, and, enforced, refuses the upload with 422 keeping nothing.
func TestInsightsSizeBudget(t *testing.T) {
	e := newEnv(t, apptest.Options{})
	perms := []string{"android.permission.INTERNET"}
	first, ch, _ := e.uploadNews(t, "a.apk", politeAPK(t, perms, "arm64-v8a"), "")
	var rel struct{ Channel struct{ ID int64 } }
	e.getJSON(t, fmt.Sprintf("/api/releases/%d", first), &rel)
	patch := func(body string, status int) map[string]any {
		t.Helper()
		r := e.Do(t, http.MethodPatch, fmt.Sprintf("/api/channels/%d", rel.Channel.ID), strings.NewReader(body),
			http.Header{"Authorization": {"Token " + e.AdminToken}, "Content-Type": {"application/json"}})
		if status != http.StatusOK {
			wantError(t, r, status)
			return nil
		}
		if r.Status != status {
			t.Fatalf("PATCH %s: %d %s", body, r.Status, r.Body)
		}
		return r.Map(t)
	}
	for _, bad := range []string{`{"max_size_bytes":-5}`, `{"max_size_bytes":"lots"}`, `{"max_growth_percent":0}`,
		`{"max_growth_percent":[1]}`, `{"enforce_budget":"maybe"}`} {
		patch(bad, 422)
	}
	c := patch(`{"max_growth_percent":1}`, 200)
	if c["max_growth_percent"] != 1.0 || c["max_size_bytes"] != nil || c["enforce_budget"] != false {
		t.Fatalf("channel after setting the budget: %v", c)
	}
	// 200 kB more than the first build: a warning, the build kept.
	second, _, news := e.uploadNews(t, "b.apk", politeAPK(t, perms, "arm64-v8a", "x86_64", "armeabi-v7a"), ch)
	if len(news.BudgetWarnings) != 1 || !strings.Contains(news.BudgetWarnings[0], "over the channel's maximum growth of 1%") {
		t.Errorf("budget warnings %q", news.BudgetWarnings)
	}
	// Enforced: refused, nothing kept.
	c = patch(`{"enforce_budget":true,"max_size_bytes":"1000"}`, 200)
	if c["enforce_budget"] != true || c["max_size_bytes"] != 1000.0 {
		t.Fatalf("channel %v", c)
	}
	objects, releases, ledger := len(e.Objects(t)), e.rows(t, "releases"), e.rows(t, "storage_objects")
	r := e.upload(t, apptest.Field("token", e.UploadToken), apptest.Field("channel_key", ch),
		apptest.File("c.apk", politeAPK(t, perms, "arm64-v8a", "x86_64", "armeabi-v7a", "x86")))
	msg := wantError(t, r, http.StatusUnprocessableEntity)
	for _, want := range []string{"size budget", "over the channel's maximum of 1.0 kB", "maximum growth of 1%", "Nothing was kept"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q lacks %q", msg, want)
		}
	}
	if n := len(e.Objects(t)); n != objects || e.rows(t, "releases") != releases || e.rows(t, "storage_objects") != ledger {
		t.Errorf("after a refused upload: %d objects (were %d), %d releases (were %d)", n, objects, e.rows(t, "releases"), releases)
	}
	// Cleared: uploads pass without warnings.
	c = patch(`{"max_size_bytes":null,"max_growth_percent":"","enforce_budget":false}`, 200)
	if c["max_size_bytes"] != nil || c["max_growth_percent"] != nil || c["enforce_budget"] != false {
		t.Fatalf("channel after clearing %v", c)
	}
	_, _, news = e.uploadNews(t, "d.apk", politeAPK(t, perms, "arm64-v8a", "x86_64", "armeabi-v7a", "x86"), ch)
	if len(news.BudgetWarnings) != 0 || news.AgainstReleaseID == nil || *news.AgainstReleaseID != second {
		t.Errorf("insights %+v", news)
	}
}
