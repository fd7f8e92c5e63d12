// Command vulnreport reads govulncheck's JSON output (govulncheck -format json) and decides what
// fails `make vuln`: a vulnerability the code calls in a module dependency, which `go get
// MODULE@FIXED` fixes, fails; one in the standard library, which only a newer Go fixes, is
// reported as a warning with that Go release, because the Go toolchain is the build machine's
// (README, "What these need"), not something go.mod can raise alone. Vulnerabilities in required
// modules that the code does not call are counted, not listed.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type message struct {
	Config *struct {
		DB             string `json:"db"`
		DBLastModified string `json:"db_last_modified"`
	} `json:"config"`
	OSV *struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"osv"`
	Finding *struct {
		OSV          string `json:"osv"`
		FixedVersion string `json:"fixed_version"`
		Trace        []struct {
			Module   string `json:"module"`
			Version  string `json:"version"`
			Package  string `json:"package"`
			Function string `json:"function"`
		} `json:"trace"`
	} `json:"finding"`
}

type finding struct {
	id, module, version, fixed, summary string
	called                              bool
}

func main() {
	code, err := report(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulnreport:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func report(in io.Reader, out io.Writer) (int, error) {
	dec := json.NewDecoder(in)
	summaries := map[string]string{}
	found := map[string]*finding{}
	db, modified := "", ""
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, err
		}
		switch {
		case m.Config != nil:
			db, modified = m.Config.DB, m.Config.DBLastModified
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0:
			f := m.Finding
			top := f.Trace[0] // the vulnerable symbol (or module)
			called := f.Trace[0].Function != ""
			key := f.OSV + " " + top.Module
			if prev := found[key]; prev == nil || called && !prev.called {
				found[key] = &finding{id: f.OSV, module: top.Module, version: top.Version, fixed: f.FixedVersion, called: called}
			}
		}
	}
	if db == "" {
		return 0, errors.New("no govulncheck configuration in the input: did govulncheck run?")
	}
	fmt.Fprintf(out, "govulncheck: database %s (modified %s)\n", db, modified)
	var list []*finding
	for _, f := range found {
		f.summary = summaries[f.id]
		list = append(list, f)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].module+list[i].id < list[j].module+list[j].id })
	failed, stdlib, uncalled := 0, 0, 0
	for _, f := range list {
		switch {
		case !f.called:
			uncalled++
		case f.module == "stdlib" || f.module == "toolchain":
			stdlib++
			fmt.Fprintf(out, "warning: %s in the standard library (Go %s): %s; fixed in Go %s: build with that Go\n", f.id, strings.TrimPrefix(f.version, "v"), f.summary, strings.TrimPrefix(f.fixed, "v"))
		default:
			failed++
			fmt.Fprintf(out, "FAIL: %s in %s@%s, called by Slipway: %s; fixed in %s: go get %s@%s\n", f.id, f.module, f.version, f.summary, f.fixed, f.module, f.fixed)
		}
	}
	fmt.Fprintf(out, "govulncheck: %d called in module dependencies (failing), %d in the standard library (warnings), %d in required modules but not called\n", failed, stdlib, uncalled)
	if failed > 0 {
		return 1, nil
	}
	return 0, nil
}
