package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// URLError is a webhook URL refused, with the reason a user can act on.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// allowHint tells operators how to let webhooks reach internal receivers.
const allowHint = "webhooks may not target loopback, private or link-local addresses (an operator can allow them with SLIPWAY_WEBHOOK_ALLOW_PRIVATE)"

// special networks a webhook may not reach unless allowed: besides what netip classifies
// (loopback, private, link-local, multicast, unspecified), shared address space (CGNAT), "this
// network", IETF protocol assignments and benchmarking; and IPv6 prefixes that are deprecated or
// reach an IPv4 address Slipway cannot check (see embeddedIPv4).
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), netip.MustParsePrefix("255.255.255.255/32"),
}

// IPv6 forms that embed an IPv4 address, which would otherwise carry a private or loopback IPv4
// address past the checks above (a webhook to 64:ff9b::7f00:1 reaches 127.0.0.1 through a NAT64
// gateway). Where the prefix has a use today and the IPv4 address is at a fixed place, that
// address is checked like any other; where it has none, or the address cannot be found, the
// whole prefix is refused.
var (
	// nat64 is the well-known NAT64 prefix (RFC 6052): 64:ff9b::a.b.c.d reaches a.b.c.d through a
	// NAT64 gateway. IPv6-only networks with DNS64 use it for every IPv4 host, so it is checked.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is the network of AA.BB.CC.DD. Deprecated,
	// but its IPv4 address is at a fixed place, so it is checked.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// refused6 are refused whatever they embed:
	//   - 64:ff9b:1::/48, local-use NAT64 (RFC 8215): the IPv4 address may sit after a /48, /56,
	//     /64 or /96 prefix, as the operator chose;
	//   - ::/96, IPv4-compatible addresses (::a.b.c.d, deprecated by RFC 4291); :: and ::1 are
	//     refused as unspecified and loopback before this list is consulted;
	//   - ::ffff:0:0:0/96, SIIT's IPv4-translated addresses (RFC 2765, obsoleted);
	//   - 2001::/32, Teredo (RFC 4380): the client's IPv4 address is obfuscated and the server's
	//     is any, so the destination cannot be told;
	//   - fec0::/10, site-local (deprecated by RFC 3879, still routed inside some networks);
	//   - 100::/64, discard-only, and 2001:db8::/32, documentation: never a receiver.
	refused6 = []netip.Prefix{
		netip.MustParsePrefix("64:ff9b:1::/48"), netip.MustParsePrefix("::/96"), netip.MustParsePrefix("::ffff:0:0:0/96"),
		netip.MustParsePrefix("2001::/32"), netip.MustParsePrefix("fec0::/10"), netip.MustParsePrefix("100::/64"),
		netip.MustParsePrefix("2001:db8::/32"),
	}
)

// Disallowed reports why a webhook may not reach ip (cloud metadata at 169.254.169.254 is
// link-local). An IPv6 address that embeds an IPv4 address is judged by that address, or refused
// when it cannot be (see refused6).
func Disallowed(ip netip.Addr) (reason string, bad bool) {
	// A zone (fe80::1%eth0) would make every netip.Prefix.Contains below false.
	ip = ip.WithZone("")
	if reason, bad := disallowed(ip); bad {
		return reason, true
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if reason, bad := disallowed(v4); bad {
			return fmt.Sprintf("an IPv6 address that embeds %s, %s", v4, reason), true
		}
	}
	return "", false
}

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address reaches.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() || ip.Is4In6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// disallowed judges one address by its own class, without looking inside it.
func disallowed(ip netip.Addr) (reason string, bad bool) {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "an invalid address", true
	case ip.IsLoopback():
		return "a loopback address", true
	case ip.IsPrivate():
		return "a private address", true
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address", true
	case ip.IsUnspecified():
		return "an unspecified address", true
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address", true
	}
	for _, p := range special {
		if p.Contains(ip) {
			return "a reserved address", true
		}
	}
	for _, p := range refused6 {
		if p.Contains(ip) {
			return "a deprecated or translated IPv6 address (" + p.String() + ")", true
		}
	}
	return "", false
}

// parseURL checks the form of a webhook URL without resolving it.
func parseURL(raw string) (*url.URL, error) {
	if len(raw) > 2048 {
		return nil, &URLError{"url: must be at most 2048 characters"}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, &URLError{"url: must be an absolute http:// or https:// URL"}
	}
	if u.User != nil {
		return nil, &URLError{"url: must not carry a user name or password"}
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, &URLError{"url: must not carry a fragment"}
	}
	if p := u.Port(); p != "" {
		var n int
		if _, err := fmt.Sscanf(p, "%d", &n); err != nil || n < 1 || n > 65535 {
			return nil, &URLError{"url: the port must be from 1 to 65535"}
		}
	}
	return u, nil
}

// CheckURL checks a webhook URL: http or https, no credentials or fragment, and, unless
// allowPrivate, a host whose every address is public. The client checks again when it connects
// (NewClient), since DNS can answer differently later.
func CheckURL(ctx context.Context, raw string, allowPrivate bool, resolver *net.Resolver) error {
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason, bad := Disallowed(ip); bad && !allowPrivate {
			return &URLError{fmt.Sprintf("url: %s is %s; %s", ip, reason, allowHint)}
		}
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := resolver.LookupNetIP(rctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return &URLError{fmt.Sprintf("url: the host %s cannot be resolved", truncate(host, 100))}
	}
	if !allowPrivate {
		for _, ip := range addrs {
			if reason, bad := Disallowed(ip); bad {
				return &URLError{fmt.Sprintf("url: %s resolves to %s, %s; %s", truncate(host, 100), ip.Unmap(), reason, allowHint)}
			}
		}
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// errDisallowed is returned by the dialer for an address a webhook may not reach.
var errDisallowed = errors.New("the address is not allowed for webhooks")

// NewClient returns the client webhooks are sent with: it connects only to public addresses
// (checked on the address actually dialled, so a DNS answer that changed since CheckURL cannot
// reach an internal service) unless allowPrivate, and never follows redirects (a redirect could
// lead inside). Callers read at most a bounded part of a response.
//
// It honours the standard proxy variables, read once here: HTTPS_PROXY, HTTP_PROXY and NO_PROXY
// (and their lower-case forms; golang.org/x/net/http/httpproxy has the rules). The proxy is the
// operator's own configuration and is trusted: it may sit at a private address. The SSRF check
// then applies to the final destination instead: before a request is handed to the proxy, its
// host is resolved and refused when any of its addresses is one a webhook may not reach (see
// proxyGuard).
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return newClient(allowPrivate, timeout, httpproxy.FromEnvironment(), nil)
}

// lookupFunc resolves a host name (net.DefaultResolver.LookupNetIP; tests replace it).
type lookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

func newClient(allowPrivate bool, timeout time.Duration, proxy *httpproxy.Config, lookup lookupFunc) *http.Client {
	if lookup == nil {
		lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	direct := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		guarded.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return errDisallowed
			}
			if _, bad := Disallowed(ap.Addr()); bad {
				return errDisallowed
			}
			return nil
		}
	}
	g := proxyGuard{allowPrivate: allowPrivate, lookup: lookup, proxies: map[string]bool{}}
	if proxy != nil {
		g.proxyFor = proxy.ProxyFunc()
		for _, raw := range []string{proxy.HTTPProxy, proxy.HTTPSProxy} {
			if addr := proxyAddr(raw); addr != "" {
				g.proxies[addr] = true
			}
		}
	}
	tr := &http.Transport{
		Proxy: g.proxy,
		// The proxies' own addresses are dialled without the guard (they are trusted
		// configuration); every other address with it.
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if g.proxies[addr] {
				return direct.DialContext(ctx, network, addr)
			}
			return guarded.DialContext(ctx, network, addr)
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          32,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// proxyGuard chooses the proxy of a webhook request and applies the SSRF check to the requests
// the dialer cannot check: those sent through a proxy (the dialer sees only the proxy's address),
// and those whose destination is a proxy's own address (dialled without the guard).
type proxyGuard struct {
	allowPrivate bool
	proxyFor     func(*url.URL) (*url.URL, error)
	proxies      map[string]bool // host:port of the configured proxies
	lookup       lookupFunc
}

func (g proxyGuard) proxy(req *http.Request) (*url.URL, error) {
	var p *url.URL
	if g.proxyFor != nil {
		var err error
		if p, err = g.proxyFor(req.URL); err != nil {
			return nil, err
		}
	}
	if g.allowPrivate || (p == nil && !g.proxies[canonicalAddr(req.URL)]) {
		return p, nil // direct: the dialer checks the address it connects to
	}
	if err := g.checkDestination(req.Context(), req.URL.Hostname()); err != nil {
		return nil, err
	}
	return p, nil
}

// checkDestination resolves host and refuses it when any of its addresses is disallowed. (The
// proxy resolves the name again; the proxy's own rules should refuse internal destinations too,
// see docs/security.md.)
func (g proxyGuard) checkDestination(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if _, bad := Disallowed(ip); bad {
			return errDisallowed
		}
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := g.lookup(rctx, host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("the webhook's host cannot be resolved")
	}
	for _, ip := range addrs {
		if _, bad := Disallowed(ip); bad {
			return errDisallowed
		}
	}
	return nil
}

// proxyAddr is the host:port a proxy URL (as in HTTPS_PROXY) is dialled at; "" when unset or
// unparsable. httpproxy takes a bare host:port as http://.
func proxyAddr(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("http://" + raw); err != nil || u.Host == "" {
			return ""
		}
	}
	return canonicalAddr(u)
}

// canonicalAddr is u's host:port with the scheme's default port, as the transport dials it.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// Result is one attempt's outcome.
type Result struct {
	StatusCode int
	Latency    time.Duration
	Error      string
}

// maxResponseBytes of a receiver's answer are read (and dropped), so the connection can be reused.
const maxResponseBytes = 64 << 10

// Send makes one delivery attempt: env rendered in format, POSTed with the signature, event and
// delivery headers; robotSecret, when given for a DingTalk or Feishu robot, signs the message as
// that robot requires. Only a 2xx answer is a success. Errors name the URL by scheme and host only:
// chat services put access tokens in the path or query.
func Send(ctx context.Context, c *http.Client, rawURL, format, secret, robotSecret, deliveryID string, env *Envelope, now time.Time) (Result, error) {
	var res Result
	body, err := Render(format, env)
	if err != nil {
		res.Error = err.Error()
		return res, err
	}
	where := redact(rawURL)
	target, body, err := signRobot(format, rawURL, body, robotSecret, now)
	if err != nil {
		res.Error = "cannot sign the message for " + where
		return res, errors.New(res.Error)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		res.Error = "cannot make a request to " + where
		return res, errors.New(res.Error)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Slipway-Webhook/1")
	req.Header.Set(SignatureHeader, Sign([]byte(secret), now, body))
	req.Header.Set(EventHeader, env.Event)
	req.Header.Set(DeliveryHeader, deliveryID)
	start := time.Now()
	resp, err := c.Do(req)
	res.Latency = time.Since(start)
	if err != nil {
		res.Error = describe(err, where)
		return res, errors.New(res.Error)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	resp.Body.Close()
	res.StatusCode = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.Error = fmt.Sprintf("%s answered %d", where, resp.StatusCode)
		return res, errors.New(res.Error)
	}
	return res, nil
}

// redact keeps only the scheme and host of a URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "the webhook URL"
	}
	return u.Scheme + "://" + u.Host
}

// describe explains a transport error without the URL's path or query.
func describe(err error, where string) string {
	var ne net.Error
	switch {
	case errors.Is(err, errDisallowed):
		return where + " resolves to an address " + allowHint
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return where + " did not answer in time"
	case errors.Is(err, context.Canceled):
		return "the attempt was cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return where + " refused the connection"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return where + ": the host cannot be resolved"
	}
	return where + ": the request failed (connection or TLS error)"
}
