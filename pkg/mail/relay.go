// Package mail submits mail to an SMTP relay: the relay's URL (SLIPWAY_SMTP_URL) and what it
// promises about the connection, RFC 5322 messages composed so that nothing a caller passes can
// add a header, and their submission over connections kept open between messages, with a time
// limit on each connection and on each command. It knows nothing of the outbox:
// pkg/distribution/mailer leases mails and retries them; this package says, for each failure,
// whether a retry can help (ClassOf).
//
// It is built on the standard library's net/smtp, which is frozen but complete for submission
// (EHLO, STARTTLS, AUTH, MAIL, RCPT, DATA with dot-stuffing) and adds no dependency. What net/smtp
// leaves to its caller is done here: the connection's deadlines (net/smtp has none), refusing to
// go on without TLS when the URL asks for it, and AUTH LOGIN for the relays that offer no PLAIN.
package mail

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Security is what a relay's URL promises about the connection.
type Security int

const (
	// ImplicitTLS (smtps://, port 465 by default): TLS from the first byte, the relay's
	// certificate verified.
	ImplicitTLS Security = iota + 1
	// StartTLS (smtp://, port 587 by default): the connection starts in clear and must be
	// upgraded with STARTTLS before anything else is said, the certificate verified. A relay that
	// does not offer STARTTLS gets no mail: never opportunistic, so a man in the middle cannot
	// strip TLS by hiding the offer.
	StartTLS
	// Plain (smtp+insecure://, port 25 by default): no TLS at all, for a relay on loopback or
	// inside the cluster's network. Credentials are sent only to a loopback relay (localhost,
	// 127.0.0.1, ::1): a user in the URL of any other plain relay is refused, since the password
	// would cross the network readable.
	Plain
)

// Relay is a parsed SLIPWAY_SMTP_URL. It holds no password (that comes from a file).
type Relay struct {
	Security Security
	// Host is the relay's name or address (no brackets), the name its certificate must carry.
	Host string
	Port string
	// User is the name for SMTP AUTH; "" sends no AUTH.
	User string
}

// Addr is the relay's host:port.
func (r Relay) Addr() string { return net.JoinHostPort(r.Host, r.Port) }

// String is the relay's URL, which never holds a password: safe to log.
func (r Relay) String() string {
	scheme := map[Security]string{ImplicitTLS: "smtps", StartTLS: "smtp", Plain: "smtp+insecure"}[r.Security]
	u := url.URL{Scheme: scheme, Host: r.Addr()}
	if r.User != "" {
		u.User = url.User(r.User)
	}
	return u.String()
}

// ParseURL reads a relay's URL: smtps://[user@]host[:465], smtp://[user@]host[:587] or
// smtp+insecure://[user@]host[:25] (a user only on loopback). A password in the URL is refused:
// it belongs in SLIPWAY_SMTP_PASSWORD_FILE. Errors never repeat the URL, which may hold one.
func ParseURL(raw string) (Relay, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return Relay{}, fmt.Errorf("must be smtps://user@host:465, smtp://user@host:587 or smtp+insecure://host:port (it does not parse as a URL)")
	}
	var r Relay
	defaultPort := ""
	switch strings.ToLower(u.Scheme) {
	case "smtps":
		r.Security, defaultPort = ImplicitTLS, "465"
	case "smtp":
		r.Security, defaultPort = StartTLS, "587"
	case "smtp+insecure":
		r.Security, defaultPort = Plain, "25"
	default:
		return Relay{}, fmt.Errorf("the scheme must be smtps (implicit TLS), smtp (STARTTLS, required) or smtp+insecure (no TLS), not %q", clip(u.Scheme, 20))
	}
	if u.Opaque != "" || u.Host == "" {
		return Relay{}, fmt.Errorf("names no host: write %s://[user@]host[:port]", u.Scheme)
	}
	if _, has := u.User.Password(); has {
		return Relay{}, fmt.Errorf("holds a password: put it in the file SLIPWAY_SMTP_PASSWORD_FILE names, not in the URL")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return Relay{}, fmt.Errorf("must be only %s://[user@]host[:port], without a path, query or fragment", u.Scheme)
	}
	r.Host, r.Port = u.Hostname(), u.Port()
	if r.Host == "" {
		return Relay{}, fmt.Errorf("names no host")
	}
	if r.Port == "" {
		r.Port = defaultPort
	}
	if n, err := strconv.Atoi(r.Port); err != nil || n < 1 || n > 65535 {
		return Relay{}, fmt.Errorf("the port must be a number from 1 to 65535")
	}
	r.User = u.User.Username()
	if r.User != "" && r.Security == Plain && !isLoopbackName(r.Host) {
		return Relay{}, fmt.Errorf("smtp+insecure:// sends a password in clear, so a user is allowed only for a relay on loopback (localhost, 127.0.0.1, ::1); use smtps:// or smtp:// (STARTTLS) for %s", clip(r.Host, 80))
	}
	return r, nil
}

// isLoopbackName reports whether host is one of the names net/smtp's PLAIN authentication also
// accepts without TLS: the loopback relay, whose traffic never leaves the machine (or the pod).
func isLoopbackName(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
