package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
)

// adminCmd: slipway admin login-link prints a one-time link that signs in to the console as the
// local admin, for installations without an identity provider (and to get in when it is down).
func adminCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] != "login-link" {
		return usageError("usage: slipway admin login-link")
	}
	a, err := openChecked(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer a.close()
	secret, err := a.svc.Logins.NewLoginLink(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Open this link within 15 minutes to sign in to the console as the administrator; it works once:")
	fmt.Fprintln(stdout, a.cfg.PublicURL+"/console/login-link?token="+url.QueryEscape(secret))
	return nil
}
