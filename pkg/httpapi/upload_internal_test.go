package httpapi

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
)

type noDeadline struct{}

func (noDeadline) SetReadDeadline(time.Time) error { return nil }

// fakeClockBody is an uploadBody over a reader whose reads advance a fake clock.
func fakeClockBody(minRate int64, idle time.Duration) (*uploadBody, *time.Time) {
	now := time.Unix(1_000_000, 0)
	b := &uploadBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", 1<<20))), ctl: noDeadline{}, idle: idle,
		minRate: minRate, now: func() time.Time { return now }, cut: func(int64) {}}
	return b, &now
}

// The minimum rate: not before the upload is admitted, not during its first idle span (the grace),
// then averaged over each span; a span below the rate cuts the upload with an errs.Invalid error
// that says so, and a span at the rate passes.
func TestUploadBodyMinimumRate(t *testing.T) {
	const idle = time.Minute
	read := func(b *uploadBody, now *time.Time, n int, after time.Duration) error {
		*now = now.Add(after)
		_, err := b.Read(make([]byte, n))
		return err
	}
	b, now := fakeClockBody(1000, idle)
	// Not admitted yet (waiting in line, reading the token): no rate.
	if err := read(b, now, 1, 10*time.Minute); err != nil {
		t.Fatalf("before admission: %v", err)
	}
	b.admitted()
	// The grace: one byte a minute is fine for the first span.
	if err := read(b, now, 1, 59*time.Second); err != nil {
		t.Fatalf("in the grace: %v", err)
	}
	// The first measured span: 66,000 bytes over 61 s, above the rate.
	for range 6 {
		if err := read(b, now, 11_000, 10*time.Second); err != nil {
			t.Fatalf("at the rate: %v", err)
		}
	}
	if err := read(b, now, 1, 2*time.Second); err != nil {
		t.Fatalf("span closed at the rate: %v", err)
	}
	// The next span brings 100 bytes in 61 s: cut.
	if err := read(b, now, 100, 61*time.Second); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "slower than") {
		t.Fatalf("a trickle: %v, want errs.Invalid saying it is slower than the minimum", err)
	}
	// A rate of 0 turns it off.
	off, now2 := fakeClockBody(0, idle)
	off.admitted()
	if err := read(off, now2, 1, time.Hour); err != nil {
		t.Fatalf("rate 0: %v", err)
	}
}
