package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// binaries are the slipway binaries of this test process, built at most once each: index 0 as
// this test binary is built (with -race when it has it), index 1 without -race.
var binaries [2]struct {
	once sync.Once
	dir  string // temporary folder to remove, "" for SLIPWAY_E2E_BINARY
	path string
	out  string
	err  error
}

// Binary returns the path of the slipway binary, building it the first time: `go build` of
// ./cmd/slipway into a temporary folder, with -race when this test binary has it. Set
// SLIPWAY_E2E_BINARY to use a prebuilt binary instead (e.g. `make build`'s bin/slipway).
func Binary(t testing.TB) string { return binary(t, raceEnabled) }

// binary returns the slipway binary built with or without -race.
func binary(t testing.TB, race bool) string {
	t.Helper()
	i := 0
	if !race && raceEnabled {
		i = 1 // a plain build beside the race one, for figures the race detector would distort
	}
	build := &binaries[i]
	build.once.Do(func() {
		if p := os.Getenv("SLIPWAY_E2E_BINARY"); p != "" {
			build.path, build.err = filepath.Abs(p)
			return
		}
		build.dir, build.err = os.MkdirTemp("", "slipway-e2e-*")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "slipway")
		args := []string{"build", "-o", build.path}
		if race {
			args = append(args, "-race")
		}
		args = append(args, "github.com/slipwayhq/slipway/cmd/slipway")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			build.out, build.err = string(out), fmt.Errorf("go %v: %w", args, err)
		}
	})
	if build.err != nil {
		t.Fatalf("e2e: building slipway: %v\n%s", build.err, build.out)
	}
	return build.path
}

// Main runs the tests and removes the binary built for them. Use it from TestMain:
//
//	func TestMain(m *testing.M) { e2e.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	for i := range binaries {
		if dir := binaries[i].dir; dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	os.Exit(code)
}
