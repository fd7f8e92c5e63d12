package uploader

import (
	"strings"
	"testing"
	"time"
)

// fakeClock drives a Reporter without waiting.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestReporter(style Style) (*Reporter, *strings.Builder, *fakeClock) {
	var out strings.Builder
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := NewReporter(&out, style, "App.ipa")
	r.now = clock.now
	return r, &out, clock
}

// TestLinesReporter checks the CI style: a line per 10% step, a heartbeat when a step takes
// longer than LineInterval, and one "waiting for the server" line when the file is sent.
func TestLinesReporter(t *testing.T) {
	r, out, clock := newTestReporter(Lines)
	const total = 100 << 20
	step := func(d time.Duration, sent int64) {
		clock.t = clock.t.Add(d)
		r.Update(sent, total)
		r.Tick()
	}
	step(0, 0)
	step(time.Second, 1<<20) // 1%: nothing yet
	if out.Len() != 0 {
		t.Fatalf("printed before 10%%: %q", out)
	}
	step(4*time.Second, 10<<20) // 10%
	step(time.Second, 11<<20)   // 11%: nothing
	step(LineInterval, 12<<20)  // heartbeat
	step(time.Second, 35<<20)   // 35%: one line (the 30% step)
	step(time.Second, 100<<20)  // done
	step(time.Second, 100<<20)  // nothing more
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"App.ipa: 10% (10.0 MiB of 100.0 MiB)", "App.ipa: 12% (12.0 MiB of 100.0 MiB)",
		"App.ipa: 35% (35.0 MiB of 100.0 MiB)", "App.ipa: sent 100.0 MiB in 38s; waiting for the server to process it"}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s", out)
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d: %q, want prefix %q", i, lines[i], want[i])
		}
	}
	if !strings.Contains(lines[0], "/s, ETA ") {
		t.Errorf("no rate or ETA: %q", lines[0])
	}
	r.Stop()
}

// TestBarReporter checks the terminal style: one line redrawn in place, fitted to the width, with
// a rate over the recent window and an ETA.
func TestBarReporter(t *testing.T) {
	r, out, clock := newTestReporter(Bar)
	r.Width = 100
	const total = 1000 << 20
	for i := int64(0); i <= 10; i++ {
		r.Update(i*10<<20, total) // 10 MiB/s
		r.Tick()
		clock.t = clock.t.Add(time.Second)
	}
	frames := strings.Split(out.String(), "\r")
	lastFrame := strings.TrimSuffix(frames[len(frames)-1], "\x1b[K")
	if len(frames) != 12 || strings.Contains(out.String(), "\n") {
		t.Fatalf("want 11 redraws of one line, got %q", out)
	}
	if len([]rune(lastFrame)) > 99 {
		t.Errorf("frame wider than the terminal: %q", lastFrame)
	}
	for _, want := range []string{"App.ipa [==", ">", "]  10%", "100.0 MiB of 1000.0 MiB", "10.0 MiB/s", "ETA 1m30s"} {
		if !strings.Contains(lastFrame, want) {
			t.Errorf("frame %q lacks %q", lastFrame, want)
		}
	}
	// Too narrow for a bar: the numbers alone, cut to the width.
	r.Width = 40
	if line := r.barLine(); len([]rune(line)) != 39 || !strings.HasPrefix(line, "App.ipa  10%  100.0 MiB") {
		t.Errorf("narrow line %q", line)
	}
	r.Stop()
	if !strings.HasSuffix(out.String(), "\n") {
		t.Error("Stop did not end the bar's line")
	}
	r.Stop() // twice is fine
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := formatDuration(90*time.Second + 400*time.Millisecond); got != "1m30s" {
		t.Errorf("formatDuration: %q", got)
	}
}
