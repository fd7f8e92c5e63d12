package ginctx_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/slipwayhq/slipway/test/lint/ginctx"
)

// TestAnalyzer runs the check over testdata/src/a, whose "// want" comments mark each place it
// must report, with a stand-in gin package.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ginctx.Analyzer, "a")
}
