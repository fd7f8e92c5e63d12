package mailpit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/test/mailpit"
)

// TestEnvConfiguresSlipway: the environment Env gives loads (config.Load) into a client that
// delivers to the relay, for each TLS mode, and the helper reads the mail back.
func TestEnvConfiguresSlipway(t *testing.T) {
	for _, tls := range []mailpit.TLS{mailpit.ImplicitTLS, mailpit.RequireSTARTTLS, mailpit.NoTLS} {
		srv := mailpit.Start(t, mailpit.Options{TLS: tls, User: "slipway", Password: "relay-pass"})
		env := map[string]string{}
		for _, kv := range srv.Env(t) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		cfg, err := config.Load(func(k string) string { return env[k] })
		if err != nil || !cfg.Mail.On {
			t.Fatalf("mode %d: %v", tls, err)
		}
		c, err := mail.New(mail.Options{Relay: cfg.Mail.Relay, Password: cfg.Mail.Password, From: cfg.Mail.From, RootCAs: cfg.Mail.RootCAs})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(context.Background(), mail.Message{ID: "env1", To: "Tester@Example.com", Subject: "Hi", Text: "link: https://x.example/t/1", HTML: "<b>hi</b>"}); err != nil {
			t.Fatalf("mode %d: %v", tls, err)
		}
		got := srv.WaitFor(t, "tester@example.com", 1)
		m := srv.Message(t, got[0].ID)
		if m.MessageID != "env1@slipway.example" || !strings.Contains(m.Text, "https://x.example/t/1") || m.HTML != "<b>hi</b>" || len(m.Raw) == 0 {
			t.Errorf("mode %d: %+v", tls, m)
		}
		srv.DeleteAll(t)
		if n := len(srv.Messages(t)); n != 0 {
			t.Errorf("%d messages after DeleteAll", n)
		}
	}
}
