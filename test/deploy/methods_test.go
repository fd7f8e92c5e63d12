package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxMethods is the most methods a domain type may have (issue 25): a type with more is a room
// nobody can take in at once, whose tests must build all of it to test any of it. Split it by
// what its methods are about, and let the parts call each other through small interfaces.
const maxMethods = 30

// domainPackages are the folders whose types the limit applies to: the domain and its parts. The
// HTTP layer's Server and Handler stay one type each (the interfaces each part declares already
// split what a caller sees of them); the Postgres store's parts have their own limit
// (store_shape_test.go).
var domainPackages = []string{"pkg/distribution", "pkg/background"}

// TestNoDomainTypeHasMoreThan30Methods counts the methods declared on each named type of the
// domain packages (test files aside) and fails for any above maxMethods.
func TestNoDomainTypeHasMoreThan30Methods(t *testing.T) {
	root := repoRoot(t)
	counts := map[string]int{}
	for _, dir := range domainPackages {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			pkg, _ := filepath.Rel(root, filepath.Dir(path))
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
					continue
				}
				counts[pkg+"."+receiverName(fn.Recv.List[0].Type)]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(counts) < 10 {
		t.Fatalf("found only %d types with methods in %v: is the walk looking in the right place?", len(counts), domainPackages)
	}
	var names []string
	for name := range counts {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return counts[names[i]] > counts[names[j]] })
	for _, name := range names {
		if counts[name] > maxMethods {
			t.Errorf("%s has %d methods, more than %d: split it by what its methods are about", name, counts[name], maxMethods)
		}
	}
	t.Logf("largest domain types: %s %d, %s %d, %s %d", names[0], counts[names[0]], names[1], counts[names[1]], names[2], counts[names[2]])
}

// receiverName is the name of a method's receiver type: T for T, *T, T[P] and *T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return "?"
		}
	}
}
