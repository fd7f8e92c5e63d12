package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// rssFile is this process's mapped file pages (RssFile in /proc/self/status), in KiB.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestDropStartupPages: the executable's read-only mappings are dropped, the process's mapped
// file pages shrink, and the code and data it goes on using come back (the test goes on running,
// collects garbage, and reads its variables).
func TestDropStartupPages(t *testing.T) {
	before := rssFile(t)
	dropped, err := dropStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	if dropped == 0 || after >= before {
		t.Fatalf("dropped %d bytes of mappings; RssFile %d KiB before, %d KiB after", dropped, before, after)
	}
	runtime.GC()
	if got := strings.Repeat("ab", 3) + strconv.Itoa(len(os.Args)); !strings.HasPrefix(got, "ababab") {
		t.Fatalf("got %q", got)
	}
	t.Logf("dropped %d MiB of mappings; RssFile %d KiB before, %d KiB after", dropped>>20, before, after)
}
