// Package mailpit gives tests a real SMTP relay: a Mailpit process of the test's own (the pinned
// binary test/with-services.sh builds and names in SLIPWAY_TEST_MAILPIT), on free loopback ports,
// with TLS (a certificate made for the test, whose CA the test's client trusts: verified, never
// skipped), SMTP authentication and chaos mode (the relay refuses on command) when asked. Its HTTP
// API reads what arrived as a tester's mailbox would: the messages to an address, their text,
// HTML and headers.
//
//	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.ImplicitTLS, User: "slipway", Password: "pw"})
//	... start Slipway with srv.Env(t), or send to srv.SMTPURL() trusting srv.CAFile ...
//	msgs := srv.WaitFor(t, "tester@example.com", 1)
//	m := srv.Message(t, msgs[0].ID) // m.Text, m.HTML, m.Headers
package mailpit

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/test/testkit"
)

// TLS is how the test relay speaks TLS.
type TLS int

const (
	// NoTLS offers no STARTTLS (an smtp:// client must refuse it).
	NoTLS TLS = iota
	// OptionalSTARTTLS offers STARTTLS and takes mail without it too.
	OptionalSTARTTLS
	// RequireSTARTTLS offers STARTTLS and refuses mail before it (--smtp-require-starttls).
	RequireSTARTTLS
	// ImplicitTLS is TLS from the first byte (--smtp-require-tls), as on port 465.
	ImplicitTLS
)

// Options shape the relay.
type Options struct {
	TLS TLS
	// User and Password, when User is set, are the only credentials the relay accepts (and it
	// requires them); over NoTLS they are allowed in clear (--smtp-auth-allow-insecure).
	User, Password string
	// Chaos turns chaos mode on (Refuse, Accept).
	Chaos bool
}

// Server is a running Mailpit.
type Server struct {
	// SMTPAddr and HTTPAddr are host:port on 127.0.0.1.
	SMTPAddr, HTTPAddr string
	// CAFile is the PEM file of the CA that signed the relay's certificate ("" without TLS).
	CAFile string
	opts   Options
	client *http.Client
}

// Binary returns the Mailpit binary's path, or skips the test (fails it under
// SLIPWAY_TEST_REQUIRE_SERVICES=1) when SLIPWAY_TEST_MAILPIT is not set.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("SLIPWAY_TEST_MAILPIT")
	if bin == "" {
		msg := "SLIPWAY_TEST_MAILPIT is not set: run the tests under test/with-services.sh (make test), which builds Mailpit once and caches it"
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return bin
}

// Start starts a Mailpit for the test, stopped when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	bin := Binary(tb)
	dir := tb.TempDir()
	var lastErr error
	for try := 0; try < 5; try++ {
		srv, err := start(tb, bin, dir, opts)
		if err == nil {
			return srv
		}
		lastErr = err // most likely a port taken between FreePort and the listen: try others
	}
	tb.Fatalf("starting Mailpit: %v", lastErr)
	return nil
}

func start(tb testing.TB, bin, dir string, opts Options) (*Server, error) {
	smtpPort, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := testkit.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{SMTPAddr: "127.0.0.1:" + strconv.Itoa(smtpPort), HTTPAddr: "127.0.0.1:" + strconv.Itoa(httpPort), opts: opts,
		client: &http.Client{Timeout: 10 * time.Second}}
	args := []string{"--smtp", s.SMTPAddr, "--listen", s.HTTPAddr, "--database", filepath.Join(dir, fmt.Sprintf("mailpit-%d.db", smtpPort)),
		"--max", "0", "--disable-version-check", "--smtp-disable-rdns", "--quiet"}
	if opts.TLS != NoTLS {
		ca, cert, key := writeCerts(tb, dir)
		s.CAFile = ca
		args = append(args, "--smtp-tls-cert", cert, "--smtp-tls-key", key)
		switch opts.TLS {
		case RequireSTARTTLS:
			args = append(args, "--smtp-require-starttls")
		case ImplicitTLS:
			args = append(args, "--smtp-require-tls")
		}
	}
	if opts.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, "smtp-auth")
		if err := os.WriteFile(f, []byte(opts.User+":"+string(hash)+"\n"), 0o600); err != nil {
			return nil, err
		}
		args = append(args, "--smtp-auth-file", f)
		if opts.TLS == NoTLS {
			args = append(args, "--smtp-auth-allow-insecure")
		}
	}
	if opts.Chaos {
		args = append(args, "--enable-chaos")
	}
	var out testkit.LockedBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, fmt.Errorf("mailpit exited: %s", out.String())
		default:
		}
		if s.ready() {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("mailpit did not become ready: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Cleanup(func() {
		stop()
		if tb.Failed() && out.Len() > 0 {
			tb.Logf("mailpit's output:\n%s", out.String())
		}
	})
	return s, nil
}

// ready reports whether both of Mailpit's listeners answer.
func (s *Server) ready() bool {
	resp, err := s.client.Get("http://" + s.HTTPAddr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	c, err := net.DialTimeout("tcp", s.SMTPAddr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// SMTPURL is the URL by which Slipway reaches this relay (SLIPWAY_SMTP_URL): smtps:// for
// ImplicitTLS, smtp:// (STARTTLS required) for the STARTTLS modes and for NoTLS (where a client
// must refuse to send), with the user when the relay has one.
func (s *Server) SMTPURL() string {
	scheme := "smtp"
	if s.opts.TLS == ImplicitTLS {
		scheme = "smtps"
	}
	return s.URL(scheme)
}

// URL is the relay's URL with another scheme (smtp+insecure for a plain submission).
func (s *Server) URL(scheme string) string {
	u := url.URL{Scheme: scheme, Host: s.SMTPAddr}
	if s.opts.User != "" {
		u.User = url.User(s.opts.User)
	}
	return u.String()
}

// From is the sender Env configures (SLIPWAY_MAIL_FROM); Message-IDs end with its domain.
const From = "Slipway <builds@slipway.example>"

// Env is the environment that points a Slipway server (or config.Load) at this relay:
// SLIPWAY_SMTP_URL (smtps:// for ImplicitTLS, smtp:// for the STARTTLS modes, smtp+insecure://
// without TLS), the CA file, the sender, and a password file when the relay has a user. Add
// SLIPWAY_MAIL_POLL_INTERVAL or SLIPWAY_MAIL_RETRY_BASE as the test needs.
func (s *Server) Env(tb testing.TB) []string {
	tb.Helper()
	u := s.SMTPURL()
	if s.opts.TLS == NoTLS {
		u = s.URL("smtp+insecure")
	}
	env := []string{"SLIPWAY_SMTP_URL=" + u, "SLIPWAY_MAIL_FROM=" + From}
	if s.CAFile != "" {
		env = append(env, "SLIPWAY_SMTP_CA_FILE="+s.CAFile)
	}
	if s.opts.User != "" {
		f := filepath.Join(tb.TempDir(), "smtp-password")
		if err := os.WriteFile(f, []byte(s.opts.Password+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		env = append(env, "SLIPWAY_SMTP_PASSWORD_FILE="+f)
	}
	return env
}

// Address is a mailbox as Mailpit reports it.
type Address struct {
	Name    string
	Address string
}

// Summary is a message in Mailpit's list.
type Summary struct {
	// ID is Mailpit's id of the message (for Message), not its Message-ID.
	ID        string
	MessageID string
	From      *Address
	To        []Address
	Subject   string
	Created   time.Time
}

// Message is one message as Mailpit parsed it.
type Message struct {
	ID        string
	MessageID string
	From      *Address
	To        []Address
	Subject   string
	Text      string
	HTML      string
	// Headers are the message's headers as they arrived, by name.
	Headers map[string][]string
	// Raw is the message's source.
	Raw []byte
}

// Messages lists every message the relay holds, newest first.
func (s *Server) Messages(tb testing.TB) []Summary {
	tb.Helper()
	var out []Summary
	for start := 0; ; {
		var page struct {
			Total    int
			Messages []Summary
		}
		s.getJSON(tb, fmt.Sprintf("/api/v1/messages?start=%d&limit=500", start), &page)
		out = append(out, page.Messages...)
		start += len(page.Messages)
		if len(page.Messages) == 0 || start >= page.Total {
			return out
		}
	}
}

// To lists the messages to address (case-insensitive).
func (s *Server) To(tb testing.TB, address string) []Summary {
	tb.Helper()
	var out []Summary
	for _, m := range s.Messages(tb) {
		for _, a := range m.To {
			if strings.EqualFold(a.Address, address) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// WaitFor waits (for up to a minute) until at least n messages to address have arrived, and
// returns those there are then.
func (s *Server) WaitFor(tb testing.TB, address string, n int) []Summary {
	tb.Helper()
	var got []Summary
	testkit.Eventually(tb, time.Minute, fmt.Sprintf("%d messages to %s", n, address), func() bool {
		got = s.To(tb, address)
		return len(got) >= n
	})
	return got
}

// Message reads one message by Mailpit's id: its parts, headers and source.
func (s *Server) Message(tb testing.TB, id string) Message {
	tb.Helper()
	var m Message
	s.getJSON(tb, "/api/v1/message/"+url.PathEscape(id), &m)
	s.getJSON(tb, "/api/v1/message/"+url.PathEscape(id)+"/headers", &m.Headers)
	m.Raw = s.get(tb, "/api/v1/message/"+url.PathEscape(id)+"/raw")
	return m
}

// DeleteAll empties the mailbox.
func (s *Server) DeleteAll(tb testing.TB) {
	tb.Helper()
	s.do(tb, http.MethodDelete, "/api/v1/messages", []byte(`{}`))
}

// Refuse makes the relay answer code (4xx: try later; 5xx: refused) to every MAIL FROM, through
// chaos mode (Options.Chaos); Accept undoes it.
func (s *Server) Refuse(tb testing.TB, code int) {
	tb.Helper()
	s.chaos(tb, code, 100)
}

// Accept makes a refusing relay take mail again.
func (s *Server) Accept(tb testing.TB) {
	tb.Helper()
	s.chaos(tb, 451, 0)
}

func (s *Server) chaos(tb testing.TB, code, probability int) {
	tb.Helper()
	if !s.opts.Chaos {
		tb.Fatal("mailpit: Refuse and Accept need Options.Chaos")
	}
	body, _ := json.Marshal(map[string]any{"Sender": map[string]int{"ErrorCode": code, "Probability": probability}})
	s.do(tb, http.MethodPut, "/api/v1/chaos", body)
}

func (s *Server) getJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	if err := json.Unmarshal(s.get(tb, path), v); err != nil {
		tb.Fatalf("mailpit %s: %v", path, err)
	}
}

func (s *Server) get(tb testing.TB, path string) []byte {
	tb.Helper()
	return s.do(tb, http.MethodGet, path, nil)
}

func (s *Server) do(tb testing.TB, method, path string, body []byte) []byte {
	tb.Helper()
	req, err := http.NewRequest(method, "http://"+s.HTTPAddr+path, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		tb.Fatalf("mailpit %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("mailpit %s %s: %d %s %v", method, path, resp.StatusCode, b, err)
	}
	return b
}

// writeCerts makes a CA and a certificate it signs for 127.0.0.1 and localhost, and writes the
// CA's certificate, the relay's certificate and its key as PEM files in dir.
func writeCerts(tb testing.TB, dir string) (caFile, certFile, keyFile string) {
	tb.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "slipway test mail CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	suffix := testkit.RandomHex(4)
	caFile, certFile, keyFile = filepath.Join(dir, "ca-"+suffix+".pem"), filepath.Join(dir, "cert-"+suffix+".pem"), filepath.Join(dir, "key-"+suffix+".pem")
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{caFile, "CERTIFICATE", caDER}, {certFile, "CERTIFICATE", leafDER}, {keyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return caFile, certFile, keyFile
}

// CertPool returns the pool of the relay's CA, for a client's RootCAs (nil without TLS).
func (s *Server) CertPool(tb testing.TB) *x509.CertPool {
	tb.Helper()
	if s.CAFile == "" {
		return nil
	}
	b, err := os.ReadFile(s.CAFile)
	if err != nil {
		tb.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		tb.Fatal("mailpit: the CA file holds no certificate")
	}
	return p
}
