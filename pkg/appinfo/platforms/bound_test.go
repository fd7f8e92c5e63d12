package platforms_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/platforms/hostiletest"
)

// TestParseWithinBound parses every hostile package (and every real fixture, when present) and
// checks that what the parse allocated, all of it (runtime.MemStats.TotalAlloc, which counts
// garbage too, so it bounds the parse's peak), is within the bound a Budget reserves for it
// (appinfo.Bound). The bound is what keeps a replica's parses together within its budget; a parse
// that allocates past it breaks that promise.
func TestParseWithinBound(t *testing.T) {
	type pkg struct {
		name string
		data []byte
	}
	var pkgs []pkg
	for _, p := range hostiletest.Packages() {
		pkgs = append(pkgs, pkg{p.Name, p.Data})
	}
	fixtures, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "shared", "fixtures", "*", "*"))
	for _, f := range fixtures {
		if b, err := os.ReadFile(f); err == nil && len(b) < 64<<20 {
			pkgs = append(pkgs, pkg{filepath.Base(f), b})
		}
	}
	for _, p := range pkgs {
		r := bytes.NewReader(p.data)
		bound, err := appinfo.Bound(r, int64(len(p.data)))
		if err != nil {
			continue // refused before a parse: nothing to bound
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		info, err := appinfo.Parse(r, int64(len(p.data)))
		runtime.ReadMemStats(&after)
		alloc := int64(after.TotalAlloc - before.TotalAlloc)
		outcome := "parsed"
		if err != nil {
			outcome = "refused: " + err.Error()
			if len(outcome) > 90 {
				outcome = outcome[:90] + "…"
			}
		} else if info == nil {
			outcome = "nil info"
		}
		t.Logf("%-40s %8d bytes: allocated %6.1f MiB, bound %6.1f MiB (%s)", p.name, len(p.data), float64(alloc)/(1<<20), float64(bound)/(1<<20), outcome)
		switch {
		case !raceBuild && alloc > bound:
			t.Errorf("%s: the parse allocated %d bytes, over its bound of %d", p.name, alloc, bound)
		case raceBuild && alloc > 2*bound:
			// Under -race only a gross excess says something about the shipped build.
			t.Errorf("%s: under -race the parse allocated %d bytes, over twice its bound of %d", p.name, alloc, bound)
		}
	}
}
