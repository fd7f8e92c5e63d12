package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The test scripts install Debian packages only through test/debian.sh's debian_install, which
// serializes them under one lock: two apt-get installs at once fail on dpkg's lock, and did when
// two test runs prepared their tools on one machine at the same time.
func TestDebianPackagesInstallUnderOneLock(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "test", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts under test/: %v", err)
	}
	direct := regexp.MustCompile(`(?m)^[^#\n]*\bapt-get\s+(install|update)\b`)
	for _, p := range scripts {
		if filepath.Base(p) == "debian.sh" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := direct.Find(b); m != nil {
			t.Errorf("%s runs %q itself: call debian_install (test/debian.sh) instead", filepath.Base(p), m)
		}
	}
}
