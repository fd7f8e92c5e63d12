package deploy

import (
	"io/fs"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/config"
)

var slipwayVar = regexp.MustCompile(`SLIPWAY_[A-Z0-9_]*[A-Z0-9]`)

// Every SLIPWAY_* name in the chart, the compose files and the deployment docs is one the binary
// reads (pkg/config.Vars): a misspelt or invented variable would be silently ignored at run time.
func TestDeployFilesUseOnlyKnownVariables(t *testing.T) {
	root := repoRoot(t)
	files := []string{
		"Dockerfile",
		"deploy/docker-compose.yml",
		"deploy/.env.example",
		"docs/deploy.md",
	}
	err := filepath.WalkDir(filepath.Join(root, "charts", "slipway"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		text := readFile(t, filepath.Join(root, f))
		for _, name := range slipwayVar.FindAllString(text, -1) {
			// SLIPWAY_TEST_* belong to the test harness, not the binary.
			if strings.HasPrefix(name, "SLIPWAY_TEST_") {
				continue
			}
			seen[name] = true
			if !knownVars[name] {
				t.Errorf("%s: %s is not a Slipway variable (pkg/config.Vars)", f, name)
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("%d variables used: %v", len(names), names)
	// The compose file passes every variable through, and .env.example documents each one.
	for _, f := range []string{"deploy/docker-compose.yml", "deploy/.env.example"} {
		text := readFile(t, filepath.Join(root, f))
		for _, v := range config.Vars {
			if !regexp.MustCompile(`\b` + v.Name + `\b`).MatchString(text) {
				t.Errorf("%s does not mention %s (pkg/config.Vars): add it", f, v.Name)
			}
		}
	}
}
