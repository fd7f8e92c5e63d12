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

// IPv6 forms that embed an IPv4 address (issue 20). Where the prefix has a use today and the IPv4
// address is at a fixed place, that address is checked like any other; where it has none, or the
// address cannot be found, the whole prefix is refused.
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
// reach an internal service) unless allowPrivate, ignores proxy settings, and never follows
// redirects (a redirect could lead inside). Callers read at most a bounded part of a response.
func NewClient(allowPrivate bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
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
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
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
