package web_test

// The console's forms as a browser meets them (issue 21): Post/Redirect/Get with a one-time flash,
// a single-use form token per rendered form, duplicate names refused, and every refused form shown
// again in place with the message beside its field and what was typed kept.

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/devices"
	"github.com/slipwayhq/slipway/pkg/distribution/events"
	"github.com/slipwayhq/slipway/test/apptest"
)

var hiddenRe = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// formOf returns the hidden fields (CSRF and form token) of the form with that id in page.
func formOf(t *testing.T, page, id string) url.Values {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no form %q in the page: %.300s", id, page)
	}
	start := strings.LastIndex(page[:i], "<form")
	end := strings.Index(page[i:], "</form>")
	if start < 0 || end < 0 {
		t.Fatalf("form %q is not a form", id)
	}
	v := url.Values{}
	for _, m := range hiddenRe.FindAllStringSubmatch(page[start:i+end], -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	if v.Get("csrf") == "" || v.Get("form_token") == "" {
		t.Fatalf("form %q lacks its CSRF or form token: %v", id, v)
	}
	return v
}

// with adds fields to a form's hidden ones.
func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Add(kv[i], kv[i+1])
	}
	return out
}

// noRedirects is the same browser, but shows the redirect instead of following it.
func noRedirects(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

func count(t *testing.T, e *apptest.Env, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Create app, reload; add a webhook, reload; send a test event, reload: each POST answers 303 to
// the page of its result, whose flash shows once, and a reload of that page does nothing again.
func TestConsolePostRedirectGet(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	admin, _ := signedIn(t, e, "alice")
	_, home := fetch(t, admin, http.MethodGet, e.URL+"/console", nil)

	// The POST itself answers 303 See Other to the new app's page.
	resp, _ := fetch(t, noRedirects(admin), http.MethodPost, e.URL+"/console/apps", with(formOf(t, home, "create-app"), "name", "Lighthouse"))
	var appID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM apps WHERE name = 'Lighthouse'`).Scan(&appID); err != nil {
		t.Fatal(err)
	}
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != appURL {
		t.Fatalf("create app answered %d, Location %q; want 303 to %s", resp.StatusCode, resp.Header.Get("Location"), appURL)
	}
	// The page redirected to shows the flash once; reloading it (a GET) shows it no more and
	// makes nothing.
	_, page := fetch(t, admin, http.MethodGet, appURL, nil)
	if !strings.Contains(page, `class="flash flash-ok" id="notice"`) || !strings.Contains(page, "App Lighthouse made") {
		t.Errorf("the app page after create shows no green flash: %.500s", page)
	}
	_, again := fetch(t, admin, http.MethodGet, appURL, nil)
	if strings.Contains(again, "App Lighthouse made") {
		t.Error("the flash is shown twice")
	}
	if n := count(t, e, `SELECT count(*) FROM apps WHERE name = 'Lighthouse'`); n != 1 {
		t.Errorf("%d apps named Lighthouse after create and reloads", n)
	}

	// A channel, then a webhook of it: the answer is the webhook's page with the secret, once.
	resp, page = fetch(t, admin, http.MethodPost, appURL+"/channels", with(formOf(t, page, "create-channel"), "scheme", "Adhoc", "name", "QA", "device_type", "ios"))
	if resp.StatusCode != 200 || resp.Request.Method != http.MethodGet || !strings.Contains(page, "Channel QA made") {
		t.Fatalf("create channel: %d %s %.300s", resp.StatusCode, resp.Request.Method, page)
	}
	var chID int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT c.id FROM channels c JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1`, appID).Scan(&chID); err != nil {
		t.Fatal(err)
	}
	resp, page = fetch(t, admin, http.MethodPost, fmt.Sprintf("%s/console/channels/%d/webhooks", e.URL, chID),
		with(formOf(t, page, fmt.Sprintf("webhook-%d", chID)), "url", "http://127.0.0.1:9/hook", "format", "slack"))
	secret := regexp.MustCompile(`id="secret">(whsec_[^<]+)<`).FindStringSubmatch(page)
	if resp.Request.Method != http.MethodGet || !strings.HasPrefix(resp.Request.URL.Path, "/console/webhooks/") || secret == nil {
		t.Fatalf("add webhook landed on %s %s: %.500s", resp.Request.Method, resp.Request.URL, page)
	}
	if strings.Contains(resp.Request.URL.String(), secret[1]) {
		t.Error("the webhook secret is in a URL")
	}
	hookURL := resp.Request.URL.String()
	if _, again := fetch(t, admin, http.MethodGet, hookURL, nil); strings.Contains(again, secret[1]) {
		t.Error("the webhook secret is shown again on reload")
	}
	if n := count(t, e, `SELECT count(*) FROM webhooks WHERE channel_id = $1`, chID); n != 1 {
		t.Errorf("%d webhooks after adding one and reloading", n)
	}
	// The sealed flash cookie does not hold the secret in the clear.
	for _, ck := range admin.Jar.Cookies(mustParse(t, e.URL+"/console")) {
		if strings.Contains(ck.Value, "whsec_") {
			t.Error("a cookie holds the webhook secret in the clear")
		}
	}

	// Send a test event, then reload the page it lands on: one delivery.
	_, page = fetch(t, admin, http.MethodGet, hookURL, nil)
	resp, page = fetch(t, admin, http.MethodPost, hookURL+"/test", formOf(t, page, "send-test-form"))
	if resp.Request.URL.String() != hookURL || !strings.Contains(page, "Test event queued") {
		t.Errorf("send test landed on %s", resp.Request.URL)
	}
	_, page = fetch(t, admin, http.MethodGet, hookURL, nil)
	if n := count(t, e, `SELECT count(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.channel_id = $1`, chID); n != 1 {
		t.Errorf("%d test deliveries after one send and a reload", n)
	}
	// The delivery's payload is on the page, with the guide to verifying it; the webhook is
	// changed in place (a bad URL is said beside its field, with what was typed).
	mustContain(t, []byte(page), "Payload and answers", "&#34;event&#34;: &#34;ping&#34;", `href="`+e.URL+`/docs/webhooks#verifying-a-delivery" id="verify-guide"`)
	resp, page = fetch(t, admin, http.MethodPost, hookURL, with(formOf(t, page, "edit-webhook"), "url", "not a url"))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `value="not a url"`) || !strings.Contains(page, "Webhook URL ") {
		t.Errorf("a bad URL for the webhook: %d %.300s", resp.StatusCode, page)
	}
	edit := with(formOf(t, page, "edit-webhook"), "url", "http://127.0.0.1:9/other", "format", "slack")
	edit["events"] = []string{"release.deleted", "tester.installed"}
	if resp, page = fetch(t, admin, http.MethodPost, hookURL, edit); resp.StatusCode != 200 || !strings.Contains(page, "Webhook saved") {
		t.Errorf("changing the webhook: %d %.300s", resp.StatusCode, page)
	}
	var hookURLNow, format, evs string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT url, format, array_to_string(events, ',') FROM webhooks WHERE channel_id = $1`, chID).
		Scan(&hookURLNow, &format, &evs); err != nil || hookURLNow != "http://127.0.0.1:9/other" || format != "slack" || evs != "release.deleted,tester.installed" {
		t.Errorf("the webhook after the change: %q %q %q (%v)", hookURLNow, format, evs, err)
	}
}

// One rendered form acts once: sent twice in a row (a resubmission) or twice at once (a double
// click), it makes one channel, and the second answer says it was already done.
func TestConsoleFormTokenOnce(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	admin, _ := signedIn(t, e, "alice")
	rel := e.UploadApp(t, "h.ipa", ipa("Harbor", "1.0", "1"))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	channels := func(name string) int {
		return count(t, e, `SELECT count(*) FROM channels c JOIN schemes s ON s.id = c.scheme_id WHERE s.app_id = $1 AND c.name = $2`, appID, name)
	}

	_, page := fetch(t, admin, http.MethodGet, appURL, nil)
	form := with(formOf(t, page, "create-channel"), "scheme", "Adhoc", "name", "Beta", "device_type", "ios")
	if resp, _ := fetch(t, admin, http.MethodPost, appURL+"/channels", form); resp.StatusCode != 200 {
		t.Fatalf("create channel: %d", resp.StatusCode)
	}
	resp, body := fetch(t, admin, http.MethodPost, appURL+"/channels", form)
	if resp.StatusCode != 200 || !strings.Contains(body, "That was already done") || !strings.HasPrefix(resp.Request.URL.Path, "/console/channels/") {
		t.Errorf("the same form again: %d at %s: %.400s", resp.StatusCode, resp.Request.URL, body)
	}
	if n := channels("Beta"); n != 1 {
		t.Errorf("%d channels Beta after sending one form twice", n)
	}

	// A double click: the same form sent twice at once.
	_, page = fetch(t, admin, http.MethodGet, appURL, nil)
	form = with(formOf(t, page, "create-channel"), "scheme", "Nightly", "name", "Gamma", "device_type", "ios")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := formRequest(t, http.MethodPost, appURL+"/channels", form)
			r, err := noRedirects(admin).Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			r.Body.Close()
			codes[i] = r.StatusCode
		}()
	}
	wg.Wait()
	if n := channels("Gamma"); n != 1 || codes[0] != http.StatusSeeOther || codes[1] != http.StatusSeeOther {
		t.Errorf("a double click made %d channels Gamma (answers %v)", n, codes)
	}
	if n := count(t, e, `SELECT count(*) FROM schemes WHERE app_id = $1 AND name = 'Nightly'`, appID); n != 1 {
		t.Errorf("a double click made %d schemes Nightly", n)
	}

	// A form token is the session's: another session's, or a forged one, is refused.
	other, _ := signedIn(t, e, "bob")
	if resp, _ := fetch(t, other, http.MethodPost, appURL+"/channels", with(url.Values{"csrf": {csrfOf(t, other, e.URL+"/console")}, "form_token": {form.Get("form_token")}},
		"scheme", "Adhoc", "name", "Theirs")); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another session's form token: %d", resp.StatusCode)
	}
	forged := with(form, "name", "Forged")
	forged.Set("form_token", "abc."+strings.SplitN(form.Get("form_token"), ".", 2)[1])
	if resp, body := fetch(t, admin, http.MethodPost, appURL+"/channels", forged); resp.StatusCode != http.StatusForbidden || channels("Forged") != 0 {
		t.Errorf("a forged form token: %d", resp.StatusCode)
	} else if !strings.Contains(body, `id="console-user"`) || !strings.Contains(body, "Back to the console") {
		// Even a refusal keeps the console's header and a way back: no bare status page.
		t.Errorf("the refusal is a bare page: %.600s", body)
	}
	// A form that failed may be corrected and sent again: its token was not used up.
	_, page = fetch(t, admin, http.MethodGet, appURL, nil)
	form = with(formOf(t, page, "create-channel"), "scheme", "Adhoc", "device_type", "ios")
	if resp, _ := fetch(t, admin, http.MethodPost, appURL+"/channels", with(form, "name", "Beta")); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a duplicate channel name: %d", resp.StatusCode)
	}
	if resp, _ := fetch(t, admin, http.MethodPost, appURL+"/channels", with(form, "name", "Delta")); resp.StatusCode != 200 || channels("Delta") != 1 {
		t.Errorf("the corrected form: %d, %d channels Delta", resp.StatusCode, channels("Delta"))
	}
}

// Every console form sent with bad values answers its own page (422) with the message beside the
// field, in the form's words, and what was typed kept; nothing changes.
func TestConsoleFormErrorsInPlace(t *testing.T) {
	e := apptest.New(t, apptest.Options{Configure: func(c *config.Config) { c.WebhookAllowPrivate = true }})
	ctx := context.Background()
	admin, _ := signedIn(t, e, "alice")
	signedIn(t, e, "bob")
	bobID := userID(t, e, "bob@example.com")
	rel := e.UploadApp(t, "h.ipa", ipa("Harbor", "1.0", "1"))
	e.UploadApp(t, "o.ipa", ipa("Other", "1.0", "1"))
	appID := int64(rel["app"].(map[string]any)["id"].(float64))
	chID := int64(rel["channel"].(map[string]any)["id"].(float64))
	schemeID := int64(rel["scheme"].(map[string]any)["id"].(float64))
	relID := int64(rel["id"].(float64))
	appURL := fmt.Sprintf("%s/console/apps/%d", e.URL, appID)
	chURL := fmt.Sprintf("%s/console/channels/%d", e.URL, chID)
	buildURL := fmt.Sprintf("%s/console/releases/%d", e.URL, relID)
	// A second channel in the scheme, whose name and key the first one's form then tries.
	_, page := fetch(t, admin, http.MethodGet, appURL, nil)
	var scheme string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT name FROM schemes WHERE id = $1`, schemeID).Scan(&scheme); err != nil {
		t.Fatal(err)
	}
	fetch(t, admin, http.MethodPost, appURL+"/channels", with(formOf(t, page, "create-channel"), "scheme", scheme, "name", "QA", "device_type", "ios"))
	var qaKey string
	if err := e.DB.Pool.QueryRow(ctx, `SELECT slug FROM channels WHERE name = 'QA'`).Scan(&qaKey); err != nil {
		t.Fatal(err)
	}
	hookURL := "http://127.0.0.1:9/hook"
	hook, err := e.Service.Webhooks.CreateWebhook(apptest.AsSystem(ctx), 0, chID, events.WebhookInput{URL: &hookURL})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Service.Devices.SyncDevice(apptest.AsSystem(ctx), "00008030-001A2B3C4D5E6F70", devices.DeviceChanges{Name: "QA iPhone"}); err != nil {
		t.Fatal(err)
	}
	_, tokPage := fetch(t, admin, http.MethodGet, e.URL+"/console/tokens", nil)
	tokID := count(t, e, `SELECT min(id)::int FROM api_tokens WHERE revoked_at IS NULL`)

	for _, c := range []struct {
		what, page, form, action string
		fields                   []string
		// message is what is said beside the field; kept what the page shows again as typed.
		message, kept string
	}{
		{"create app, a duplicate name", "/console", "create-app", "/console/apps", []string{"name", "harbor"},
			"New app is already the name of another app", `value="harbor"`},
		{"create app, blank", "/console", "create-app", "/console/apps", []string{"name", "  "}, "New app can", ""},
		{"rename app to another's name", appURL, "rename-app", fmt.Sprintf("/console/apps/%d", appID), []string{"name", "Other"},
			"Name is already the name of another app", `value="Other"`},
		{"create channel, a duplicate name", appURL, "create-channel", fmt.Sprintf("/console/apps/%d/channels", appID),
			[]string{"scheme", scheme, "name", "qa", "device_type", "ios"}, "Name is already the name of a channel of the scheme", `value="qa"`},
		{"create channel, an unknown device type", appURL, "create-channel", fmt.Sprintf("/console/apps/%d/channels", appID),
			[]string{"scheme", "Nightly", "name", "Web", "device_type", "symbian"}, "Device type ", `value="Web"`},
		{"channel settings, another channel's key", chURL, fmt.Sprintf("channel-settings-%d", chID), fmt.Sprintf("/console/channels/%d", chID),
			[]string{"name", "Main", "key", qaKey}, "Key is already the key of another channel.", `value="Main"`},
		{"channel settings, a bad key", chURL, fmt.Sprintf("channel-settings-%d", chID), fmt.Sprintf("/console/channels/%d", chID),
			[]string{"name", "Main", "key", "no spaces here"}, "Key ", `value="no spaces here"`},
		{"channel settings, a duplicate name", chURL, fmt.Sprintf("channel-settings-%d", chID), fmt.Sprintf("/console/channels/%d", chID),
			[]string{"name", "QA"}, "Name is already the name of a channel", `value="QA"`},
		{"retention, a word", chURL, fmt.Sprintf("retention-%d", chID), fmt.Sprintf("/console/channels/%d/retention", chID),
			[]string{"keep_builds", "lots", "max_age_days", "30"}, "Keep builds must be a whole number, or empty to inherit.", `value="lots"`},
		{"retention, out of range", chURL, fmt.Sprintf("retention-%d", chID), fmt.Sprintf("/console/channels/%d/retention", chID),
			[]string{"keep_builds", "-5", "max_age_days", "30"}, "Keep builds must be a whole number from 0 (off) to 1,000,000, or empty to inherit.", `value="30"`},
		{"retention, a size that is not one", chURL, fmt.Sprintf("retention-%d", chID), fmt.Sprintf("/console/channels/%d/retention", chID),
			[]string{"max_bytes", "200 parsecs"}, "Max size must be a size such as 500 MB", `value="200 parsecs"`},
		{"channel webhook, not a URL", chURL, fmt.Sprintf("webhook-%d", chID), fmt.Sprintf("/console/channels/%d/webhooks", chID),
			[]string{"url", "not a url", "format", "slack", "events", "release.deleted"}, "Webhook URL ", `value="not a url"`},
		{"app webhook, no URL", appURL, "app-webhook", fmt.Sprintf("/console/apps/%d/webhooks", appID),
			[]string{"url", "", "format", "teams", "events", "release.created"}, "Webhook URL must be", `value="release.created" checked`},
		{"member, not an address", appURL, "add-member-form", fmt.Sprintf("/console/apps/%d/members", appID),
			[]string{"email", "nobody at example"}, "Email must be an email address", `value="nobody at example"`},
		{"rename scheme, blank", appURL, fmt.Sprintf("scheme-settings-%d", schemeID), fmt.Sprintf("/console/schemes/%d", schemeID),
			[]string{"name", ""}, "Scheme name ", ""},
		{"delete channel, not confirmed", chURL, fmt.Sprintf("delete-channel-%d", chID), fmt.Sprintf("/console/channels/%d/delete", chID),
			nil, "Confirm must be ticked", ""},
		{"delete scheme, not confirmed", appURL, fmt.Sprintf("delete-scheme-%d", schemeID), fmt.Sprintf("/console/schemes/%d/delete", schemeID),
			nil, "Confirm must be ticked", ""},
		{"delete build, not confirmed", buildURL, fmt.Sprintf("delete-release-%d", relID), fmt.Sprintf("/console/releases/%d/delete", relID),
			nil, "Confirm must be ticked", ""},
		{"delete app, not confirmed", appURL, "delete-app", fmt.Sprintf("/console/apps/%d/delete", appID), nil, "Confirm must be ticked", ""},
		{"create token, blank name", "/console/tokens", "create-token", "/console/tokens", []string{"name", "", "scope", "admin"},
			"Name must be 1 to 255 characters.", `<option value="admin" selected>`},
		{"create token, unknown scope", "/console/tokens", "create-token", "/console/tokens", []string{"name", "ci", "scope", "root"},
			"cope", `value="ci"`},
		{"revoke token, not confirmed", "/console/tokens", fmt.Sprintf("revoke-token-%d", tokID), fmt.Sprintf("/console/tokens/%d/revoke", tokID),
			nil, "Confirm must be ticked", ""},
		{"delete webhook, not confirmed", fmt.Sprintf("/console/webhooks/%d", hook.ID), "delete-webhook-form", fmt.Sprintf("/console/webhooks/%d/delete", hook.ID),
			nil, "Confirm must be ticked", ""},
		{"delete device, not confirmed", "/console/devices", "delete-device-00008030-001A2B3C4D5E6F70", "/console/devices/00008030-001A2B3C4D5E6F70/delete",
			nil, "Confirm must be ticked", ""},
		{"people, an unknown role", "/console/users", fmt.Sprintf("user-form-%d", bobID), fmt.Sprintf("/console/users/%d", bobID),
			[]string{"role", "root"}, "Role must be admin, developer or viewer.", ""},
	} {
		t.Run(c.what, func(t *testing.T) {
			src := c.page
			if !strings.HasPrefix(src, "http") {
				src = e.URL + src
			}
			_, pg := fetch(t, admin, http.MethodGet, src, nil)
			if c.page == "/console/tokens" && tokPage == "" {
				t.Fatal("no tokens page")
			}
			before := manageState(t, e)
			resp, body := fetch(t, admin, http.MethodPost, e.URL+c.action, with(formOf(t, pg, c.form), c.fields...))
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Fatalf("%d, want 422: %.600s", resp.StatusCode, body)
			}
			// The page is the form's own, in the console (its header), the message in place.
			if !strings.Contains(body, `id="`+c.form+`"`) || !strings.Contains(body, `id="console-user"`) || strings.Contains(body, "Unprocessable Entity") {
				t.Errorf("not the form's own page: %.600s", body)
			}
			i := strings.Index(body, `id="`+c.form+`"`)
			end := strings.Index(body[i:], "</form>")
			inForm := body[i : i+end]
			if !strings.Contains(inForm, `class="field-error" role="alert">`+html.EscapeString(c.message)) &&
				!(strings.Contains(inForm, `class="field-error" role="alert">`) && strings.Contains(inForm, html.EscapeString(c.message))) {
				t.Errorf("no message %q beside the field: %.1500s", c.message, inForm)
			}
			for _, api := range []string{"slug ", "null", "keep_builds must", "max_bytes"} {
				if strings.Contains(inForm, `role="alert">`+api) {
					t.Errorf("the message speaks the API's words (%q): %.600s", api, inForm)
				}
			}
			if c.kept != "" && !strings.Contains(inForm, c.kept) {
				t.Errorf("the typed value %q is not kept: %.1500s", c.kept, inForm)
			}
			// A new form token, so the corrected form can be sent.
			if again := formOf(t, body, c.form); again.Get("form_token") == "" {
				t.Error("no fresh form token")
			}
			if after := manageState(t, e); after != before {
				t.Errorf("a refused form changed something:\n%s\n%s", before, after)
			}
		})
	}
	// The API keeps Zealot's rules: two apps may share a name there (the console refuses it).
	r := e.Do(t, http.MethodPost, "/api/apps", strings.NewReader(`{"name":"Harbor","token":"`+e.AdminToken+`"}`), http.Header{"Content-Type": {"application/json"}})
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Errorf("the API refuses a second app named Harbor: %d", r.Status)
	}
}
