package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/repokey"
)

// Every command answers -h and --help with its usage on stdout and exit code 0, without doing
// anything else (serve --help must not serve, token create --help must not open a database).
func TestHelpOfEveryCommand(t *testing.T) {
	getenv := func(string) string { return "" } // no database: a command that tried to run would fail
	for _, line := range [][]string{
		{"help"}, {"--help"}, {"-h"},
		{"serve", "--help"}, {"migrate", "--help"}, {"migrate", "up", "-h"}, {"migrate", "down", "--help"}, {"migrate", "force", "-h"}, {"token", "--help"},
		{"token", "create", "--help"}, {"token", "list", "-h"}, {"token", "revoke", "--help"},
		{"gc", "--help"}, {"admin", "login-link", "--help"}, {"retention", "--help"},
		{"retention", "plan", "-help"}, {"upload", "--help"}, {"upload", "app.ipa", "--url", "x", "-h"},
		{"debug-file", "--help"}, {"debug-file", "upload", "--help"}, {"distribute", "--help"}, {"mail", "--help"}, {"mail", "test", "--help"}, {"mail", "status", "-h"}, {"repo-key", "--help"}, {"repo-key", "generate", "--help"}, {"version", "--help"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var stdout, stderr bytes.Buffer
		code := run(ctx, line, getenv, &stdout, &stderr)
		cancel()
		name := strings.Join(line, " ")
		if code != 0 {
			t.Errorf("slipway %s: exit %d, want 0 (stderr %q)", name, code, stderr.String())
		}
		if out := stdout.String(); !strings.HasPrefix(out, "Usage") || !strings.HasSuffix(out, "\n") {
			t.Errorf("slipway %s: stdout %q, want a usage ending with a newline", name, out)
		}
		if stderr.Len() != 0 {
			t.Errorf("slipway %s: wrote %q to stderr", name, stderr.String())
		}
	}
}

// A command's help names that command, and a wrong flag is still a usage error (exit 2).
func TestHelpNamesTheCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--help"}, func(string) string { return "" }, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "serve") || strings.Contains(stdout.String(), "migrate up") {
		t.Errorf("serve --help: exit %d, %q", code, stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"gc", "--bogus"}, func(string) string { return "" }, &stdout, &stderr); code != 2 {
		t.Errorf("gc --bogus: exit %d, want 2", code)
	}
}

// gc's reconcile flags are refused where they mean nothing, before anything is opened (exit 2).
func TestGCReconcileFlags(t *testing.T) {
	getenv := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gc", "--dry-run"}, "go with --reconcile"},
		{[]string{"gc", "--min-age", "0s"}, "go with --reconcile"},
		{[]string{"gc", "--reconcile", "--grace", "1s"}, "--grace is for the collector"},
		{[]string{"gc", "--reconcile", "--min-age", "-1s"}, "must not be negative"},
		{[]string{"gc", "--reconcile", "extra"}, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), c.args, getenv, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("slipway %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, stderr.String(), c.want)
		}
	}
}

// repo-key generate prints a private key that SLIPWAY_REPO_KEY_FILE accepts, and needs nothing
// configured.
func TestRepoKeyGenerate(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"repo-key", "generate", "--name", "Example builds", "--email", "builds@example.com"},
		func(string) string { return "" }, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	k, err := repokey.Parse(stdout.Bytes())
	if err != nil {
		t.Fatalf("the generated key: %v", err)
	}
	if !strings.Contains(stderr.String(), k.Fingerprints()[0]) || strings.Contains(stderr.String(), "PRIVATE") {
		t.Errorf("stderr %q", stderr.String())
	}
	if code := run(context.Background(), []string{"repo-key"}, func(string) string { return "" }, &stdout, &stderr); code != 2 {
		t.Errorf("repo-key without generate: exit %d", code)
	}
}
