package mailer_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/mailer"
	smtpmail "github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// replica is one "replica" of the service: its own pool on the shared database and its own
// Sender, as two serve processes have.
type replica struct {
	db      *postgres.DB
	sender  *mailer.Sender
	metrics *metrics.Metrics
	logs    *testkit.LockedBuffer
	cancel  context.CancelFunc
	done    chan struct{}
}

func newReplica(t *testing.T, url string, relay mailer.Relay, cfg mailer.Config) *replica {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	r := &replica{db: db, metrics: metrics.New(), logs: &testkit.LockedBuffer{}}
	r.sender = mailer.NewSender(db, relay, cfg, r.metrics, slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return r
}

// start runs the replica's Sender until stop.
func (r *replica) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func() {
		defer close(r.done)
		_ = r.sender.Run(ctx)
	}()
}

// stop ends the Sender's context, as SIGTERM does, and waits for Run to return.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
}

func relayFor(t *testing.T, srv *mailpit.Server) *smtpmail.Client {
	t.Helper()
	r, err := smtpmail.ParseURL(srv.SMTPURL())
	if err != nil {
		t.Fatal(err)
	}
	from, _ := mail.ParseAddress("Slipway <builds@slipway.example>")
	c, err := smtpmail.New(smtpmail.Options{Relay: r, Password: "relay-password", From: from, RootCAs: srv.CertPool(t), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mails(n int, prefix string) []distribution.OutgoingMail {
	out := make([]distribution.OutgoingMail, n)
	for i := range out {
		out[i] = distribution.OutgoingMail{ID: fmt.Sprintf("%s%03d", prefix, i), Kind: distribution.MailNewBuild,
			To: fmt.Sprintf("tester%d@testers.example", i), Subject: fmt.Sprintf("Build %d", i),
			Text: "https://apps.example.com/t/secret-link-" + prefix, HTML: "<p>new build</p>",
			Headers: map[string]string{"List-Unsubscribe": "<https://apps.example.com/u/x>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}}
	}
	return out
}

// exactlyOnce checks that each mail arrived once and nothing else did.
func exactlyOnce(t *testing.T, srv *mailpit.Server, want []distribution.OutgoingMail) {
	t.Helper()
	got := map[string]int{}
	for _, m := range srv.Messages(t) {
		got[m.MessageID]++
	}
	for _, m := range want {
		id := m.ID + "@slipway.example"
		if got[id] != 1 {
			t.Errorf("%s arrived %d times", id, got[id])
		}
		delete(got, id)
	}
	for id, n := range got {
		t.Errorf("%s arrived %d times and was never queued", id, n)
	}
}

func counts(t *testing.T, db *postgres.DB) distribution.MailCounts {
	t.Helper()
	c, err := db.MailCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fast is a config for tests: quick polls and retries, no give-up in sight.
var fast = mailer.Config{Poll: 20 * time.Millisecond, RetryBase: 10 * time.Millisecond, MaxAttempts: 1000, Rate: 500, SendTimeout: time.Minute}

// TestOutboxSurvivesARefusingRelay is the outbox test: the relay (Mailpit over implicit TLS, with
// a password) refuses every mail for a while, then accepts; two replicas send at once; every mail
// arrives exactly once and nothing is left behind.
func TestOutboxSurvivesARefusingRelay(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.ImplicitTLS, User: "slipway", Password: "relay-password", Chaos: true})
	url := testenv.DatabaseURL(t)
	a, b := newReplica(t, url, relayFor(t, srv), fast), newReplica(t, url, relayFor(t, srv), fast)
	want := mails(40, "refused")
	srv.Refuse(t, 451)
	if err := a.db.EnqueueMail(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	a.start()
	b.start()
	a.sender.Wake()
	// The relay refuses for a while: until every mail was refused at least twice.
	testkit.Eventually(t, 2*time.Minute, "every mail refused twice", func() bool {
		var n int
		_ = a.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM mail_outbox WHERE attempts >= 2 AND state IN ('pending', 'sending')`).Scan(&n)
		return n == len(want)
	})
	if n := len(srv.Messages(t)); n != 0 {
		t.Fatalf("%d mails arrived while the relay refused", n)
	}
	srv.Accept(t)
	testkit.Eventually(t, 2*time.Minute, "the outbox empties", func() bool { return counts(t, a.db).Pending == 0 })
	a.stop(t)
	b.stop(t)
	exactlyOnce(t, srv, want)
	if c := counts(t, a.db); c.Failed != 0 {
		t.Errorf("%d mails failed", c.Failed)
	}
	// Both replicas took part, and retried.
	for name, r := range map[string]*replica{"a": a, "b": b} {
		if retries := testutil.ToFloat64(r.metrics.MailAttempts.WithLabelValues("retry")); retries == 0 {
			t.Errorf("replica %s retried nothing", name)
		}
		sent := testutil.ToFloat64(r.metrics.MailAttempts.WithLabelValues("sent"))
		t.Logf("replica %s sent %v mails", name, sent)
		// Its logs name mails by id, kind and recipient domain only.
		logs := r.logs.String()
		for _, secret := range []string{"secret-link", "tester1@", "relay-password", "new build"} {
			if strings.Contains(logs, secret) {
				t.Errorf("replica %s's logs hold %q", name, secret)
			}
		}
		if !strings.Contains(logs, "recipient_domain=testers.example") {
			t.Errorf("replica %s's logs name no recipient domain:\n%s", name, logs)
		}
	}
	total := testutil.ToFloat64(a.metrics.MailAttempts.WithLabelValues("sent")) + testutil.ToFloat64(b.metrics.MailAttempts.WithLabelValues("sent"))
	if total != float64(len(want)) {
		t.Errorf("%v sends counted, want %d", total, len(want))
	}
}

// gate is a relay that holds each send until it is opened, so a test can stop a Sender while
// sends are in flight.
type gate struct {
	relay   mailer.Relay
	started atomic.Int32
	open    chan struct{}
}

func (g *gate) Send(ctx context.Context, m smtpmail.Message) error {
	g.started.Add(1)
	<-g.open
	return g.relay.Send(ctx, m)
}

// TestStopMidSendLosesNoneDoublesNone: a stop (the context's end, as SIGTERM) while sends are in
// flight lets them finish and records them before Run returns; what was leased but not begun is
// given back uncounted; the next replicas send the rest; every mail arrives exactly once.
func TestStopMidSendLosesNoneDoublesNone(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.RequireSTARTTLS, User: "slipway", Password: "relay-password"})
	url := testenv.DatabaseURL(t)
	g := &gate{relay: relayFor(t, srv), open: make(chan struct{})}
	// One message a second: the first send of a lease goes at once, the others of the lease
	// wait their turn, and the stop finds them waiting.
	slow := fast
	slow.Rate = 1
	a := newReplica(t, url, g, slow)
	want := mails(12, "stopped")
	if err := a.db.EnqueueMail(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	a.start()
	testkit.Eventually(t, time.Minute, "a send in flight", func() bool { return g.started.Load() >= 1 })
	a.cancel() // SIGTERM, mid-send
	select {
	case <-a.done:
		t.Fatal("Run returned while a send was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(g.open)
	a.stop(t)
	started := int(g.started.Load())
	var sent, pending, sending, uncounted int
	rows, err := a.db.Pool.Query(context.Background(), `SELECT state, attempts FROM mail_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		var attempts int
		if err := rows.Scan(&st, &attempts); err != nil {
			t.Fatal(err)
		}
		switch st {
		case "sent":
			sent++
		case "pending":
			pending++
			if attempts == 0 {
				uncounted++
			}
		case "sending":
			sending++
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	t.Logf("after the stop: %d sends begun; %d sent, %d pending (%d never attempted)", started, sent, pending, uncounted)
	if sent != started || sending != 0 || pending != len(want)-started || uncounted != pending {
		t.Fatalf("after the stop: %d sends begun; %d sent, %d sending, %d pending (%d never attempted)", started, sent, sending, pending, uncounted)
	}
	if got := len(srv.Messages(t)); got != started {
		t.Fatalf("%d mails arrived, %d sends begun", got, started)
	}

	// The next replicas, two at once, send the rest.
	b, c := newReplica(t, url, relayFor(t, srv), fast), newReplica(t, url, relayFor(t, srv), fast)
	b.start()
	c.start()
	testkit.Eventually(t, 2*time.Minute, "the outbox empties", func() bool { return counts(t, b.db).Pending == 0 })
	b.stop(t)
	c.stop(t)
	exactlyOnce(t, srv, want)
}

// TestGivingUp: temporary failures are retried up to MaxAttempts, permanent ones (5xx) up to
// PermanentAttempts, and a message that cannot be composed fails at its first attempt; then the
// mail is failed and counted so. Against a real relay, where the refusal is Mailpit's.
func TestGivingUp(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS, Chaos: true})
	r, _ := smtpmail.ParseURL(srv.URL("smtp+insecure"))
	from, _ := mail.ParseAddress("builds@slipway.example")
	client, err := smtpmail.New(smtpmail.Options{Relay: r, From: from, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		code     int
		mail     distribution.OutgoingMail
		attempts int
	}{
		{"temporary", 451, mails(1, "temp")[0], 5},
		{"permanent", 550, mails(1, "perm")[0], 2},
		{"invalid", 0, distribution.OutgoingMail{ID: "invalid", Kind: "x", To: "t@testers.example", Subject: "a\r\nBcc: x@y", Text: "x"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := testenv.DatabaseURL(t)
			cfg := fast
			cfg.MaxAttempts, cfg.PermanentAttempts = 5, 2
			rep := newReplica(t, url, client, cfg)
			if tc.code != 0 {
				srv.Refuse(t, tc.code)
			} else {
				srv.Accept(t)
			}
			if err := rep.db.EnqueueMail(context.Background(), []distribution.OutgoingMail{tc.mail}); err != nil {
				t.Fatal(err)
			}
			rep.start()
			testkit.Eventually(t, time.Minute, "the mail fails", func() bool { return counts(t, rep.db).Failed == 1 })
			rep.stop(t)
			var attempts int
			var lastError string
			if err := rep.db.Pool.QueryRow(context.Background(), `SELECT attempts, last_error FROM mail_outbox`).Scan(&attempts, &lastError); err != nil {
				t.Fatal(err)
			}
			if attempts != tc.attempts || lastError == "" {
				t.Errorf("failed after %d attempts (%q), want %d", attempts, lastError, tc.attempts)
			}
			if got := testutil.ToFloat64(rep.metrics.MailAttempts.WithLabelValues("failed")); got != 1 {
				t.Errorf("failed counted %v times", got)
			}
			if got := testutil.ToFloat64(rep.metrics.MailAttempts.WithLabelValues("retry")); got != float64(tc.attempts-1) {
				t.Errorf("retries counted %v, want %d", got, tc.attempts-1)
			}
		})
	}
	srv.Accept(t)
	if n := len(srv.Messages(t)); n != 0 {
		t.Errorf("%d messages arrived", n)
	}
}

// TestMailOff: without a relay the Sender's Run returns at once and On is false; mail waits.
func TestMailOff(t *testing.T) {
	s := mailer.NewSender(nil, nil, mailer.Config{}, nil, nil)
	if s.On() {
		t.Error("a Sender without a relay is on")
	}
	done := make(chan struct{})
	go func() { _ = s.Run(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run without a relay did not return")
	}
	s.Wake() // never blocks
	s.Wake()
	var nilSender *mailer.Sender
	nilSender.Wake()
}

// TestNoSTARTTLSKeepsMailPending: an smtp:// relay that does not offer STARTTLS gets no mail; the
// mail stays pending (retried, with the reason recorded), and arrives once the relay speaks TLS.
func TestNoSTARTTLSKeepsMailPending(t *testing.T) {
	plain := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	url := testenv.DatabaseURL(t)
	r, _ := smtpmail.ParseURL(plain.URL("smtp")) // STARTTLS required
	from, _ := mail.ParseAddress("builds@slipway.example")
	client, _ := smtpmail.New(smtpmail.Options{Relay: r, From: from, Timeout: 10 * time.Second})
	rep := newReplica(t, url, client, fast)
	want := mails(3, "nostarttls")
	if err := rep.db.EnqueueMail(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	rep.start()
	testkit.Eventually(t, time.Minute, "every mail refused twice", func() bool {
		var n int
		_ = rep.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM mail_outbox WHERE attempts >= 2 AND last_error LIKE '%STARTTLS%'`).Scan(&n)
		return n == len(want)
	})
	rep.stop(t)
	if c := counts(t, rep.db); c.Pending != int64(len(want)) || c.Failed != 0 {
		t.Errorf("counts %+v, want every mail pending", c)
	}
	if n := len(plain.Messages(t)); n != 0 {
		t.Fatalf("%d mails went out without TLS", n)
	}
	// The relay with TLS (a new one at the same outbox): every mail arrives, once.
	tlsSrv := mailpit.Start(t, mailpit.Options{TLS: mailpit.RequireSTARTTLS, User: "slipway", Password: "relay-password"})
	next := newReplica(t, url, relayFor(t, tlsSrv), fast)
	next.start()
	testkit.Eventually(t, time.Minute, "the outbox empties", func() bool { return counts(t, next.db).Pending == 0 })
	next.stop(t)
	exactlyOnce(t, tlsSrv, want)
}

// flakyStore fails the first records of outcomes, as a database blip does.
type flakyStore struct {
	mailer.Store
	failures atomic.Int32
}

func (f *flakyStore) FinishMail(ctx context.Context, id string, attempt int, fin distribution.MailFinish) (bool, error) {
	if f.failures.Add(-1) >= 0 {
		return false, fmt.Errorf("the database is unavailable")
	}
	return f.Store.FinishMail(ctx, id, attempt, fin)
}

// TestRecordSurvivesABlip: a send whose record fails a few times (the database blips) is recorded
// when it answers again, not left leased to be sent a second time.
func TestRecordSurvivesABlip(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	url := testenv.DatabaseURL(t)
	r, _ := smtpmail.ParseURL(srv.URL("smtp+insecure"))
	from, _ := mail.ParseAddress("builds@slipway.example")
	client, _ := smtpmail.New(smtpmail.Options{Relay: r, From: from})
	rep := newReplica(t, url, client, fast)
	flaky := &flakyStore{Store: rep.db}
	flaky.failures.Store(3)
	rep.sender.Store = flaky
	want := mails(1, "blip")
	if err := rep.db.EnqueueMail(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	rep.start()
	testkit.Eventually(t, time.Minute, "the mail recorded sent", func() bool { return counts(t, rep.db).Pending == 0 })
	rep.stop(t)
	exactlyOnce(t, srv, want)
	var attempts int
	_ = rep.db.Pool.QueryRow(context.Background(), `SELECT attempts FROM mail_outbox`).Scan(&attempts)
	if attempts != 1 {
		t.Errorf("%d attempts, want 1", attempts)
	}
}
