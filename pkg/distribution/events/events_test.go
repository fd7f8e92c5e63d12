package events

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/background/backgroundtest"
	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/webhook"
	"github.com/slipwayhq/slipway/test/testkit"
)

// outbox is the webhook outbox in memory: due deliveries are leased once each.
type outbox struct {
	mu       sync.Mutex
	due      []DueDelivery
	leases   int
	finished map[int64]string // delivery id → state recorded
	attempts map[int64]WebhookAttempt
	leased   chan struct{} // gets a value at every lease that found something
}

func newOutbox(due ...DueDelivery) *outbox {
	return &outbox{due: due, finished: map[int64]string{}, attempts: map[int64]WebhookAttempt{}, leased: make(chan struct{}, 100)}
}

func (o *outbox) LeaseDeliveries(_ context.Context, limit int, _ time.Duration) ([]DueDelivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leases++
	n := min(limit, len(o.due))
	out := append([]DueDelivery(nil), o.due[:n]...)
	o.due = o.due[n:]
	for i := range out {
		out[i].Attempts++
	}
	if n > 0 {
		o.leased <- struct{}{}
	}
	return out, nil
}

func (o *outbox) FinishAttempt(_ context.Context, id int64, a WebhookAttempt, state string, _ time.Time) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.finished[id], o.attempts[id] = state, a
	return nil
}

func (o *outbox) result(id int64) (string, WebhookAttempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.finished[id], o.attempts[id]
}

func delivery(id int64, url string, attempts int) DueDelivery {
	payload, _ := json.Marshal(webhook.Envelope{ID: "evt_1", Event: webhook.EventReleaseCreated})
	return DueDelivery{WebhookDelivery: WebhookDelivery{ID: id, WebhookID: 1, EventID: "evt_1", Event: webhook.EventReleaseCreated,
		Payload: payload, Attempts: attempts}, URL: url, Format: webhook.FormatSlipway, Secret: "s"}
}

func newTestSender(st OutboxStore, cfg SenderConfig) *Sender {
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return NewSender(st, webhook.NewClient(true, cfg.Timeout), cfg, nil, slog.New(slog.DiscardHandler))
}

// The sender stops when its context ends, and leases nothing after.
func TestSenderStopsWhenItsContextEnds(t *testing.T) {
	st := newOutbox()
	stop := backgroundtest.Run(t, newTestSender(st, SenderConfig{Poll: 5 * time.Millisecond, MaxAttempts: 3}))
	time.Sleep(30 * time.Millisecond)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	leases := st.leases
	st.mu.Unlock()
	time.Sleep(30 * time.Millisecond)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.leases != leases {
		t.Fatal("the sender leased deliveries after it stopped")
	}
}

// A delivery in flight when the sender is stopped is not cut: Run returns once the receiver has
// answered and the attempt is recorded as delivered.
func TestSenderFinishesTheAttemptInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	st := newOutbox(delivery(1, rcv.URL, 0))
	stop := backgroundtest.Run(t, newTestSender(st, SenderConfig{Poll: time.Hour, MaxAttempts: 3}))
	<-arrived
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case <-stopped:
		t.Fatal("the sender returned with an attempt in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if state, a := st.result(1); state != DeliveryDelivered || a.StatusCode != http.StatusNoContent {
		t.Fatalf("the attempt in flight at the stop: state %q, attempt %+v", state, a)
	}
}

// A failed attempt is retried later; the last allowed one fails the delivery for good.
func TestSenderRetriesThenGivesUp(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer rcv.Close()
	st := newOutbox(delivery(1, rcv.URL, 0), delivery(2, rcv.URL, 2))
	s := newTestSender(st, SenderConfig{Poll: time.Hour, MaxAttempts: 3, RetryBase: time.Second})
	stop := backgroundtest.Run(t, s)
	<-st.leased
	testkit.Eventually(t, 30*time.Second, "both attempts to be recorded", func() bool {
		s1, _ := st.result(1)
		s2, _ := st.result(2)
		return s1 != "" && s2 != ""
	})
	if s1, _ := st.result(1); s1 != DeliveryPending {
		t.Fatalf("first attempt: %q, want %q", s1, DeliveryPending)
	}
	if s2, _ := st.result(2); s2 != DeliveryFailed {
		t.Fatalf("third attempt: %q, want %q", s2, DeliveryFailed)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s.retryDelay(1) != time.Second || s.retryDelay(3) != 4*time.Second || s.retryDelay(40) != maxRetryDelay {
		t.Fatalf("retry delays %v %v %v", s.retryDelay(1), s.retryDelay(3), s.retryDelay(40))
	}
}

// Wake makes a sender that polls once an hour look at once; it never blocks, running or not.
func TestWakeLooksAtOnce(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))
	defer rcv.Close()
	st := newOutbox()
	s := newTestSender(st, SenderConfig{Poll: time.Hour, MaxAttempts: 3})
	s.Wake()
	s.Wake() // a second ring while one waits is dropped, not blocked on
	stop := backgroundtest.Run(t, s)
	defer stop()
	time.Sleep(20 * time.Millisecond)
	st.mu.Lock()
	st.due = append(st.due, delivery(1, rcv.URL, 0))
	st.mu.Unlock()
	s.Wake()
	select {
	case <-st.leased:
	case <-time.After(5 * time.Second):
		t.Fatal("a wake-up did not make the sender look")
	}
}

// counts records what the counter wrote; it fails while fail is set.
type counts struct {
	mu      sync.Mutex
	written map[int64]int64
	events  int
	fail    bool
}

func (c *counts) AddDownloads(_ context.Context, n map[int64]int64, emit func(rc *ReleaseContext, n int64) ([]Event, error)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail {
		return errors.New("database is down")
	}
	for id, k := range n {
		c.written[id] += k
		evs, err := emit(&ReleaseContext{Release: Release{ID: id}}, k)
		if err != nil {
			return err
		}
		c.events += len(evs)
	}
	return nil
}

// The counter writes what it counted when it stops: the last requests' downloads are not lost.
func TestCounterFlushesWhenItStops(t *testing.T) {
	st := &counts{written: map[int64]int64{}}
	c := NewCounter(st, &Maker{}, time.Hour, nil, slog.New(slog.DiscardHandler))
	stop := backgroundtest.Run(t, c)
	for i := 0; i < 3; i++ {
		c.CountDownload(&Release{ID: 7, Platform: "ios"})
	}
	c.CountDownload(&Release{ID: 8, Platform: "android"})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if st.written[7] != 3 || st.written[8] != 1 || st.events != 2 {
		t.Fatalf("written %v with %d events", st.written, st.events)
	}
}

// Counts a flush could not write are kept for the next one.
func TestCounterKeepsWhatItCouldNotWrite(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &counts{written: map[int64]int64{}, fail: true}
	c := NewCounter(st, nil, time.Hour, nil, slog.New(slog.DiscardHandler))
	c.CountDownload(&Release{ID: 7})
	if err := c.Flush(ctx); err == nil {
		t.Fatal("a failed flush reported success")
	}
	c.CountDownload(&Release{ID: 7})
	st.fail = false
	if err := c.Flush(ctx); err != nil || st.written[7] != 2 {
		t.Fatalf("after the database came back: %v %v", st.written, err)
	}
}

// Events carry links to the release while it exists, none once it is deleted.
func TestReleaseEvents(t *testing.T) {
	m := &Maker{}
	m.Links.Base = "https://slipway.example"
	rc := &ReleaseContext{Release: Release{ID: 5, Platform: "ios", Changelog: []ChangelogEntry{{Message: "fix"}}}, Channel: Channel{ID: 2, Slug: "k"}, App: App{ID: 1}}
	for kind, links := range map[string]bool{webhook.EventReleaseCreated: true, webhook.EventReleaseDeleted: false} {
		evs, err := m.ReleaseEvents(kind, 0)(rc)
		if err != nil || len(evs) != 1 || evs[0].Kind != kind || evs[0].AppID != 1 || evs[0].ChannelID != 2 {
			t.Fatalf("%s: %+v %v", kind, evs, err)
		}
		var env webhook.Envelope
		if err := json.Unmarshal(evs[0].Payload, &env); err != nil {
			t.Fatal(err)
		}
		if (env.Release.ReleaseURL != "") != links || env.Release.Changelog[0] != "fix" || env.ID != evs[0].ID {
			t.Errorf("%s: %+v", kind, env.Release)
		}
	}
}

// hooks keeps the webhooks made; every other method panics.
type hooks struct {
	WebhookStore
	made []*Webhook
}

func (h *hooks) CreateWebhook(_ context.Context, w *Webhook) (*Webhook, error) {
	h.made = append(h.made, w)
	return w, nil
}

// A webhook belongs to an app or a channel, points at a public address (unless private ones are
// allowed), and names known events and formats; a robot's secret only goes with the chat formats
// that sign with one.
func TestWebhookRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &hooks{}
	wh := &Webhooks{Store: st}
	s := func(v string) *string { return &v }
	for name, c := range map[string]struct {
		app, channel int64
		in           WebhookInput
	}{
		"no owner":        {0, 0, WebhookInput{URL: s("https://203.0.113.9/hook")}},
		"two owners":      {1, 2, WebhookInput{URL: s("https://203.0.113.9/hook")}},
		"no url":          {1, 0, WebhookInput{}},
		"loopback":        {1, 0, WebhookInput{URL: s("http://127.0.0.1/hook")}},
		"not http":        {1, 0, WebhookInput{URL: s("ftp://203.0.113.9/hook")}},
		"format":          {1, 0, WebhookInput{URL: s("https://203.0.113.9/hook"), Format: s("telex")}},
		"event":           {1, 0, WebhookInput{URL: s("https://203.0.113.9/hook"), Events: []string{"release.exploded"}}},
		"no event":        {1, 0, WebhookInput{URL: s("https://203.0.113.9/hook"), Events: []string{}}},
		"robot secret":    {1, 0, WebhookInput{URL: s("https://203.0.113.9/hook"), RobotSecret: s("x")}},
		"two-line secret": {1, 0, WebhookInput{URL: s("https://203.0.113.9/hook"), Format: s("dingtalk"), RobotSecret: s("a\nb")}},
	} {
		if _, err := wh.CreateWebhook(ctx, c.app, c.channel, c.in); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(st.made) != 0 {
		t.Fatalf("refused webhooks were made: %+v", st.made)
	}
	w, err := wh.CreateWebhook(ctx, 0, 2, WebhookInput{URL: s(" https://203.0.113.9/hook "), Format: s("DingTalk"), RobotSecret: s("SEC1"),
		Events: []string{webhook.EventReleaseDeleted, webhook.EventReleaseCreated, webhook.EventReleaseCreated}})
	if err != nil || w.URL != "https://203.0.113.9/hook" || w.Format != "dingtalk" || w.Secret == "" || !w.Enabled ||
		len(w.Events) != 2 || w.Events[0] != webhook.EventReleaseCreated {
		t.Fatalf("create: %+v %v", w, err)
	}
	wh.AllowPrivate = true
	if _, err := wh.CreateWebhook(ctx, 1, 0, WebhookInput{URL: s("http://127.0.0.1:9/hook")}); err != nil {
		t.Fatalf("a private address where they are allowed: %v", err)
	}
}

// failingOutbox refuses every lease with err until healed.
type failingOutbox struct {
	*outbox
	mu     sync.Mutex
	err    error
	leases int
}

func (f *failingOutbox) LeaseDeliveries(ctx context.Context, limit int, d time.Duration) ([]DueDelivery, error) {
	f.mu.Lock()
	err := f.err
	f.leases++
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.outbox.LeaseDeliveries(ctx, limit, d)
}

// A database that stays read-only (a failover) fails every poll's lease: one warning, not one
// per poll, and one line when it works again.
func TestSenderLogsARepeatedLeaseFailureOnce(t *testing.T) {
	var logs testkit.LockedBuffer
	st := &failingOutbox{outbox: newOutbox(), err: errs.Wrap(errs.Unavailable, ErrReadOnly, "the database refuses writes (transaction_read_only is on)")}
	s := NewSender(st, webhook.NewClient(true, time.Second), SenderConfig{Poll: time.Millisecond, MaxAttempts: 3, Timeout: time.Second}, nil,
		slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	ctx := context.Background()
	for range 50 {
		s.deliverDue(ctx)
	}
	st.mu.Lock()
	st.err = nil
	st.mu.Unlock()
	s.deliverDue(ctx)
	s.deliverDue(ctx)
	out := logs.String()
	if n := strings.Count(out, "leasing webhook deliveries failed"); n != 1 {
		t.Errorf("%d warnings for 50 failed polls, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "works again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, out)
	}
	if st.leases != 52 {
		t.Errorf("%d leases, want every poll to try", st.leases)
	}
}
