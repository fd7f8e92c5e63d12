package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/mail"
)

// mailCmd: slipway mail test --to ADDRESS sends one message through the configured relay at once,
// bypassing the outbox, so that an operator sees what the relay says of the configuration (TLS,
// the password, the sender) in one line instead of in the mail sender's retries; slipway mail
// status counts the outbox.
func mailCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "test" && args[0] != "status") {
		return usageError("want one of: test, status")
	}
	if args[0] == "status" {
		if len(args) > 1 {
			return usageError("usage: slipway mail status")
		}
		return mailStatus(ctx, getenv, stdout, stderr)
	}
	fs := newFlagSet("mail test", stderr)
	to := fs.String("to", "", "the address to send the test message to")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if *to == "" || fs.NArg() != 0 {
		return usageError("usage: slipway mail test --to ADDRESS")
	}
	addr, err := distribution.NormaliseEmail(*to)
	if err != nil {
		return usageError("--to: " + err.Error())
	}
	cfg, _, err := loadConfig(getenv, stderr)
	if err != nil {
		return err
	}
	mc := cfg.Mail
	if !mc.On {
		return fmt.Errorf("mail is off: set SLIPWAY_SMTP_URL and SLIPWAY_MAIL_FROM (docs/operations.md, Mail)")
	}
	c, err := mail.New(mail.Options{Relay: mc.Relay, Password: mc.Password, From: mc.From, RootCAs: mc.RootCAs, Timeout: mc.Timeout})
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := "test." + hex.EncodeToString(b)
	err = c.Send(ctx, mail.Message{ID: id, To: addr, Subject: "Slipway: a test message",
		Text: "This message was sent by `slipway mail test` at " + time.Now().UTC().Format(time.RFC1123) +
			" through " + mc.Relay.String() + ".\nMail to testers leaves the same way.\n"})
	if err != nil {
		return fmt.Errorf("%s refused the test message (%s, a retry %s): %v", mc.Relay, mail.ClassOf(err), retryHint(mail.ClassOf(err)), err)
	}
	domain := mc.From.Address[strings.LastIndexByte(mc.From.Address, '@')+1:]
	fmt.Fprintf(stdout, "sent a test message to %s through %s (Message-ID <%s@%s>)\n", addr, mc.Relay, id, domain)
	return nil
}

// retryHint says what the mail sender does with a failure of class c.
func retryHint(c mail.Class) string {
	switch c {
	case mail.Permanent:
		return "is tried 3 times at most"
	case mail.Invalid:
		return "cannot help"
	}
	return "may succeed"
}

// mailStatus prints the outbox's counts.
func mailStatus(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) error {
	a, err := openChecked(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	c, err := a.db.MailCounts(ctx)
	if err != nil {
		return err
	}
	relay := "off (SLIPWAY_SMTP_URL is not set)"
	if a.cfg.Mail.On {
		relay = a.cfg.Mail.Relay.String()
	}
	fmt.Fprintf(stdout, "relay:   %s\npending: %d\nfailed:  %d\n", relay, c.Pending, c.Failed)
	return nil
}
