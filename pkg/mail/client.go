package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Password is the relay's password. It prints as "[redacted]" however it is formatted, so a
// Config or Options logged by mistake does not carry it.
type Password string

func (Password) String() string   { return "[redacted]" }
func (Password) GoString() string { return "[redacted]" }

// Options configure a Client.
type Options struct {
	Relay    Relay
	Password Password
	// From is the sender (header and envelope).
	From *mail.Address
	// RootCAs verify the relay's certificate; nil: the system's roots. (SLIPWAY_SMTP_CA_FILE
	// lets tests and private relays name their own CA: verified, never skipped.)
	RootCAs *x509.CertPool
	// Timeout bounds the connection (dial and TLS handshake) and each SMTP command on its own;
	// 0: DefaultTimeout.
	Timeout time.Duration
	// HelloName is the name the client gives in EHLO; "": the From address's domain.
	HelloName string
}

// DefaultTimeout is the time limit of the connection and of each command when Options say none.
const DefaultTimeout = 30 * time.Second

// Client submits messages to one relay. It is safe for concurrent use: each Send has a session
// (a connection) of its own, kept open afterwards for the next one (Close ends them).
type Client struct {
	opts Options
	mu   sync.Mutex
	idle []*session
	// idleFor is how long a session is kept unused (idleFor, shortened by tests); sweeper, while
	// sessions are kept, ends those kept too long, so an idle sender holds no connection for long.
	idleFor time.Duration
	sweeper *time.Timer
}

// New returns a Client for opts; it connects to nothing until Send.
func New(opts Options) (*Client, error) {
	if opts.From == nil {
		return nil, errors.New("mail: no From address")
	}
	if opts.Relay.Host == "" {
		return nil, errors.New("mail: no relay")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.HelloName == "" {
		opts.HelloName = opts.From.Address[strings.LastIndexByte(opts.From.Address, '@')+1:]
	}
	return &Client{opts: opts, idleFor: idleFor}, nil
}

// Relay is the relay the Client sends to.
func (c *Client) Relay() Relay { return c.opts.Relay }

// Send composes m and submits it: it returns nil once the relay has accepted the message (its
// answer to the end of DATA), and otherwise an error ClassOf classifies. ctx's end cuts the
// connection.
func (c *Client) Send(ctx context.Context, m Message) error {
	raw, err := Compose(m, c.opts.From)
	if err != nil {
		return &Error{Stage: "compose", Class: Invalid, msg: err.Error()}
	}
	to, _ := mail.ParseAddress(m.To) // Compose checked it
	return c.submit(ctx, c.opts.From.Address, to.Address, raw)
}

func (c *Client) tlsConfig() *tls.Config {
	return &tls.Config{ServerName: c.opts.Relay.Host, RootCAs: c.opts.RootCAs, MinVersion: tls.VersionTLS12}
}

// session is an open, authenticated SMTP connection, ready for a message.
type session struct {
	raw  net.Conn // the TCP connection: its deadlines bound every step, under TLS too
	cl   *smtp.Client
	idle time.Time // when it was last put back
	sent int
}

func (s *session) close() { _ = s.cl.Close() }

// Sessions are kept open between messages (a distribution to thousands of testers would otherwise
// pay a connection, a TLS handshake and AUTH per mail), at most maxIdle of them, for at most
// idleFor (relays drop idle clients after a minute or more) and maxPerSession messages.
const (
	maxIdle       = 8
	idleFor       = 20 * time.Second
	maxPerSession = 100
)

// take returns an idle session fit for another message, or nil; it closes the stale ones.
func (c *Client) take() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.idle) > 0 {
		s := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		if time.Since(s.idle) < c.idleFor {
			return s
		}
		go s.close()
	}
	return nil
}

// put keeps s for the next message, or closes it (QUIT) when enough are kept or it sent enough.
func (c *Client) put(s *session) {
	_ = s.raw.SetDeadline(time.Time{})
	c.mu.Lock()
	if s.sent < maxPerSession && len(c.idle) < maxIdle {
		s.idle = time.Now()
		c.idle = append(c.idle, s)
		if c.sweeper == nil {
			c.sweeper = time.AfterFunc(c.idleFor, c.sweep)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.quit(s)
}

// sweep ends the sessions kept longer than idleFor, and looks again later while any are kept.
func (c *Client) sweep() {
	c.mu.Lock()
	var stale []*session
	keep := c.idle[:0]
	for _, s := range c.idle {
		if time.Since(s.idle) >= c.idleFor {
			stale = append(stale, s)
		} else {
			keep = append(keep, s)
		}
	}
	c.idle = keep
	if len(c.idle) > 0 {
		c.sweeper.Reset(c.idleFor)
	} else {
		c.sweeper = nil
	}
	c.mu.Unlock()
	for _, s := range stale {
		c.quit(s)
	}
}

// quit ends s politely, within the timeout.
func (c *Client) quit(s *session) {
	_ = s.raw.SetDeadline(time.Now().Add(c.opts.Timeout))
	_ = s.cl.Quit()
	s.close()
}

// Close ends the idle sessions (QUIT); the Client opens new ones if it sends again.
func (c *Client) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	if c.sweeper != nil {
		c.sweeper.Stop()
		c.sweeper = nil
	}
	c.mu.Unlock()
	for _, s := range idle {
		c.quit(s)
	}
	return nil
}

// stepper runs the steps of one exchange on raw under their deadline; ctx's end cuts it.
func (c *Client) stepper(ctx context.Context, raw net.Conn) func(stage string, f func() error) error {
	return func(stage string, f func() error) error {
		if ctx.Err() != nil {
			return c.fail(stage, ctx.Err())
		}
		_ = raw.SetDeadline(time.Now().Add(c.opts.Timeout))
		if err := f(); err != nil {
			return c.fail(stage, err)
		}
		return nil
	}
}

// submit sends one message: on an idle session when there is one, else on a new one. A kept
// session the relay closed meanwhile fails at MAIL FROM (a cut connection or a 421), before the
// relay took anything; the message then goes on a new connection. Any other failure is the
// message's, and its session is closed.
func (c *Client) submit(ctx context.Context, from, to string, msg []byte) error {
	if s := c.take(); s != nil {
		err := c.transact(ctx, s, from, to, msg)
		if err == nil {
			c.put(s)
			return nil
		}
		s.close()
		var e *Error
		if ctx.Err() != nil || !errors.As(err, &e) || e.Stage != "mail from" || (e.Code != 0 && e.Code != 421) {
			return err
		}
	}
	s, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := c.transact(ctx, s, from, to, msg); err != nil {
		s.close()
		return err
	}
	c.put(s)
	return nil
}

// open makes a session: connect (TLS for smtps), greeting, EHLO, STARTTLS (required for
// smtp://), AUTH, each under its own deadline.
func (c *Client) open(ctx context.Context) (*session, error) {
	r := c.opts.Relay
	dialer := net.Dialer{Timeout: c.opts.Timeout}
	raw, err := dialer.DialContext(ctx, "tcp", r.Addr())
	if err != nil {
		return nil, c.fail("connect", err)
	}
	// The end of ctx ends the connection: every read and write fails at once.
	stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	ok := false
	defer func() {
		if !ok {
			raw.Close()
		}
	}()
	step := c.stepper(ctx, raw)
	conn := raw
	if r.Security == ImplicitTLS {
		tc := tls.Client(raw, c.tlsConfig())
		if err := step("tls", func() error { return tc.HandshakeContext(ctx) }); err != nil {
			return nil, err
		}
		conn = tc
	}
	var cl *smtp.Client
	if err := step("greeting", func() (e error) { cl, e = smtp.NewClient(conn, r.Host); return e }); err != nil {
		return nil, err
	}
	if err := step("ehlo", func() error { return cl.Hello(c.opts.HelloName) }); err != nil {
		return nil, err
	}
	if r.Security == StartTLS {
		if has, _ := cl.Extension("STARTTLS"); !has {
			return nil, &Error{Stage: "starttls", Class: Temporary,
				msg: "the relay does not offer STARTTLS, which smtp:// requires: nothing was sent (smtps:// is implicit TLS; smtp+insecure:// a relay without TLS)"}
		}
		if err := step("starttls", func() error { return cl.StartTLS(c.tlsConfig()) }); err != nil {
			return nil, err
		}
	}
	if r.User != "" {
		has, mechs := cl.Extension("AUTH")
		if !has {
			return nil, &Error{Stage: "auth", Class: Permanent, msg: "the relay offers no AUTH, but the URL names a user"}
		}
		var a smtp.Auth
		switch fields := strings.Fields(strings.ToUpper(mechs)); {
		case contains(fields, "PLAIN"):
			a = smtp.PlainAuth("", r.User, string(c.opts.Password), r.Host)
		case contains(fields, "LOGIN"):
			a = &loginAuth{user: r.User, pass: string(c.opts.Password), host: r.Host}
		default:
			return nil, &Error{Stage: "auth", Class: Permanent, msg: "the relay offers neither AUTH PLAIN nor AUTH LOGIN"}
		}
		if err := step("auth", func() error { return cl.Auth(a) }); err != nil {
			return nil, err
		}
	}
	ok = true
	return &session{raw: raw, cl: cl}, nil
}

// transact sends one message on s: MAIL, RCPT, DATA, each under its own deadline.
func (c *Client) transact(ctx context.Context, s *session, from, to string, msg []byte) error {
	stop := context.AfterFunc(ctx, func() { _ = s.raw.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	step := c.stepper(ctx, s.raw)
	if err := step("mail from", func() error { return s.cl.Mail(from) }); err != nil {
		return err
	}
	if err := step("rcpt to", func() error { return s.cl.Rcpt(to) }); err != nil {
		return err
	}
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	if err := step("data", func() (e error) { w, e = s.cl.Data(); return e }); err != nil {
		return err
	}
	if err := step("data", func() error { _, e := w.Write(msg); return e }); err != nil {
		return err
	}
	// Close sends the final dot and reads the relay's answer: from here on the message is the
	// relay's.
	if err := step("end of data", w.Close); err != nil {
		return err
	}
	s.sent++
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// loginAuth is AUTH LOGIN (the relays that offer no PLAIN, Office 365's among them), sent only
// over TLS or to a loopback relay, as net/smtp's PlainAuth.
type loginAuth struct{ user, pass, host string }

func (a *loginAuth) Start(s *smtp.ServerInfo) (string, []byte, error) {
	if !s.TLS && !isLoopbackName(s.Name) {
		return "", nil, errors.New("unencrypted connection")
	}
	if s.Name != a.host {
		return "", nil, errors.New("wrong host name")
	}
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(challenge []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	switch strings.ToLower(strings.TrimSpace(string(challenge))) {
	case "username:", "username":
		return []byte(a.user), nil
	case "password:", "password":
		return []byte(a.pass), nil
	}
	return nil, errors.New("the relay sent an unexpected AUTH LOGIN challenge")
}

// Class says what a failed send's retry can do.
type Class int

const (
	// Temporary: the relay or the network may take it later (a 4xx reply, a refused or cut
	// connection, a timeout, a TLS failure an operator can fix, STARTTLS not offered).
	Temporary Class = iota + 1
	// Permanent: the relay refused it for good (a 5xx reply).
	Permanent
	// Invalid: the message itself cannot be sent (Compose refused it); no retry will change that.
	Invalid
)

func (c Class) String() string {
	switch c {
	case Temporary:
		return "temporary"
	case Permanent:
		return "permanent"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Error is a failed send: where it failed, the relay's reply code if any, and a message that holds
// no recipient address and no password (safe to log and to store).
type Error struct {
	// Stage is the step that failed: compose, connect, tls, greeting, ehlo, starttls, auth,
	// mail from, rcpt to, data, end of data.
	Stage string
	// Code is the relay's SMTP reply code (0: the failure was not a reply).
	Code  int
	Class Class
	msg   string
}

func (e *Error) Error() string { return "smtp " + e.Stage + ": " + e.msg }

// ClassOf classifies a Send error; Temporary for an error that is not an *Error.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return Temporary
}

// addressLike is anything that looks like an email address in a relay's reply: replies often
// repeat the recipient ("550 5.1.1 <bob@example.com>: user unknown"), which must not reach a log.
var addressLike = regexp.MustCompile(`[^\s<>"'()\[\],;:]+@[^\s<>"'()\[\],;:]+`)

// fail makes err, from stage, an *Error: a reply's class follows its code (4xx temporary, 5xx
// permanent), anything else is temporary. The message is cleaned of addresses and of the
// password.
func (c *Client) fail(stage string, err error) error {
	e := &Error{Stage: stage, Class: Temporary}
	var tp *textproto.Error
	switch {
	case errors.As(err, &tp):
		e.Code = tp.Code
		if tp.Code >= 500 {
			e.Class = Permanent
		}
		e.msg = fmt.Sprintf("%d %s", tp.Code, tp.Msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.msg = "stopped: " + err.Error()
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			e.msg = "timed out after " + c.opts.Timeout.String() + ": " + err.Error()
		} else {
			e.msg = err.Error()
		}
	}
	e.msg = addressLike.ReplaceAllString(e.msg, "<address>")
	if p := string(c.opts.Password); len(p) >= 4 {
		e.msg = strings.ReplaceAll(e.msg, p, "[redacted]")
	}
	e.msg = clip(strings.ToValidUTF8(e.msg, "?"), 300)
	return e
}
