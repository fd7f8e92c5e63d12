package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/fs"
	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/signing"
	"github.com/slipwayhq/slipway/test/e2e"
	"github.com/slipwayhq/slipway/test/testenv"
	"github.com/slipwayhq/slipway/test/testkit"
)

// dsymZip builds a dSYM archive for the bundle with one arm64 slice of the given UUID.
func dsymZip(bundleID, uuid string) []byte {
	return debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "Demo.app.dSYM", Identifier: bundleID,
		ReleaseVersion: "1.0", BuildVersion: "1", Archs: []debuginfotest.Arch{{Name: "arm64", UUID: uuid}}})
}

// credential is how a request presents (or does not present) a token.
type credential struct {
	name   string
	token  string
	place  string // "", "header", "bearer", "query" or "body"
	status int    // the answer wanted
}

// guarded is an endpoint marked "Auth: required", as a client calls it.
type guarded struct {
	name   string
	method string
	path   string
	admin  bool // needs the admin scope (an upload token is under-scoped)
	// body returns the request body and its type, with the token as a form or JSON field when
	// token is not "". nil for endpoints without a body.
	body func(token string) (contentType string, body []byte)
	ok   int // status of a correct request
	// listing: a token limited to another app is not refused but sees none of this app (the
	// list of apps); every other endpoint refuses it (403).
	listing bool
}

func (g guarded) request(t *testing.T, base string, c credential) *response {
	t.Helper()
	u := base + g.path
	var header []string
	switch c.place {
	case "header":
		header = append(header, "Authorization", "Token "+c.token)
	case "bearer":
		header = append(header, "Authorization", "Bearer "+c.token)
	case "query":
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + "token=" + url.QueryEscape(c.token)
	}
	var body io.Reader
	if g.body != nil {
		tok := ""
		if c.place == "body" {
			tok = c.token
		}
		ct, b := g.body(tok)
		header = append(header, "Content-Type", ct)
		body = bytes.NewReader(b)
	}
	return call(t, g.method, u, body, header...)
}

// bodyOf is an endpoint's body without a token ("" for none).
func bodyOf(g guarded) (string, []byte) {
	if g.body == nil {
		return "", nil
	}
	return g.body("")
}

// TestAuthRequired: every endpoint marked "Auth: required" refuses a missing, wrong or revoked
// token (401 with WWW-Authenticate and {"error"}), wherever the token is sent (header, Bearer,
// query, form or JSON field), and an upload token on admin operations (403); after all refusals
// the database and the bucket are exactly as before. The same requests with the right token
// succeed, so the refusals are not accidents of request shape. Then no token, password, presigned
// URL, signing secret or storage or database credential appears in any replica's logs.
func TestAuthRequired(t *testing.T) {
	t.Parallel()
	dbPassword := "db-pass-" + testkit.RandomHex(8)
	dbURL, err := url.Parse(testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	dbURL.User = url.UserPassword(dbURL.User.Username(), dbPassword) // accepted (trust) and must stay hidden
	e := newEnv(t, e2e.Options{Storage: e2e.S3, DatabaseURL: dbURL.String()}, 3)
	revokedAdmin := e.h.CreateToken(t, "old-admin", "admin")
	revokedUpload := e.h.CreateToken(t, "old-ci", "upload")
	e.h.MustRun(t, "token", "revoke", "old-admin")
	e.h.MustRun(t, "token", "revoke", "old-ci")
	wrong := "slw_" + strings.ToUpper(testkit.RandomHex(16))
	channelPassword := "chan-pass-" + testkit.RandomHex(6)

	rel := decodeRelease(t, mustUpload(t, e.server(0), e.upload, ipa("com.example.guarded", "1", 0), "password", channelPassword))
	slug := rel.Channel.Slug
	ct, body := form([]string{"channel_key", slug}, "file", "Demo.app.dSYM.zip", dsymZip("com.example.guarded", "A1A1A1A1-0000-0000-0000-000000000001"))
	r := call(t, http.MethodPost, e.server(1).URL+"/api/debug_files/upload", bytes.NewReader(body), "Content-Type", ct, "Authorization", "Token "+e.upload)
	if r.Status != http.StatusCreated {
		t.Fatalf("debug file upload: %s", r)
	}
	var df struct{ ID int64 }
	_ = json.Unmarshal(r.Body, &df)

	multipartWith := func(fields []string, name string, file []byte) func(string) (string, []byte) {
		return func(tok string) (string, []byte) {
			var after []string
			if tok != "" {
				after = []string{"token", tok} // after the file, as Zealot's clients may send it
			}
			return form(fields, "file", name, file, after...)
		}
	}
	jsonWith := func(fields map[string]string) func(string) (string, []byte) {
		return func(tok string) (string, []byte) {
			m := map[string]string{}
			for k, v := range fields {
				m[k] = v
			}
			if tok != "" {
				m["token"] = tok
			}
			b, _ := json.Marshal(m)
			return "application/json", b
		}
	}
	endpoints := []guarded{
		{"upload app", http.MethodPost, "/api/apps/upload", false,
			multipartWith([]string{"channel_key", slug}, "App.ipa", ipa("com.example.guarded", "2", 0)), http.StatusCreated, false},
		{"create app", http.MethodPost, "/api/apps", true, jsonWith(map[string]string{"name": "Intruder"}), http.StatusCreated, false},
		{"update app", http.MethodPut, fmt.Sprintf("/api/apps/%d", rel.App.ID), true, jsonWith(map[string]string{"name": "Renamed"}), http.StatusOK, false},
		{"upload debug file", http.MethodPost, "/api/debug_files/upload", false,
			multipartWith([]string{"channel_key", slug}, "Demo.app.dSYM.zip", dsymZip("com.example.guarded", "B2B2B2B2-0000-0000-0000-000000000002")), http.StatusCreated, false},
		{"get debug file", http.MethodGet, fmt.Sprintf("/api/debug_files/%d?channel_key=%s", df.ID, slug), false, nil, http.StatusOK, false},
		{"update debug file", http.MethodPut, fmt.Sprintf("/api/debug_files/%d", df.ID), false,
			multipartWith([]string{"channel_key", slug}, "Demo.app.dSYM.zip", dsymZip("com.example.guarded", "C3C3C3C3-0000-0000-0000-000000000003")), http.StatusOK, false},
		{"delete debug file", http.MethodDelete, fmt.Sprintf("/api/debug_files/%d?channel_key=%s", df.ID, slug), true, nil, http.StatusOK, false},
		// Listing and reading apps need a token too (they hand out channel keys).
		{"list apps", http.MethodGet, "/api/apps", false, nil, http.StatusOK, true},
		{"get app", http.MethodGet, fmt.Sprintf("/api/apps/%d", rel.App.ID), false, nil, http.StatusOK, false},
		{"destroy app", http.MethodDelete, fmt.Sprintf("/api/apps/%d", rel.App.ID), true, nil, http.StatusOK, false},
	}
	// Tokens limited to another app (by name, on the command line): every request above is
	// refused to them, an upload token's and an admin token's alike.
	r = call(t, http.MethodPost, e.server(0).URL+"/api/apps", strings.NewReader(`{"name":"Elsewhere"}`),
		"Content-Type", "application/json", "Authorization", "Token "+e.admin)
	if r.Status != http.StatusCreated {
		t.Fatalf("create the other app: %s", r)
	}
	elsewhere := e.h.MustRun(t, "token", "create", "--name", "ci-elsewhere", "--app", "Elsewhere").LastLine()
	elsewhereAdmin := e.h.MustRun(t, "token", "create", "--name", "ops-elsewhere", "--scope", "admin", "--app", "Elsewhere").LastLine()

	waitQuiet(t, e)
	before := tableSnapshot(t, e)
	refusals := 0
	for i, g := range endpoints {
		creds := []credential{
			{"no token", "", "", http.StatusUnauthorized},
			{"wrong token", wrong, "header", http.StatusUnauthorized},
			{"wrong Bearer token", wrong, "bearer", http.StatusUnauthorized},
			{"wrong token in the query", wrong, "query", http.StatusUnauthorized},
			{"revoked token", revokedAdmin, "header", http.StatusUnauthorized},
			{"revoked upload token", revokedUpload, "bearer", http.StatusUnauthorized},
			{"revoked token in the query", revokedAdmin, "query", http.StatusUnauthorized},
		}
		if g.body != nil {
			creds = append(creds,
				credential{"wrong token in the body", wrong, "body", http.StatusUnauthorized},
				credential{"revoked token in the body", revokedAdmin, "body", http.StatusUnauthorized})
		}
		if !g.listing {
			creds = append(creds,
				credential{"upload token limited to another app", elsewhere, "header", http.StatusForbidden},
				credential{"admin token limited to another app", elsewhereAdmin, "bearer", http.StatusForbidden})
			// (A multipart body's token comes after the file here, which is refused before it is
			// read: only a JSON body's token gets as far as the policy.)
			if ct, _ := bodyOf(g); ct == "application/json" {
				creds = append(creds, credential{"token limited to another app in the body", elsewhere, "body", http.StatusForbidden})
			}
		}
		if g.admin {
			creds = append(creds,
				credential{"upload token", e.upload, "header", http.StatusForbidden},
				credential{"upload token in the query", e.upload, "query", http.StatusForbidden})
			if g.body != nil {
				creds = append(creds, credential{"upload token in the body", e.upload, "body", http.StatusForbidden})
			}
		}
		for j, c := range creds {
			r := g.request(t, e.server(i+j).URL, c)
			expectError(t, g.name+" with "+c.name, r, c.status)
			refusals++
		}
	}
	waitQuiet(t, e)
	if after := tableSnapshot(t, e); after != before {
		t.Errorf("refused requests changed the database or storage:\nbefore: %s\nafter:  %s", before, after)
	}
	t.Logf("%d refusals over %d endpoints", refusals, len(endpoints))
	// The token limited to another app lists only that app.
	if r := call(t, http.MethodGet, e.server(0).URL+"/api/apps", nil, "Authorization", "Token "+elsewhere); r.Status != http.StatusOK ||
		!strings.Contains(string(r.Body), "Elsewhere") || strings.Contains(string(r.Body), slug) {
		t.Errorf("the app token's list of apps: %s", r)
	}

	// Downloads through every replica: presigned URLs, with the channel password and an access
	// token, all of which must stay out of the logs.
	secrets := map[string]string{
		"admin token": e.admin, "upload token": e.upload, "revoked admin token": revokedAdmin,
		"app token": elsewhere, "app admin token": elsewhereAdmin,
		"revoked upload token": revokedUpload, "wrong token": wrong, "channel password": channelPassword,
		"database password": dbPassword, "S3 secret key": e.h.S3.SecretKey, "SLIPWAY_SECRET": e2e.Secret,
	}
	for i, path := range []string{
		fmt.Sprintf("/download/releases/%d?password=%s", rel.ID, channelPassword),
		fmt.Sprintf("/releases/%d/icon?password=%s", rel.ID, channelPassword),
		fmt.Sprintf("/download/debug_files/%d", df.ID),
	} {
		r := call(t, http.MethodGet, e.server(i).URL+path, nil)
		loc := r.Header.Get("Location")
		if r.Status != http.StatusFound || !strings.Contains(loc, "X-Amz-Signature=") {
			t.Fatalf("GET %s: %s, Location %q: want a presigned redirect", path, r, loc)
		}
		lu, _ := url.Parse(loc)
		secrets["presigned URL of "+path] = loc
		secrets["presigned query of "+path] = lu.RawQuery
		secrets["signature of "+path] = lu.Query().Get("X-Amz-Signature")
		if got := call(t, http.MethodGet, loc, nil); got.Status != http.StatusOK {
			t.Errorf("the presigned URL of %s does not work: %d", path, got.Status)
		}
	}
	r = call(t, http.MethodGet, fmt.Sprintf("%s/channels/%s/releases/%d/install?password=%s", e.server(2).URL, slug, rel.ID, channelPassword), nil)
	if m := regexp.MustCompile(`access=([^&<"]+)`).FindSubmatch(r.Body); m != nil {
		secrets["access token"] = string(m[1])
	} else {
		t.Errorf("the install manifest carries no access token: %s", r)
	}

	// The right token works on every endpoint (the destroy last).
	for i, g := range endpoints {
		tok := e.upload
		if g.admin {
			tok = e.admin
		}
		if r := g.request(t, e.server(i).URL, credential{token: tok, place: "header"}); r.Status != g.ok {
			t.Errorf("%s with the right token: %s, want %d", g.name, r, g.ok)
		}
	}

	// Passwords and tokens sent in query strings and forms were refused or used above: none may
	// be logged, nor a presigned URL, nor the credentials the replicas were configured with.
	logs := e.logs()
	for what, secret := range secrets {
		if secret != "" && strings.Contains(logs, secret) {
			t.Errorf("the %s appears in the logs", what)
		}
	}
	for _, marker := range []string{"X-Amz-Signature", "X-Amz-Credential", "X-Amz-Security-Token", "password=", "token=", "access="} {
		if strings.Contains(logs, marker) {
			t.Errorf("%q appears in the logs", marker)
		}
	}
	noServerErrors(t, e.servers...)
	checkConsistent(t, e)
}

// TestFilesystemRootContainment: the filesystem backend never reads or writes outside its folder:
// not through the signed /objects/ URLs (with "..", encoded slashes, absolute paths, or symbolic
// links planted in the folder, even with a valid signature made with the secret), and not through
// the backend's own operations. The signed download links stay out of the logs.
func TestFilesystemRootContainment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, e2e.Options{Storage: e2e.FS}, 1)
	s := e.servers[0]
	rel := decodeRelease(t, mustUpload(t, s, e.upload, ipa("com.example.contained", "1", 0)))

	outside := t.TempDir()
	marker := "OUTSIDE-SECRET-" + testkit.RandomHex(8)
	secretFile := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secretFile, []byte(marker), 0o644); err != nil {
		t.Fatal(err)
	}
	root := e.h.StorageDir
	if err := os.Symlink(secretFile, filepath.Join(root, "packages", "evil.ipa")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	relOut, err := filepath.Rel(root, secretFile)
	if err != nil {
		t.Fatal(err)
	}

	// The service's own link works (so refusals below are not a broken route).
	r := call(t, http.MethodGet, fmt.Sprintf("%s/download/releases/%d", s.URL, rel.ID), nil)
	loc := r.Header.Get("Location")
	lu, err := url.Parse(loc)
	if r.Status != http.StatusFound || err != nil || lu.Query().Get("t") == "" {
		t.Fatalf("download: %s, Location %q", r, loc)
	}
	if got := call(t, http.MethodGet, loc, nil); got.Status != http.StatusOK || len(got.Body) == 0 {
		t.Fatalf("the signed link does not serve the package: %s", got)
	}
	signedToken := lu.Query().Get("t")

	signer := signing.New([]byte(e2e.Secret))
	signed := func(key string) string {
		return url.Values{"t": {signer.Token("object", time.Hour, key, "", "")}}.Encode()
	}
	cases := []struct{ name, target string }{
		{"dot-dot", "/objects/../../../../../../etc/passwd?t=x"},
		{"encoded slashes", "/objects/..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd?t=x"},
		{"encoded dots", "/objects/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd?t=x"},
		{"signed dot-dot", "/objects/" + filepath.ToSlash(relOut) + "?" + signed(filepath.ToSlash(relOut))},
		{"signed absolute", "/objects/" + secretFile + "?" + signed(secretFile)},
		{"signed absolute, double slash", "/objects//" + strings.TrimPrefix(secretFile, "/") + "?" + signed(secretFile)},
		{"signed symlink to a file outside", "/objects/packages/evil.ipa?" + signed("packages/evil.ipa")},
		{"signed path through a symlinked folder", "/objects/escape/secret.txt?" + signed("escape/secret.txt")},
		{"stolen link, other key", "/objects/escape/secret.txt?t=" + url.QueryEscape(signedToken)},
	}
	for _, c := range cases {
		status, body := rawGet(t, s.Addr, c.target)
		if strings.Contains(body, marker) || strings.Contains(body, "root:x:0:0") {
			t.Errorf("%s: GET %s served a file outside the storage folder", c.name, c.target)
		}
		if status != http.StatusForbidden && status != http.StatusNotFound && status != http.StatusBadRequest {
			t.Errorf("%s: GET %s: status %d, want 403 or 404", c.name, c.target, status)
		}
	}

	// The backend itself, on a folder with the same kind of plants.
	ctx := context.Background()
	dir := t.TempDir()
	st, err := fs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := os.Symlink(secretFile, filepath.Join(dir, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	relOut, _ = filepath.Rel(dir, secretFile)
	for _, key := range []string{"../x", filepath.ToSlash(relOut), secretFile, "a/../../x", "evil", "escape/secret.txt", "escape/new.txt"} {
		if rc, err := st.GetRange(ctx, key, 0, -1); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("GetRange(%q) read %q", key, b)
		}
		if f, err := st.OpenFile(ctx, key); err == nil {
			f.Close()
			t.Errorf("OpenFile(%q) succeeded", key)
		}
		if _, err := st.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%q) succeeded", key)
		}
		// Writing "evil" replaces the link itself with a file inside the folder (a rename does not
		// follow links); every other key is refused.
		if _, err := st.Put(ctx, key, strings.NewReader("overwritten"), blob.PutOptions{}); err == nil && key != "evil" {
			t.Errorf("Put(%q) succeeded", key)
		}
		_ = st.Delete(ctx, key) // refused, or the object inside the folder removed
	}
	if b, err := os.ReadFile(secretFile); err != nil || string(b) != marker {
		t.Errorf("the file outside was changed or deleted: %q, %v", b, err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files were written outside the storage folder: %v", entries)
	}

	if strings.Contains(s.Logs(), signedToken) {
		t.Error("a signed download link appears in the logs")
	}
	noServerErrors(t, s)
	// The planted links are not objects of the service; remove them before the consistency check.
	_ = os.Remove(filepath.Join(root, "packages", "evil.ipa"))
	_ = os.Remove(filepath.Join(root, "escape"))
	checkConsistent(t, e)
}

// rawGet sends "GET target" as is (no client-side path cleaning) and returns the status and body.
func rawGet(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(requestTimeout))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, addr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, ""
		}
		t.Fatalf("GET %s: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
