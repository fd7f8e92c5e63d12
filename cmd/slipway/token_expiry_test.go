package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
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

	db, err := store.Open(ctx, dbURL, store.Options{})
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
		if len(f) == 7 && f[1] == "forever" && (f[5] != "never" || f[6] != "active") {
			t.Errorf("a token without expiry: %q, want EXPIRES never and active", line)
		}
		if len(f) == 7 && f[1] == "ci" && (f[5] == "never" || f[6] != "expired") {
			t.Errorf("the expired token: %q", line)
		}
	}
}
