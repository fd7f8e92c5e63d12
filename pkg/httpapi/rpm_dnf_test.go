package httpapi_test

import (
	"bytes"
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
	"github.com/slipwayhq/slipway/pkg/repokey"
	"github.com/slipwayhq/slipway/pkg/repos/rpmmd"
	"github.com/slipwayhq/slipway/test/apptest"
)

// dnfEnv is a scratch root in which Debian's dnf reads a channel's DNF repository.
type dnfEnv struct {
	t         *testing.T
	dnf, dir  string
	gpgkeys   []string // file:// URLs of the public keys the .repo file lists
	installed string
}

// repo writes the .repo file of repository id (one file per id) as the setup snippet makes it
// (rpmmd.RepoFile: repo_gpgcheck=1 and, the packages being signed, gpgcheck=1), with the
// channel's feed token as the password when token is not "".
func (d *dnfEnv) repo(id, baseurl, token string) {
	d.t.Helper()
	f := rpmmd.RepoFile{Slug: id, Name: "Slipway " + id, BaseURL: baseurl, KeyURL: strings.Join(d.gpgkeys, " "), Protected: token != "", Signed: true}
	body := strings.Replace(f.String(), "FEED-TOKEN", token, 1)
	if err := os.WriteFile(filepath.Join(d.dir, "repos", id+".repo"), []byte(body), 0o600); err != nil {
		d.t.Fatal(err)
	}
}

// run runs dnf on repository id only and returns its output and whether it succeeded.
func (d *dnfEnv) run(id string, args ...string) (string, bool) {
	d.t.Helper()
	base := []string{"-c", filepath.Join(d.dir, "dnf.conf"), "--installroot", filepath.Join(d.dir, "root"), "--releasever", "1",
		"--setopt", "reposdir=" + filepath.Join(d.dir, "repos"), "--disablerepo", "*", "--enablerepo", "slipway-" + id, "-y"}
	cmd := exec.CommandContext(d.t.Context(), d.dnf, append(base, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

// must runs dnf and fails the test when it does.
func (d *dnfEnv) must(id string, args ...string) string {
	d.t.Helper()
	out, ok := d.run(id, args...)
	if !ok {
		d.t.Fatalf("dnf %s failed:\n%s", strings.Join(args, " "), out)
	}
	return out
}

// rpmQ is what the scratch root's rpm database says of a package.
func (d *dnfEnv) rpmQ(name string) string {
	out, _ := exec.Command("rpm", "--root", filepath.Join(d.dir, "root"), "-q", "--qf", "%{NAME}-%{VERSION}-%{RELEASE}", name).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// newDNF makes the scratch root, the team's signing key (gpg) with which the test signs its
// packages (rpmsign), and Slipway's repository key.
func newDNF(t *testing.T, dnf string) (*dnfEnv, *repokey.Keyring) {
	dir := t.TempDir()
	d := &dnfEnv{t: t, dnf: dnf, dir: dir}
	for _, sub := range []string{"repos", "root", "gnupg"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := "[main]\ngpgcheck=1\nrepo_gpgcheck=1\ninstall_weak_deps=False\nkeepcache=0\nreposdir=" + filepath.Join(dir, "repos") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "dnf.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	gpg := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("gpg", append([]string{"--homedir", filepath.Join(dir, "gnupg"), "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %q: %v", args, err)
		}
		return out
	}
	gpg("--quick-gen-key", "Team Packages <team@example.org>", "rsa3072", "sign", "never")
	team := gpg("--armor", "--export", "team@example.org")
	slipway, err := repokey.Generate("Slipway test repositories", "repo@example.org")
	if err != nil {
		t.Fatal(err)
	}
	k, err := repokey.Parse(slipway)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"team.asc": team} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d.gpgkeys = []string{"", "file://" + filepath.Join(dir, "team.asc")}
	return d, k
}

// build makes and signs (rpmsign, the team's key) a package of name and version.
func (d *dnfEnv) build(name, version string) (string, []byte) {
	d.t.Helper()
	p, err := linuxtest.RPMBuild(filepath.Join(d.dir, "build-"+version), linuxtest.SpecOptions{Name: name, Version: version,
		Summary: "Demo <from> Slipway & dnf", Deps: []string{"AutoReqProv: no", "Provides: " + name + "-tool = " + version}})
	if err != nil {
		d.t.Fatal(err)
	}
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		d.t.Fatal(err)
	}
	cmd := exec.Command("rpmsign", "--addsign", "--define", "__gpg "+gpg, "--define", "_gpg_name team@example.org",
		"--define", "_gpg_path "+filepath.Join(d.dir, "gnupg"), "--define", "_gpg_sign_cmd_extra_args --pinentry-mode loopback --passphrase ''", p)
	if out, err := cmd.CombinedOutput(); err != nil {
		d.t.Fatalf("rpmsign: %v\n%s", err, out)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		d.t.Fatal(err)
	}
	return filepath.Base(p), data
}

// tamperProxy forwards to target, changing one byte of the answers whose path ends with suffix
// ("" changes none).
func tamperProxy(t *testing.T, target string, suffix *string) string {
	u, _ := url.Parse(target)
	p := httputil.NewSingleHostReverseProxy(u)
	p.ModifyResponse = func(r *http.Response) error {
		if *suffix == "" || !strings.HasSuffix(r.Request.URL.Path, *suffix) || r.StatusCode != 200 {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		if i := bytes.Index(b, []byte("<revision>")); i >= 0 {
			b[i+len("<revision>")] ^= 1 // a digit stays a digit: the XML is still good, the signature is not
		} else if len(b) > 0 {
			b[len(b)/2] ^= 1
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDNFInstallsFromTheRepository: Debian's dnf, in a scratch root, with signature checking on
// (repo_gpgcheck=1 against Slipway's key, gpgcheck=1 against the team's key that signed the
// package with rpmsign): makecache succeeds; the package installs; a newer upload is seen as an
// upgrade and installs; a deleted build disappears on --refresh; a repomd.xml or primary.xml.gz
// changed by one byte in a proxy is refused; a protected channel answers 401 without the
// .repo file's username/password (the feed token) and works with them. On the filesystem and S3.
func TestDNFInstallsFromTheRepository(t *testing.T) {
	dnf := os.Getenv("SLIPWAY_TEST_DNF")
	if dnf == "" {
		if os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SLIPWAY_TEST_DNF is not set: run the tests with test/with-services.sh (make test)")
		}
		t.Skip("no dnf: run the tests with test/with-services.sh (make test)")
	}
	for _, storage := range []string{apptest.FS, apptest.S3} {
		t.Run(storage, func(t *testing.T) {
			d, key := newDNF(t, dnf)
			m := newMgmt(t, apptest.Options{Storage: storage, Configure: func(c *config.Config) { c.RepoKey = key }})
			// The .repo files list the key Slipway serves, and the team's beside it.
			d.gpgkeys = []string{m.e.URL + "/keys/slipway.asc", d.gpgkeys[1]}
			name1, v1 := d.build("field-demo", "1.0")
			first := m.e.UploadApp(t, name1, v1)
			slug := first["channel"].(map[string]any)["slug"].(string)
			m.waitRelease(id(first), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
			base := m.e.URL + "/channels/" + slug + "/rpm"
			// The channel's page shows the .repo file this test gives dnf (its packages are signed:
			// gpgcheck=1), with the key Slipway serves.
			snippet := rpmmd.RepoFile{Slug: slug, Name: slug + " (Slipway)", BaseURL: base, KeyURL: m.e.URL + "/keys/slipway.asc", Signed: true}
			if page := m.e.Get(t, "/channels/"+slug); page.Status != 200 || !strings.Contains(string(page.Body), html.EscapeString(strings.TrimSuffix(snippet.String(), "\n"))) {
				t.Errorf("the channel page (%d) does not show the .repo file:\n%s", page.Status, snippet)
			}

			d.repo("open", base, "")
			d.must("open", "makecache")
			d.must("open", "install", "field-demo")
			if got := d.rpmQ("field-demo"); got != "field-demo-1.0-1" {
				t.Fatalf("installed: %q", got)
			}
			if out := d.must("open", "repoquery", "--whatprovides", "field-demo-tool"); !strings.Contains(out, "field-demo-0:1.0-1.noarch") {
				t.Errorf("repoquery --whatprovides field-demo-tool:\n%s", out)
			}

			name2, v2 := d.build("field-demo", "1.1")
			second := m.e.UploadApp(t, name2, v2, apptest.Field("channel_key", slug))
			m.waitRelease(id(second), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
			if out := d.must("open", "--refresh", "list", "--upgrades"); !strings.Contains(out, "1.1-1") {
				t.Fatalf("the newer upload is not an upgrade:\n%s", out)
			}
			d.must("open", "upgrade", "field-demo")
			if got := d.rpmQ("field-demo"); got != "field-demo-1.1-1" {
				t.Fatalf("upgraded: %q", got)
			}

			m.want(m.call("DELETE", fmt.Sprintf("/api/releases/%d", id(second)), m.e.AdminToken, ""), 200, "delete the newer build")
			if out := d.must("open", "--refresh", "repoquery", "field-demo"); strings.Contains(out, "1.1-1") || !strings.Contains(out, "1.0-1") {
				t.Fatalf("after the delete the repository lists:\n%s", out)
			}
			// A build in a staged rollout is not listed, as in the APT repository: a repository
			// cannot stage, so it waits for 100%.
			name3, v3 := d.build("field-demo", "1.2")
			staged := m.e.UploadApp(t, name3, v3, apptest.Field("channel_key", slug), apptest.Field("rollout", "20"))
			m.waitRelease(id(staged), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
			if out := d.must("open", "--refresh", "repoquery", "field-demo"); strings.Contains(out, "1.2-1") {
				t.Fatalf("a build at 20%% rollout is listed:\n%s", out)
			}
			if r := m.e.Get(t, fmt.Sprintf("/channels/%s/rpm/packages/%d/%s", slug, id(staged), name3)); r.Status != 404 {
				t.Errorf("the staged build's package: %d", r.Status)
			}

			var suffix string
			proxied := tamperProxy(t, m.e.URL, &suffix)
			// A repository of its own (no cache) for each: dnf fetches every file through the proxy.
			for i, s := range []string{"", "/repomd.xml", "-primary.xml.gz"} {
				suffix = s
				rid := fmt.Sprintf("proxied%d", i)
				d.repo(rid, proxied+"/channels/"+slug+"/rpm", "")
				out, ok := d.run(rid, "makecache")
				if s == "" && !ok {
					t.Fatalf("dnf through the proxy, nothing changed:\n%s", out)
				} else if s != "" && ok {
					t.Errorf("dnf accepted a repository whose %s had one byte changed:\n%s", s, out)
				} else if s != "" {
					t.Logf("dnf refuses a repository whose %s had one byte changed:\n%s", s, out)
				}
			}
			suffix = ""

			prot := m.e.UploadApp(t, "locked-"+name1, v1, apptest.Field("password", "sesame"))
			ch := prot["channel"].(map[string]any)
			m.waitRelease(id(prot), func(r map[string]any) bool { return r["checksum_state"] == "verified" })
			tok := m.want(m.call("POST", fmt.Sprintf("/api/channels/%d/feed_token", int64(ch["id"].(float64))), m.e.AdminToken, ""), 201, "feed token")["feed_token"].(string)
			lockedBase := m.e.URL + "/channels/" + ch["slug"].(string) + "/rpm"
			d.repo("locked", lockedBase, "")
			if out, ok := d.run("locked", "makecache"); ok || !strings.Contains(out, "401") {
				t.Errorf("a protected channel without credentials: ok=%v\n%s", ok, out)
			}
			d.repo("locked", lockedBase, tok)
			d.must("locked", "makecache")
			d.must("locked", "downgrade", "field-demo")
			if got := d.rpmQ("field-demo"); got != "field-demo-1.0-1" {
				t.Fatalf("downgraded from the protected channel: %q", got)
			}
		})
	}
}
