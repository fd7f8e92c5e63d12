package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func sampleEnvelope(event string) *Envelope {
	return &Envelope{ID: "evt_1", Event: event, CreatedAt: time.Unix(1700000000, 0).UTC(),
		App:     &AppRef{ID: 1, Name: "Demo"},
		Channel: &ChannelRef{ID: 2, Name: "Beta", Key: "beta", SchemeName: "Adhoc", DeviceType: "ios"},
		Release: &ReleaseInfo{ID: 3, Version: 4, Name: "Demo", BundleID: "com.example.demo", ReleaseVersion: "1.2.0", BuildVersion: "45",
			Branch: "main", Changelog: []string{"Fix login"}, Size: 1234, ReleaseURL: "https://slipway.example/channels/beta/releases/3"},
		Downloads: 3}
}

func TestRenderEveryFormat(t *testing.T) {
	keys := map[string][]string{
		FormatSlipway: {"id", "event", "created_at", "app", "channel", "release"}, FormatSlack: {"text"},
		FormatTeams: {"@type", "@context", "summary", "title", "text"}, FormatDiscord: {"content"},
		FormatDingTalk: {"msgtype", "markdown"}, FormatFeishu: {"msg_type", "content"}, FormatWeCom: {"msgtype", "markdown"},
	}
	for _, format := range Formats {
		for _, event := range append(Events, EventPing) {
			body, err := Render(format, sampleEnvelope(event))
			if err != nil {
				t.Fatalf("%s %s: %v", format, event, err)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%s %s: not JSON: %s", format, event, body)
			}
			for _, k := range keys[format] {
				if _, ok := m[k]; !ok {
					t.Errorf("%s %s: no %q in %s", format, event, k, body)
				}
			}
			if format != FormatSlipway && event == EventReleaseCreated && !strings.Contains(string(body), "1.2.0 (45)") {
				t.Errorf("%s: the message does not name the version: %s", format, body)
			}
		}
	}
	var dt struct {
		Markdown struct{ Title, Text string }
	}
	b, _ := Render(FormatDingTalk, sampleEnvelope(EventReleaseCreated))
	_ = json.Unmarshal(b, &dt)
	if dt.Markdown.Title == "" || !strings.Contains(dt.Markdown.Text, "Fix login") {
		t.Errorf("dingtalk markdown: %s", b)
	}
	if _, err := Render("telegram", sampleEnvelope(EventPing)); err == nil {
		t.Error("an unknown format rendered")
	}
}

func TestDiscordTruncates(t *testing.T) {
	env := sampleEnvelope(EventReleaseCreated)
	env.Release.Changelog = []string{strings.Repeat("日本語", 1000)}
	b, err := Render(FormatDiscord, env)
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Content string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(m.Content); n != discordLimit || !utf8.ValidString(m.Content) || !strings.HasSuffix(m.Content, "…") {
		t.Errorf("content has %d characters (want %d, valid UTF-8, ending with an ellipsis)", n, discordLimit)
	}
}

func TestSignVerify(t *testing.T) {
	secret := []byte("whsec_test")
	now := time.Unix(1700000000, 0)
	body := []byte(`{"event":"ping"}`)
	h := Sign(secret, now, body)
	if !strings.HasPrefix(h, "t=1700000000,v1=") {
		t.Fatalf("header %q", h)
	}
	if err := Verify(secret, h, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("valid signature refused: %v", err)
	}
	for name, f := range map[string]func() error{
		"tampered body": func() error { return Verify(secret, h, []byte(`{"event":"pong"}`), now, time.Minute) },
		"other secret":  func() error { return Verify([]byte("x"), h, body, now, time.Minute) },
		"replayed late": func() error { return Verify(secret, h, body, now.Add(time.Hour), 5*time.Minute) },
		"malformed":     func() error { return Verify(secret, "garbage", body, now, time.Minute) },
		"no v1":         func() error { return Verify(secret, "t=1700000000", body, now, time.Minute) },
	} {
		if f() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s1, _ := NewSecret()
	s2, _ := NewSecret()
	if s1 == s2 || !strings.HasPrefix(s1, "whsec_") || len(s1) < 40 {
		t.Errorf("secrets %q %q", s1, s2)
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	refused := []string{"ftp://example.com/x", "http://", "/relative", "https://user:pw@example.com/", "https://example.com/#frag",
		"http://127.0.0.1/", "http://[::1]:8080/", "http://10.1.2.3/", "http://172.16.0.1/", "http://192.168.1.1/",
		"http://169.254.169.254/latest/meta-data", "http://[::ffff:127.0.0.1]/", "http://100.64.0.1/", "http://0.0.0.0/",
		"http://[fe80::1]/", "http://[fc00::1]/", "http://224.0.0.1/", "https://example.com:99999/",
		"https://example.com/" + strings.Repeat("a", 2100)}
	for _, u := range refused {
		err := CheckURL(ctx, u, false, nil)
		if err == nil {
			t.Errorf("%s accepted", u)
			continue
		}
		if _, ok := err.(*URLError); !ok {
			t.Errorf("%s: %T, want *URLError", u, err)
		}
	}
	if err := CheckURL(ctx, "https://93.184.215.14/hook?token=x", false, nil); err != nil {
		t.Errorf("a public address refused: %v", err)
	}
	if err := CheckURL(ctx, "http://127.0.0.1:9000/hook", true, nil); err != nil {
		t.Errorf("loopback refused although allowed: %v", err)
	}
	if err := CheckURL(ctx, "http://localhost/hook", false, nil); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("localhost: %v", err)
	}
	if err := CheckURL(ctx, "https://no-such-host.invalid/hook", true, nil); err == nil || !strings.Contains(err.Error(), "cannot be resolved") {
		t.Errorf("unresolvable host: %v", err)
	}
	if _, bad := Disallowed(netip.MustParseAddr("8.8.8.8")); bad {
		t.Error("8.8.8.8 disallowed")
	}
}

func TestClientRefusesPrivateAtDialTime(t *testing.T) {
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	ctx := context.Background()
	env := sampleEnvelope(EventReleaseCreated)
	now := time.Now()

	res, err := Send(ctx, NewClient(false, 5*time.Second), srv.URL+"/hook?access_token=SECRET", FormatSlipway, "s3cret", "", "42", env, now)
	if err == nil || res.StatusCode != 0 {
		t.Fatalf("the guarded client reached loopback: %+v", res)
	}
	if strings.Contains(res.Error, "SECRET") || strings.Contains(res.Error, "/hook") || !strings.Contains(res.Error, "SLIPWAY_WEBHOOK_ALLOW_PRIVATE") {
		t.Errorf("error %q (must name the host only and say how to allow it)", res.Error)
	}

	open := NewClient(true, 5*time.Second)
	res, err = Send(ctx, open, srv.URL+"/hook?access_token=SECRET", FormatSlipway, "s3cret", "", "42", env, now)
	if err != nil || res.StatusCode != http.StatusNoContent {
		t.Fatalf("send: %+v %v", res, err)
	}
	if got.Header.Get(EventHeader) != EventReleaseCreated || got.Header.Get(DeliveryHeader) != "42" || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got.Header)
	}
	if err := Verify([]byte("s3cret"), got.Header.Get(SignatureHeader), body, time.Now(), time.Minute); err != nil {
		t.Errorf("the receiver cannot verify the signature: %v", err)
	}
	var e Envelope
	if err := json.Unmarshal(body, &e); err != nil || e.Release.ReleaseVersion != "1.2.0" {
		t.Errorf("body %s", body)
	}

	res, err = Send(ctx, open, srv.URL+"/redirect", FormatSlack, "s", "", "43", env, now)
	if err == nil || res.StatusCode != http.StatusFound {
		t.Errorf("a redirect counts as delivered or was followed: %+v", res)
	}
	res, err = Send(ctx, open, srv.URL+"/fail?token=SECRET", FormatSlack, "s", "", "44", env, now)
	if err == nil || res.StatusCode != 500 || strings.Contains(res.Error, "SECRET") {
		t.Errorf("a 500: %+v %v", res, err)
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("t=1,v1=00", []byte("x"))
	f.Add("t=,v1", []byte{})
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		_ = Verify([]byte("k"), header, body, time.Unix(1, 0), time.Minute)
	})
}

func FuzzParseURL(f *testing.F) {
	f.Add("https://example.com/hook")
	f.Add("http://[::1]:99999/")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseURL(raw)
		if err == nil && (u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil) {
			t.Errorf("%q accepted", raw)
		}
	})
}
