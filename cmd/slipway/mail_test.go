package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/test/mailpit"
	"github.com/slipwayhq/slipway/test/testenv"
)

func envPairs(pairs []string) func(string) string {
	m := map[string]string{}
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}

// TestMailTest: `slipway mail test` delivers through the configured relay and says so; a relay
// that breaks the URL's promise (no STARTTLS for smtp://) is one line naming why, with no
// password; without a relay it says mail is off.
func TestMailTest(t *testing.T) {
	ctx := context.Background()
	srv := mailpit.Start(t, mailpit.Options{TLS: mailpit.ImplicitTLS, User: "slipway", Password: "relay-secret-9"})
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"mail", "test", "--to", "Ops@Example.com"}, envPairs(srv.Env(t)), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "sent a test message to ops@example.com through smtps://slipway@127.0.0.1:") {
		t.Errorf("stdout %q", stdout.String())
	}
	if got := srv.WaitFor(t, "ops@example.com", 1); len(got) != 1 || got[0].Subject != "Slipway: a test message" {
		t.Errorf("arrived %+v", got)
	}

	plain := mailpit.Start(t, mailpit.Options{TLS: mailpit.NoTLS})
	stdout.Reset()
	stderr.Reset()
	env := append(plain.Env(t), "SLIPWAY_SMTP_URL="+plain.URL("smtp"))
	if code := run(ctx, []string{"mail", "test", "--to", "ops@example.com"}, envPairs(env), &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "STARTTLS") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
		t.Errorf("no STARTTLS: exit %d, %q", code, stderr.String())
	}
	if n := len(plain.Messages(t)); n != 0 {
		t.Errorf("%d messages went out in clear", n)
	}

	stderr.Reset()
	noPassword := srv.Env(t)[:2] // the URL (with its user) and the sender
	if code := run(ctx, []string{"mail", "test", "--to", "ops@example.com"}, envPairs(noPassword), &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "SLIPWAY_SMTP_PASSWORD_FILE") {
		t.Errorf("a user without a password: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(ctx, []string{"mail", "test", "--to", "ops@example.com"}, envPairs(nil), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "mail is off") {
		t.Errorf("mail off: exit %d, %q", code, stderr.String())
	}
	if code := run(ctx, []string{"mail", "test"}, envPairs(nil), &stdout, &stderr); code != 2 {
		t.Errorf("no --to: exit %d", code)
	}
}

// TestMailStatus counts the outbox of a database.
func TestMailStatus(t *testing.T) {
	url := testenv.DatabaseURL(t)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"mail", "status"}, envPairs([]string{"SLIPWAY_DATABASE_URL=" + url}), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "relay:   off (SLIPWAY_SMTP_URL is not set)\npending: 0\nfailed:  0\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}
