package webhook

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

// embeddedIPv4Attacks are IPv6 addresses that reach an IPv4 address (issue 20, finding 10): through
// a NAT64 or 6to4 gateway, a dual-stack host's IPv4-compatible or SIIT handling, or a Teredo
// relay; and site-local addresses. A webhook aimed at one could reach the metadata service or an
// internal host that the IPv4 checks refuse.
var embeddedIPv4Attacks = []struct{ name, addr string }{
	{"NAT64 of loopback", "64:ff9b::127.0.0.1"},
	{"NAT64 of a private address", "64:ff9b::10.0.0.1"},
	{"NAT64 of cloud metadata", "64:ff9b::169.254.169.254"},
	{"NAT64 of CGNAT", "64:ff9b::100.64.0.1"},
	{"local-use NAT64", "64:ff9b:1::a00:1"},
	{"local-use NAT64 of a public address", "64:ff9b:1:0:0:0:808:808"},
	{"6to4 of loopback", "2002:7f00:1::1"},
	{"6to4 of cloud metadata", "2002:a9fe:a9fe::1"},
	{"6to4 of a private address", "2002:c0a8:101::"},
	{"IPv4-compatible loopback", "::127.0.0.1"},
	{"IPv4-compatible private", "::10.1.2.3"},
	{"IPv4-compatible public", "::8.8.8.8"},
	{"SIIT of loopback", "::ffff:0:127.0.0.1"},
	{"SIIT of a public address", "::ffff:0:8.8.8.8"},
	{"Teredo", "2001:0:4136:e378:8000:63bf:3fff:fdd2"},
	{"Teredo of a private server", "2001:0:a00:1::1"},
	{"site-local", "fec0::1"},
	{"site-local, top of the range", "feff:ffff::1"},
	{"NAT64 of loopback with a zone", "64:ff9b::127.0.0.1%eth0"},
	{"site-local with a zone", "fec0::1%1"},
}

// TestDisallowedEmbeddedIPv4 replays issue 20's finding 10: each IPv6 form that embeds IPv4 is
// refused when the IPv4 address is, and the forms with no legitimate use are refused outright
// (local-use NAT64, IPv4-compatible, SIIT, Teredo, site-local), both by Disallowed and by CheckURL.
func TestDisallowedEmbeddedIPv4(t *testing.T) {
	for _, tc := range embeddedIPv4Attacks {
		t.Run(tc.name, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.addr)
			if reason, bad := Disallowed(ip); !bad {
				t.Errorf("%s allowed", ip)
			} else {
				t.Logf("%s: %s", ip, reason)
			}
			if err := CheckURL(context.Background(), "https://["+strings.ReplaceAll(tc.addr, "%", "%25")+"]/hook", false, nil); err == nil {
				t.Errorf("CheckURL accepted %s", tc.addr)
			}
		})
	}
	// Public destinations stay reachable, through NAT64 and 6to4 too.
	for _, s := range []string{"64:ff9b::8.8.8.8", "2002:808:808::1", "2606:4700:4700::1111", "2001:4860:4860::8888", "2001:1::1", "fe00::1"} {
		if reason, bad := Disallowed(netip.MustParseAddr(s)); bad {
			t.Errorf("%s refused: %s", s, reason)
		}
	}
}
