package uploader

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Style is how a Reporter shows progress.
type Style int

const (
	// Bar redraws one line in place (for a terminal): a bar, bytes, rate and ETA.
	Bar Style = iota
	// Lines prints a plain line at every 10% and at least every LineInterval (for CI logs, which
	// show carriage returns as garbage or not at all).
	Lines
)

// LineInterval is the longest a Lines reporter stays silent while an upload runs, so a slow
// upload still shows signs of life in a CI log (and outlives "no output for N minutes" limits).
const LineInterval = 30 * time.Second

// Reporter renders an upload's progress to w (stderr). Update is its ProgressFunc; Run redraws it
// on a ticker, so the rate and ETA stay current even while the connection is stalled. It never
// prints anything but the file name, sizes, rates and durations.
type Reporter struct {
	w     io.Writer
	style Style
	name  string
	// Width is the terminal width for Bar (default 80).
	Width int
	now   func() time.Time

	mu       sync.Mutex
	sent     int64
	total    int64
	start    time.Time
	samples  []sample // recent (time, sent) pairs for the rate
	lastLine time.Time
	lastStep int64 // last 10% step printed by Lines
	drawn    bool  // Bar has drawn a line that is not ended yet
	sentAll  bool  // the "waiting for the server" note is printed
	stop     chan struct{}
	stopped  chan struct{}
}

type sample struct {
	at   time.Time
	sent int64
}

// rateWindow is the span the rate (and so the ETA) is averaged over.
const rateWindow = 5 * time.Second

// NewReporter returns a reporter for uploading the file called name (its base name).
func NewReporter(w io.Writer, style Style, name string) *Reporter {
	return &Reporter{w: w, style: style, name: name, Width: 80, now: time.Now, total: -1}
}

// Update records progress; it is the ProgressFunc to pass to the Client.
func (r *Reporter) Update(sent, total int64) {
	r.mu.Lock()
	r.sent, r.total = sent, total
	r.mu.Unlock()
}

// Start begins redrawing on a ticker until Stop.
func (r *Reporter) Start() {
	stop, stopped := make(chan struct{}), make(chan struct{})
	r.mu.Lock()
	r.start = r.now()
	r.lastLine = r.start
	r.stop, r.stopped = stop, stopped
	r.mu.Unlock()
	every := time.Second
	if r.style == Bar {
		every = 200 * time.Millisecond
	}
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				r.Tick()
			}
		}
	}()
}

// Stop ends the ticker and the bar's line. It may be called more than once.
func (r *Reporter) Stop() {
	r.mu.Lock()
	stop, stopped := r.stop, r.stopped
	r.stop = nil
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drawn {
		fmt.Fprintln(r.w)
		r.drawn = false
	}
}

// Tick redraws the bar, or prints a line when one is due. Start calls it on a ticker; tests call
// it with a fake clock.
func (r *Reporter) Tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.start.IsZero() {
		r.start, r.lastLine = now, now
	}
	r.samples = append(r.samples, sample{now, r.sent})
	for len(r.samples) > 2 && now.Sub(r.samples[1].at) >= rateWindow {
		r.samples = r.samples[1:]
	}
	done := r.total >= 0 && r.sent >= r.total
	switch r.style {
	case Bar:
		if !r.sentAll {
			fmt.Fprintf(r.w, "\r%s\x1b[K", r.barLine())
			r.drawn = true
		}
	case Lines:
		step := int64(-1)
		if r.total > 0 {
			step = r.sent * 10 / r.total
		}
		if !done && (step > r.lastStep || now.Sub(r.lastLine) >= LineInterval) {
			fmt.Fprintln(r.w, r.plainLine())
			r.lastLine, r.lastStep = now, max(step, r.lastStep)
		}
	}
	if done && !r.sentAll {
		r.sentAll = true
		if r.drawn {
			fmt.Fprintln(r.w)
			r.drawn = false
		}
		fmt.Fprintf(r.w, "%s: sent %s in %s; waiting for the server to process it\n",
			r.name, FormatBytes(r.sent), formatDuration(now.Sub(r.start)))
	}
}

// rate returns bytes per second over the recent samples (0 when unknown).
func (r *Reporter) rate() float64 {
	if len(r.samples) < 2 {
		return 0
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	d := last.at.Sub(first.at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(last.sent-first.sent) / d
}

// stats returns the parts shared by both styles: "1.2 GiB of 2.6 GiB", "12.3 MiB/s", "ETA 1m54s".
func (r *Reporter) stats() (amount, speed, eta string) {
	rate := r.rate()
	amount = FormatBytes(r.sent)
	if r.total >= 0 {
		amount += " of " + FormatBytes(r.total)
	}
	speed = FormatBytes(int64(rate)) + "/s"
	switch {
	case r.total < 0:
	case rate > 0:
		left := time.Duration(float64(r.total-r.sent) / rate * float64(time.Second))
		eta = "ETA " + max(left, time.Second).Round(time.Second).String()
	default:
		eta = "ETA --"
	}
	return amount, speed, eta
}

// barLine renders "name [=====>    ]  45%  1.2 GiB of 2.6 GiB  12.3 MiB/s  ETA 1m54s", fitted
// to Width.
func (r *Reporter) barLine() string {
	_, speed, eta := r.stats()
	// Fixed widths keep the bar from jittering as the numbers change.
	amount := fmt.Sprintf("%9s", FormatBytes(r.sent))
	if r.total >= 0 {
		amount += " of " + FormatBytes(r.total)
	}
	info := fmt.Sprintf("  %s  %11s", amount, speed)
	if eta != "" {
		info += fmt.Sprintf("  %-11s", eta)
	}
	if r.total <= 0 {
		return fit(r.name+info, r.Width-1)
	}
	pct := r.sent * 100 / r.total
	info = fmt.Sprintf(" %3d%%", pct) + info
	name := r.name
	barWidth := r.Width - 1 - len(info) - 3 - min(len([]rune(name)), 24) - 1
	if barWidth < 10 {
		// Too narrow for a bar: the numbers alone.
		return fit(name+info, r.Width-1)
	}
	if len([]rune(name)) > 24 {
		name = string([]rune(name)[:21]) + "..."
	}
	filled := int(int64(barWidth) * r.sent / r.total)
	bar := strings.Repeat("=", filled)
	if filled < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-filled-1)
	}
	return name + " [" + bar + "]" + info
}

// plainLine renders "name: 40% (1.0 GiB of 2.6 GiB) at 12.3 MiB/s, ETA 2m10s".
func (r *Reporter) plainLine() string {
	amount, speed, eta := r.stats()
	if r.total <= 0 {
		return fmt.Sprintf("%s: %s sent at %s", r.name, amount, speed)
	}
	return fmt.Sprintf("%s: %d%% (%s) at %s, %s", r.name, r.sent*100/r.total, amount, speed, eta)
}

// fit cuts s to width runes, so a redrawn line never wraps (a wrapped line cannot be redrawn).
func fit(s string, width int) string {
	if r := []rune(s); width > 0 && len(r) > width {
		return string(r[:width])
	}
	return s
}

// FormatBytes renders n in IEC units with one decimal: "512 B", "1.5 KiB", "2.6 GiB".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// formatDuration renders d rounded to the second ("1m54s"), or to the tenth below a second.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
