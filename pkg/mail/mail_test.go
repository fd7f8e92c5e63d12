package mail_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/test/mailpit"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want mail.Relay
		err  string
	}{
		{in: "smtps://bob@mail.example.com", want: mail.Relay{Security: mail.ImplicitTLS, Host: "mail.example.com", Port: "465", User: "bob"}},
		{in: "smtps://mail.example.com:2465", want: mail.Relay{Security: mail.ImplicitTLS, Host: "mail.example.com", Port: "2465"}},
		{in: "smtp://bob%40example.com@smtp.example.com", want: mail.Relay{Security: mail.StartTLS, Host: "smtp.example.com", Port: "587", User: "bob@example.com"}},
		{in: "SMTP://relay:2587/", want: mail.Relay{Security: mail.StartTLS, Host: "relay", Port: "2587"}},
		{in: "smtp+insecure://postfix.mail.svc:25", want: mail.Relay{Security: mail.Plain, Host: "postfix.mail.svc", Port: "25"}},
		{in: "smtp+insecure://bob@127.0.0.1:1025", want: mail.Relay{Security: mail.Plain, Host: "127.0.0.1", Port: "1025", User: "bob"}},
		{in: "smtp+insecure://[::1]:1025", want: mail.Relay{Security: mail.Plain, Host: "::1", Port: "1025"}},
		{in: "smtp+insecure://bob@relay.internal:25", err: "only for a relay on loopback"},
		{in: "smtps://bob:hunter22@mail.example.com", err: "holds a password"},
		{in: "http://mail.example.com", err: "the scheme must be"},
		{in: "mail.example.com:587", err: "the scheme must be"},
		{in: "smtp://", err: "names no host"},
		{in: "smtp://relay:99999", err: "the port"},
		{in: "smtp://relay:587/x", err: "without a path"},
		{in: "smtp://relay:587?tls=off", err: "without a path, query"},
		{in: "smtp://re lay", err: "does not parse"},
	} {
		got, err := mail.ParseURL(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter22") {
				t.Errorf("%q: the error repeats the password: %v", tc.in, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case got != tc.want:
			t.Errorf("%q: %+v, want %+v", tc.in, got, tc.want)
		}
	}
	r, _ := mail.ParseURL("smtp://bob@relay.example.com")
	if r.String() != "smtp://bob@relay.example.com:587" {
		t.Errorf("String %q", r.String())
	}
}

func from(t *testing.T) *netmail.Address {
	t.Helper()
	a, err := mail.ParseFrom("Slipway Builds <builds@slipway.example>")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// message is a mail with everything the service's mails carry.
func message(id, to string) mail.Message {
	return mail.Message{ID: id, To: to, Subject: "Neuer Build: Zürich 1.2 (87) — ready",
		Text: "Hello,\nbuild 87 is ready.\n.\nA line of dots: ..\nInstall: https://apps.example.com/t/abc?x=1&y=2\n",
		HTML: `<p>Hello,</p><p>build <b>87</b> is ready: <a href="https://apps.example.com/t/abc?x=1&amp;y=2">install</a></p>`,
		Headers: map[string]string{"List-Unsubscribe": "<https://apps.example.com/t/unsubscribe?t=tok>",
			"List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}}
}

// parts reads back a composed message: its headers and its decoded text and HTML.
func parts(t *testing.T, raw []byte) (*netmail.Message, string, string) {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if mt == "text/plain" {
		b, _ := io.ReadAll(quotedprintable.NewReader(msg.Body))
		return msg, string(b), ""
	}
	if mt != "multipart/alternative" {
		t.Fatalf("Content-Type %s", mt)
	}
	var text, html string
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p) // multipart decodes quoted-printable itself (and drops the header)
		switch p.Header.Get("Content-Type") {
		case "text/plain; charset=utf-8":
			text = string(b)
		case "text/html; charset=utf-8":
			html = string(b)
		default:
			t.Errorf("part %q", p.Header.Get("Content-Type"))
		}
	}
	return msg, text, html
}

func TestCompose(t *testing.T) {
	m := message("01JABCDEF", "tester@example.com")
	m.Date = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	raw, err := mail.Compose(m, from(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 || strings.ContainsAny(line, "\r\n") {
			t.Errorf("line %d is not a line: %q", i, line)
		}
		for _, c := range []byte(line) {
			if c >= 0x80 {
				t.Fatalf("line %d is not 7-bit: %q", i, line)
			}
		}
	}
	if n := strings.Count(string(raw), "\r\nContent-Transfer-Encoding: quoted-printable\r\n"); n != 2 {
		t.Errorf("%d quoted-printable parts, want 2", n)
	}
	msg, text, html := parts(t, raw)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("Subject %q (%v), want %q", subject, err, m.Subject)
	}
	for name, want := range map[string]string{
		"Message-Id":            "<01JABCDEF@slipway.example>",
		"From":                  `"Slipway Builds" <builds@slipway.example>`,
		"To":                    "<tester@example.com>",
		"Date":                  "Wed, 02 Dec 2026 10:00:00 +0000",
		"Mime-Version":          "1.0",
		"List-Unsubscribe":      "<https://apps.example.com/t/unsubscribe?t=tok>",
		"List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
	} {
		if got := msg.Header.Get(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if want := strings.ReplaceAll(m.Text, "\n", "\r\n"); text != want {
		t.Errorf("text %q, want %q", text, want)
	}
	if html != m.HTML {
		t.Errorf("html %q", html)
	}

	// Text alone is one text/plain part.
	m.HTML = ""
	raw, err = mail.Compose(m, from(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, text, _ := parts(t, raw); !strings.Contains(text, "build 87 is ready") {
		t.Errorf("text alone: %q", text)
	}
}

// TestComposeRefusesHeaderInjection: a line break in any header value, a header name that is not
// one, or a header the mailer writes itself is refused (mail.ErrInvalid), never cleaned.
func TestComposeRefusesHeaderInjection(t *testing.T) {
	for name, change := range map[string]func(m *mail.Message){
		"subject LF":        func(m *mail.Message) { m.Subject = "Hi\nBcc: victim@example.com" },
		"subject CR":        func(m *mail.Message) { m.Subject = "Hi\rBcc: victim@example.com" },
		"subject CRLF":      func(m *mail.Message) { m.Subject = "Hi\r\n\r\nbody" },
		"to CRLF":           func(m *mail.Message) { m.To = "tester@example.com\r\nBcc: victim@example.com" },
		"to with a name":    func(m *mail.Message) { m.To = "Mallory <tester@example.com>" },
		"to two addresses":  func(m *mail.Message) { m.To = "tester@example.com, victim@example.com" },
		"header value LF":   func(m *mail.Message) { m.Headers["List-Unsubscribe"] = "<https://x>\nBcc: victim@example.com" },
		"header value NUL":  func(m *mail.Message) { m.Headers["List-Unsubscribe"] = "<https://x>\x00" },
		"header name colon": func(m *mail.Message) { m.Headers["Bcc: victim@example.com\r\nX"] = "1" },
		"header name space": func(m *mail.Message) { m.Headers["X Evil"] = "1" },
		"reserved Bcc":      func(m *mail.Message) { m.Headers["bcc"] = "victim@example.com" },
		"reserved From":     func(m *mail.Message) { m.Headers["From"] = "ceo@example.com" },
		"reserved CT":       func(m *mail.Message) { m.Headers["content-type"] = "text/html" },
		"id with @":         func(m *mail.Message) { m.ID = "a@b" },
		"id with CRLF":      func(m *mail.Message) { m.ID = "a\r\nBcc: x" },
		"id empty":          func(m *mail.Message) { m.ID = "" },
		"long subject":      func(m *mail.Message) { m.Subject = strings.Repeat("a", 1000) },
	} {
		m := message("01JABCDEF", "tester@example.com")
		change(&m)
		raw, err := mail.Compose(m, from(t))
		if !errors.Is(err, mail.ErrInvalid) {
			t.Errorf("%s: Compose gave %v (%d bytes), want ErrInvalid", name, err, len(raw))
		}
	}
}

func TestParseFrom(t *testing.T) {
	for in, want := range map[string]string{
		"builds@example.com":                     "<builds@example.com>",
		"Slipway <builds@example.com>":           `"Slipway" <builds@example.com>`,
		"\"Zürich Builds\" <builds@example.com>": "=?utf-8?q?Z=C3=BCrich_Builds?= <builds@example.com>",
	} {
		a, err := mail.ParseFrom(in)
		if err != nil || a.String() != want {
			t.Errorf("%q: %v %v, want %s", in, a, err, want)
		}
	}
	for _, in := range []string{"", "builds", "builds@", "a@b\r\nBcc: x@y", "a@b, c@d"} {
		if _, err := mail.ParseFrom(in); err == nil {
			t.Errorf("%q: accepted", in)
		}
	}
}

// client is a Client for srv's relay, at rawURL, trusting the relay's CA.
func client(t *testing.T, srv *mailpit.Server, rawURL, password string) *mail.Client {
	t.Helper()
	r, err := mail.ParseURL(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mail.New(mail.Options{Relay: r, Password: mail.Password(password), From: from(t), RootCAs: srv.CertPool(t), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSendDelivers: each of the three URL forms delivers to a real relay (Mailpit) speaking what
// the URL promises, with authentication, and the message arrives whole: its Message-ID, its
// List-Unsubscribe headers, its UTF-8 subject, its text and HTML.
func TestSendDelivers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tls    mailpit.TLS
		scheme string
		user   string
	}{
		{"smtps, implicit TLS", mailpit.ImplicitTLS, "smtps", "relayuser"},
		{"smtp, STARTTLS required by the relay", mailpit.RequireSTARTTLS, "smtp", "relayuser"},
		{"smtp, STARTTLS optional at the relay", mailpit.OptionalSTARTTLS, "smtp", ""},
		{"smtp+insecure, loopback with a user", mailpit.NoTLS, "smtp+insecure", "relayuser"},
		{"smtp+insecure, no user", mailpit.NoTLS, "smtp+insecure", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := mailpit.Start(t, mailpit.Options{TLS: tc.tls, User: tc.user, Password: "s3cret-relay-pass"})
			c := client(t, srv, srv.URL(tc.scheme), "s3cret-relay-pass")
			m := message("01JTEST"+strings.ToUpper(tc.scheme[:4]), "tester@example.com")
			if err := c.Send(context.Background(), m); err != nil {
				t.Fatal(err)
			}
			got := srv.WaitFor(t, "tester@example.com", 1)
			if len(got) != 1 {
				t.Fatalf("%d messages arrived", len(got))
			}
			full := srv.Message(t, got[0].ID)
			if full.MessageID != m.ID+"@slipway.example" {
				t.Errorf("Message-ID %q", full.MessageID)
			}
			if full.Subject != m.Subject {
				t.Errorf("Subject %q", full.Subject)
			}
			if full.From == nil || full.From.Address != "builds@slipway.example" || full.From.Name != "Slipway Builds" {
				t.Errorf("From %+v", full.From)
			}
			for name, want := range m.Headers {
				if v := full.Headers[name]; len(v) != 1 || v[0] != want {
					t.Errorf("%s: %q, want %q", name, v, want)
				}
			}
			if !strings.Contains(full.Text, "build 87 is ready.\r\n.\r\nA line of dots: ..") && !strings.Contains(full.Text, "build 87 is ready.\n.\nA line of dots: ..") {
				t.Errorf("text (dots kept?) %q", full.Text)
			}
			if !strings.Contains(full.HTML, `<a href="https://apps.example.com/t/abc?x=1&amp;y=2">install</a>`) {
				t.Errorf("html %q", full.HTML)
			}
		})
	}
}

// TestSendRefusesWithoutTLS: smtp:// requires STARTTLS, so a relay that does not offer it gets
// nothing (a temporary failure: the mail waits in the outbox), and a relay whose certificate the
// client cannot verify gets nothing either.
func TestSendRefusesWithoutTLS(t *testing.T) {
	plain := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	err := client(t, plain, plain.URL("smtp"), "").Send(context.Background(), message("01JNOTLS", "tester@example.com"))
	var me *mail.Error
	if !errors.As(err, &me) || me.Stage != "starttls" || mail.ClassOf(err) != mail.Temporary {
		t.Fatalf("a relay without STARTTLS: %v (%#v), want a temporary starttls error", err, me)
	}

	tlsSrv := mailpit.Start(t, mailpit.Options{TLS: mailpit.OptionalSTARTTLS})
	r, _ := mail.ParseURL(tlsSrv.URL("smtp"))
	untrusting, _ := mail.New(mail.Options{Relay: r, From: from(t)}) // the system's roots: the test CA is not among them
	err = untrusting.Send(context.Background(), message("01JUNTRUSTED", "tester@example.com"))
	if err == nil || !strings.Contains(err.Error(), "certificate") || mail.ClassOf(err) != mail.Temporary {
		t.Fatalf("an unverifiable certificate: %v, want a certificate error", err)
	}
	for _, srv := range []*mailpit.Server{plain, tlsSrv} {
		if n := len(srv.Messages(t)); n != 0 {
			t.Errorf("%d messages arrived without TLS", n)
		}
	}
}

// TestSendClassifiesRefusals: a relay's 4xx is temporary, its 5xx permanent, a refused connection
// temporary; a wrong password is refused by the relay and appears in no error.
func TestSendClassifiesRefusals(t *testing.T) {
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.ImplicitTLS, User: "relayuser", Password: "right-password", Chaos: true})
	ctx := context.Background()
	wrong := client(t, srv, srv.SMTPURL(), "wrong-password-42")
	err := wrong.Send(ctx, message("01JWRONG", "tester@example.com"))
	if mail.ClassOf(err) != mail.Permanent || strings.Contains(err.Error(), "wrong-password-42") {
		t.Errorf("a wrong password: %v (%v)", err, mail.ClassOf(err))
	}
	c := client(t, srv, srv.SMTPURL(), "right-password")
	srv.Refuse(t, 451)
	if err := c.Send(ctx, message("01J451", "tester@example.com")); mail.ClassOf(err) != mail.Temporary {
		t.Errorf("451: %v (%v)", err, mail.ClassOf(err))
	} else if me := (*mail.Error)(nil); !errors.As(err, &me) || me.Code != 451 || me.Stage != "mail from" {
		t.Errorf("451: %#v", me)
	}
	srv.Refuse(t, 550)
	if err := c.Send(ctx, message("01J550", "tester@example.com")); mail.ClassOf(err) != mail.Permanent {
		t.Errorf("550: %v (%v)", err, mail.ClassOf(err))
	}
	srv.Accept(t)
	if err := c.Send(ctx, message("01JOK", "tester@example.com")); err != nil {
		t.Fatal(err)
	}
	if got := srv.WaitFor(t, "tester@example.com", 1); len(got) != 1 || got[0].MessageID != "01JOK@slipway.example" {
		t.Errorf("arrived: %+v", got)
	}

	// Nobody listens: temporary.
	r, _ := mail.ParseURL("smtp+insecure://127.0.0.1:1")
	nobody, _ := mail.New(mail.Options{Relay: r, From: from(t), Timeout: 5 * time.Second})
	if err := nobody.Send(ctx, message("01JREFUSED", "tester@example.com")); mail.ClassOf(err) != mail.Temporary {
		t.Errorf("connection refused: %v (%v)", err, mail.ClassOf(err))
	}
	// An invalid message is refused before any connection.
	if err := nobody.Send(ctx, message("bad id", "tester@example.com")); mail.ClassOf(err) != mail.Invalid {
		t.Errorf("invalid: %v (%v)", err, mail.ClassOf(err))
	}
}

// TestComposeInline: images the HTML shows by Content-ID make the message multipart/related,
// with the text and HTML alternative first and each image a base64 part of its own; bad content
// ids and types are refused.
func TestComposeInline(t *testing.T) {
	m := message("01JINLINE", "dev@example.com")
	img := bytes.Repeat([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}, 100)
	m.HTML = `<p>Look</p><img src="cid:shot1@slipway" alt="Screenshot 1">`
	m.Inline = []mail.Inline{{CID: "shot1@slipway", ContentType: "image/png", Data: img}}
	raw, err := mail.Compose(m, from(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line %d is too long", i)
		}
	}
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/related" || params["type"] != "multipart/alternative" {
		t.Fatalf("Content-Type %q (%v)", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	alt, err := mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	if at, _, _ := mime.ParseMediaType(alt.Header.Get("Content-Type")); at != "multipart/alternative" {
		t.Errorf("first part %q", alt.Header.Get("Content-Type"))
	}
	image, err := mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	if image.Header.Get("Content-Id") != "<shot1@slipway>" || image.Header.Get("Content-Type") != "image/png" ||
		!strings.HasPrefix(image.Header.Get("Content-Disposition"), "inline") {
		t.Errorf("image part headers: %v", image.Header)
	}
	body, _ := io.ReadAll(image)
	got, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(body), "\r\n", ""))
	if err != nil || !bytes.Equal(got, img) {
		t.Errorf("the image does not come back (%v)", err)
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("a part after the image: %v", err)
	}
	for _, bad := range []mail.Inline{{CID: "a>b", ContentType: "image/png", Data: img}, {CID: "x", ContentType: "text/html", Data: img},
		{CID: "big", ContentType: "image/jpeg", Data: make([]byte, 6<<20)}} {
		m.Inline = []mail.Inline{bad}
		if _, err := mail.Compose(m, from(t)); !errors.Is(err, mail.ErrInvalid) {
			t.Errorf("inline %q %q (%d bytes): %v, want ErrInvalid", bad.CID, bad.ContentType, len(bad.Data), err)
		}
	}
}
