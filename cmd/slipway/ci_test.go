package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/slipwayhq/slipway/pkg/uploader"
)

// ciServer answers uploads as Slipway does, in one request (POST /api/apps/upload, multipart) or
// through a session (POST /api/uploads, a part, POST .../complete), and POST
// /api/releases/:id/distribute; it keeps the fields each upload or distribution carried.
type ciServer struct {
	*httptest.Server
	// releaseURL, when set, replaces the release_url of the answers (a hostile server's).
	releaseURL string

	mu     sync.Mutex
	fields []map[string]string // one per upload: the multipart fields, or the session's
	via    []string            // "form" or "session", per upload
	bodies []map[string]any    // one per distribution
}

func newCIServer(t *testing.T) *ciServer {
	s := &ciServer{}
	mux := http.NewServeMux()
	release := func(w http.ResponseWriter, r *http.Request, fields map[string]string) {
		url := s.releaseURL
		if url == "" {
			url = "http://" + r.Host + "/channels/abc/releases/9"
		}
		rel := map[string]any{"id": 9, "version": 3, "app_name": "Demo Adhoc ios", "release_version": "1.0", "build_version": "1",
			"release_url": url, "install_url": "itms-services://?action=download-manifest&url=http://" + r.Host + "/channels/abc/releases/9/install",
			"channel": map[string]any{"slug": "abc"}}
		if fields["testers"] != "" || fields["groups"] != "" {
			notified := 2
			if fields["notify"] == "false" {
				notified = 0
			}
			rel["testers"] = map[string]int{"testers": 2, "notified": notified}
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(rel)
	}
	mux.HandleFunc("POST /api/apps/upload", func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		fields := map[string]string{}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			v, _ := io.ReadAll(p)
			if p.FileName() == "" {
				fields[p.FormName()] = string(v)
			}
		}
		s.record(fields, "form")
		release(w, r, fields)
	})
	var sessionFields map[string]string
	mux.HandleFunc("POST /api/uploads", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sessionFields = map[string]string{}
		for k, v := range body {
			if sv, ok := v.(string); ok && k != "kind" && k != "filename" {
				sessionFields[k] = sv
			}
		}
		size := int64(body["size"].(float64))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"s1","state":"open","size":%d,"part_size":%d,"parts":[{"number":1,"size":%d,"done":false,"url":"http://%s/part/1"}]}`,
			size, size, size, r.Host)
	})
	mux.HandleFunc("PUT /part/1", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	mux.HandleFunc("POST /api/uploads/s1/complete", func(w http.ResponseWriter, r *http.Request) {
		s.record(sessionFields, "session")
		release(w, r, sessionFields)
	})
	mux.HandleFunc("POST /api/releases/{id}/distribute", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.PathValue("id") != "9" || r.Header.Get("Authorization") != "Token secret-token" {
			http.Error(w, `{"error":"bad request"}`, http.StatusUnprocessableEntity)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"testers":3,"notified":1}`)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *ciServer) record(fields map[string]string, via string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fields = append(s.fields, fields)
	s.via = append(s.via, via)
}

// ciEnv is a CI job's environment: the server, the token and (when set) a GITHUB_OUTPUT file.
func ciEnv(srv *ciServer, output string) func(string) string {
	m := map[string]string{"SLIPWAY_URL": srv.URL, "SLIPWAY_TOKEN": "secret-token", "GITHUB_OUTPUT": output}
	return func(k string) string { return m[k] }
}

func testPackage(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "app.ipa")
	if err := os.WriteFile(path, bytes.Repeat([]byte("PK"), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The tester flags reach the server as the upload's testers, groups and notify fields, on both
// paths the CLI takes; notify is sent only when false; stderr says how many were reached and
// mailed; GITHUB_OUTPUT gets the release's three lines and never the token.
func TestUploadTestersAndGitHubOutput(t *testing.T) {
	for _, c := range []struct {
		name    string
		flags   []string
		fields  map[string]string // want; "" means absent
		stderr  string
		session string
	}{
		{"form", []string{"--testers", "a@x.com, b@y.com", "--groups", "qa,beta", "--notify=false"},
			map[string]string{"testers": "a@x.com,b@y.com", "groups": "qa,beta", "notify": "false"}, "Sent to 2 tester(s), 0 notified", "never"},
		{"session", []string{"--testers", "a@x.com", "--testers", "b@y.com", "--groups", "qa", "--notify=false"},
			map[string]string{"testers": "a@x.com,b@y.com", "groups": "qa", "notify": "false"}, "Sent to 2 tester(s), 0 notified", "always"},
		{"notify by default", []string{"--groups", "qa"},
			map[string]string{"testers": "", "groups": "qa", "notify": ""}, "Sent to 2 tester(s), 2 notified", "never"},
		{"session, notify by default", []string{"--groups", "qa", "--notify"},
			map[string]string{"testers": "", "groups": "qa", "notify": ""}, "Sent to 2 tester(s), 2 notified", "always"},
		{"nobody", nil, map[string]string{"testers": "", "groups": "", "notify": ""}, "", "never"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := newCIServer(t)
			out := filepath.Join(t.TempDir(), "github_output")
			if err := os.WriteFile(out, []byte("earlier=kept\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"upload", testPackage(t), "--progress", "none", "--session", c.session}, c.flags...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, ciEnv(srv, out), &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			want := map[string]string{"never": "form", "always": "session"}[c.session]
			if len(srv.fields) != 1 || srv.via[0] != want {
				t.Fatalf("uploads %v via %v, want one via %s", srv.fields, srv.via, want)
			}
			for name, v := range c.fields {
				if got, ok := srv.fields[0][name]; got != v || (v == "" && ok) {
					t.Errorf("field %s = %q (sent %v), want %q", name, got, ok, v)
				}
			}
			if c.stderr != "" && !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q, want %q", stderr.String(), c.stderr)
			}
			if c.stderr == "" && strings.Contains(stderr.String(), "tester") {
				t.Errorf("stderr %q speaks of testers the answer does not name", stderr.String())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			wantOut := "earlier=kept\nrelease_url=" + srv.URL + "/channels/abc/releases/9\n" +
				"install_url=itms-services://?action=download-manifest&url=" + srv.URL + "/channels/abc/releases/9/install\n" +
				"release_id=9\n"
			if string(b) != wantOut {
				t.Errorf("GITHUB_OUTPUT:\n%s\nwant:\n%s", b, wantOut)
			}
			if strings.Contains(string(b), "secret-token") {
				t.Error("GITHUB_OUTPUT holds the token")
			}
			if got := strings.TrimSpace(stdout.String()); got != srv.URL+"/channels/abc/releases/9" {
				t.Errorf("stdout %q, want the release URL", got)
			}
		})
	}
}

// A release_url with a line break (a hostile or broken server) cannot add a line of its own to
// GITHUB_OUTPUT: nothing is written, and the command fails after printing what it got.
func TestGitHubOutputRefusesLineBreaks(t *testing.T) {
	for _, bad := range []string{"http://x/r\nrelease_id=666", "http://x/r\r\nGITHUB_TOKEN=x", "http://x/r\r"} {
		srv := newCIServer(t)
		srv.releaseURL = bad
		out := filepath.Join(t.TempDir(), "github_output")
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"upload", testPackage(t), "--progress", "none", "--session", "never"}, ciEnv(srv, out), &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "line break") || !strings.Contains(stderr.String(), "uploaded") {
			t.Errorf("%q: exit %d, stderr %q; want 1 and a line break refused", bad, code, stderr.String())
		}
		if b, err := os.ReadFile(out); err == nil || len(b) != 0 {
			t.Errorf("%q: GITHUB_OUTPUT written: %q (%v)", bad, b, err)
		}
	}
	// Nor may a value carry the token, whatever the server puts in it.
	dir := t.TempDir()
	out := filepath.Join(dir, "o")
	env := func(k string) string { return map[string]string{"GITHUB_OUTPUT": out}[k] }
	if err := writeGitHubOutputs(env, []string{"tok-123"}, []githubOutput{{"a", "1"}, {"release_url", "http://x/?token=tok-123"}}); err == nil {
		t.Error("a value holding the token was written")
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("GITHUB_OUTPUT was created for a refused write")
	}
	// Without GITHUB_OUTPUT nothing is written anywhere.
	if err := writeGitHubOutputs(func(string) string { return "" }, nil, []githubOutput{{"a", "1"}}); err != nil {
		t.Error(err)
	}
}

// slipway distribute sends the release's testers, groups and notify as JSON with the token in
// the header, and says what the server answered.
func TestDistributeCmd(t *testing.T) {
	srv := newCIServer(t)
	env := ciEnv(srv, "")
	for _, c := range []struct {
		args []string
		want map[string]any
	}{
		{[]string{"--release", "9", "--testers", "a@x.com,b@y.com", "--groups", "qa", "--notify=false"},
			map[string]any{"testers": []any{"a@x.com", "b@y.com"}, "groups": []any{"qa"}, "notify": false}},
		{[]string{"--release=9", "--groups", "qa, beta"},
			map[string]any{"testers": []any{}, "groups": []any{"qa", "beta"}, "notify": true}},
	} {
		srv.bodies = nil
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"distribute"}, c.args...), env, &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit %d: %s", c.args, code, stderr.String())
		}
		if len(srv.bodies) != 1 || fmt.Sprint(srv.bodies[0]) != fmt.Sprint(c.want) {
			t.Errorf("%q: sent %v, want %v", c.args, srv.bodies, c.want)
		}
		if got := stdout.String(); got != "Release 9: Sent to 3 tester(s), 1 notified by mail\n" {
			t.Errorf("%q: stdout %q", c.args, got)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"distribute", "--release", "9", "--groups", "qa", "--json"}, env, &stdout, &stderr); code != 0 ||
		strings.TrimSpace(stdout.String()) != `{"testers":3,"notified":1}` {
		t.Errorf("--json: exit %d, %q", code, stdout.String())
	}
	for _, c := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{[]string{"distribute", "--groups", "qa"}, env, "--release ID is required"},
		{[]string{"distribute", "--release", "-3"}, env, "--release ID is required"},
		{[]string{"distribute", "--release", "9"}, func(string) string { return "" }, "--url (or SLIPWAY_URL)"},
		{[]string{"distribute", "--release", "9", "extra"}, env, "unexpected argument"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), c.args, c.env, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// action.yml is a composite action whose inputs are flags of slipway upload (but for the few
// the action itself reads), whose outputs are the lines the CLI writes to GITHUB_OUTPUT, and
// whose scripts never expand an expression inside the shell (an input holding shell syntax).
func TestActionYAML(t *testing.T) {
	raw, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Author      string            `json:"author"`
		Branding    map[string]string `json:"branding"`
		Inputs      map[string]struct {
			Description string `json:"description"`
			Required    bool   `json:"required"`
			Default     string `json:"default"`
		} `json:"inputs"`
		Outputs map[string]struct {
			Description string `json:"description"`
			Value       string `json:"value"`
		} `json:"outputs"`
		Runs struct {
			Using string `json:"using"`
			Steps []struct {
				Name  string            `json:"name"`
				ID    string            `json:"id"`
				If    string            `json:"if"`
				Uses  string            `json:"uses"`
				With  map[string]string `json:"with"`
				Dir   string            `json:"working-directory"`
				Run   string            `json:"run"`
				Shell string            `json:"shell"`
				Env   map[string]string `json:"env"`
			} `json:"steps"`
		} `json:"runs"`
	}
	if err := yaml.UnmarshalStrict(raw, &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Name == "" || action.Runs.Using != "composite" || len(action.Runs.Steps) == 0 {
		t.Fatalf("not a composite action: %+v", action)
	}
	var help, stderr bytes.Buffer
	if code := run(context.Background(), []string{"upload", "-h"}, func(string) string { return "" }, &help, &stderr); code != 0 {
		t.Fatalf("upload -h: exit %d", code)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help.String(), -1) {
		flags[m[1]] = true
	}
	actionOnly := map[string]bool{"file": true, "cli": true} // the positional FILE; the binary to run
	var script string
	for _, s := range action.Runs.Steps {
		if s.ID == "upload" {
			script = s.Run
		}
		if s.Run != "" && strings.Contains(s.Run, "${{") {
			t.Errorf("step %q expands an expression inside its script; pass it through env", s.ID)
		}
		if s.Run != "" && s.Shell == "" {
			t.Errorf("step %q has no shell (composite steps need one)", s.ID)
		}
	}
	if script == "" {
		t.Fatal("no step with id upload")
	}
	for name, in := range action.Inputs {
		if in.Description == "" {
			t.Errorf("input %s has no description", name)
		}
		flag := strings.ReplaceAll(name, "_", "-")
		if actionOnly[name] {
			continue
		}
		if !flags[flag] {
			t.Errorf("input %s is no flag of slipway upload (want --%s)", name, flag)
		}
		// The url and token go as SLIPWAY_URL and SLIPWAY_TOKEN; the others as their flag.
		if name != "url" && name != "token" && name != "notify" && !strings.Contains(script, "--"+flag+" ") {
			t.Errorf("input %s is not passed as --%s", name, flag)
		}
	}
	for _, name := range []string{"url", "token", "file", "channel_key", "testers", "groups", "notify", "changelog"} {
		if _, ok := action.Inputs[name]; !ok {
			t.Errorf("no input %s", name)
		}
	}
	if !strings.Contains(script, "--notify=false") {
		t.Error("notify: false is not passed as --notify=false")
	}
	var outs []string
	for name, o := range action.Outputs {
		outs = append(outs, name)
		if o.Value != "${{ steps.upload.outputs."+name+" }}" {
			t.Errorf("output %s = %q, want the upload step's", name, o.Value)
		}
	}
	slices.Sort(outs)
	var cli []string
	for _, o := range releaseOutputs(&uploader.Release{}) {
		cli = append(cli, o.name)
	}
	slices.Sort(cli)
	if !slices.Equal(outs, cli) {
		t.Errorf("outputs %v, the CLI writes %v", outs, cli)
	}
	for _, s := range action.Runs.Steps {
		if s.ID == "upload" && (s.Env["SLIPWAY_TOKEN"] != "${{ inputs.token }}" || strings.Contains(s.Run, "--token")) {
			t.Error("the token must reach the CLI as SLIPWAY_TOKEN, not on its command line")
		}
	}
}
