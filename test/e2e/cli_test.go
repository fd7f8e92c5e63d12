package e2e_test

import (
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestTokenRoundTrip drives `slipway token create/list/revoke` as an operator does: create prints
// the secret alone on its last line, list never shows a secret, revoke makes the token useless to
// the running server.
func TestTokenRoundTrip(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)

	create := h.MustRun(t, "token", "create", "--name", "ci-bot", "--scope", "upload")
	secret := create.LastLine()
	if !regexp.MustCompile(`^\S{24,}$`).MatchString(secret) {
		t.Fatalf("last line of token create is not a token alone: %q\n%s", secret, create)
	}
	admin := h.MustRun(t, "token", "create", "--name", "ops", "--scope", "admin").LastLine()
	if admin == secret {
		t.Fatal("two tokens share a secret")
	}
	if dup := h.Run(t, "token", "create", "--name", "ci-bot"); dup.ExitCode == 0 || !strings.Contains(dup.Stderr, "already exists") {
		t.Errorf("a second active token with the same name was accepted:\n%s", dup)
	}

	// The token works against the running server: the create-app endpoint needs admin scope, so
	// the upload token gets 403 (known, but not allowed) and a bogus one 401.
	if r := appsPost(t, s, secret); r.Status != 403 {
		t.Errorf("upload-scope token on POST /api/apps: status %d, want 403: %s", r.Status, r.Body)
	}
	if r := appsPost(t, s, admin); r.Status != 201 {
		t.Errorf("admin token on POST /api/apps: status %d, want 201: %s", r.Status, r.Body)
	}

	list := h.MustRun(t, "token", "list")
	for _, name := range []string{"ci-bot", "ops"} {
		if !regexp.MustCompile(`(?m)^\d+\s+` + name + `\s+\S+\s+.*\bactive\b`).MatchString(list.Stdout) {
			t.Errorf("token list does not show %s as active:\n%s", name, list.Stdout)
		}
	}
	assertNoSecret(t, list, secret, admin)

	revoke := h.MustRun(t, "token", "revoke", "ci-bot")
	assertNoSecret(t, revoke, secret, admin)
	list = h.MustRun(t, "token", "list")
	if !regexp.MustCompile(`(?m)^\d+\s+ci-bot\s+upload\s+.*\brevoked\b`).MatchString(list.Stdout) {
		t.Errorf("token list does not show ci-bot as revoked:\n%s", list.Stdout)
	}
	assertNoSecret(t, list, secret, admin)
	if r := appsPost(t, s, secret); r.Status != 401 {
		t.Errorf("revoked token: status %d, want 401: %s", r.Status, r.Body)
	}
	if again := h.Run(t, "token", "revoke", "ci-bot"); again.ExitCode == 0 {
		t.Errorf("revoking a revoked token succeeded:\n%s", again)
	}
	// The name is free again once revoked.
	h.MustRun(t, "token", "create", "--name", "ci-bot")
}

// TestMigrateVersion checks that `slipway migrate version` reports the newest embedded migration
// on a migrated database, and is clean.
func TestMigrateVersion(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	res := h.MustRun(t, "migrate", "version")
	want := 0
	files, _ := fs.Glob(migrations.FS, "*.up.sql")
	for _, f := range files {
		n, _ := strconv.Atoi(strings.SplitN(f, "_", 2)[0])
		want = max(want, n)
	}
	if got := res.LastLine(); got != "schema version "+strconv.Itoa(want) {
		t.Errorf("migrate version: %q, want %q (clean)\n%s", got, "schema version "+strconv.Itoa(want), res)
	}
	if bad := h.Run(t, "migrate", "sideways"); bad.ExitCode != 2 {
		t.Errorf("unknown migrate action: exit %d, want 2\n%s", bad.ExitCode, bad)
	}
}

// TestServeRejectsInvalidConfig checks that `slipway serve` refuses an invalid setting at start,
// with a non-zero exit and one line on stderr naming the variable (and never echoing a secret).
func TestServeRejectsInvalidConfig(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	cases := []struct{ name, value, secret string }{
		{"SLIPWAY_MAX_UPLOAD_BYTES", "abc", ""},
		{"SLIPWAY_MAX_UPLOAD_BYTES", "-5", ""},
		{"SLIPWAY_PUBLIC_URL", "ftp://x", ""},
		{"SLIPWAY_LOG_FORMAT", "xml", ""},
		{"SLIPWAY_LOG_LEVEL", "loud", ""},
		{"SLIPWAY_DRAIN_TIMEOUT", "soon", ""},
		{"SLIPWAY_INTERNAL_ADDR", "9090", ""},
		{"SLIPWAY_INTERNAL_ADDR", ":8080", ""}, // the same as SLIPWAY_ADDR
		{"SLIPWAY_MIGRATE_ON_START", "maybe", ""},
		{"SLIPWAY_MAX_CONCURRENT_UPLOADS", "0", ""},
		{"SLIPWAY_TIMEZONE", "Mars/Olympus", ""},
		{"SLIPWAY_TRUSTED_PROXIES", "10.0.0.0/99", ""},
		{"SLIPWAY_STORAGE_URL", "ftp://bucket", ""},
		{"SLIPWAY_SECRET", "too-short-hunter2", "hunter2"},
		{"SLIPWAY_DATABASE_URL", "mysql://root:hunter2@db/slipway", "hunter2"},
	}
	for _, c := range cases {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			res := h.RunEnv(t, []string{c.name + "=" + c.value}, "serve")
			if res.ExitCode == 0 {
				t.Fatalf("serve accepted %s=%s\n%s", c.name, c.value, res)
			}
			lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.name) {
				t.Errorf("stderr is not one line naming %s:\n%s", c.name, res.Stderr)
			}
			if c.secret != "" && strings.Contains(res.Stdout+res.Stderr, c.secret) {
				t.Errorf("the error echoes the secret value: %s", res.Stderr)
			}
		})
	}
}

func appsPost(t *testing.T, s *e2e.Server, token string) *e2e.Response {
	t.Helper()
	return s.Do(t, "POST", "/api/apps", strings.NewReader(`{"name":"Probe"}`),
		"Content-Type", "application/json", "Authorization", "Token "+token)
}

func assertNoSecret(t *testing.T, res e2e.Result, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(res.Stdout, s) || strings.Contains(res.Stderr, s) {
			t.Errorf("slipway %s printed a token secret:\n%s", strings.Join(res.Args, " "), res)
		}
	}
}
