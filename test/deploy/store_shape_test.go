package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxStoreMethods bounds the methods one type of pkg/postgres declares: a part of the store holds
// the queries of one part of the domain, and a type that grows past this has become two parts.
const maxStoreMethods = 40

// sqlstate is a five-character Postgres error code (SQLSTATE): two class characters, three more.
var sqlstate = regexp.MustCompile(`^[0-9][0-9A-Z][0-9A-Z]{3}$`)

// storeFiles parses pkg/postgres's production files.
func storeFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot(t), "pkg", "postgres", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = f
	}
	return out
}

// TestStoreTypesStaySmall: no type of pkg/postgres declares more than maxStoreMethods methods (DB is
// the parts composed; each part declares its own).
func TestStoreTypesStaySmall(t *testing.T) {
	counts := map[string]int{}
	for _, f := range storeFiles(t) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			counts[receiverName(fn.Recv.List[0].Type)]++
		}
	}
	if counts["DB"] == 0 || len(counts) < 3 {
		t.Fatal("found no methods in pkg/postgres: the test reads the wrong place")
	}
	for name, n := range counts {
		if n > maxStoreMethods {
			t.Errorf("pkg/postgres's %s declares %d methods (at most %d): split it into parts", name, n, maxStoreMethods)
		}
	}
}

// TestSQLStatesNamedOnce: Postgres error codes are read in one file, pkg/postgres/errors.go, by
// pgerrcode's names; anywhere else a code is a raw literal that nobody can search for.
func TestSQLStatesNamedOnce(t *testing.T) {
	for name, f := range storeFiles(t) {
		if name == "errors.go" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && sqlstate.MatchString(s) {
					t.Errorf("pkg/postgres/%s: the SQLSTATE literal %q belongs in errors.go, by its pgerrcode name", name, s)
				}
			}
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "pgerrcode" {
					t.Errorf("pkg/postgres/%s reads pgerrcode.%s: classify errors in errors.go", name, sel.Sel.Name)
				}
			}
			return true
		})
	}
}
