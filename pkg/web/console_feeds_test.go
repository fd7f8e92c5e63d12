package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// releaseRow reads what the feeds announce of a release, from the database.
func releaseRow(t *testing.T, e *apptest.Env, id int64) (state string, rollout int, critical bool) {
	t.Helper()
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT checksum_state, rollout_percent, critical FROM releases WHERE id = $1`, id).
		Scan(&state, &rollout, &critical); err != nil {
		t.Fatal(err)
	}
	return state, rollout, critical
}

// Issue 23: a desktop build's console page says what the update feeds say of it (offered, the
// checksums, the Sparkle signature) and sets its rollout and critical flag; a bad rollout is
// said beside the field and changes nothing. A desktop channel's page lists its feed URLs and, for
// a password channel, makes its feed token (shown once; replacing it asks for a tick), which the
// feeds then answer to.
func TestConsoleUpdateFeeds(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0", Build: "100", MinOS: "12.0"})
	rel := e.UploadApp(t, "Desk-1.0.zip", zip, apptest.Field("password", "sesame"))
	relID := int64(rel["id"].(float64))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	slug := rel["channel"].(map[string]any)["slug"].(string)
	testkit.Eventually(t, time.Minute, "the build to be verified", func() bool {
		state, _, _ := releaseRow(t, e, relID)
		return state == "verified"
	})

	buildURL := fmt.Sprintf("%s/console/releases/%d", e.URL, relID)
	_, page := fetch(t, admin, http.MethodGet, buildURL, nil)
	updates := between(page, `id="updates"`, "</section>")
	for _, want := range []string{`id="updates-offered">in the feeds, but no framework can use it`, "verified: Slipway computed", `id="updates-sparkle">none: Sparkle refuses`,
		fmt.Sprintf(`id="rollout-%d" inputmode="numeric" size="4" value="100"`, relID), "<dt>SHA-512</dt>"} {
		if !strings.Contains(updates, want) {
			t.Errorf("the build's updates card lacks %q: %s", want, updates)
		}
	}

	// Rollout and critical, saved; the notice says what the feeds now do.
	updatesURL := fmt.Sprintf("%s/console/releases/%d/updates", e.URL, relID)
	resp, page := fetch(t, admin, http.MethodPost, updatesURL, url.Values{"csrf": {csrfOf(t, admin, buildURL)}, "rollout": {"25"}, "critical": {"1"}})
	if notice := between(page, `id="notice"`, "</div>"); resp.StatusCode != 200 || !strings.Contains(notice, "rolled out to 25% of installs, as a critical update") {
		t.Fatalf("saving the rollout: %d %q", resp.StatusCode, notice)
	}
	if _, rollout, critical := releaseRow(t, e, relID); rollout != 25 || !critical {
		t.Fatalf("saved: rollout %d, critical %v", rollout, critical)
	}
	if !strings.Contains(page, fmt.Sprintf(`id="critical-%d" checked`, relID)) {
		t.Error("the saved critical flag is not shown ticked")
	}
	// Bad rollouts are said beside the field, with what was typed, and change nothing.
	for _, bad := range []string{"150", "-1", "half"} {
		resp, page := fetch(t, admin, http.MethodPost, updatesURL, url.Values{"csrf": {csrfOf(t, admin, buildURL)}, "rollout": {bad}})
		if card := between(page, `id="updates"`, "</section>"); resp.StatusCode != 422 ||
			!(strings.Contains(card, `<span class="field-error" role="alert">Rollout must be a percentage from 0 to 100.</span>`) ||
				strings.Contains(card, `<span class="field-error" role="alert">Rollout must be a whole number from 0 to 100.</span>`)) ||
			!strings.Contains(page, fmt.Sprintf(`id="rollout-%d" inputmode="numeric" size="4" value="%s"`, relID, bad)) ||
			strings.Contains(card, fmt.Sprintf(`id="critical-%d" checked`, relID)) { // as typed: not ticked
			t.Errorf("rollout %q: %d %s", bad, resp.StatusCode, between(page, `id="updates"`, "</section>"))
		}
	}
	if _, rollout, critical := releaseRow(t, e, relID); rollout != 25 || !critical {
		t.Fatalf("a refused form changed the release: rollout %d, critical %v", rollout, critical)
	}

	// The channel's feeds, and its feed token.
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	_, page = fetch(t, admin, http.MethodGet, chURL, nil)
	feeds := between(page, `id="feeds"`, "</section>")
	// A password channel's feed URLs are shown as an updater needs them, with the token's place,
	// each with a Copy button; the 401 says where the token is made.
	for _, want := range []string{fmt.Sprintf(`value="%s/channels/%s/appcast.xml?token=FEED-TOKEN"`, e.URL, slug),
		fmt.Sprintf(`value="%s/channels/%s/electron?token=FEED-TOKEN"`, e.URL, slug), `data-copy="feed-url-0"`, `id="feed-token-placeholder"`,
		"/tauri/{{target}}/{{arch}}/{{current_version}}", "No token has been made yet", `href="` + e.URL + `/docs/feeds"`} {
		if !strings.Contains(feeds, want) {
			t.Errorf("the channel's feeds card lacks %q: %s", want, feeds)
		}
	}
	appcast := "/channels/" + slug + "/appcast.xml"
	if r := e.Get(t, appcast); r.Status != 401 || !strings.Contains(string(r.Body), fmt.Sprintf("console page (/console/channels/%d, Update feeds)", chID)) {
		t.Fatalf("the protected appcast without a token: %d %s", r.Status, r.Body)
	}
	tokenURL := fmt.Sprintf("%s/console/channels/%d/feed_token", e.URL, chID)
	makeToken := func(form url.Values) (int, string) {
		form.Set("csrf", csrfOf(t, admin, chURL))
		resp, page := fetch(t, admin, http.MethodPost, tokenURL, form)
		return resp.StatusCode, page
	}
	status, page := makeToken(url.Values{})
	first := between(page, `id="new-feed-token">`, "</pre>")
	if status != 200 || len(first) < 40 || !strings.Contains(page, "shown only this once") {
		t.Fatalf("making the feed token: %d %q", status, first)
	}
	if r := e.Get(t, appcast+"?token="+url.QueryEscape(first)); r.Status != 200 {
		t.Fatalf("the appcast with the console's token: %d %s", r.Status, r.Body)
	}
	if _, again := fetch(t, admin, http.MethodGet, chURL, nil); strings.Contains(again, first) || !strings.Contains(again, "A token was made; it is not shown again") {
		t.Error("the token is shown again, or the page does not say one was made")
	}
	// Replacing it asks for the tick, and then the old token stops working.
	if status, page := makeToken(url.Values{}); status != 422 || !strings.Contains(between(page, `id="feeds"`, "</section>"), "stop finding updates") {
		t.Fatalf("replacing without the tick: %d", status)
	}
	if r := e.Get(t, appcast+"?token="+url.QueryEscape(first)); r.Status != 200 {
		t.Fatalf("a refused replacement changed the token: %d", r.Status)
	}
	status, page = makeToken(url.Values{"confirm": {"1"}})
	second := between(page, `id="new-feed-token">`, "</pre>")
	if status != 200 || second == "" || second == first {
		t.Fatalf("replacing the token: %d", status)
	}
	if r := e.Get(t, appcast+"?token="+url.QueryEscape(first)); r.Status != 401 {
		t.Errorf("the old token still works: %d", r.Status)
	}
	if r := e.Get(t, appcast+"?token="+url.QueryEscape(second)); r.Status != 200 {
		t.Errorf("the new token: %d", r.Status)
	}

	// A viewer sees the feeds but neither form; an iOS channel has no feeds card.
	viewer, _ := signedIn(t, e, "bob")
	for _, u := range []string{chURL, buildURL} {
		_, vp := fetch(t, viewer, http.MethodGet, u, nil)
		if strings.Contains(vp, "feed-token-make-") || strings.Contains(vp, "save-updates-") {
			t.Errorf("a viewer at %s is shown a feeds form", u)
		}
	}
	ipa := e.UploadApp(t, "P.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Phone", BundleID: "com.example.phone", Version: "1.0", Build: "1"}))
	_, page = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/channels/%d", e.URL, int64(ipa["channel"].(map[string]any)["id"].(float64))), nil)
	if strings.Contains(page, `id="feeds"`) {
		t.Error("an iOS channel's page shows update feeds")
	}
	_, page = fetch(t, admin, http.MethodGet, fmt.Sprintf("%s/console/releases/%d", e.URL, int64(ipa["id"].(float64))), nil)
	if strings.Contains(page, `id="updates"`) {
		t.Error("an iOS build's page shows an updates card")
	}
}

// A macOS channel's page says whether Slipway signs its builds with the installation's Sparkle
// key; only an admin sees the switch and may use it (a developer's post is refused and changes
// nothing), and switching it is an audit row.
func TestConsoleSparkleSigning(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	carol, _ := signedIn(t, e, "carol")
	zip := appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Desk", BundleID: "com.example.desk", Version: "1.0", Build: "100", MinOS: "12.0"})
	rel := e.UploadApp(t, "Desk-1.0.zip", zip)
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	signingURL := chURL + "/signing"
	signing := func() bool {
		var on bool
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT sparkle_signing FROM channels WHERE id = $1`, chID).Scan(&on); err != nil {
			t.Fatal(err)
		}
		return on
	}
	if resp, _ := fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/users/%d", e.URL, userID(t, e, "carol@example.com")),
		url.Values{"csrf": {csrfOf(t, admin, e.URL+"/console/users")}, "role": {"developer"}}); resp.StatusCode != 200 {
		t.Fatalf("make carol a developer: %d", resp.StatusCode)
	}

	_, page := fetch(t, admin, http.MethodGet, chURL, nil)
	if feeds := between(page, `id="feeds"`, "</section>"); !strings.Contains(feeds, "Slipway does not sign this channel's builds") ||
		!strings.Contains(feeds, fmt.Sprintf(`id="sparkle-signing-%d"`, chID)) {
		t.Fatalf("the admin's feeds card: %s", feeds)
	}
	if resp, _ := fetch(t, carol, http.MethodPost, signingURL, url.Values{"csrf": {csrfOf(t, carol, e.URL+"/console")}, "sparkle_signing": {"1"}}); resp.StatusCode != http.StatusForbidden || signing() {
		t.Fatalf("a developer switches signing on: %d, on %v", resp.StatusCode, signing())
	}
	resp, page := fetch(t, admin, http.MethodPost, signingURL, url.Values{"csrf": {csrfOf(t, admin, chURL)}, "sparkle_signing": {"1"}})
	if resp.StatusCode != 200 || !signing() || !strings.Contains(between(page, `id="feeds"`, "</section>"), "Slipway signs this channel's builds that arrive without") {
		t.Fatalf("the admin switches signing on: %d, on %v", resp.StatusCode, signing())
	}
	if resp, _ := fetch(t, admin, http.MethodPost, signingURL, url.Values{"csrf": {csrfOf(t, admin, chURL)}}); resp.StatusCode != 200 || signing() {
		t.Fatalf("the admin switches signing off: %d, on %v", resp.StatusCode, signing())
	}
	var audit string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT string_agg(detail->>'sparkle_signing', ',' ORDER BY id) FROM audit_log
		WHERE action = 'channel.update' AND detail ? 'sparkle_signing'`).Scan(&audit); err != nil || audit != "on,off" {
		t.Fatalf("the audit rows: %q (%v)", audit, err)
	}
}

// A Windows channel's page shows its App Installer file in the feeds and sets how often the file
// is checked: a number out of range re-renders the form with the message beside the field and
// changes nothing; a valid one is saved, shown and audited.
func TestConsoleAppInstallerHours(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "FieldTool.msix", windowstest.BuildMSIX(windowstest.MSIXOptions{}))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	hours := func() int {
		var n int
		if err := e.DB.Pool.QueryRow(context.Background(), `SELECT appinstaller_hours FROM channels WHERE id = $1`, chID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The build's release page offers the App Installer file beside the download.
	slug := rel["channel"].(map[string]any)["slug"].(string)
	if r := e.Get(t, fmt.Sprintf("/channels/%s/releases/%d", slug, int64(rel["id"].(float64)))); r.Status != 200 ||
		!strings.Contains(string(r.Body), `id="appinstaller-install" href="`+e.URL+"/channels/"+slug+`/app.appinstaller"`) {
		t.Fatalf("the release page's App Installer button: %d", r.Status)
	}
	_, page := fetch(t, admin, http.MethodGet, chURL, nil)
	feeds := between(page, `id="feeds"`, "</section>")
	if !strings.Contains(feeds, "/app.appinstaller") || !strings.Contains(feeds, "at most every 24 hours") ||
		!strings.Contains(feeds, fmt.Sprintf(`id="appinstaller-hours-%d"`, chID)) {
		t.Fatalf("the feeds card: %s", feeds)
	}
	resp, page := fetch(t, admin, http.MethodPost, chURL+"/appinstaller", url.Values{"csrf": {csrfOf(t, admin, chURL)}, "appinstaller_hours": {"300"}})
	if resp.StatusCode != http.StatusUnprocessableEntity || hours() != 24 || !strings.Contains(page, "from 0 (check at every start) to 255") ||
		!strings.Contains(page, `value="300"`) {
		t.Fatalf("300 hours: %d, saved %d", resp.StatusCode, hours())
	}
	resp, page = fetch(t, admin, http.MethodPost, chURL+"/appinstaller", url.Values{"csrf": {csrfOf(t, admin, chURL)}, "appinstaller_hours": {"0"}})
	if resp.StatusCode != 200 || hours() != 0 || !strings.Contains(between(page, `id="feeds"`, "</section>"), "at every start") {
		t.Fatalf("0 hours: %d, saved %d", resp.StatusCode, hours())
	}
	var audit string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT string_agg(detail->>'appinstaller_hours', ',' ORDER BY id) FROM audit_log
		WHERE action = 'channel.update' AND detail ? 'appinstaller_hours'`).Scan(&audit); err != nil || audit != "0" {
		t.Fatalf("the audit rows: %q (%v)", audit, err)
	}
}
