package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// hmacBase64 is base64(HMAC-SHA256(key, msg)), written out here rather than taken from robot.go.
func hmacBase64(key, msg string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestRobotSignatures sends to a DingTalk and a Feishu robot that require signatures, and checks
// each message as the chat service does: DingTalk's timestamp (ms) and sign in the URL, next to
// the access token; Feishu's timestamp (s) and sign in the body, next to the message.
func TestRobotSignatures(t *testing.T) {
	var gotURL *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotURL = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	client := NewClient(true, 5*time.Second)
	now := time.UnixMilli(1700000000123)
	const secret = "SEC0123456789abcdef"

	if _, err := Send(context.Background(), client, srv.URL+"/robot/send?access_token=TOKEN", FormatDingTalk, "s", secret, "1", sampleEnvelope(EventReleaseCreated), now); err != nil {
		t.Fatal(err)
	}
	q := gotURL.URL.Query()
	if q.Get("access_token") != "TOKEN" || q.Get("timestamp") != "1700000000123" ||
		q.Get("sign") != hmacBase64(secret, "1700000000123\n"+secret) {
		t.Errorf("DingTalk query %v", q)
	}
	var ding map[string]any
	if err := json.Unmarshal(body, &ding); err != nil || ding["msgtype"] != "markdown" || ding["sign"] != nil {
		t.Errorf("DingTalk body %s", body)
	}

	if _, err := Send(context.Background(), client, srv.URL+"/open-apis/bot/v2/hook/abc", FormatFeishu, "s", secret, "2", sampleEnvelope(EventReleaseCreated), now); err != nil {
		t.Fatal(err)
	}
	var feishu map[string]any
	if err := json.Unmarshal(body, &feishu); err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	if feishu["timestamp"] != ts || feishu["sign"] != hmacBase64(ts+"\n"+secret, "") || feishu["msg_type"] != "text" || gotURL.URL.RawQuery != "" {
		t.Errorf("Feishu body %s, query %q", body, gotURL.URL.RawQuery)
	}

	// Without a robot secret, or for other formats, nothing is added.
	if _, err := Send(context.Background(), client, srv.URL+"/robot/send?access_token=TOKEN", FormatDingTalk, "s", "", "3", sampleEnvelope(EventReleaseCreated), now); err != nil {
		t.Fatal(err)
	}
	if q := gotURL.URL.Query(); q.Get("sign") != "" || q.Get("timestamp") != "" {
		t.Errorf("an unsigned DingTalk message has %v", q)
	}
	if _, err := Send(context.Background(), client, srv.URL+"/slack", FormatSlack, "s", secret, "4", sampleEnvelope(EventReleaseCreated), now); err != nil {
		t.Fatal(err)
	}
	var slack map[string]any
	if err := json.Unmarshal(body, &slack); err != nil || gotURL.URL.RawQuery != "" || slack["sign"] != nil || slack["timestamp"] != nil {
		t.Errorf("a Slack message was given a robot signature: %q %s", gotURL.URL.RawQuery, body)
	}
}
