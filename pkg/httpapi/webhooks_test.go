package httpapi_test

// Webhooks end to end in one process: events written with the change, delivered signed, retried
// after failures, recorded; the "send test" call; SSRF and bad input refused. Download counts.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/webhook"
	"github.com/slipwayhq/slipway/test/apptest"
	"github.com/slipwayhq/slipway/test/testkit"
)

// receiver is a webhook receiver on loopback that checks every signature.
type receiver struct {
	*httptest.Server
	t      *testing.T
	secret atomic.Value // string
	fail   atomic.Bool  // answer 500 while set
	mu     sync.Mutex
	got    []received
}

type received struct {
	event, delivery string
	env             webhook.Envelope
	raw             []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.secret.Store("")
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if err := webhook.Verify([]byte(r.secret.Load().(string)), req.Header.Get(webhook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("a delivery with a bad signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var env webhook.Envelope
		_ = json.Unmarshal(body, &env)
		r.mu.Lock()
		r.got = append(r.got, received{event: req.Header.Get(webhook.EventHeader), delivery: req.Header.Get(webhook.DeliveryHeader), env: env, raw: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) events() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitEvents waits until the receiver has n deliveries.
func (r *receiver) waitEvents(n int) []received {
	r.t.Helper()
	testkit.EventuallyOK(r.t, 30*time.Second, fmt.Sprintf("%d deliveries", n), func() error {
		if got := len(r.events()); got < n {
			return fmt.Errorf("the receiver got %d", got)
		}
		return nil
	})
	return r.events()
}

func webhookEnv(t *testing.T, allowPrivate bool) *mgmt {
	return newMgmt(t, apptest.Options{Storage: apptest.S3, Configure: func(c *config.Config) {
		c.WebhookAllowPrivate = allowPrivate
		c.WebhookPoll = 50 * time.Millisecond
		c.WebhookRetryBase = 100 * time.Millisecond
		c.WebhookMaxAttempts = 4
		c.DownloadFlushInterval = 50 * time.Millisecond
	}})
}

func TestWebhookEvents(t *testing.T) {
	m := webhookEnv(t, true)
	admin := m.e.AdminToken
	rcv := newReceiver(t)
	app, _, channel, first := m.fixture()
	hook := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/webhooks", id(channel)), admin, `{"url":"`+rcv.URL+`/hook?k=v"}`), 201, "channel webhook")
	secret, _ := hook["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("no secret in the answer: %v", hook)
	}
	rcv.secret.Store(secret)
	shown := m.want(m.call("GET", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, ""), 200, "get webhook")
	if _, ok := shown["secret"]; ok {
		t.Error("the secret is shown again")
	}
	if len(shown["events"].([]any)) != len(webhook.Events) {
		t.Errorf("default events %v", shown["events"])
	}
	// An app webhook for debug files only, with its own receiver: it must not get release events.
	appRcv := newReceiver(t)
	appHook := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", id(app)), admin,
		`{"url":"`+appRcv.URL+`/app","events":["debug_file.created"],"format":"slipway"}`), 201, "app webhook")
	appRcv.secret.Store(appHook["secret"].(string))
	if appHook["channel_id"] != nil || appHook["app_id"] != float64(id(app)) {
		t.Errorf("app webhook %v", appHook)
	}

	// release.created (the fixture's release came before the webhook: not sent).
	rel := m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}),
		apptest.Field("channel_key", "harbor-ios"), apptest.Field("changelog", "Second"))
	got := rcv.waitEvents(1)
	if got[0].event != webhook.EventReleaseCreated || got[0].env.Release == nil || got[0].env.Release.ID != id(rel) ||
		got[0].env.Release.ReleaseVersion != "1.1" || got[0].env.Channel.Key != "harbor-ios" || got[0].env.App.Name != "Harbor" ||
		!strings.HasPrefix(got[0].env.Release.ReleaseURL, m.e.URL) || got[0].delivery != got[0].env.ID {
		t.Errorf("release.created: %+v %s", got[0], got[0].raw)
	}
	// release.downloaded: three downloads, counted in one event per flush (one or more).
	for i := 0; i < 3; i++ {
		if r := m.e.Get(t, fmt.Sprintf("/download/releases/%d", id(rel))); r.Status != http.StatusFound {
			t.Fatalf("download: %d", r.Status)
		}
	}
	testkit.Eventually(t, 30*time.Second, "the downloads to be reported", func() bool {
		var sum int64
		for _, g := range byEvent(rcv.events(), webhook.EventReleaseDownloaded) {
			if g.env.Release == nil || g.env.Release.ID != id(rel) {
				t.Errorf("release.downloaded of another release: %s", g.raw)
			}
			sum += g.env.Downloads
		}
		return sum == 3
	})
	downloaded := len(byEvent(rcv.events(), webhook.EventReleaseDownloaded))
	// The receiver fails for a while: the deletion is retried until it succeeds.
	rcv.fail.Store(true)
	m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(first)), admin, ""), 200, "delete release")
	testkit.Eventually(t, 30*time.Second, "two failed attempts of the deletion", func() bool {
		var n int
		_ = m.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
			WHERE d.event = 'release.deleted' AND a.status_code = 500`).Scan(&n)
		return n >= 2
	})
	rcv.fail.Store(false)
	// Delivered: the receiver has it, and the sender has recorded so (it records after the
	// receiver answers, so the receiver alone is not enough).
	testkit.Eventually(t, 30*time.Second, "the deletion to be delivered", func() bool {
		var state string
		_ = m.e.DB.Pool.QueryRow(context.Background(), `SELECT state FROM webhook_deliveries WHERE event = 'release.deleted'`).Scan(&state)
		return len(byEvent(rcv.events(), webhook.EventReleaseDeleted)) == 1 && state == "delivered"
	})
	if d := byEvent(rcv.events(), webhook.EventReleaseDeleted)[0]; d.env.Release.ID != id(first) || d.env.Release.ReleaseURL != "" {
		t.Errorf("release.deleted: %s", d.raw)
	}
	ds := m.e.Do(t, "GET", fmt.Sprintf("/api/webhooks/%d/deliveries", id(hook)), nil, http.Header{"Authorization": {"Token " + admin}})
	var deliveries []struct {
		Event, State string
		Attempts     int
		History      []struct {
			StatusCode int `json:"status_code"`
			Error      string
		}
	}
	if err := json.Unmarshal(ds.Body, &deliveries); err != nil || len(deliveries) != 2+downloaded {
		t.Fatalf("deliveries (want %d): %s", 2+downloaded, ds.Body)
	}
	for _, del := range deliveries {
		if del.Event != webhook.EventReleaseDeleted {
			continue
		}
		if del.State != "delivered" || del.Attempts < 3 || len(del.History) != del.Attempts ||
			del.History[0].StatusCode != 500 || del.History[len(del.History)-1].StatusCode != 200 {
			t.Errorf("the retried delivery's history: %+v", del)
		}
	}
	if strings.Contains(string(ds.Body), "k=v") {
		t.Error("the delivery history shows the URL's query")
	}
	// debug_file.created goes to the app webhook only.
	zip := debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Harbor.app.dSYM", Identifier: "com.example.harbor", ReleaseVersion: "1.1", BuildVersion: "2",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"}}})
	up := m.e.Upload(t, "/api/debug_files/upload", m.e.UploadToken, apptest.Field("channel_key", "harbor-ios"), apptest.File("d.zip", zip))
	if up.Status != http.StatusCreated {
		t.Fatalf("debug file upload: %d %s", up.Status, up.Body)
	}
	got = appRcv.waitEvents(1)
	if got[0].event != webhook.EventDebugFileCreated || got[0].env.DebugFile == nil || got[0].env.App.ID != id(app) ||
		got[0].env.DebugFile.ReleaseVersion != "1.1" {
		t.Errorf("debug_file.created: %s", got[0].raw)
	}
	time.Sleep(300 * time.Millisecond)
	if n, na := len(rcv.events()), len(appRcv.events()); n != 2+downloaded || na != 1 {
		t.Errorf("%d and %d deliveries, want %d and 1 (each event once per subscribed webhook)", n, na, 2+downloaded)
	}

	// Send test: a ping, answered with its attempt.
	test := m.want(m.call("POST", fmt.Sprintf("/api/webhooks/%d/test", id(hook)), admin, ""), 200, "send test")
	if test["state"] != "delivered" || test["event"] != "ping" {
		t.Errorf("send test: %v", test)
	}
	rcv.fail.Store(true)
	test = m.want(m.call("POST", fmt.Sprintf("/api/webhooks/%d/test", id(hook)), admin, ""), 200, "send test to a failing receiver")
	if test["state"] != "failed" || !strings.Contains(fmt.Sprint(test["history"]), "500") {
		t.Errorf("send test to a failing receiver: %v", test)
	}
	rcv.fail.Store(false)

	// Disabled webhooks get nothing; deleting removes the history.
	m.want(m.call("PATCH", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, `{"enabled":false}`), 200, "disable")
	m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.2", Build: "3"}),
		apptest.Field("channel_key", "harbor-ios"))
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.events()); n != 3+downloaded { // the events and the successful ping
		t.Errorf("%d deliveries after disabling, want %d", n, 3+downloaded)
	}
	m.want(m.call("DELETE", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, ""), 200, "delete webhook")
	m.want(m.call("GET", fmt.Sprintf("/api/webhooks/%d/deliveries", id(hook)), admin, ""), 404, "deliveries of a deleted webhook")
	if strings.Contains(m.e.LogText(), secret) {
		t.Error("the log holds a webhook secret")
	}
}

// A receiver that keeps failing: the delivery is marked failed after the last attempt.
func TestWebhookGivesUp(t *testing.T) {
	m := webhookEnv(t, true)
	rcv := newReceiver(t)
	rcv.fail.Store(true)
	_, _, channel, _ := m.fixture()
	hook := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/webhooks", id(channel)), m.e.AdminToken,
		`{"url":"`+rcv.URL+`","events":"release.created"}`), 201, "webhook (events as form text)")
	m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "9"}),
		apptest.Field("channel_key", "harbor-ios"))
	testkit.Eventually(t, 30*time.Second, "the delivery to fail for good", func() bool {
		var state string
		var attempts int
		_ = m.e.DB.Pool.QueryRow(context.Background(), `SELECT state, attempts FROM webhook_deliveries WHERE webhook_id = $1`, id(hook)).Scan(&state, &attempts)
		return state == "failed" && attempts == 4
	})
	var n int
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_attempts`).Scan(&n); err != nil || n != 4 {
		t.Errorf("%d attempts recorded, want 4 (%v)", n, err)
	}
}

func TestWebhookRefusals(t *testing.T) {
	m := webhookEnv(t, false)
	admin, upload := m.e.AdminToken, m.e.UploadToken
	app, _, channel, _ := m.fixture()
	path := fmt.Sprintf("/api/channels/%d/webhooks", id(channel))
	before := m.state()
	for _, c := range []struct{ body, want string }{
		{`{"url":"http://127.0.0.1:9/hook"}`, "loopback"},
		{`{"url":"http://localhost/hook"}`, "loopback"},
		{`{"url":"http://10.0.0.8/hook"}`, "private"},
		{`{"url":"http://169.254.169.254/latest/meta-data/"}`, "link-local"},
		{`{"url":"http://[::ffff:192.168.0.1]/"}`, "private"},
		{`{"url":"ftp://example.com/"}`, "http"},
		{`{"url":"https://user:pass@example.com/"}`, "password"},
		{`{"url":"https://no-such-host.invalid/hook"}`, "cannot be resolved"},
		{`{}`, "required"},
		{`{"url":"https://93.184.215.14/","events":["release.created","release.exploded"]}`, "unknown event"},
		{`{"url":"https://93.184.215.14/","events":[]}`, "at least one"},
		{`{"url":"https://93.184.215.14/","events":[1]}`, "event names"},
		{`{"url":"https://93.184.215.14/","format":"telegram"}`, "format"},
	} {
		r := m.call("POST", path, admin, c.body)
		m.want(r, 422, c.body)
		if msg := r.Error(t); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not say %q", c.body, msg, c.want)
		}
	}
	m.want(m.call("POST", path, upload, `{"url":"https://93.184.215.14/"}`), 403, "upload token")
	m.want(m.call("GET", path, upload, ""), 403, "list with an upload token")
	m.want(m.call("POST", path, "", `{"url":"https://93.184.215.14/"}`), 401, "no token")
	m.want(m.call("POST", "/api/channels/999999/webhooks", admin, `{"url":"https://93.184.215.14/"}`), 404, "unknown channel")
	m.want(m.call("POST", "/api/apps/999999/webhooks", admin, `{"url":"https://93.184.215.14/"}`), 404, "unknown app")
	m.want(m.call("GET", "/api/webhooks/999999", admin, ""), 404, "unknown webhook")
	var n int
	if err := m.e.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhooks`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d webhooks recorded by refused requests", n)
	}
	if after := m.state(); after != before {
		t.Errorf("a refused request changed something")
	}
	// A public URL is accepted; changing it to a private one is refused and changes nothing.
	hook := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", id(app)), admin, `{"url":"https://93.184.215.14/hook"}`), 201, "public URL")
	m.want(m.call("PATCH", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, `{"url":"http://192.168.1.1/"}`), 422, "private URL")
	if got := m.want(m.call("GET", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, ""), 200, "get"); got["url"] != "https://93.184.215.14/hook" {
		t.Errorf("url %v after a refused change", got["url"])
	}
}

// Download counts match the downloads made, concurrently, and show in the release JSON.
func TestDownloadCounts(t *testing.T) {
	m := webhookEnv(t, true)
	_, _, channel, rel := m.fixture()
	other := m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}),
		apptest.Field("channel_key", "harbor-ios"))
	var wg sync.WaitGroup
	const workers, each = 8, 25
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				resp, err := m.e.Client.Get(m.e.URL + fmt.Sprintf("/download/releases/%d", id(rel)))
				if err != nil || resp.StatusCode != http.StatusFound {
					t.Errorf("download: %v %v", err, resp)
					return
				}
				resp.Body.Close()
			}
		}()
	}
	// iOS installs: the manifest fetch counts, the device's package fetch it points to does not.
	for i := 0; i < 3; i++ {
		r := m.e.Get(t, fmt.Sprintf("/channels/harbor-ios/releases/%d/install", id(other)))
		if r.Status != http.StatusOK {
			t.Fatalf("manifest: %d", r.Status)
		}
		start := strings.Index(string(r.Body), m.e.URL+"/download/")
		end := strings.Index(string(r.Body[start:]), "<")
		pkg := strings.ReplaceAll(string(r.Body[start:start+end]), "&amp;", "&")
		if f := m.e.Get(t, strings.TrimPrefix(pkg, m.e.URL)); f.Status != http.StatusFound {
			t.Fatalf("the manifest's package URL %s: %d", pkg, f.Status)
		}
	}
	wg.Wait()
	want := map[int64]float64{id(rel): workers * each, id(other): 3}
	testkit.Eventually(t, 30*time.Second, "the counts to be written", func() bool {
		for rid, n := range want {
			got := m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", rid), m.e.UploadToken, ""), 200, "release")
			if got["download_count"] != n {
				return false
			}
		}
		return true
	})
	// The release page shows the count too (through the read cache: up to its TTL late).
	testkit.Eventually(t, 30*time.Second, "the release page to show the count", func() bool {
		page := m.e.Get(t, fmt.Sprintf("/channels/harbor-ios/releases/%d", id(rel)))
		return strings.Contains(string(page.Body), fmt.Sprintf(`id="download-count" title="Downloads and iOS installs">%d<`, workers*each))
	})
	time.Sleep(200 * time.Millisecond) // nothing more arrives
	for rid, n := range want {
		got := m.want(m.call("GET", fmt.Sprintf("/api/releases/%d", rid), m.e.UploadToken, ""), 200, "release")
		if got["download_count"] != n {
			t.Errorf("release %d: download_count %v, want %v", rid, got["download_count"], n)
		}
	}
	_ = channel
}

// byEvent keeps the deliveries of one event.
func byEvent(got []received, event string) []received {
	var out []received
	for _, g := range got {
		if g.event == event {
			out = append(out, g)
		}
	}
	return out
}

// TestWebhookCascadeDeletes: deleting a channel or a scheme sends release.deleted to the app's
// webhooks for every release it takes along (the channel's own webhooks go with it).
func TestWebhookCascadeDeletes(t *testing.T) {
	m := webhookEnv(t, true)
	admin := m.e.AdminToken
	app, scheme, channel, first := m.fixture()
	second := m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}),
		apptest.Field("channel_key", "harbor-ios"))
	beta := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), admin, `{"name":"Beta"}`), 201, "scheme")
	m.want(m.call("POST", fmt.Sprintf("/api/schemes/%d/channels", id(beta)), admin, `{"name":"iOS","slug":"harbor-beta","device_type":"ios"}`), 201, "channel")
	third := m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "2.0", Build: "3"}),
		apptest.Field("channel_key", "harbor-beta"))
	rcv := newReceiver(t)
	hook := m.want(m.call("POST", fmt.Sprintf("/api/apps/%d/webhooks", id(app)), admin, `{"url":"`+rcv.URL+`/app","events":["release.deleted"]}`), 201, "app webhook")
	rcv.secret.Store(hook["secret"].(string))
	chHook := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/webhooks", id(channel)), admin, `{"url":"`+rcv.URL+`/channel"}`), 201, "channel webhook")

	m.want(m.call("DELETE", fmt.Sprintf("/api/channels/%d", id(channel)), admin, ""), 200, "delete channel")
	got := rcv.waitEvents(2)
	ids := map[int64]bool{}
	for _, g := range got {
		if g.event != webhook.EventReleaseDeleted || g.env.Release == nil || g.env.Release.ReleaseURL != "" || g.env.Channel.Key != "harbor-ios" {
			t.Errorf("after deleting the channel: %s", g.raw)
			continue
		}
		ids[g.env.Release.ID] = true
	}
	if !ids[id(first)] || !ids[id(second)] || len(got) != 2 {
		t.Errorf("release.deleted for %v, want %d and %d", ids, id(first), id(second))
	}
	m.want(m.call("GET", fmt.Sprintf("/api/webhooks/%d", id(chHook)), admin, ""), 404, "the channel's webhook after its channel")
	m.want(m.call("DELETE", fmt.Sprintf("/api/schemes/%d", id(beta)), admin, ""), 200, "delete scheme")
	got = rcv.waitEvents(3)
	if len(got) != 3 || got[2].env.Release == nil || got[2].env.Release.ID != id(third) {
		t.Errorf("after deleting the scheme: %d events, last %s", len(got), got[len(got)-1].raw)
	}
	// A scheme with nothing the app's webhooks could hear of deletes without events.
	m.want(m.call("DELETE", fmt.Sprintf("/api/schemes/%d", id(scheme)), admin, ""), 200, "delete the empty scheme")
	time.Sleep(200 * time.Millisecond)
	if n := len(rcv.events()); n != 3 {
		t.Errorf("%d events after deleting an empty scheme", n)
	}
}

// TestWebhookRobotSecret: a DingTalk robot that requires signatures gets every message signed with
// its secret (timestamp and sign in the URL); the secret is never shown back, is refused for
// formats without robot signatures, and goes when the format changes to one.
func TestWebhookRobotSecret(t *testing.T) {
	m := webhookEnv(t, true)
	admin := m.e.AdminToken
	_, _, channel, _ := m.fixture()
	const secret = "SEC5a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1"
	got := make(chan url.Values, 4)
	robot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Query()
		w.WriteHeader(http.StatusOK)
	}))
	defer robot.Close()
	hooks := fmt.Sprintf("/api/channels/%d/webhooks", id(channel))
	m.want(m.call("POST", hooks, admin, `{"url":"`+robot.URL+`/robot/send?access_token=T","format":"slack","robot_secret":"`+secret+`"}`), 422, "robot secret for slack")
	m.want(m.call("POST", hooks, admin, `{"url":"`+robot.URL+`/robot/send?access_token=T","format":"dingtalk","robot_secret":"a\nb"}`), 422, "two-line robot secret")
	made := m.call("POST", hooks, admin, `{"url":"`+robot.URL+`/robot/send?access_token=T","format":"dingtalk","robot_secret":"`+secret+`"}`)
	hook := m.want(made, 201, "dingtalk webhook")
	if hook["robot_secret_set"] != true || strings.Contains(string(made.Body), secret) {
		t.Errorf("made: %s", made.Body)
	}
	shown := m.call("GET", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, "")
	if strings.Contains(string(shown.Body), secret) || shown.Map(t)["robot_secret_set"] != true {
		t.Errorf("shown: %s", shown.Body)
	}
	m.e.UploadApp(t, "h.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.1", Build: "2"}),
		apptest.Field("channel_key", "harbor-ios"))
	select {
	case q := <-got:
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(q.Get("timestamp") + "\n" + secret))
		ms, _ := strconv.ParseInt(q.Get("timestamp"), 10, 64)
		if q.Get("access_token") != "T" || q.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)) ||
			time.Since(time.UnixMilli(ms)).Abs() > time.Hour {
			t.Errorf("the robot's query %v", q)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the robot got nothing")
	}
	// A format without robot signatures keeps no robot secret.
	if w := m.want(m.call("PATCH", fmt.Sprintf("/api/webhooks/%d", id(hook)), admin, `{"format":"slack"}`), 200, "to slack"); w["robot_secret_set"] != false {
		t.Errorf("after changing to slack: %v", w)
	}
}
