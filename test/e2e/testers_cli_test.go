package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// TestCLITesters (issue 33, "CI"): `slipway upload --groups --testers --notify=false`, in one
// request and through an upload session, gives the build to the group's testers and the named
// ones, mailing nobody; in a GitHub Actions step (GITHUB_OUTPUT set) the release's URL, install
// URL and id are appended as outputs, never the token; `slipway distribute` gives the release to
// one more tester.
func TestCLITesters(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	admin := h.CreateToken(t, "admin", "admin")
	token := h.CreateToken(t, "ci", "upload")
	auth := []string{"Authorization", "Token " + admin, "Content-Type", "application/json"}
	for _, req := range []struct{ path, body string }{
		{"/api/groups", `{"alias":"qa","name":"QA"}`},
		{"/api/groups/qa/testers", `{"emails":["q1@example.com","q2@example.com"]}`},
	} {
		if r := s.Do(t, "POST", req.path, strings.NewReader(req.body), auth...); r.Status/100 != 2 {
			t.Fatalf("POST %s: %d %s", req.path, r.Status, r.Body)
		}
	}
	dir := t.TempDir()
	env := []string{"SLIPWAY_URL=" + s.URL, "SLIPWAY_TOKEN=" + token}
	// An unknown group is the server's clear refusal, and no output is written.
	out := filepath.Join(dir, "output-refused")
	res := h.RunEnv(t, append(env, "GITHUB_OUTPUT="+out), "upload", writeFile(t, dir, "Demo.ipa", appletest.BuildIPA(appletest.IPAOptions{})),
		"--progress", "none", "--groups", "nope")
	if _, err := os.Stat(out); res.ExitCode != 1 || !strings.Contains(res.Stderr, `no group with the alias "nope"`) || err == nil {
		t.Errorf("--groups nope:\n%s", res)
	}
	for i, session := range []string{"never", "always"} {
		out := filepath.Join(dir, "output-"+session)
		ipa := writeFile(t, dir, "Demo.ipa", appletest.BuildIPA(appletest.IPAOptions{BundleID: "com.example.testers", Build: fmt.Sprint(i + 1)}))
		res := h.RunEnv(t, append(env, "GITHUB_OUTPUT="+out), "upload", ipa, "--progress", "none", "--session", session,
			"--groups", "qa", "--testers", "direct@example.com, q1@example.com", "--notify=false")
		if res.ExitCode != 0 {
			t.Fatalf("--session %s:\n%s", session, res)
		}
		assertNoSecret(t, res, token)
		if !strings.Contains(res.Stderr, "Sent to 3 tester(s), 0 notified by mail") {
			t.Errorf("--session %s: stderr %q, want the 3 testers reached, none mailed", session, res.Stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		outputs := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			k, v, _ := strings.Cut(line, "=")
			outputs[k] = v
		}
		if len(outputs) != 3 || outputs["release_url"] != res.LastLine() || !strings.HasPrefix(outputs["install_url"], "itms-services://") ||
			outputs["release_id"] == "" || strings.Contains(string(b), token) {
			t.Fatalf("--session %s: GITHUB_OUTPUT %q", session, b)
		}
		r := s.Do(t, "GET", "/api/releases/"+outputs["release_id"]+"/testers", nil, auth...)
		var testers []struct {
			Email  string `json:"email"`
			Direct bool   `json:"direct"`
			Mail   string `json:"mail"`
		}
		if err := json.Unmarshal(r.Body, &testers); r.Status != 200 || err != nil {
			t.Fatalf("release testers: %d %s", r.Status, r.Body)
		}
		var emails []string
		for _, rt := range testers {
			emails = append(emails, rt.Email)
		}
		slices.Sort(emails)
		if want := []string{"direct@example.com", "q1@example.com", "q2@example.com"}; !slices.Equal(emails, want) {
			t.Errorf("--session %s: release went to %v, want %v", session, emails, want)
		}
		if session != "always" {
			continue
		}
		// A release already uploaded goes to one more tester; those it reached are not counted again.
		res = h.RunEnv(t, env, "distribute", "--release", outputs["release_id"], "--testers", "late@example.com,q2@example.com", "--notify=false")
		if res.ExitCode != 0 || res.Stdout != "Release "+outputs["release_id"]+": Sent to 1 tester(s), 0 notified by mail\n" {
			t.Errorf("distribute:\n%s", res)
		}
		assertNoSecret(t, res, token)
	}
}
