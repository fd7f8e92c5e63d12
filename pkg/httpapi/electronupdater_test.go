package httpapi_test

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slipwayhq/slipway/test/apptest"
)

// Issue 23: electron-updater's own feed-reading code (its GenericProvider, the npm package pinned
// in test/electronupdater, run under Node without Electron) reads a Slipway channel's
// latest-mac.yml: it finds the update and the .zip MacUpdater would install, with the SHA-512 and
// size of the bytes, and finds nothing newer when the app is up to date. Skipped where Node and
// npm are not installed or the npm registry cannot be reached.
func TestElectronUpdaterGenericProvider(t *testing.T) {
	node, errNode := exec.LookPath("node")
	npm, errNPM := exec.LookPath("npm")
	if errNode != nil || errNPM != nil {
		t.Skip("node and npm are needed (Debian's nodejs and npm packages)")
	}
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "test", "electronupdater")
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "check.js"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	install := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm ci failed (is the npm registry reachable?): %v\n%s", err, out)
	}

	_, key, _ := ed25519.GenerateKey(nil)
	f := feedEnv{newMgmt(t, apptest.Options{}), key}
	first, _ := f.macBuild("", "1.0.0", "1")
	slug := first["channel"].(map[string]any)["slug"].(string)
	_, zip := f.macBuild(slug, "1.1.0", "2")
	sum := sha512.Sum512(zip)

	check := func(current string) (out struct {
		Update  bool   `json:"update"`
		Version string `json:"version"`
		URL     string `json:"url"`
		SHA512  string `json:"sha512"`
		Size    int64  `json:"size"`
	}) {
		t.Helper()
		cmd := exec.Command(node, "check.js", f.e.URL+"/channels/"+slug+"/electron", current)
		cmd.Dir = dir
		b, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("electron-updater at %s: %v\n%s", current, err, stderr)
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("electron-updater output %q: %v", b, err)
		}
		return out
	}
	got := check("1.0.0")
	if !got.Update || got.Version != "1.1.0" || got.SHA512 != base64.StdEncoding.EncodeToString(sum[:]) || got.Size != int64(len(zip)) {
		t.Fatalf("electron-updater at 1.0.0: %+v", got)
	}
	if dl := f.e.Follow(t, got.URL); dl.Status != 200 || string(dl.Body) != string(zip) {
		t.Fatalf("the file electron-updater picked: %d, %d bytes", dl.Status, len(dl.Body))
	}
	if up := check("1.1.0"); up.Update {
		t.Fatalf("electron-updater at 1.1.0 found an update: %+v", up)
	}
}
