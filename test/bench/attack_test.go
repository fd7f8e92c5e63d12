package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -scenarios attack rewrites its own section of the report and nothing else: inserted before
// "How to read this" the first time, replaced in place after.
func TestWriteAttackSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	doc := "# Benchmarks\n\n## Read API\n\nfigures\n\n## How to read this\n\n- notes\n\n## Notes\n\n" + notesBegin + "\nby hand\n" + notesEnd + "\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &attackResult{Command: "bench -scenarios attack", Runs: []attackRun{
		{hostileFigures: hostileFigures{Quiet: hostileLatency{N: 400, P50: 0.4, P99: 1.5}, Control: hostileLatency{N: 900, P50: 0.5, P99: 2},
			Attacked: hostileLatency{N: 900, P50: 0.6, P99: 3, Max: 40}, Attack: 20, CPU: 8, PeakRSS: 200 << 20}},
	}}
	for range 2 {
		if err := writeAttackSection(path, res.section()); err != nil {
			t.Fatal(err)
		}
		got := readFile(t, path)
		if strings.Count(got, attackBegin) != 1 || strings.Count(got, "## Latency under attack") != 1 {
			t.Fatalf("the section is not there once:\n%s", got)
		}
		if i, j := strings.Index(got, "## Latency under attack"), strings.Index(got, "## How to read this"); i < strings.Index(got, "## Read API") || i > j {
			t.Errorf("the section is not between the figures and how to read them:\n%s", got)
		}
		if !strings.Contains(got, "figures\n") || !strings.Contains(got, "\nby hand\n") || !strings.Contains(got, "**1.50×**") {
			t.Errorf("the rest of the report changed, or the median ratio is missing:\n%s", got)
		}
	}
	if kept := keptAttackSection(path); !strings.HasPrefix(kept, attackBegin) || !strings.HasSuffix(kept, attackEnd+"\n") {
		t.Errorf("kept section %q", kept)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
