package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

func TestParseExpiry(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90d":                  now.AddDate(0, 0, 90),
		"36h":                  now.Add(36 * time.Hour),
		"2027-01-31":           time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC),
		"2027-01-31T10:00:00Z": time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC),
	} {
		if got, err := parseExpiry(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0d", "-3d", "tomorrow", "2020-01-01", "-1h", ""} {
		if _, err := parseExpiry(bad, now); err == nil {
			t.Errorf("parseExpiry(%q) accepted", bad)
		}
	}
}

// `token create --expires` makes a token that works until then and is refused after, as a revoked
// one is; `token list` shows when each expires and which have.
func TestTokenExpires(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	env := envOf(map[string]string{"SLIPWAY_DATABASE_URL": dbURL})
	runCmd := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, env, &stdout, &stderr); code != want {
			t.Fatalf("slipway %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, &stdout, &stderr)
		}
		return stdout.String()
	}
	out := runCmd(0, "token", "create", "--name", "ci", "--expires", "30d")
	if !strings.Contains(out, "expiring") {
		t.Errorf("token create --expires: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	secret := lines[len(lines)-1]
	runCmd(2, "token", "create", "--name", "late", "--expires", "2020-01-01")
	runCmd(2, "token", "list", "--expires", "3d")
	runCmd(2, "token", "create", "--name", "remote", "--expires", "3d", "--url", "http://127.0.0.1:1", "--token", "x")

	db, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Authenticate(ctx, secret); err != nil {
		t.Fatalf("a token before its expiry: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'ci'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(ctx, secret); errs.KindOf(err) != errs.Unauthenticated || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("an expired token: %v, want 401", err)
	}
	list := runCmd(0, "token", "list")
	if !strings.Contains(list, "EXPIRES") || !strings.Contains(list, "expired") {
		t.Errorf("token list does not show the expiry:\n%s", list)
	}
	runCmd(0, "token", "create", "--name", "forever")
	for _, line := range strings.Split(runCmd(0, "token", "list"), "\n") {
		f := strings.Fields(line)
		if len(f) == 9 && f[1] == "forever" && (f[7] != "never" || f[8] != "active") {
			t.Errorf("a token without expiry: %q, want EXPIRES never and active", line)
		}
		if len(f) == 9 && f[1] == "ci" && (f[7] == "never" || f[8] != "expired") {
			t.Errorf("the expired token: %q", line)
		}
	}
}

// `token create --app --ability` makes a token limited to those apps (by name or id) and
// abilities; `token list` shows the limits; an unknown app or ability is refused and makes
// nothing.
func TestTokenLimits(t *testing.T) {
	ctx := context.Background()
	dbURL := testenv.DatabaseURL(t)
	env := envOf(map[string]string{"SLIPWAY_DATABASE_URL": dbURL})
	runCmd := func(want int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, env, &stdout, &stderr); code != want {
			t.Fatalf("slipway %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, &stdout, &stderr)
		}
		return stdout.String() + stderr.String()
	}
	runCmd(0, "token", "list") // migrates nothing, but checks the schema is there
	db, err := postgres.Open(ctx, dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alpha, err := db.CreateApp(ctx, "Alpha")
	if err != nil {
		t.Fatal(err)
	}
	bravo, err := db.CreateApp(ctx, "Bravo")
	if err != nil {
		t.Fatal(err)
	}
	out := runCmd(0, "token", "create", "--name", "ci-alpha", "--app", "Alpha", "--app", fmt.Sprint(bravo.ID), "--ability", "upload,read")
	if !strings.Contains(out, fmt.Sprintf("limited to apps %d,%d", alpha.ID, bravo.ID)) || !strings.Contains(out, "limited to read,upload") {
		t.Errorf("token create --app --ability: %q", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tok, err := db.Authenticate(ctx, lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tok.Apps, []int64{alpha.ID, bravo.ID}) || !slices.Equal(tok.Abilities, []string{"read", "upload"}) {
		t.Errorf("the token's limits: apps %v, abilities %v", tok.Apps, tok.Abilities)
	}
	if a := distribution.TokenActor(tok); !a.LimitedTo(alpha.ID) || a.LimitedTo(bravo.ID+1) || !a.Can("read") || a.Can("devices") {
		t.Errorf("the token's actor: %+v", a)
	}
	runCmd(0, "token", "create", "--name", "ops")
	found := 0
	for _, line := range strings.Split(runCmd(0, "token", "list"), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 9 && f[1] == "ci-alpha":
			found++
			if f[3] != fmt.Sprintf("%d,%d", alpha.ID, bravo.ID) || f[4] != "read,upload" {
				t.Errorf("token list shows the limited token as %q", line)
			}
		case len(f) == 9 && f[1] == "ops":
			found++
			if f[3] != "any" || f[4] != "all" {
				t.Errorf("token list shows the unlimited token as %q", line)
			}
		}
	}
	if found != 2 {
		t.Errorf("token list shows %d of the 2 tokens", found)
	}
	if out := runCmd(1, "token", "create", "--name", "x", "--app", "Charlie"); !strings.Contains(out, "Charlie") {
		t.Errorf("an unknown app: %q", out)
	}
	if out := runCmd(1, "token", "create", "--name", "x", "--ability", "root"); !strings.Contains(out, "root") {
		t.Errorf("an unknown ability: %q", out)
	}
	runCmd(2, "token", "list", "--app", "Alpha")
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens WHERE name = 'x'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("refused creations made %d tokens (%v)", n, err)
	}
}
