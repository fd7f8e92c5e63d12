package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/mail"
)

// TestMail: mail is off without SLIPWAY_SMTP_URL; on, the URL, the sender and the password file
// are checked at start, each error one line naming its variable and never the password.
func TestMail(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.Mail.On || c.Mail.Rate != 10 || c.Mail.MaxAttempts != 12 || c.Mail.Timeout.String() != "30s" {
		t.Fatalf("defaults: %+v %v", c.Mail, err)
	}
	if c, _ := Load(env(map[string]string{"SLIPWAY_MAIL_FROM": "a@b.example"})); len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "mail is off") {
		t.Errorf("a sender without a relay: warnings %q", c.Warnings)
	}

	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("hunter2-relay\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte("\n"), 0o600)
	on := map[string]string{"SLIPWAY_SMTP_URL": "smtps://builds%40example.com@smtp.example.com", "SLIPWAY_SMTP_PASSWORD_FILE": pw,
		"SLIPWAY_MAIL_FROM": "Slipway <builds@example.com>", "SLIPWAY_MAIL_RATE": "2.5"}
	c, err = Load(env(on))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Mail.On || c.Mail.Relay != (mail.Relay{Security: mail.ImplicitTLS, Host: "smtp.example.com", Port: "465", User: "builds@example.com"}) ||
		string(c.Mail.Password) != "hunter2-relay" || c.Mail.From.Address != "builds@example.com" || c.Mail.Rate != 2.5 {
		t.Errorf("mail: %+v", c.Mail)
	}

	for name, change := range map[string]map[string]string{
		"SLIPWAY_SMTP_URL":           {"SLIPWAY_SMTP_URL": "smtps://u:hunter2-relay@smtp.example.com"},
		"SLIPWAY_MAIL_FROM":          {"SLIPWAY_MAIL_FROM": ""},
		"SLIPWAY_MAIL_RATE":          {"SLIPWAY_MAIL_RATE": "0"},
		"SLIPWAY_MAIL_MAX_ATTEMPTS":  {"SLIPWAY_MAIL_MAX_ATTEMPTS": "0"},
		"SLIPWAY_SMTP_TIMEOUT":       {"SLIPWAY_SMTP_TIMEOUT": "1ms"},
		"SLIPWAY_SMTP_CA_FILE":       {"SLIPWAY_SMTP_CA_FILE": pw},
		"SLIPWAY_SMTP_PASSWORD_FILE": {"SLIPWAY_SMTP_PASSWORD_FILE": empty},
	} {
		m := map[string]string{}
		for k, v := range on {
			m[k] = v
		}
		for k, v := range change {
			m[k] = v
		}
		_, err := Load(env(m))
		if err == nil || !strings.HasPrefix(err.Error(), name+":") || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: error %v, want one line starting with %s and no password", change, err, name)
		}
	}
	// A user needs a password file, and a password file a user.
	if _, err := Load(env(map[string]string{"SLIPWAY_SMTP_URL": "smtp://u@relay", "SLIPWAY_MAIL_FROM": "a@b.example"})); err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_SMTP_PASSWORD_FILE:") {
		t.Errorf("a user without a password: %v", err)
	}
	if _, err := Load(env(map[string]string{"SLIPWAY_SMTP_URL": "smtp+insecure://relay:25", "SLIPWAY_MAIL_FROM": "a@b.example", "SLIPWAY_SMTP_PASSWORD_FILE": pw})); err == nil || !strings.HasPrefix(err.Error(), "SLIPWAY_SMTP_PASSWORD_FILE:") {
		t.Errorf("a password without a user: %v", err)
	}
	if c, err := Load(env(map[string]string{"SLIPWAY_SMTP_URL": "smtp+insecure://postfix.mail:25", "SLIPWAY_MAIL_FROM": "a@b.example"})); err != nil || !c.Mail.On {
		t.Errorf("an in-cluster relay without auth: %v", err)
	}
}
