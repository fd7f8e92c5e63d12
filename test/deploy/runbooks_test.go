package deploy

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOperationsRunbooks checks docs/operations.md's runbook index (issue 26: a runbook for each
// of its ten points, each naming the command it uses): ten rows, each linking to sections that
// exist and naming at least one command.
func TestOperationsRunbooks(t *testing.T) {
	doc := readFile(t, filepath.Join(repoRoot(t), "docs", "operations.md"))
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#{2,4} (.+)$`).FindAllStringSubmatch(doc, -1) {
		anchors[githubAnchor(m[1])] = true
	}
	_, index, ok := strings.Cut(doc, "\n## Runbooks\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Runbooks" section`)
	}
	index, _, _ = strings.Cut(index, "\n## ")
	rows := 0
	for _, line := range strings.Split(index, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "|") || len(cells) != 3 || strings.HasPrefix(line, "|---") || strings.TrimSpace(cells[0]) == "situation" {
			continue
		}
		rows++
		links := regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(cells[1], -1)
		if len(links) == 0 {
			t.Errorf("runbook row %q links to no section", cells[0])
		}
		for _, l := range links {
			if !anchors[l[1]] {
				t.Errorf("runbook row %q links to #%s, which is no heading of docs/operations.md", cells[0], l[1])
			}
		}
		if !strings.Contains(cells[2], "`") {
			t.Errorf("runbook row %q names no command", cells[0])
		}
	}
	if rows != 10 {
		t.Errorf("the runbook index has %d rows, want one for each of issue 26's ten points", rows)
	}
}

// githubAnchor is the id GitHub gives a heading: lower case, spaces to hyphens, punctuation other
// than hyphens and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}
