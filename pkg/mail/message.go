package mail

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Message is one mail to one recipient.
type Message struct {
	// ID is the Message-ID's local part (<ID@domain of From>): the same ID on every attempt, so a
	// mail sent twice (a relay that accepted it but whose answer was lost) is one message to a
	// client that de-duplicates.
	ID string
	// To is the recipient's address (a bare addr-spec).
	To      string
	Subject string
	// Text is the plain-text part; HTML, when set, the alternative HTML part.
	Text, HTML string
	// Headers are extra headers (List-Unsubscribe, List-Unsubscribe-Post). They may not replace
	// the headers Compose writes itself.
	Headers map[string]string
	// Date is the Date header (zero: now).
	Date time.Time
	// Inline are images the HTML part shows by their Content-ID (<img src="cid:…">): the message
	// becomes multipart/related. Only with HTML.
	Inline []Inline
}

// Inline is an image of a message's HTML part.
type Inline struct {
	// CID is its Content-ID without the angle brackets: letters, digits and ._-@ only.
	CID         string
	ContentType string // image/png or image/jpeg
	Data        []byte
}

// maxInline bounds a message's inline images together: mail relays commonly refuse messages
// over 10 to 25 MB, and base64 grows them by a third.
const maxInline = 5 << 20

var contentID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$`)

// ErrInvalid marks a message that can never be sent as it is (a header with a line break, an
// address that is not one): ClassOf says Invalid, and retrying it is pointless.
var ErrInvalid = errors.New("invalid message")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

// ParseFrom reads SLIPWAY_MAIL_FROM: an address, optionally with a display name
// ("Slipway <builds@example.com>").
func ParseFrom(s string) (*mail.Address, error) {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("must be one line")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return nil, fmt.Errorf("must be an address such as builds@example.com or \"Slipway <builds@example.com>\"")
	}
	if at := strings.LastIndexByte(a.Address, '@'); at <= 0 || at == len(a.Address)-1 {
		return nil, fmt.Errorf("must be an address with a domain")
	}
	return a, nil
}

// headerName is a header field name Compose accepts among the extra headers: letters, digits and
// hyphens (RFC 5322 allows more, none of which a header this service sends needs).
var headerName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,75}$`)

// messageID is the local part Compose accepts: dot-atom text without the characters that would
// need care elsewhere (ULIDs, UUIDs and hex all fit).
var messageID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+=-]{0,199}$`)

// reserved are the headers Compose writes and the ones that route or trace mail: an extra header
// of one of these names is refused rather than allowed to contradict them.
var reserved = map[string]bool{
	"From": true, "To": true, "Cc": true, "Bcc": true, "Sender": true, "Reply-To": true, "Subject": true, "Date": true,
	"Message-Id": true, "Mime-Version": true, "Content-Type": true, "Content-Transfer-Encoding": true,
	"Return-Path": true, "Received": true, "In-Reply-To": true, "References": true,
}

// maxHeaderValue bounds a header value: RFC 5322's 998-character line, less the name.
const maxHeaderValue = 900

// Compose writes m as an RFC 5322 message from from: Date, From, To, Subject (RFC 2047 encoded
// when it is not ASCII), Message-ID, the extra headers, and a quoted-printable UTF-8 body, text
// alone or text and HTML as multipart/alternative. The result is 7-bit with CRLF line ends. A
// header value with a CR or LF (or NUL) anywhere is refused (ErrInvalid), never cleaned: a value
// that carries a line break was built wrong upstream, and sending it would let it add headers.
func Compose(m Message, from *mail.Address) ([]byte, error) {
	if from == nil {
		return nil, invalid("no From address")
	}
	if !messageID.MatchString(m.ID) {
		return nil, invalid("the message id must be 1 to 200 letters, digits or ._+=-")
	}
	if err := oneLine("To", m.To); err != nil {
		return nil, err
	}
	to, err := mail.ParseAddress(m.To)
	if err != nil || to.Name != "" || to.Address != strings.TrimSpace(m.To) {
		return nil, invalid("the recipient is not a bare address")
	}
	if err := oneLine("Subject", m.Subject); err != nil {
		return nil, err
	}
	if err := oneLine("From", from.String()); err != nil {
		return nil, err
	}
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	if err := oneLine("Message-ID", domain); err != nil {
		return nil, err
	}
	date := m.Date
	if date.IsZero() {
		date = time.Now()
	}

	var b bytes.Buffer
	h := func(name, value string) { b.WriteString(name + ": " + value + "\r\n") }
	h("Date", date.Format(time.RFC1123Z))
	h("From", from.String())
	h("To", (&mail.Address{Address: to.Address}).String())
	h("Subject", encodeHeader(m.Subject))
	h("Message-ID", "<"+m.ID+"@"+domain+">")
	h("MIME-Version", "1.0")
	names := make([]string, 0, len(m.Headers))
	for name := range m.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := m.Headers[name]
		if !headerName.MatchString(name) {
			return nil, invalid("%q is not a header name", clip(name, 40))
		}
		canon := textproto.CanonicalMIMEHeaderKey(name)
		if reserved[canon] {
			return nil, invalid("the header %s is written by the mailer, not by the caller", canon)
		}
		if err := oneLine(canon, v); err != nil {
			return nil, err
		}
		h(canon, encodeHeader(v))
	}
	if m.HTML == "" {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "quoted-printable")
		b.WriteString("\r\n")
		if err := writeQP(&b, m.Text); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	// "=_" cannot appear in quoted-printable text ('=' is always followed by two hex digits or a
	// line end there) nor in base64, so no part's body can contain a boundary.
	alternative := "=_" + randomHex(16)
	if len(m.Inline) == 0 {
		h("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": alternative}))
		b.WriteString("\r\n")
		if err := writeAlternative(&b, alternative, m); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	total := 0
	for _, in := range m.Inline {
		if !contentID.MatchString(in.CID) {
			return nil, invalid("%q is not a content id", clip(in.CID, 40))
		}
		if in.ContentType != "image/png" && in.ContentType != "image/jpeg" {
			return nil, invalid("inline images are PNG or JPEG, not %q", clip(in.ContentType, 40))
		}
		total += len(in.Data)
	}
	if total > maxInline {
		return nil, invalid("the inline images are %d bytes, over %d", total, maxInline)
	}
	related := "=_" + randomHex(16)
	h("Content-Type", mime.FormatMediaType("multipart/related", map[string]string{"boundary": related, "type": "multipart/alternative"}))
	b.WriteString("\r\n")
	rw := multipart.NewWriter(&b)
	if err := rw.SetBoundary(related); err != nil {
		return nil, err
	}
	aw, err := rw.CreatePart(textproto.MIMEHeader{"Content-Type": {mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": alternative})}})
	if err != nil {
		return nil, err
	}
	if err := writeAlternative(aw, alternative, m); err != nil {
		return nil, err
	}
	for i, in := range m.Inline {
		ext := ".png"
		if in.ContentType == "image/jpeg" {
			ext = ".jpg"
		}
		pw, err := rw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {in.ContentType},
			"Content-Transfer-Encoding": {"base64"},
			"Content-ID":                {"<" + in.CID + ">"},
			"Content-Disposition":       {fmt.Sprintf("inline; filename=\"image-%d%s\"", i+1, ext)},
		})
		if err != nil {
			return nil, err
		}
		if err := writeBase64(pw, in.Data); err != nil {
			return nil, err
		}
	}
	if err := rw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeAlternative writes m's text and HTML parts as a multipart/alternative body.
func writeAlternative(w io.Writer, boundary string, m Message) error {
	mw := multipart.NewWriter(w)
	if err := mw.SetBoundary(boundary); err != nil {
		return err
	}
	for _, part := range []struct{ typ, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.typ + "; charset=utf-8"},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return err
		}
		if err := writeQP(pw, part.body); err != nil {
			return err
		}
	}
	return mw.Close()
}

// writeBase64 writes data in base64 lines of 76 characters (RFC 2045).
func writeBase64(w io.Writer, data []byte) error {
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 0 {
		n := min(76, len(enc))
		if _, err := io.WriteString(w, enc[:n]+"\r\n"); err != nil {
			return err
		}
		enc = enc[n:]
	}
	return nil
}

// oneLine refuses a header value with a line break, a NUL, or more than fits on a line.
func oneLine(name, v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return invalid("the %s header's value holds a line break", name)
	}
	if len(v) > maxHeaderValue {
		return invalid("the %s header's value is longer than %d bytes", name, maxHeaderValue)
	}
	return nil
}

// encodeHeader returns v as it goes in a header: unchanged when it is printable ASCII, else as
// RFC 2047 Q-encoded words, folded between the words so that no line grows past the limit.
func encodeHeader(v string) string {
	return strings.ReplaceAll(mime.QEncoding.Encode("utf-8", v), "?= =?", "?=\r\n =?")
}

// writeQP writes s quoted-printable, its line ends as CRLF.
func writeQP(w interface{ Write([]byte) (int, error) }, s string) error {
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write([]byte(s)); err != nil {
		return err
	}
	return qp.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
