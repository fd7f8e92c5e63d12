package e2e_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// TestShutdownFinishesTheMailInFlight sends SIGTERM to the real server while it is handing a mail
// to the relay (a proxy in front of Mailpit holds the end of DATA), and checks that serve waits
// for that send, records it as sent and exits 0; that the mails it had leased but not begun are
// given back, never attempted; and that the next server sends them, each mail arriving once.
func TestShutdownFinishesTheMailInFlight(t *testing.T) {
	t.Parallel()
	relay := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	proxy := newHoldingSMTPProxy(t, relay.SMTPAddr)
	// One message every 20 s: the first leased mail goes at once, the others wait their turn.
	h := e2e.New(t, e2e.Options{Env: []string{"SLIPWAY_SMTP_URL=smtp+insecure://" + proxy.addr, "SLIPWAY_MAIL_FROM=Slipway <builds@slipway.example>",
		"SLIPWAY_MAIL_POLL_INTERVAL=100ms", "SLIPWAY_MAIL_RATE=0.05", "SLIPWAY_DRAIN_TIMEOUT=5s"}})
	s := h.Start(t)
	if !bytes.Contains([]byte(s.Logs()), []byte(`"mail":"smtp+insecure://`+proxy.addr+`"`)) {
		t.Errorf("serve's first line does not name the relay:\n%s", s.Logs())
	}
	ctx := context.Background()
	if _, err := h.DB(t).Exec(ctx, `INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, html_body, headers)
		SELECT 'shutdown' || i, 'new_build', 'tester' || i || '@testers.example', 'Build ' || i, 'text', '<p>html</p>',
		       '{"List-Unsubscribe": "<https://apps.example.com/u>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}'
		FROM generate_series(1, 3) i`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proxy.held:
	case <-time.After(e2e.WaitTimeout):
		t.Fatalf("no mail reached the relay:\n%s", s.Logs())
	}
	if err := s.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.WaitLog(t, `"component":"webhook delivery"`)
	select {
	case <-s.Done():
		t.Fatalf("the server exited with a mail in flight:\n%s", s.Logs())
	case <-time.After(500 * time.Millisecond):
	}
	proxy.release()
	if code := s.Wait(t); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, s.Logs())
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state = 'sent'`); n != 1 {
		t.Errorf("%d mails recorded sent after the stop, want the one in flight", n)
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state = 'pending' AND attempts = 0`); n != 2 {
		t.Errorf("%d mails given back unattempted, want 2", n)
	}
	if got := relay.Messages(t); len(got) != 1 {
		t.Errorf("%d mails arrived, want 1", len(got))
	}

	// The next server sends the rest; each mail arrives once.
	next := h.Start(t, "SLIPWAY_MAIL_RATE=10")
	testkit.Eventually(t, e2e.WaitTimeout, "the next server to send the rest", func() bool {
		return h.QueryInt(t, `SELECT count(*) FROM mail_outbox WHERE state <> 'sent'`) == 0
	})
	if code := next.Stop(t); code != 0 {
		t.Errorf("the next server's exit code: %d", code)
	}
	seen := map[string]int{}
	for _, m := range relay.Messages(t) {
		seen[m.MessageID]++
	}
	for _, id := range []string{"shutdown1", "shutdown2", "shutdown3"} {
		if seen[id+"@slipway.example"] != 1 {
			t.Errorf("%s arrived %d times", id, seen[id+"@slipway.example"])
		}
	}
	m := relay.Message(t, relay.Messages(t)[0].ID)
	if v := m.Headers["List-Unsubscribe-Post"]; len(v) != 1 || v[0] != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post %q", v)
	}
}

// holdingSMTPProxy forwards SMTP connections to a relay, holding the client's end of DATA (the
// line with a single dot) on the first connection until release: a send caught in flight.
type holdingSMTPProxy struct {
	addr     string
	held     chan struct{}
	released chan struct{}
	once     sync.Once
	first    sync.Once
}

func newHoldingSMTPProxy(t *testing.T, target string) *holdingSMTPProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingSMTPProxy{addr: ln.Addr().String(), held: make(chan struct{}), released: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); p.release() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c, target)
		}
	}()
	return p
}

func (p *holdingSMTPProxy) release() { p.once.Do(func() { close(p.released) }) }

func (p *holdingSMTPProxy) serve(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() { _, _ = io.Copy(client, server) }()
	var seen []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			seen = append(seen, buf[:n]...)
			if bytes.Contains(seen, []byte("\r\n.\r\n")) {
				hold := false
				p.first.Do(func() { hold = true })
				if hold {
					close(p.held)
					<-p.released
				}
				seen = seen[:0]
			} else if len(seen) > 4 {
				seen = seen[len(seen)-4:]
			}
			if _, werr := server.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
