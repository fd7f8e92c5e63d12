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
		"github.com/slipwayhq/slipway/pkg/store",
		"github.com/slipwayhq/slipway/pkg/storage/s3",
		"github.com/slipwayhq/slipway/pkg/storage/fs",
		"github.com/slipwayhq/slipway/pkg/storage/backends",
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
