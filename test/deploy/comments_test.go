package deploy

import (
	"bufio"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A comment in production code says the reason itself. "issue 20" or "finding 5" sends the
// reader to a tracker the code does not carry (and whose numbers mean nothing in a fork or a
// vendored copy), and a path out of the repository (../shared/design.md) names a file a clone
// does not have. Tests may cite the issue whose defect they replay; production code may not.
var (
	issueRef   = regexp.MustCompile(`(?i)\b(issues?|findings?)[\s#]*\d+`)
	outsideRef = regexp.MustCompile(`(^|[\s("'\x60])(\.\./)+shared\b|/work/`)
)

// productionDirs hold the code that ships: the command, its packages and its migrations.
var productionDirs = []string{"cmd", "pkg", "migrations"}

// commentProblems returns what is wrong with one comment's text, if anything.
func commentProblems(text string) []string {
	var out []string
	if m := issueRef.FindString(text); m != "" {
		out = append(out, fmt.Sprintf("cites %q instead of saying the reason", m))
	}
	if m := outsideRef.FindString(text); m != "" {
		out = append(out, fmt.Sprintf("points outside the repository (%q)", strings.TrimSpace(m)))
	}
	return out
}

func TestCommentMatcher(t *testing.T) {
	for text, bad := range map[string]bool{
		"refused before a slot is taken (issue 20)":                      true,
		"Issue 21, points 4 and 5.":                                      true,
		"the archive of issue 20's finding 5":                            true,
		"Targets of issues 3 and 12":                                     true,
		"see issue #7":                                                   true,
		"the request's lifetime\n(../shared/design.md, \"A request's\")": true,
		"read /work/shared/spec/api.md":                                  true,
		"keys such as \"../x\" are refused":                              false,
		"file://../rel is relative to the working folder":                false,
		"an issue with the token: 3 retries":                             false,
		"docs/security.md says why":                                      false,
		"the shared fixtures":                                            false,
	} {
		if got := len(commentProblems(text)) > 0; got != bad {
			t.Errorf("%q: flagged %v, want %v", text, got, bad)
		}
	}
}

// TestProductionCommentsGiveTheReason fails on a comment in production code (Go files other than
// tests, and SQL migrations) that cites an issue or finding number or points outside the
// repository.
func TestProductionCommentsGiveTheReason(t *testing.T) {
	root := repoRoot(t)
	var problems []string
	files := 0
	for _, dir := range productionDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			report := func(line int, text string) {
				for _, p := range commentProblems(text) {
					problems = append(problems, fmt.Sprintf("%s:%d: a comment %s", rel, line, p))
				}
			}
			switch {
			case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
				files++
				fset := token.NewFileSet()
				f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
				if err != nil {
					return err
				}
				for _, g := range f.Comments {
					lines := 0
					for _, c := range g.List {
						if len(commentProblems(c.Text)) > 0 {
							report(fset.Position(c.Pos()).Line, c.Text)
							lines++
						}
					}
					// A reference wrapped over two lines ("issue" and "20") is found in the whole.
					if lines == 0 {
						report(fset.Position(g.Pos()).Line, g.Text())
					}
				}
			case strings.HasSuffix(path, ".sql"):
				files++
				return sqlComments(path, report)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("read only %d files under %v: is the walk looking in the right place?", files, productionDirs)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// sqlComments reports each "--" comment of a SQL file.
func sqlComments(path string, report func(line int, text string)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if _, comment, ok := strings.Cut(sc.Text(), "--"); ok {
			report(n, comment)
		}
	}
	return sc.Err()
}
