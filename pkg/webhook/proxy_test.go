package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// testProxy is a real forward proxy, as small as it gets: CONNECT tunnels for https and
// absolute-form requests for http. It stands for the internet: every destination it is asked for
// is routed to the address routes gives it (the test's receivers on loopback), and it records
// what it was asked for.
type testProxy struct {
	URL    string
	routes map[string]string // destination host:port -> address it really connects to
	mu     sync.Mutex
	asked  []string // "CONNECT host:port" or "POST http://host/path"
}

func startProxy(t *testing.T, routes map[string]string) *testProxy {
	t.Helper()
	p := &testProxy{routes: routes}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *testProxy) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, s)
}

func (p *testProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asked...)
}

func (p *testProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.record("CONNECT " + r.Host)
		to, ok := p.routes[r.Host]
		if !ok {
			http.Error(w, "no route", http.StatusBadGateway)
			return
		}
		upstream, err := net.Dial("tcp", to)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			upstream.Close()
			return
		}
		_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		go func() { _, _ = io.Copy(upstream, buf); upstream.Close() }()
		_, _ = io.Copy(conn, upstream)
		conn.Close()
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "not a proxy request", http.StatusBadRequest)
		return
	}
	p.record(r.Method + " " + r.URL.Scheme + "://" + r.URL.Host + r.URL.Path)
	host := r.URL.Host
	if r.URL.Port() == "" {
		host += ":80"
	}
	to, ok := p.routes[host]
	if !ok {
		http.Error(w, "no route", http.StatusBadGateway)
		return
	}
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, "http://"+to+r.URL.RequestURI(), r.Body)
	out.Header = r.Header.Clone()
	out.Host = r.URL.Host
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// receiver counts the deliveries it gets and the Host they were sent to.
type receiver struct {
	n     atomic.Int64
	hosts sync.Map
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.n.Add(1)
	rc.hosts.Store(r.Host, true)
	w.WriteHeader(http.StatusNoContent)
}

// fakeDNS answers for the test's names; anything else does not resolve.
func fakeDNS(names map[string][]string) lookupFunc {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range names[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("no such host %s", host)
		}
		return out, nil
	}
}

// Webhooks go through the configured proxy (a private address: the operator's own, trusted), for
// http (absolute-form requests) and https (CONNECT); the SSRF check still applies to where they
// are going: a destination that is, or resolves to, a private, loopback or link-local address is
// refused before the proxy is asked anything, as is a request addressed to the proxy itself.
func TestClientThroughProxyChecksTheDestination(t *testing.T) {
	plain := &receiver{}
	rcv := httptest.NewServer(plain)
	defer rcv.Close()
	secure := &receiver{}
	tlsRcv := httptest.NewTLSServer(secure) // its certificate is for example.com
	defer tlsRcv.Close()
	px := startProxy(t, map[string]string{
		"example.com:80":  rcv.Listener.Addr().String(),
		"example.com:443": tlsRcv.Listener.Addr().String(),
		// Were the guard skipped, these would be delivered: the proxy routes them.
		"internal.example.com:80": rcv.Listener.Addr().String(),
		"rebind.example.com:80":   rcv.Listener.Addr().String(),
		"169.254.169.254:80":      rcv.Listener.Addr().String(),
		"10.1.2.3:443":            tlsRcv.Listener.Addr().String(),
	})
	dns := fakeDNS(map[string][]string{
		"example.com":          {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
		"internal.example.com": {"10.1.2.3"},
		"rebind.example.com":   {"93.184.215.14", "127.0.0.1"},
	})
	c := newClient(false, 5*time.Second, &httpproxy.Config{HTTPProxy: px.URL, HTTPSProxy: px.URL, NoProxy: "direct.example.com"}, dns)
	roots := x509.NewCertPool()
	roots.AddCert(tlsRcv.Certificate())
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}
	ctx := context.Background()
	env := sampleEnvelope(EventReleaseCreated)
	now := time.Now()

	// Allowed destinations, through the proxy.
	res, err := Send(ctx, c, "http://example.com/hook?access_token=SECRET", FormatSlipway, "s", "", "1", env, now)
	if err != nil || res.StatusCode != http.StatusNoContent || plain.n.Load() != 1 {
		t.Fatalf("http through the proxy: %+v %v (receiver got %d)", res, err, plain.n.Load())
	}
	res, err = Send(ctx, c, "https://example.com/hook?access_token=SECRET", FormatSlipway, "s", "", "2", env, now)
	if err != nil || res.StatusCode != http.StatusNoContent || secure.n.Load() != 1 {
		t.Fatalf("https through the proxy: %+v %v (receiver got %d)", res, err, secure.n.Load())
	}
	want := []string{"POST http://example.com/hook", "CONNECT example.com:443"}
	if got := px.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the proxy was asked %q, want %q", got, want)
	}

	// Refused destinations: the proxy is never asked.
	for _, target := range []string{
		"http://internal.example.com/hook",      // resolves to a private address
		"http://rebind.example.com/hook",        // one of its addresses is loopback
		"http://169.254.169.254/latest/meta",    // cloud metadata, by address
		"https://10.1.2.3/hook",                 // private, by address, over CONNECT
		"http://nowhere.example.com/hook",       // does not resolve: not handed to the proxy either
		px.URL + "/hook",                        // the proxy's own address, which is dialled unguarded
		"http://direct.example.com:9/hook",      // NO_PROXY: direct, and the dialer's guard applies
		"http://[::1]:" + portOf(rcv.URL) + "/", // loopback is never proxied: direct, guarded
	} {
		before := len(px.requests())
		res, err := Send(ctx, c, target, FormatSlipway, "s", "", "3", env, now)
		if err == nil || res.StatusCode != 0 {
			t.Errorf("%s was delivered through the proxy: %+v", target, res)
		}
		if got := px.requests(); len(got) != before {
			t.Errorf("%s: the proxy was asked %q", target, got[before:])
		}
	}
	if plain.n.Load() != 1 || secure.n.Load() != 1 {
		t.Errorf("receivers got %d and %d deliveries, want 1 each", plain.n.Load(), secure.n.Load())
	}
}

// NewClient reads HTTPS_PROXY, HTTP_PROXY and NO_PROXY from the environment.
func TestNewClientUsesProxyVariables(t *testing.T) {
	rc := &receiver{}
	rcv := httptest.NewServer(rc)
	defer rcv.Close()
	px := startProxy(t, map[string]string{"93.184.215.14:80": rcv.Listener.Addr().String()})
	for _, name := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD"} {
		t.Setenv(name, "")
	}
	t.Setenv("HTTP_PROXY", px.URL)
	t.Setenv("NO_PROXY", "203.0.113.7")
	c := NewClient(false, 5*time.Second)
	env := sampleEnvelope(EventReleaseCreated)
	res, err := Send(context.Background(), c, "http://93.184.215.14/hook", FormatSlipway, "s", "", "1", env, time.Now())
	if err != nil || res.StatusCode != http.StatusNoContent || rc.n.Load() != 1 {
		t.Fatalf("send through HTTP_PROXY: %+v %v", res, err)
	}
	if got := px.requests(); len(got) != 1 || got[0] != "POST http://93.184.215.14/hook" {
		t.Errorf("the proxy was asked %q", got)
	}
	// 203.0.113.7 (documentation range, public by class) is in NO_PROXY: direct, so the proxy is
	// not asked (the connection itself fails: nothing listens there).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = Send(ctx, c, "http://203.0.113.7/hook", FormatSlipway, "s", "", "2", env, time.Now())
	if got := px.requests(); len(got) != 1 {
		t.Errorf("a NO_PROXY destination went through the proxy: %q", got)
	}
}

func portOf(u string) string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	return port
}
