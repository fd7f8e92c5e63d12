package config

import (
	"os"
	"path/filepath"
	"testing"
)

// The parse budget: SLIPWAY_PARSE_MEMORY when set; else three quarters of what GOMEMLIMIT (or the
// cgroup's limit less a tenth) leaves beyond the other budgets, at least MinDerivedParseMemory;
// DefaultParseMemory without a limit. The soft limit serve sets counts it, and never passes the
// limit.
func TestParseBudget(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int64
	}{
		{nil, DefaultParseMemory},
		{map[string]string{"GOMEMLIMIT": "603979776"}, (576<<20 - 280<<20) * 3 / 4}, // the chart's
		{map[string]string{"GOMEMLIMIT": "576MiB"}, (576<<20 - 280<<20) * 3 / 4},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, (1<<30 - 280<<20) * 3 / 4},
		{map[string]string{"GOMEMLIMIT": "300MiB"}, MinDerivedParseMemory},
		{map[string]string{"GOMEMLIMIT": "off"}, DefaultParseMemory},
		{map[string]string{"GOMEMLIMIT": "576MiB", "SLIPWAY_PARSE_MEMORY": "100000000"}, 100000000},
	} {
		cfg, err := Load(env(c.env))
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if got := cfg.ParseBudget(); got != c.want {
			t.Errorf("%v: budget %d, want %d", c.env, got, c.want)
		}
		if cfg.MemoryLimit > 0 && cfg.MemorySoftLimit() > cfg.MemoryLimit {
			t.Errorf("%v: soft limit %d over the limit %d", c.env, cfg.MemorySoftLimit(), cfg.MemoryLimit)
		}
	}
	for _, bad := range []map[string]string{{"GOMEMLIMIT": "lots"}, {"SLIPWAY_PARSE_MEMORY": "1000"}, {"SLIPWAY_PARSE_MEMORY": "-1"}} {
		if _, err := Load(env(bad)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}

	// A cgroup v2 limit, less a tenth, when GOMEMLIMIT is not set.
	dir := t.TempDir()
	limit, unlimited := filepath.Join(dir, "limit"), filepath.Join(dir, "max")
	if err := os.WriteFile(limit, []byte("671088640\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unlimited, []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]int64{limit: 640<<20 - 64<<20, unlimited: 0, filepath.Join(dir, "none"): 0} {
		if got, err := memoryLimit("", file); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", file, got, err, want)
		}
	}
}
