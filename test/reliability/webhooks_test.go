package reliability

// Webhooks across three replicas: every event reaches each webhook once, signed, although the
// receiver answers 500 for a while and a replica is SIGKILLed between an event's commit and its
// delivery; retention run by every replica at once deletes each build once.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/webhook"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testkit"
)

// hookReceiver counts signed deliveries by delivery id, and answers 500 while failing is set.
type hookReceiver struct {
	*httptest.Server
	secret  atomic.Value // string
	failing atomic.Bool
	mu      sync.Mutex
	ok      map[string]int    // delivery id → 2xx answers given
	events  map[string]string // delivery id → event
	refused atomic.Int64      // 500s answered
	badSigs atomic.Int64
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{ok: map[string]int{}, events: map[string]string{}}
	r.secret.Store("")
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if r.failing.Load() {
			r.refused.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if webhook.Verify([]byte(r.secret.Load().(string)), req.Header.Get(webhook.SignatureHeader), body, time.Now(), 5*time.Minute) != nil {
			r.badSigs.Add(1)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var env webhook.Envelope
		_ = json.Unmarshal(body, &env)
		id := req.Header.Get(webhook.DeliveryHeader)
		r.mu.Lock()
		r.ok[id]++
		r.events[id] = env.Event
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) received() (map[string]int, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ok, ev := map[string]int{}, map[string]string{}
	for k, v := range r.ok {
		ok[k] = v
	}
	for k, v := range r.events {
		ev[k] = v
	}
	return ok, ev
}

var webhookServerEnv = []string{"SLIPWAY_WEBHOOK_ALLOW_PRIVATE=true", "SLIPWAY_WEBHOOK_POLL_INTERVAL=100ms",
	"SLIPWAY_WEBHOOK_RETRY_BASE=200ms", "SLIPWAY_WEBHOOK_MAX_ATTEMPTS=30", "SLIPWAY_WEBHOOK_TIMEOUT=3s",
	"SLIPWAY_DOWNLOAD_FLUSH_INTERVAL=100ms"}

func TestWebhooksAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{}, 3, webhookServerEnv...)
	rcv := newHookReceiver(t)
	auth := []string{"Content-Type", "application/json", "Authorization", "Token " + e.admin}
	upload := func(s *e2e.Server, build string) release {
		t.Helper()
		r, err := uploadApp(s, e.upload, ipa("com.example.hooks", build, 0))
		if err != nil {
			t.Fatal(err)
		}
		return decodeRelease(t, r)
	}

	// A channel (made by a first upload) with a webhook for every event.
	first := upload(e.server(0), "0")
	channelID := queryInt(t, e.db, `SELECT channel_id FROM releases WHERE id = $1`, first.ID)
	hook := call(t, http.MethodPost, fmt.Sprintf("%s/api/channels/%d/webhooks", e.server(1).URL, channelID),
		strings.NewReader(`{"url":"`+rcv.URL+`/hook"}`), auth...)
	if hook.Status != http.StatusCreated {
		t.Fatalf("create webhook: %s", hook)
	}
	rcv.secret.Store(hook.jsonField("secret"))

	// The receiver fails while events are made on every replica; the third replica is killed
	// right after its upload is committed, before any delivery can have succeeded.
	rcv.failing.Store(true)
	victim := e.server(2)
	var kept release
	for i := 1; i <= 5; i++ {
		kept = upload(e.server(i%2), fmt.Sprint(i))
	}
	upload(victim, "6")
	victim.Kill(t)
	del := call(t, http.MethodDelete, fmt.Sprintf("%s/api/releases/%d", e.server(1).URL, first.ID), nil, auth...)
	if del.Status != http.StatusOK {
		t.Fatalf("delete: %s", del)
	}
	for i := 0; i < 4; i++ {
		if d := call(t, http.MethodGet, fmt.Sprintf("%s/download/releases/%d", e.server(i%2).URL, kept.ID), nil); d.Status != http.StatusFound {
			t.Fatalf("download: %s", d)
		}
	}
	const events = 6 + 1 + 1 // uploads, the deletion, the downloads (one flush or more)
	testkit.Eventually(t, time.Minute, "every delivery to be attempted and refused", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM webhook_deliveries WHERE attempts > 0`) >= events
	})
	if rcv.refused.Load() == 0 {
		t.Fatal("the receiver refused nothing")
	}

	// The receiver recovers: every event arrives once, signed.
	rcv.failing.Store(false)
	testkit.Eventually(t, time.Minute, "every delivery to be delivered", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM webhook_deliveries WHERE state <> 'delivered'`) == 0
	})
	time.Sleep(time.Second) // a duplicate would arrive now
	ok, kinds := rcv.received()
	total := queryInt(t, e.db, `SELECT count(*) FROM webhook_deliveries`)
	if int64(len(ok)) != total || total < events {
		t.Errorf("the receiver got %d distinct events, the outbox holds %d (want at least %d)", len(ok), total, events)
	}
	count := map[string]int{}
	for id, n := range ok {
		// Delivery is at least once: an event is sent again only after an attempt the sender saw
		// no answer to (the receiver answered, but too late for the timeout on a starved machine).
		unanswered := queryInt(t, e.db, `SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
			WHERE d.event_id = $1 AND a.status_code = 0`, id)
		if int64(n) > 1+unanswered {
			t.Errorf("event %s (%s) was delivered %d times, after %d unanswered attempts", id, kinds[id], n, unanswered)
		}
		count[kinds[id]]++
	}
	if count[webhook.EventReleaseCreated] != 6 || count[webhook.EventReleaseDeleted] != 1 || count[webhook.EventReleaseDownloaded] < 1 {
		t.Errorf("events by kind %v, want 6 release.created, 1 release.deleted, release.downloaded", count)
	}
	if n := rcv.badSigs.Load(); n != 0 {
		t.Errorf("%d deliveries with a bad signature", n)
	}
	downloads := queryInt(t, e.db, `SELECT coalesce(sum(downloads), 0) FROM release_downloads`)
	if downloads != 4 {
		t.Errorf("%d downloads counted, want 4", downloads)
	}
	if logs := e.logs(); strings.Contains(logs, hook.jsonField("secret")) {
		t.Error("a replica logged the webhook secret")
	}
}

// Every replica enforcing retention at once deletes each build once, and gc leaves storage
// matching the database.
func TestRetentionAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{}, 3, "SLIPWAY_RETENTION_INTERVAL=200ms", "SLIPWAY_RETENTION_KEEP_BUILDS=2")
	for c := 0; c < 3; c++ {
		for i := 0; i < 5; i++ {
			pkg := appletest.BuildIPA(appletest.IPAOptions{AppName: fmt.Sprintf("Keep%d", c), BundleID: fmt.Sprintf("com.example.keep%d", c),
				Version: "1.0", Build: fmt.Sprint(i), Icons: []appletest.IconFile{{Name: "AppIcon60x60@2x.png", Size: 120}}})
			r, err := uploadApp(e.server(i), e.upload, pkg)
			if err != nil {
				t.Fatal(err)
			}
			decodeRelease(t, r)
		}
	}
	testkit.Eventually(t, time.Minute, "retention to keep two builds per channel", func() bool {
		return queryInt(t, e.db, `SELECT count(*) FROM releases`) == 6
	})
	time.Sleep(time.Second) // later runs must delete nothing more
	if n := queryInt(t, e.db, `SELECT count(*) FROM releases`); n != 6 {
		t.Errorf("%d releases left, want 6", n)
	}
	if n := queryInt(t, e.db, `SELECT count(*) FROM (SELECT channel_id FROM releases GROUP BY channel_id HAVING max(version) = 5 AND min(version) = 4 AND count(*) = 2) k`); n != 3 {
		t.Errorf("%d channels kept their two newest builds, want 3", n)
	}
	deleted := strings.Count(e.logs(), `"msg":"retention deleted a release"`)
	if deleted != 9 {
		t.Errorf("the replicas logged %d deletions, want 9 (each build once)", deleted)
	}
	checkConsistent(t, e)
}
