package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/test/apptest"
)

// needAPT skips a test on a machine without Debian's tools.
func needAPT(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"apt-get", "apt-cache", "dpkg-deb", "gpg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// buildDeb makes a real .deb with dpkg-deb --build.
func buildDeb(t testing.TB, name, version, arch string) []byte {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755)
	os.MkdirAll(filepath.Join(root, "usr", "share", "doc", name), 0o755)
	os.WriteFile(filepath.Join(root, "usr", "share", "doc", name, "README"), []byte(name+" "+version+"\n"), 0o644)
	control := fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: Example Builds <builds@example.com>\n"+
		"Installed-Size: 8\nDepends: libc6 (>= 2.17)\nRecommends: ca-certificates\nSection: utils\nPriority: optional\n"+
		"Homepage: https://example.com/%s\nDescription: %s for the APT tests\n A package built by dpkg-deb in the test.\n .\n Second paragraph.\n",
		name, version, arch, name, name)
	os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(control), 0o644)
	out := filepath.Join(dir, "out.deb")
	if b, err := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, out).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// aptRoot is a scratch apt: its own sources, keyring, lists, cache and dpkg status, nothing of
// the machine's configuration, signatures checked (no trusted=yes).
type aptRoot struct {
	t    testing.TB
	dir  string
	slug string
}

func newAPTRoot(t testing.TB, base, slug string, key []byte) *aptRoot {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"etc/sources.list.d", "etc/apt.conf.d", "etc/preferences.d", "etc/trusted.gpg.d", "etc/auth.conf.d",
		"state/lists/partial", "cache/archives/partial", "log", "download"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "key.asc"), key, 0o644)
	keyring := filepath.Join(dir, "etc", slug+".gpg")
	cmd := exec.Command("gpg", "--batch", "--dearmor", "-o", keyring, filepath.Join(dir, "key.asc"))
	cmd.Env = append(os.Environ(), "GNUPGHOME="+t.TempDir())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg --dearmor: %v\n%s", err, b)
	}
	sources := fmt.Sprintf("Types: deb\nURIs: %s/channels/%s/apt\nSuites: stable\nComponents: main\nSigned-By: %s\n", base, slug, keyring)
	os.WriteFile(filepath.Join(dir, "etc", "sources.list.d", slug+".sources"), []byte(sources), 0o644)
	os.WriteFile(filepath.Join(dir, "status"), nil, 0o644)
	return &aptRoot{t: t, dir: dir, slug: slug}
}

// run runs apt-get or apt-cache in the scratch root; it returns the output and whether it
// exited 0.
func (a *aptRoot) run(tool string, args ...string) (string, bool) {
	a.t.Helper()
	opts := []string{"-o", "Dir=" + a.dir, "-o", "Dir::State=" + filepath.Join(a.dir, "state"), "-o", "Dir::State::status=" + filepath.Join(a.dir, "status"),
		"-o", "Dir::Cache=" + filepath.Join(a.dir, "cache"), "-o", "Dir::Etc=" + filepath.Join(a.dir, "etc"),
		"-o", "Dir::Etc::SourceList=" + filepath.Join(a.dir, "etc", "none.list"), "-o", "Dir::Etc::SourceParts=" + filepath.Join(a.dir, "etc", "sources.list.d"),
		"-o", "Dir::Etc::Parts=" + filepath.Join(a.dir, "etc", "apt.conf.d"), "-o", "Dir::Etc::PreferencesParts=" + filepath.Join(a.dir, "etc", "preferences.d"),
		"-o", "Dir::Etc::Trusted=" + filepath.Join(a.dir, "etc", "trusted.gpg"), "-o", "Dir::Etc::TrustedParts=" + filepath.Join(a.dir, "etc", "trusted.gpg.d"),
		"-o", "Dir::Etc::netrcparts=" + filepath.Join(a.dir, "etc", "auth.conf.d"), "-o", "Dir::Log=" + filepath.Join(a.dir, "log"),
		"-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root", "-o", "APT::Architecture=amd64", "-o", "APT::Architectures=amd64",
		"-o", "Acquire::Languages=none", "-o", "Acquire::Retries=0", "-o", "Acquire::http::Proxy=DIRECT", "-q"}
	cmd := exec.Command(tool, append(opts, args...)...)
	cmd.Dir = filepath.Join(a.dir, "download")
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// update runs apt-get update from empty lists, and says whether apt accepted the repository
// (apt-get update exits 0 on some fetch errors: it is judged by its warnings and errors too).
func (a *aptRoot) update() (string, bool) {
	a.t.Helper()
	os.RemoveAll(filepath.Join(a.dir, "state", "lists"))
	os.MkdirAll(filepath.Join(a.dir, "state", "lists", "partial"), 0o755)
	out, ok := a.run("apt-get", "update")
	return out, ok && !strings.Contains(out, "\nW:") && !strings.Contains(out, "\nE:") && !strings.HasPrefix(out, "E:") && !strings.HasPrefix(out, "W:")
}

func (a *aptRoot) mustUpdate() {
	a.t.Helper()
	if out, ok := a.update(); !ok {
		a.t.Fatalf("apt-get update failed:\n%s", out)
	}
}

// candidate is apt-cache policy's candidate version of pkg ("(none)" when there is none).
func (a *aptRoot) candidate(pkg string) string {
	a.t.Helper()
	out, _ := a.run("apt-cache", "policy", pkg)
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate: "); ok {
			return v
		}
	}
	return "(none)"
}

// TestAPTRepository runs Debian's apt-get against a Linux channel's repository, on the
// filesystem and on S3: update with the signature checked, download with the checksum checked,
// a newer upload seen as an upgrade, a deleted build gone, a tampered index refused.
func TestAPTRepository(t *testing.T) {
	needAPT(t)
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) { testAPTRepository(t, storage) })
	}
}

func testAPTRepository(t *testing.T, storage string) {
	key := testRepoKey(t)
	m := newMgmt(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) { c.RepoKey = key }})
	e := m.e
	verified := func(r map[string]any) bool { return r["checksum_state"] == "verified" }

	v1 := buildDeb(t, "slipway-demo", "1.0-1", "amd64")
	rel1 := e.UploadApp(t, "slipway-demo_1.0-1_amd64.deb", v1)
	slug := rel1["channel"].(map[string]any)["slug"].(string)
	m.waitRelease(id(rel1), verified)
	docsDeb := buildDeb(t, "slipway-demo-doc", "1.0", "all")
	first := e.UploadApp(t, "slipway-demo-doc_1.0_all.deb", docsDeb, apptest.Field("channel_key", slug))
	// The same package, version and architecture again: the newer upload replaces the older in
	// the index, and its answer says so.
	docs := e.UploadApp(t, "slipway-demo-doc_1.0_all.deb", docsDeb, apptest.Field("channel_key", slug))
	if w := fmt.Sprint(docs["warnings"]); !strings.Contains(w, fmt.Sprintf("build %d has the same package, version and architecture", id(first))) {
		t.Errorf("the second upload's warnings: %s", w)
	}
	m.waitRelease(id(docs), verified)

	keyResp := e.Get(t, "/channels/"+slug+"/apt/key.asc")
	if keyResp.Status != 200 || keyResp.Header.Get("Content-Type") != "application/pgp-keys" {
		t.Fatalf("key.asc: %d %v", keyResp.Status, keyResp.Header)
	}
	// The public release and channel pages show the lines to paste.
	for _, page := range []string{fmt.Sprintf("/channels/%s/releases/%d", slug, id(rel1)), "/channels/" + slug} {
		r := e.Do(t, "GET", page, nil, http.Header{"Accept": {"text/html"}})
		for _, want := range []string{"curl -fsSL " + e.URL + "/channels/" + slug + "/apt/key.asc | sudo gpg --dearmor -o /etc/apt/keyrings/" + slug + ".gpg",
			"URIs: " + e.URL + "/channels/" + slug + "/apt", "Signed-By: /etc/apt/keyrings/" + slug + ".gpg", "sudo apt-get install slipway-demo"} {
			if r.Status != 200 || !strings.Contains(html.UnescapeString(string(r.Body)), want) {
				t.Errorf("%s (%d) lacks %q", page, r.Status, want)
			}
		}
		if strings.Contains(string(r.Body), "auth.conf.d") {
			t.Errorf("%s: an open channel's page shows the auth.conf line", page)
		}
	}
	a := newAPTRoot(t, e.URL, slug, keyResp.Body)
	a.mustUpdate()
	if got := a.candidate("slipway-demo"); got != "1.0-1" {
		t.Fatalf("candidate %q, want 1.0-1", got)
	}
	if got := a.candidate("slipway-demo-doc"); got != "1.0" {
		t.Errorf("the Architecture: all package: candidate %q", got)
	}
	if pkgs := e.Get(t, "/channels/"+slug+"/apt/dists/stable/main/binary-amd64/Packages"); !strings.Contains(string(pkgs.Body), fmt.Sprintf("Filename: pool/%d/", id(docs))) ||
		strings.Contains(string(pkgs.Body), fmt.Sprintf("Filename: pool/%d/", id(first))) {
		t.Errorf("the index does not list the newer of two same builds only:\n%s", pkgs.Body)
	}
	show, _ := a.run("apt-cache", "show", "slipway-demo")
	for _, want := range []string{"Installed-Size: 8", "Depends: libc6 (>= 2.17)", "Recommends: ca-certificates", "Homepage: https://example.com/slipway-demo",
		"Description: slipway-demo for the APT tests", " Second paragraph.", "Filename: pool/"} {
		if !strings.Contains(show, want) {
			t.Errorf("apt-cache show lacks %q:\n%s", want, show)
		}
	}
	// apt-get download fetches the package through the pool's redirect and checks its SHA-256.
	if out, ok := a.run("apt-get", "download", "slipway-demo"); !ok {
		t.Fatalf("apt-get download: %s", out)
	}
	got, err := os.ReadFile(filepath.Join(a.dir, "download", "slipway-demo_1.0-1_amd64.deb"))
	if err != nil || !bytes.Equal(got, v1) {
		t.Fatalf("downloaded package: %v (%d bytes, want %d)", err, len(got), len(v1))
	}

	// A newer build is an upgrade of the installed one.
	os.WriteFile(filepath.Join(a.dir, "status"), []byte("Package: slipway-demo\nStatus: install ok installed\nPriority: optional\nSection: utils\n"+
		"Maintainer: Example Builds <builds@example.com>\nArchitecture: amd64\nVersion: 1.0-1\nDescription: installed\n\n"+
		"Package: libc6\nStatus: install ok installed\nPriority: optional\nSection: libs\nMaintainer: Debian\nArchitecture: amd64\nVersion: 2.36-9\nDescription: libc\n"), 0o644)
	rel2 := e.UploadApp(t, "slipway-demo_1.1-1_amd64.deb", buildDeb(t, "slipway-demo", "1.1-1", "amd64"), apptest.Field("channel_key", slug))
	m.waitRelease(id(rel2), verified)
	a.mustUpdate()
	if got := a.candidate("slipway-demo"); got != "1.1-1" {
		t.Fatalf("after the upload: candidate %q, want 1.1-1", got)
	}
	if out, _ := a.run("apt-get", "-s", "--no-install-recommends", "upgrade"); !strings.Contains(out, "Inst slipway-demo [1.0-1] (1.1-1") {
		t.Errorf("apt-get -s upgrade does not upgrade:\n%s", out)
	}

	// A deleted build leaves the index at the next update.
	m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(rel2)), e.AdminToken, ""), 200, "delete release")
	a.mustUpdate()
	if got := a.candidate("slipway-demo"); got != "1.0-1" {
		t.Errorf("after the delete: candidate %q, want 1.0-1", got)
	}
	if r := e.Get(t, fmt.Sprintf("/channels/%s/apt/pool/%d/slipway-demo_1.1-1_amd64.deb", slug, id(rel2))); r.Status != 404 {
		t.Errorf("the deleted build's pool file: %d", r.Status)
	}

	// The channel setting: only the newest version of each package.
	rel3 := e.UploadApp(t, "slipway-demo_1.2-1_amd64.deb", buildDeb(t, "slipway-demo", "1.2-1", "amd64"), apptest.Field("channel_key", slug))
	m.waitRelease(id(rel3), verified)
	chID := int64(rel1["channel"].(map[string]any)["id"].(float64))
	if ch := m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d", chID), e.AdminToken, `{"apt_newest_only": true}`), 200, "apt_newest_only"); ch["apt_newest_only"] != true {
		t.Errorf("channel answer: %v", ch)
	}
	packages := string(e.Get(t, "/channels/"+slug+"/apt/dists/stable/main/binary-amd64/Packages").Body)
	if !strings.Contains(packages, "Version: 1.2-1") || strings.Contains(packages, "Version: 1.0-1") {
		t.Errorf("newest only lists:\n%s", packages)
	}
	m.want(m.call("PUT", fmt.Sprintf("/api/channels/%d", chID), e.AdminToken, `{"apt_newest_only": false}`), 200, "apt_newest_only off")
	m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(rel3)), e.AdminToken, ""), 200, "delete release")

	// One byte changed by a proxy, in the Packages files or in InRelease: apt refuses the index.
	for _, target := range []string{"Packages", "InRelease"} {
		t.Run("tampered "+target, func(t *testing.T) {
			proxy := tamperingProxy(t, e.URL, target)
			b := newAPTRoot(t, proxy, slug, keyResp.Body)
			out, ok := b.update()
			if ok {
				t.Fatalf("apt-get update accepts a tampered %s:\n%s", target, out)
			}
			if b.candidate("slipway-demo") != "(none)" {
				t.Errorf("apt uses the tampered index:\n%s", out)
			}
		})
	}

	// HEAD, ETag and 304 on an index file.
	inRel := e.Get(t, "/channels/"+slug+"/apt/dists/stable/InRelease")
	etag := inRel.Header.Get("ETag")
	if inRel.Status != 200 || etag == "" || !bytes.HasPrefix(inRel.Body, []byte("-----BEGIN PGP SIGNED MESSAGE-----")) {
		t.Fatalf("InRelease: %d %v", inRel.Status, inRel.Header)
	}
	if r := e.Do(t, "GET", "/channels/"+slug+"/apt/dists/stable/InRelease", nil, http.Header{"If-None-Match": {etag}}); r.Status != 304 {
		t.Errorf("If-None-Match: %d", r.Status)
	}
	if r := e.Do(t, "HEAD", "/channels/"+slug+"/apt/dists/stable/InRelease", nil, nil); r.Status != 200 || r.Header.Get("Content-Length") != fmt.Sprint(len(inRel.Body)) {
		t.Errorf("HEAD: %d, Content-Length %q, want %d", r.Status, r.Header.Get("Content-Length"), len(inRel.Body))
	}
	for _, f := range []string{"Release", "Release.gpg", "main/binary-amd64/Packages", "main/binary-amd64/Packages.gz"} {
		if r := e.Get(t, "/channels/"+slug+"/apt/dists/stable/"+f); r.Status != 200 || len(r.Body) == 0 {
			t.Errorf("%s: %d", f, r.Status)
		}
	}
	if r := e.Get(t, "/channels/"+slug+"/apt/dists/stable/main/binary-amd64/by-hash/SHA256/"+strings.Repeat("0", 64)); r.Status != 404 {
		t.Errorf("an unknown hash: %d", r.Status)
	}
	if r := e.Get(t, "/channels/"+slug+"/apt/dists/oldstable/InRelease"); r.Status != 404 {
		t.Errorf("another suite: %d", r.Status)
	}
}

// tamperingProxy forwards to target, flipping one byte of every response whose path ends with
// what (a Packages file, by name or by hash, or InRelease) inside its signed or hashed content.
func tamperingProxy(t *testing.T, target, what string) string {
	t.Helper()
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		p := resp.Request.URL.Path
		hit := strings.HasSuffix(p, "/"+what)
		if what == "Packages" {
			hit = strings.Contains(p, "/by-hash/") || strings.Contains(p, "/Packages")
		}
		if !hit || resp.StatusCode != 200 {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		i := bytes.Index(body, []byte("Codename: stable"))
		if i < 0 {
			i = len(body) / 2
		} else {
			i += len("Codename: st")
		}
		if len(body) > 0 {
			body[i] ^= 0x01
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
		resp.Header.Del("ETag")
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAPTProtectedChannel: a channel with a password answers its repository to its feed token as
// the HTTP basic password (apt's auth.conf.d) and to nothing else: 401 with a Basic challenge.
func TestAPTProtectedChannel(t *testing.T) {
	needAPT(t)
	key := testRepoKey(t)
	m := newMgmt(t, apptest.Options{Configure: func(c *config.Config) { c.RepoKey = key }})
	e := m.e
	rel := e.UploadApp(t, "secret-tool_2.0_amd64.deb", buildDeb(t, "secret-tool", "2.0", "amd64"), apptest.Field("password", "hunter22"))
	ch := rel["channel"].(map[string]any)
	slug, chID := ch["slug"].(string), int64(ch["id"].(float64))
	m.waitRelease(id(rel), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
	token := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", chID), e.AdminToken, ""), 201, "feed token")["feed_token"].(string)

	r := e.Get(t, "/channels/"+slug+"/apt/dists/stable/InRelease")
	if r.Status != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic realm=") {
		t.Fatalf("without credentials: %d %v", r.Status, r.Header)
	}
	if r := e.Do(t, "GET", "/channels/"+slug+"/apt/dists/stable/InRelease", nil, http.Header{"Authorization": {"Basic " + basic("slipway", "wrong")}}); r.Status != 401 {
		t.Errorf("a wrong token: %d", r.Status)
	}
	if r := e.Do(t, "GET", "/channels/"+slug+"/apt/dists/stable/InRelease", nil, http.Header{"Authorization": {"Bearer " + token}}); r.Status != 200 {
		t.Errorf("Bearer: %d", r.Status)
	}
	keyResp := e.Get(t, "/channels/"+slug+"/apt/key.asc") // no credentials needed
	if keyResp.Status != 200 {
		t.Fatalf("key.asc of a protected channel: %d", keyResp.Status)
	}
	a := newAPTRoot(t, e.URL, slug, keyResp.Body)
	if out, ok := a.update(); ok {
		t.Fatalf("apt-get update without credentials succeeds:\n%s", out)
	}
	host := strings.TrimPrefix(e.URL, "http://")
	os.WriteFile(filepath.Join(a.dir, "etc", "auth.conf.d", slug+".conf"),
		[]byte(fmt.Sprintf("machine http://%s/channels/%s/apt\nlogin slipway\npassword %s\n", host, slug, token)), 0o600)
	a.mustUpdate()
	if got := a.candidate("secret-tool"); got != "2.0" {
		t.Fatalf("candidate %q", got)
	}
	if out, ok := a.run("apt-get", "download", "secret-tool"); !ok {
		t.Fatalf("apt-get download with auth.conf: %s", out)
	}
	if strings.Contains(e.LogText(), token) {
		t.Error("the logs hold the feed token")
	}

	// The console's channel page: the setup lines with the auth.conf line and its placeholder,
	// never the token; and the APT repository's setting.
	link, err := e.Service.Logins.NewLoginLink(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	signedIn := e.Do(t, "GET", "/console/login-link?token="+link, nil, nil)
	session := http.Header{"Cookie": {strings.Split(signedIn.Header.Get("Set-Cookie"), ";")[0]}, "Accept": {"text/html"}}
	page := e.Do(t, "GET", fmt.Sprintf("/console/channels/%d", chID), nil, session)
	body := html.UnescapeString(string(page.Body))
	for _, want := range []string{"/etc/apt/auth.conf.d/" + slug + ".conf", "machine " + strings.TrimPrefix(e.URL, "https://") + "/channels/" + slug + "/apt login slipway password FEED-TOKEN",
		"Signed-By: /etc/apt/keyrings/" + slug + ".gpg", `id="apt-newest-only-`} {
		if page.Status != 200 || !strings.Contains(body, want) {
			t.Errorf("the console channel page (%d) lacks %q", page.Status, want)
		}
	}
	if strings.Contains(body, token) {
		t.Error("the console page shows the feed token")
	}
}

func basic(user, password string) string {
	req, _ := http.NewRequest("GET", "http://x/", nil)
	req.SetBasicAuth(user, password)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// A .deb whose control file lacks Version is refused at upload, whole.
func TestAPTBadDebRefused(t *testing.T) {
	e := apptest.New(t, apptest.Options{})
	deb := linuxtest.BuildDeb(linuxtest.DebOptions{Control: "Package: no-version\nArchitecture: amd64\nDescription: x\n"})
	r := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.File("no-version.deb", deb))
	if r.Status != 422 || !strings.Contains(string(r.Body), "no Version field") {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	deb = linuxtest.BuildDeb(linuxtest.DebOptions{Control: "Version: 1.0\nArchitecture: amd64\nDescription: x\n"})
	if r := e.Upload(t, "/api/apps/upload", e.UploadToken, apptest.File("no-package.deb", deb)); r.Status != 422 || !strings.Contains(string(r.Body), "no Package field") {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
}
