package e2e_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/test/e2e"
)

// shortRelease is the part of the versions listing the tests check.
type shortRelease struct {
	releaseCore
	Changelog []struct {
		Message string `json:"message"`
	} `json:"changelog"`
}

// releaseCore is the comparable part of shortRelease.
type releaseCore struct {
	Version        int    `json:"version"`
	BundleID       string `json:"bundle_id"`
	ReleaseVersion string `json:"release_version"`
	BuildVersion   string `json:"build_version"`
	Source         string `json:"source"`
	Branch         string `json:"branch"`
	GitCommit      string `json:"git_commit"`
	CIURL          string `json:"ci_url"`
}

type customField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Icon  string `json:"icon"`
}

// TestCLIUpload uploads a synthetic IPA and APK with the real binary against a running server,
// with a changelog and custom fields, and checks what the release recorded; then a dSYM for the
// IPA's channel.
func TestCLIUpload(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	dir := t.TempDir()
	ipa := writeFile(t, dir, "Demo.ipa", appletest.BuildIPA(appletest.IPAOptions{
		AppName: "Demo", BundleID: "com.example.e2e", Version: "1.2.3", Build: "45"}))

	// The token comes from the environment, as CI jobs pass it.
	env := []string{"SLIPWAY_TOKEN=" + token}
	res := h.RunEnv(t, env, "upload", ipa, "--url", s.URL,
		"--changelog", "- Fix the crash on launch\n\n* Add dark mode\n",
		"--custom-field", "QA=passed",
		"--custom-field", "Pipeline=https://ci.example.com/run?id=7&attempt=2",
		"--custom-field", `{"name":"Reviewer","value":"Ada","icon":"fa fa-user"}`,
		"--branch", "origin/main", "--git-commit", "0123abcd", "--ci-url", "https://ci.example.com/run/7",
		"--progress", "lines")
	if res.ExitCode != 0 {
		t.Fatalf("upload failed:\n%s", res)
	}
	assertNoSecret(t, res, token)
	slug, id := releaseURLParts(t, s, res.LastLine())

	rel := latestRelease(t, s, slug)
	want := releaseCore{Version: 1, BundleID: "com.example.e2e", ReleaseVersion: "1.2.3", BuildVersion: "45",
		Source: "slipway-cli", Branch: "main", GitCommit: "0123abcd", CIURL: "https://ci.example.com/run/7"}
	if got := rel.releaseCore; got != want {
		t.Errorf("release: %+v\nwant %+v", rel.releaseCore, want)
	}
	if msgs := messages(rel); msgs != "Fix the crash on launch|Add dark mode" {
		t.Errorf("changelog %q", msgs)
	}
	wantFields := []customField{
		{Name: "QA", Value: "passed"},
		{Name: "Pipeline", Value: "https://ci.example.com/run?id=7&attempt=2"},
		{Name: "Reviewer", Value: "Ada", Icon: "fa fa-user"},
	}
	if fields := storedCustomFields(t, h, id); !equalFields(fields, wantFields) {
		t.Errorf("custom fields recorded: %+v\nwant %+v", fields, wantFields)
	}

	// An APK into a channel of its own, with --json: the full release on stdout.
	apk := writeFile(t, dir, "app-release.apk", androidtest.BuildAPK(androidtest.APKOptions{
		AndroidManifest: androidtest.AndroidManifest{Package: "com.example.e2e.droid", VersionCode: 7, VersionName: "2.0", Label: "Droid"}}))
	res = h.Run(t, "upload", apk, "--url", s.URL+"/", "--token", token, "--json", "--progress", "none",
		"--changelog", `[{"message":"First Android build","author":"Ada","email":"ada@example.com","date":"2026-01-02 03:04:05"}]`,
		"--custom-field", "Flavor=prod", "--release-type", "beta")
	if res.ExitCode != 0 {
		t.Fatalf("apk upload failed:\n%s", res)
	}
	assertNoSecret(t, res, token)
	var full struct {
		ReleaseURL   string        `json:"release_url"`
		CustomFields []customField `json:"custom_fields"`
		Scheme       struct{ Name string }
		Channel      struct{ Slug, DeviceType string }
	}
	if err := json.Unmarshal([]byte(res.Stdout), &full); err != nil {
		t.Fatalf("--json output is not the release: %v\n%s", err, res)
	}
	if !equalFields(full.CustomFields, []customField{{Name: "Flavor", Value: "prod"}}) || full.Scheme.Name != "Beta" {
		t.Errorf("apk release: %+v", full)
	}
	droidSlug, _ := releaseURLParts(t, s, full.ReleaseURL)
	droid := latestRelease(t, s, droidSlug)
	if droid.BundleID != "com.example.e2e.droid" || droid.ReleaseVersion != "2.0" || droid.BuildVersion != "7" ||
		messages(droid) != "First Android build" {
		t.Errorf("apk release in versions: %+v", droid)
	}

	// A second IPA into the first channel by key: version 2 there.
	res = h.RunEnv(t, env, "upload", "--url", s.URL, "--channel-key", slug, "--progress", "none", ipa)
	if res.ExitCode != 0 {
		t.Fatalf("upload by channel key failed:\n%s", res)
	}
	if slug2, _ := releaseURLParts(t, s, res.LastLine()); slug2 != slug || latestRelease(t, s, slug).Version != 2 {
		t.Errorf("upload with --channel-key %s went to %s", slug, slug2)
	}

	// A dSYM for the iOS channel: stdout has the id, then the download URL.
	dsym := writeFile(t, dir, "Demo.app.dSYM.zip", debuginfotest.BuildDSYMZip(debuginfotest.DSYM{
		Path: "Demo.app.dSYM", Identifier: "com.example.e2e", ReleaseVersion: "1.2.3", BuildVersion: "45",
		Archs: []debuginfotest.Arch{{Name: "arm64", UUID: "0B0C0D0E-1111-2222-3333-444455556666"}}}))
	res = h.RunEnv(t, env, "debug-file", "upload", dsym, "--url", s.URL, "--channel-key", slug)
	if res.ExitCode != 0 {
		t.Fatalf("debug-file upload failed:\n%s", res)
	}
	assertNoSecret(t, res, token)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("debug-file upload stdout: want the id and the file URL:\n%s", res)
	}
	dfID, err := strconv.ParseInt(lines[0], 10, 64)
	if err != nil || lines[1] != s.URL+"/download/debug_files/"+lines[0] {
		t.Fatalf("debug-file upload stdout: want the id and %s/download/debug_files/ID:\n%s", s.URL, res)
	}
	var files []struct {
		ID             int64  `json:"id"`
		ReleaseVersion string `json:"release_version"`
		Metadata       []struct{ UUID, Type string }
	}
	r := s.Get(t, "/api/debug_files?channel_key="+slug)
	r.JSON(t, &files)
	if len(files) != 1 || files[0].ID != dfID || files[0].ReleaseVersion != "1.2.3" || len(files[0].Metadata) != 1 ||
		files[0].Metadata[0].UUID != "0B0C0D0E-1111-2222-3333-444455556666" || files[0].Metadata[0].Type != "arm64" {
		t.Errorf("debug files of the channel: %s", r.Body)
	}
	// The same archive again is a duplicate: the server's 409 message, exit 1.
	res = h.RunEnv(t, env, "debug-file", "upload", dsym, "--url", s.URL, "--channel-key", slug)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "409") {
		t.Errorf("duplicate debug file: want exit 1 with the 409:\n%s", res)
	}
}

// TestCLIUploadFailures checks that failed uploads exit non-zero with the server's message and
// status on stderr, nothing on stdout, and never the token.
func TestCLIUploadFailures(t *testing.T) {
	t.Parallel()
	h := e2e.New(t, e2e.Options{})
	s := h.Start(t)
	token := h.CreateToken(t, "ci", "upload")
	dir := t.TempDir()
	ipa := writeFile(t, dir, "Demo.ipa", appletest.BuildIPA(appletest.IPAOptions{}))
	notes := writeFile(t, dir, "notes.ipa", []byte("these are release notes, not a package\n"))

	// The server's own answers to the same requests, for comparison.
	wrongToken := "slw_thisisnotarealtokenbutlookslikeone234"
	wantAuth := serverError(t, s, wrongToken, "Demo.ipa", []byte("x"))
	wantNotPackage := serverError(t, s, token, "notes.ipa", []byte("these are release notes, not a package\n"))

	cases := []struct {
		name   string
		env    []string
		args   []string
		status string
		msg    string
		secret string
	}{
		{"wrong token", []string{"SLIPWAY_TOKEN=" + wrongToken}, []string{"upload", ipa, "--url", s.URL}, "401", wantAuth, wrongToken},
		{"wrong token flag", nil, []string{"upload", ipa, "--url", s.URL, "--token", wrongToken, "--password", "hunter22"}, "401", wantAuth, wrongToken},
		{"not a package", []string{"SLIPWAY_TOKEN=" + token}, []string{"upload", notes, "--url", s.URL}, "422", wantNotPackage, token},
		{"unknown channel", []string{"SLIPWAY_TOKEN=" + token}, []string{"upload", ipa, "--url", s.URL, "--channel-key", "nope"}, "404", "", token},
		{"debug file to an unknown channel", []string{"SLIPWAY_TOKEN=" + token}, []string{"debug-file", "upload", notes, "--url", s.URL, "--channel-key", "nope"}, "404", "", token},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := h.RunEnv(t, c.env, c.args...)
			if res.ExitCode != 1 {
				t.Errorf("exit %d, want 1\n%s", res.ExitCode, res)
			}
			if !strings.Contains(res.Stderr, c.status) || !strings.Contains(res.Stderr, c.msg) {
				t.Errorf("stderr lacks the status %s and the server's message %q:\n%s", c.status, c.msg, res)
			}
			if strings.TrimSpace(res.Stdout) != "" {
				t.Errorf("stdout is not empty on failure:\n%s", res)
			}
			assertNoSecret(t, res, c.secret, "hunter22")
		})
	}

	// Mistakes in the command line: exit 2, before any request.
	for _, args := range [][]string{
		{"upload", ipa},                              // no URL, no token
		{"upload", ipa, "--url", s.URL},              // no token
		{"upload", "--url", s.URL, "--token", token}, // no file
		{"upload", ipa, "--url", s.URL, "--token", token, "--custom-field", "novalue"},
		{"debug-file", "upload", ipa, "--url", s.URL, "--token", token}, // no channel key
		{"debug-file", "download"},
	} {
		res := h.RunEnv(t, []string{"SLIPWAY_URL=", "SLIPWAY_TOKEN="}, args...)
		if res.ExitCode != 2 {
			t.Errorf("exit %d, want 2\n%s", res.ExitCode, res)
		}
		assertNoSecret(t, res, token)
	}
	if n := h.QueryInt(t, "SELECT count(*) FROM releases"); n != 0 {
		t.Errorf("%d releases recorded by failed uploads", n)
	}
}

// serverError posts a file to the server directly and returns its error message.
func serverError(t *testing.T, s *e2e.Server, token, filename string, data []byte) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", filename)
	_, _ = fw.Write(data)
	_ = mw.Close()
	r := s.Do(t, "POST", "/api/apps/upload", &body, "Content-Type", mw.FormDataContentType(), "Authorization", "Token "+token)
	var e struct{ Error string }
	r.JSON(t, &e)
	if r.Status < 400 || e.Error == "" {
		t.Fatalf("want an error answer, got %d: %s", r.Status, r.Body)
	}
	return e.Error
}

// releaseURLParts checks that u is a release page URL of the server and returns its channel slug
// and release id.
func releaseURLParts(t *testing.T, s *e2e.Server, u string) (string, int64) {
	t.Helper()
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(s.URL) + `/channels/([^/]+)/releases/(\d+)$`).FindStringSubmatch(u)
	if m == nil {
		t.Fatalf("not a release URL of %s: %q", s.URL, u)
	}
	id, _ := strconv.ParseInt(m[2], 10, 64)
	return m[1], id
}

func latestRelease(t *testing.T, s *e2e.Server, slug string) shortRelease {
	t.Helper()
	r := s.Get(t, "/api/apps/versions?channel_key="+url.QueryEscape(slug))
	var listing struct{ Releases []shortRelease }
	r.JSON(t, &listing)
	if r.Status != 200 || len(listing.Releases) == 0 {
		t.Fatalf("versions of %s: %d %s", slug, r.Status, r.Body)
	}
	return listing.Releases[0]
}

func storedCustomFields(t *testing.T, h *e2e.Harness, id int64) []customField {
	t.Helper()
	var raw []byte
	if err := h.DB(t).QueryRow(t.Context(), "SELECT custom_fields FROM releases WHERE id = $1", id).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var fields []customField
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("custom_fields %s: %v", raw, err)
	}
	return fields
}

func equalFields(a, b []customField) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func messages(r shortRelease) string {
	var m []string
	for _, e := range r.Changelog {
		m = append(m, e.Message)
	}
	return strings.Join(m, "|")
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
