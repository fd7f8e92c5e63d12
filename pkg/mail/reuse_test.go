package mail_test

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testkit"
)

// cuttingProxy forwards TCP to a relay, counts the connections it accepted, and can cut every
// open one (as a relay that drops idle clients does).
type cuttingProxy struct {
	addr     string
	accepted atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

func newCuttingProxy(t *testing.T, target string) *cuttingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &cuttingProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *cuttingProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestSessionsAreKept: messages one after another share one connection; when the relay drops it
// meanwhile, the next message goes on a new one; every message arrives once.
func TestSessionsAreKept(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS, User: "relayuser", Password: "pw-1234"})
	p := newCuttingProxy(t, srv.SMTPAddr)
	c := client(t, srv, "smtp+insecure://relayuser@127.0.0.1:"+p.addr[len("127.0.0.1:"):], "pw-1234")
	ctx := context.Background()
	for _, id := range []string{"keep1", "keep2", "keep3"} {
		if err := c.Send(ctx, message(id, "tester@example.com")); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.accepted.Load(); n != 1 {
		t.Errorf("3 messages used %d connections, want 1", n)
	}
	p.cut()
	if err := c.Send(ctx, message("keep4", "tester@example.com")); err != nil {
		t.Fatalf("after the relay dropped the kept connection: %v", err)
	}
	if n := p.accepted.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	// Side by side, each Send has its own session.
	var wg sync.WaitGroup
	for _, id := range []string{"par1", "par2", "par3", "par4"} {
		wg.Go(func() {
			if err := c.Send(ctx, message(id, "tester@example.com")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := mail.IdleSessions(c); n < 1 || n > 4 {
		t.Errorf("%d sessions kept after 4 sends side by side", n)
	}
	// Unused, they end by themselves.
	mail.SetIdleFor(c, 50*time.Millisecond)
	if err := c.Send(ctx, message("last", "tester@example.com")); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, time.Minute, "the kept sessions to end", func() bool { return mail.IdleSessions(c) == 0 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := srv.WaitFor(t, "tester@example.com", 9)
	seen := map[string]int{}
	for _, m := range got {
		seen[m.MessageID]++
	}
	for _, id := range []string{"keep1", "keep2", "keep3", "keep4", "par1", "par2", "par3", "par4", "last"} {
		if seen[id+"@slipway.example"] != 1 {
			t.Errorf("%s arrived %d times", id, seen[id+"@slipway.example"])
		}
	}
	if len(got) != 9 {
		t.Errorf("%d messages, want 9", len(got))
	}
}
