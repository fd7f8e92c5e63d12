package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/uploader"
	"github.com/slipwayhq/slipway/test/e2e"
)

// needHistory fails (in CI and under make test) or skips (a plain go test) when the git history
// the rolling-update test builds the previous binary from is not there.
func needHistory(t *testing.T, why string) {
	t.Helper()
	msg := "the rolling-update test builds the previous release's binary from git history: " + why
	if os.Getenv("CI") != "" || os.Getenv("SLIPWAY_TEST_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// git runs git in the repository and returns its trimmed output.
func git(t *testing.T, root string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
	return strings.TrimSpace(string(out)), err
}

// commitBefore is the commit before the one that first added a file matching pathspec: the
// newest binary without it. A file not committed yet (a migration being written) gives HEAD.
func commitBefore(t *testing.T, root, pathspec string) string {
	t.Helper()
	out, err := git(t, root, "log", "--no-renames", "--diff-filter=A", "--format=%H", "--", pathspec)
	if err != nil {
		needHistory(t, fmt.Sprintf("git log: %v", err))
	}
	if out == "" {
		head, err := git(t, root, "rev-parse", "HEAD")
		if err != nil {
			needHistory(t, err.Error())
		}
		return head
	}
	lines := strings.Split(out, "\n")
	first := lines[len(lines)-1] // the oldest commit that added it
	parent, err := git(t, root, "rev-parse", first+"^")
	if err != nil {
		needHistory(t, fmt.Sprintf("%s has no parent in this clone: %v", first, err))
	}
	return parent
}

// buildAt builds cmd/slipway of commit: its tree from git archive, built with the module proxy.
func buildAt(t *testing.T, root, commit string) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	archive := exec.CommandContext(ctx, "git", "-C", root, "archive", "--format=tar", commit)
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	if err := archive.Run(); err != nil {
		needHistory(t, fmt.Sprintf("git archive %s: %v %s", commit, err, stderr.String()))
	}
	if err := untar.Wait(); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "slipway-"+commit[:12])
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/slipway")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building slipway at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// newestMigration is the name of the newest up migration the binary carries.
func newestMigration(t *testing.T) string {
	t.Helper()
	entries, err := fs.Glob(migrations.FS, "*.up.sql")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	sort.Strings(entries)
	return entries[len(entries)-1]
}

// A rolling update: the previous binary, built from git history, runs beside the new one on the
// newest schema (the migration Job has run; old pods still serve), and everything the old pod
// writes, the new one reads right. Two previous binaries: the commit before the newest
// migration, and one from before the feeds migration (000015), whose desktop builds the
// column's old default marked verified without a SHA-512.
func TestRollingUpdate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two older binaries")
	}
	root, err := git(t, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		needHistory(t, "not in a git checkout")
	}
	if shallow, _ := git(t, root, "rev-parse", "--is-shallow-repository"); shallow == "true" {
		needHistory(t, "the clone is shallow")
	}
	for _, tc := range []struct{ name, pathspec string }{
		{"before the newest migration", "migrations/" + newestMigration(t)},
		{"before the feeds migration", "migrations/*_feeds.up.sql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit := commitBefore(t, root, tc.pathspec)
			t.Logf("the old binary is %s's (the commit before %s was added)", commit[:12], tc.pathspec)
			rollingUpdate(t, buildAt(t, root, commit))
		})
	}
}

// oldWrite is what the old pod wrote and answered, for the new pod to read back.
type oldWrite struct {
	what, path string
	answer     map[string]any
}

func rollingUpdate(t *testing.T, oldBin string) {
	h := e2e.New(t, e2e.Options{}) // a database migrated to the newest schema, as after the Job
	admin := h.CreateToken(t, "ops", "admin")
	// Each pod names its own loopback address as its public URL (session parts go there); the
	// read-back compares URLs by path.
	old := h.WithBinary(oldBin).Start(t)
	if v := old.Get(t, "/api/version"); v.Status != 200 {
		t.Fatalf("old pod: %d %s", v.Status, v.Body)
	}

	var writes []oldWrite
	record := func(what, path string, r *e2e.Response, status int) map[string]any {
		t.Helper()
		if r.Status != status {
			t.Fatalf("old pod, %s: %d %s", what, r.Status, r.Body)
		}
		var v map[string]any
		r.JSON(t, &v)
		writes = append(writes, oldWrite{what: what, path: path, answer: v})
		return v
	}
	id := func(v map[string]any) int64 { return int64(v["id"].(float64)) }

	app := record("app", "", call(t, old, "POST", "/api/apps", admin, `{"name":"Harbor"}`), 201)
	writes[len(writes)-1].path = fmt.Sprintf("/api/apps/%d", id(app))
	scheme := record("scheme", "", call(t, old, "POST", fmt.Sprintf("/api/apps/%d/schemes", id(app)), admin, `{"name":"Adhoc"}`), 201)
	writes[len(writes)-1].path = fmt.Sprintf("/api/schemes/%d", id(scheme))
	keys := map[string]string{}
	for _, dt := range []string{"ios", "android", "macos", "linux"} {
		ch := record(dt+" channel", "", call(t, old, "POST", fmt.Sprintf("/api/schemes/%d/channels", id(scheme)), admin,
			fmt.Sprintf(`{"name":%q,"device_type":%q,"bundle_id":"*"}`, dt, dt)), 201)
		writes[len(writes)-1].path = fmt.Sprintf("/api/channels/%d", id(ch))
		keys[dt] = ch["slug"].(string)
	}
	ci := record("upload token", "", call(t, old, "POST", "/api/tokens", admin, `{"name":"ci","scope":"upload"}`), 201)
	ciToken, _ := ci["token"].(string)
	if ciToken == "" {
		ciToken, _ = ci["secret"].(string)
	}
	if ciToken == "" {
		t.Fatalf("the old pod's token answer has no secret: %v", ci)
	}
	writes = writes[:len(writes)-1] // its secret is not readable again

	upload := func(what, key, name string, pkg []byte, fields map[string]string) map[string]any {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("channel_key", key)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		fw, _ := mw.CreateFormFile("file", name)
		_, _ = fw.Write(pkg)
		_ = mw.Close()
		r := old.Do(t, "POST", "/api/apps/upload", &body, "Content-Type", mw.FormDataContentType(), "Authorization", "Token "+ciToken)
		v := record(what, "", r, 201)
		writes[len(writes)-1].path = fmt.Sprintf("/api/releases/%d", id(v))
		return v
	}
	ipa := upload("iOS build", keys["ios"], "Harbor.ipa", appletest.BuildIPA(appletest.IPAOptions{AppName: "Harbor", BundleID: "com.example.harbor", Version: "1.0", Build: "1"}),
		map[string]string{"changelog": "First build", "branch": "main", "git_commit": "abc123"})
	apk := upload("Android build", keys["android"], "Harbor.apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{
		Package: "com.example.harbor", VersionCode: 7, VersionName: "1.7", MinSDK: 24, TargetSDK: 34, Label: "Harbor"}}), nil)
	mac := upload("macOS build", keys["macos"], "Harbor.zip", appletest.BuildMacZip(appletest.MacZipOptions{AppName: "Harbor", BundleID: "com.example.harbor.mac", Version: "2.0", Build: "20"}), nil)
	_ = ipa
	// A desktop build through an upload session, as `slipway upload` sends 64 MiB and more.
	deb := writeFile(t, t.TempDir(), "harbor.deb", linuxtest.BuildDeb(linuxtest.DebOptions{Package: "harbor", Version: "3.0-1"}))
	sessClient := &uploader.Client{BaseURL: old.URL, Token: ciToken, UserAgent: "rolling-update-test"}
	rel, err := sessClient.UploadAppSession(t.Context(), deb, uploader.AppForm{ChannelKey: keys["linux"]}, nil)
	if err != nil {
		t.Fatalf("old pod, session upload: %v", err)
	}
	linux := record("Linux build (session)", fmt.Sprintf("/api/releases/%d", rel.ID), call(t, old, "GET", fmt.Sprintf("/api/releases/%d", rel.ID), admin, ""), 200)

	// A download the old pod counts (written on its next flush, within 2 s).
	apkRelease := call(t, old, "GET", fmt.Sprintf("/api/releases/%d", id(apk)), admin, "")
	var apkView struct {
		InstallURL string `json:"install_url"`
	}
	apkRelease.JSON(t, &apkView)
	if r := old.Get(t, strings.TrimPrefix(apkView.InstallURL, old.URL)); r.Status != http.StatusFound && r.Status != http.StatusOK {
		t.Fatalf("old pod, download: %d %s", r.Status, r.Body)
	}

	// What the old pod left in the database for the desktop builds: never "verified" without the
	// SHA-512 the feeds need (the default of a binary that does not name the state).
	for _, v := range []map[string]any{mac, linux} {
		var state, sha512 string
		if err := h.DB(t).QueryRow(t.Context(), `SELECT checksum_state, sha512 FROM releases WHERE id = $1`, id(v)).Scan(&state, &sha512); err != nil {
			t.Fatal(err)
		}
		if state == "verified" && sha512 == "" {
			t.Errorf("release %d, written by the old pod: checksum_state verified with no SHA-512: it would never be verified nor reach the feeds", id(v))
		}
	}
	waitFor(t, "the old pod's download count is written", func() bool {
		return h.QueryInt(t, `SELECT coalesce(sum(downloads), 0) FROM release_downloads WHERE release_id = $1`, id(apk)) >= 1
	})

	// The new pod starts (a rollout's next step) and reads everything back.
	newPod := h.Start(t)
	// The desktop builds end verified by the new pod's verifier (it runs at start), with the SHA-512
	// the feeds carry; then everything reads back as the old pod wrote it.
	for _, v := range []map[string]any{mac, linux} {
		path := fmt.Sprintf("/api/releases/%d", id(v))
		waitFor(t, "release "+path+" is verified", func() bool {
			var r struct {
				ChecksumState string `json:"checksum_state"`
				SHA512        string `json:"sha512"`
			}
			call(t, newPod, "GET", path, admin, "").JSON(t, &r)
			if r.ChecksumState == "mismatch" {
				t.Fatalf("%s: checksum mismatch", path)
			}
			return r.ChecksumState == "verified" && len(r.SHA512) == 128
		})
	}
	for _, w := range writes {
		want := readBack(t, old, w.path, admin)
		got := readBack(t, newPod, w.path, admin)
		for k, ov := range want {
			if ignoredOnReadBack[k] {
				continue
			}
			nv, ok := got[k]
			if !ok {
				t.Errorf("%s (%s): the new pod's answer has no %q (the old pod's: %v)", w.what, w.path, k, ov)
				continue
			}
			if !readsTheSame(normalizeURLs(ov), normalizeURLs(nv)) {
				t.Errorf("%s (%s): %q is %v on the old pod, %v on the new", w.what, w.path, k, ov, nv)
			}
		}
		// And what the old pod answered when it wrote it is what the new one reads now.
		for _, k := range []string{"id", "name", "version", "bundle_id", "release_version", "build_version", "size", "changelog", "slug", "device_type", "branch", "git_commit"} {
			if ov, ok := w.answer[k]; ok && !reflect.DeepEqual(ov, got[k]) {
				t.Errorf("%s: %q was %v in the old pod's answer, %v on the new pod", w.what, k, ov, got[k])
			}
		}
	}
	var counted struct {
		DownloadCount int64 `json:"download_count"`
	}
	call(t, newPod, "GET", fmt.Sprintf("/api/releases/%d", id(apk)), admin, "").JSON(t, &counted)
	if counted.DownloadCount < 1 {
		t.Errorf("the new pod reads %d downloads of the build the old pod served", counted.DownloadCount)
	}

	appcast := newPod.Get(t, "/channels/"+keys["macos"]+"/appcast.xml")
	if appcast.Status != 200 || !strings.Contains(string(appcast.Body), "<sparkle:version>20</sparkle:version>") {
		t.Errorf("the new pod's appcast lacks the old pod's macOS build: %d %s", appcast.Status, appcast.Body)
	}
}

// ignoredOnReadBack are fields that are not stored but made at each request, or change after the
// write by design: signed URLs (their signatures and expiry), counts written later, and the
// checksums the new pod's verifier computes.
var ignoredOnReadBack = map[string]bool{
	"download_count": true, "checksum_state": true, "sha512": true, "sha1": true, "ed_signature": true,
	"updated_at": true,
}

// podAddress is a pod's own address inside a value (a URL, or a URL within another's query).
var podAddress = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)

// normalizeURLs keeps only the path of every http URL in v, and names every pod's address alike
// (itms-services links hold one in their query): each pod has its own address, and signatures and
// expiry in queries differ per request.
// readsTheSame reports whether the new pod's value holds everything the old pod's did, the same:
// objects may have gained fields (a release adds them; an old client ignores them), nothing else
// may differ.
func readsTheSame(old, new any) bool {
	switch o := old.(type) {
	case map[string]any:
		n, ok := new.(map[string]any)
		if !ok {
			return false
		}
		for k, ov := range o {
			nv, ok := n[k]
			if !ok || !readsTheSame(ov, nv) {
				return false
			}
		}
		return true
	case []any:
		n, ok := new.([]any)
		if !ok || len(n) != len(o) {
			return false
		}
		for i := range o {
			if !readsTheSame(o[i], n[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(old, new)
}

func normalizeURLs(v any) any {
	switch x := v.(type) {
	case string:
		if u, err := url.Parse(x); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
			return u.Path
		}
		return podAddress.ReplaceAllString(x, "http://pod")
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !ignoredOnReadBack[k] {
				out[k] = normalizeURLs(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeURLs(e)
		}
		return out
	}
	return v
}

func readBack(t *testing.T, s *e2e.Server, path, token string) map[string]any {
	t.Helper()
	r := call(t, s, "GET", path, token, "")
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// waitFor polls cond until it holds, failing at the harness's wait timeout (a hang, not a figure).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(e2e.WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
