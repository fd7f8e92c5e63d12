package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestRetentionPlanCommand: `slipway retention plan`, from the database and over the API, lists
// what a policy deletes and deletes nothing.
func TestRetentionPlanCommand(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t, "SLIPWAY_RETENTION_INTERVAL=0")
	admin := h.CreateToken(t, "ops", "admin")
	dir := t.TempDir()
	var channelID int64
	for _, build := range []string{"1", "2", "3"} {
		ipa := writeFile(t, dir, "Keep-"+build+".ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Keep", BundleID: "com.example.keep", Version: "1.0", Build: build}))
		if res := h.Run(t, "upload", ipa, "--url", s.URL, "--token", admin, "--progress", "none"); res.ExitCode != 0 {
			t.Fatalf("upload:\n%s", res)
		}
	}
	channelID = h.QueryInt(t, `SELECT min(channel_id) FROM releases`)
	if r := call(t, s, "PUT", fmt.Sprintf("/api/channels/%d/retention", channelID), admin, `{"keep_builds":1}`); r.Status != 200 {
		t.Fatalf("set policy: %d %s", r.Status, r.Body)
	}
	for _, args := range [][]string{
		{"retention", "plan"},
		{"retention", "plan", "--channel", fmt.Sprint(channelID)},
		{"retention", "plan", "--url", s.URL, "--token", admin},
		{"retention", "plan", "--url", s.URL, "--token", admin, "--channel", fmt.Sprint(channelID)},
	} {
		res := h.Run(t, args...)
		if res.ExitCode != 0 {
			t.Fatalf("%v:\n%s", args, res)
		}
		if !strings.Contains(res.Stdout, "2 releases") || strings.Count(res.Stdout, "keep_builds") != 2 {
			t.Errorf("%v does not list the two oldest builds:\n%s", args, res.Stdout)
		}
	}
	if n := h.QueryInt(t, `SELECT count(*) FROM releases`); n != 3 {
		t.Errorf("the plan deleted releases: %d left", n)
	}
	if res := h.Run(t, "retention", "plan", "--url", s.URL); res.ExitCode != 2 {
		t.Errorf("--url without a token: exit %d", res.ExitCode)
	}
}

// TestAdminLoginLink: `slipway admin login-link` prints a link that signs in to the console once.
func TestAdminLoginLink(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	res := h.Run(t, "admin", "login-link")
	// The command prints the link under its own SLIPWAY_PUBLIC_URL (here the default).
	_, token, ok := strings.Cut(res.LastLine(), "/console/login-link?token=")
	if res.ExitCode != 0 || !ok || token == "" {
		t.Fatalf("admin login-link:\n%s", res)
	}
	link := "/console/login-link?token=" + token
	r := s.Get(t, link)
	if r.Status != 302 || !strings.Contains(r.Header.Get("Set-Cookie"), "slipway_session=") {
		t.Fatalf("the login link: %d %v", r.Status, r.Header)
	}
	if r := s.Get(t, link); r.Status != 401 {
		t.Errorf("the login link, again: %d", r.Status)
	}
	if strings.Contains(s.Logs(), strings.TrimPrefix(link, "/console/login-link?token=")) {
		t.Error("the server logged the login link's secret")
	}
}
