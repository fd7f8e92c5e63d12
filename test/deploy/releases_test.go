package deploy

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/migrations"
)

// semver parses MAJOR.MINOR.PATCH.
func semver(t *testing.T, v string) [3]int {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("%q is not a semantic version MAJOR.MINOR.PATCH", v)
	}
	var out [3]int
	for i := range out {
		out[i], _ = strconv.Atoi(m[i+1])
	}
	return out
}

// The release records agree: CHANGELOG.md has a section with an Upgrading part for every
// release in migrations/releases.go (and none it lacks), versions go up, a patch release carries
// no migration, and a release's schema is a migration the binary has. Where the clone has a
// release's tag (tags need not travel with a push, so none is required), the tagged tree's newest
// migration is the one recorded.
func TestChangelogMatchesReleases(t *testing.T) {
	changelog := readFile(t, filepath.Join(repoRoot(t), "CHANGELOG.md"))
	sections := regexp.MustCompile(`(?m)^## (\S+)(?: - (\d{4}-\d{2}-\d{2}))?\s*$`).FindAllStringSubmatchIndex(changelog, -1)
	documented := map[string]string{}
	var order []string
	for i, s := range sections {
		name := changelog[s[2]:s[3]]
		end := len(changelog)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		body := changelog[s[0]:end]
		if name != "Unreleased" {
			semver(t, name)
			if s[4] < 0 {
				t.Errorf("CHANGELOG.md: %s has no date (## %s - YYYY-MM-DD)", name, name)
			}
			order = append(order, name)
		}
		if !strings.Contains(body, "### Upgrading") {
			t.Errorf("CHANGELOG.md: section %s has no \"### Upgrading\"", name)
		}
		documented[name] = body
	}
	if len(sections) == 0 {
		t.Fatal("CHANGELOG.md has no section (## Unreleased, ## X.Y.Z - DATE)")
	}
	var latest uint
	if entries, _ := filepath.Glob(filepath.Join(repoRoot(t), "migrations", "*.up.sql")); len(entries) > 0 {
		if _, err := fmt.Sscanf(filepath.Base(entries[len(entries)-1]), "%06d", &latest); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range migrations.Releases {
		v := semver(t, r.Version)
		if documented[r.Version] == "" {
			t.Errorf("release %s (migrations.Releases) has no section in CHANGELOG.md", r.Version)
		}
		if r.Schema == 0 || r.Schema > latest {
			t.Errorf("release %s: schema %d is not a migration this tree has (newest %d)", r.Version, r.Schema, latest)
		}
		if i == 0 {
			continue
		}
		p := semver(t, migrations.Releases[i-1].Version)
		if !(v[0] > p[0] || v[0] == p[0] && (v[1] > p[1] || v[1] == p[1] && v[2] > p[2])) {
			t.Errorf("releases out of order: %s after %s", r.Version, migrations.Releases[i-1].Version)
		}
		switch {
		case r.Schema < migrations.Releases[i-1].Schema:
			t.Errorf("release %s has an older schema (%d) than %s (%d)", r.Version, r.Schema, migrations.Releases[i-1].Version, migrations.Releases[i-1].Schema)
		case v[0] == p[0] && v[1] == p[1] && r.Schema != migrations.Releases[i-1].Schema:
			t.Errorf("patch release %s carries migrations (%d after %d): migrations go into a minor release", r.Version, r.Schema, migrations.Releases[i-1].Schema)
		}
	}
	released := map[string]bool{}
	for _, r := range migrations.Releases {
		released[r.Version] = true
		tag := "v" + r.Version
		out, err := exec.Command("git", "-C", repoRoot(t), "ls-tree", "--name-only", tag, "migrations/").Output()
		if err != nil {
			continue // no such tag in this clone
		}
		var newest uint
		for _, f := range strings.Fields(string(out)) {
			var v uint
			if !strings.HasSuffix(f, ".up.sql") {
				continue
			}
			if _, err := fmt.Sscanf(filepath.Base(f), "%06d", &v); err == nil && v > newest {
				newest = v
			}
		}
		if newest != r.Schema {
			t.Errorf("tag %s's newest migration is %d; migrations.Releases says %d", tag, newest, r.Schema)
		}
	}
	for _, name := range order {
		if !released[name] {
			t.Errorf("CHANGELOG.md has a section %s that migrations.Releases lacks", name)
		}
	}
}
