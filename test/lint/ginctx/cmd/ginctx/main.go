// Command ginctx runs the ginctx check under `go vet -vettool` (see the Makefile's lint target).
package main

import (
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/slipwayhq/slipway/test/lint/ginctx"
)

func main() { unitchecker.Main(ginctx.Analyzer) }
