package blob

import (
	"context"
	"testing"
	"time"
)

// TestBufferPoolReleasesWhenIdle checks that free buffers are let go once none is out for the
// idle time, that the budget is whole afterwards, and that a pool in use keeps them.
func TestBufferPoolReleasesWhenIdle(t *testing.T) {
	p := NewBufferPool(1<<10, 3<<10)
	p.idle = 50 * time.Millisecond
	ctx := context.Background()
	var bufs [][]byte
	for range 3 {
		b, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	p.Put(bufs[0])
	p.Put(bufs[1])
	time.Sleep(3 * p.idle)
	if p.Free() != 2 {
		t.Fatalf("with a buffer out, the pool keeps %d free buffers, want 2", p.Free())
	}
	p.Drop() // the third failed: its share of the budget comes back
	deadline := time.Now().Add(5 * time.Second)
	for p.Free() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p.Free() != 0 || p.InUse() != 0 {
		t.Fatalf("idle pool: %d free, %d in use; want both 0", p.Free(), p.InUse())
	}
	// The whole budget is there again: three buffers without waiting.
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for range 3 {
		if _, err := p.Get(cctx); err != nil {
			t.Fatalf("after the release, the budget is not whole: %v", err)
		}
	}
}
