package deploy

import (
	"os/exec"
	"strings"
	"testing"
)

// The handlers reach data only through the domain (../shared/design.md, "One door to the data"):
// neither the API nor the pages depend on the database layer, a storage backend or the Postgres
// driver, and the domain depends on none of them either (the store implements its interfaces).
func TestHandlersReachDataOnlyThroughTheDomain(t *testing.T) {
	forbidden := []string{
		"github.com/slipwayhq/slipway/pkg/postgres",
		"github.com/slipwayhq/slipway/pkg/blob/s3",
		"github.com/slipwayhq/slipway/pkg/blob/fs",
		"github.com/slipwayhq/slipway/pkg/blob/backends",
		"github.com/jackc/pgx/v5",
	}
	for _, pkgs := range [][]string{{"./pkg/httpapi", "./pkg/web"}, {"./pkg/distribution/...", "./pkg/background"}} {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
		cmd.Dir = repoRoot(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("%v depend on %s", pkgs, dep)
				}
			}
		}
	}
}

// Imports run one way: the handlers import the domain, the wiring (distribution/service) imports
// the parts, a part imports the shared package (distribution) and the parts whose types it
// speaks, and the shared package imports no part. So no part depends on the wiring or on a
// handler, and nothing in the domain depends on the HTTP layer.
func TestDomainImportsRunOneWay(t *testing.T) {
	const mod = "github.com/slipwayhq/slipway/"
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}: {{join .Deps \" \"}}", "./pkg/distribution/...", "./pkg/background")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ": ")
		if !strings.HasPrefix(pkg, mod+"pkg/distribution") && pkg != mod+"pkg/background" {
			continue // a dependency listed by -deps, not a package of the domain
		}
		checked++
		var forbidden []string
		switch {
		case pkg == mod+"pkg/distribution":
			forbidden = []string{mod + "pkg/distribution/"} // the shared package imports no part
		case pkg != mod+"pkg/distribution/service":
			forbidden = []string{mod + "pkg/distribution/service"}
		}
		forbidden = append(forbidden, mod+"pkg/httpapi", mod+"pkg/web", mod+"cmd/")
		for _, dep := range strings.Fields(deps) {
			for _, f := range forbidden {
				if dep == f || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
					t.Errorf("%s depends on %s: imports run from the handlers to the wiring to the parts to the shared package, never back", strings.TrimPrefix(pkg, mod), strings.TrimPrefix(dep, mod))
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d domain packages: is go list looking in the right place?", checked)
	}
}
