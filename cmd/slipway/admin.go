package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
)

// adminCmd: slipway admin login-link prints a one-time link that signs in to the console as the
// local admin, for installations without an identity provider (and to get in when it is down);
// with --email, as the user of that email (a colleague invited where mail is off signs in so).
func adminCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "login-link" {
		return usageError("usage: slipway admin login-link [--email ADDRESS]")
	}
	fs := newFlagSet("admin login-link", stderr)
	email := fs.String("email", "", "sign in as the user with this email (a colleague invited while mail is off) instead of the administrator")
	if err := parseFlags(fs, args[1:], stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("usage: slipway admin login-link [--email ADDRESS]")
	}
	a, err := openChecked(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	who := "the administrator"
	var secret string
	if *email != "" {
		secret, err = a.svc.Colleagues.LoginLinkFor(ctx, *email)
		who = *email
	} else {
		secret, err = a.svc.Logins.NewLoginLink(ctx)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Open this link within 15 minutes to sign in to the console as %s; it works once:\n", who)
	fmt.Fprintln(stdout, a.cfg.PublicURL+"/console/login-link?token="+url.QueryEscape(secret))
	return nil
}
