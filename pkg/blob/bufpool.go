package blob

import (
	"context"
	"runtime/debug"
	"sync"
	"time"
)

// IdleRelease is how long a BufferPool keeps its free buffers once none is out. Then it lets
// them go and hands the heap they held back to the operating system, so a replica between
// uploads holds no part buffers (three 8 MiB parts after one S3 upload, every buffer the budget
// allows after a burst); the next upload allocates them again, which costs about a millisecond
// per buffer against the second or more an upload that needs whole parts takes.
const IdleRelease = 5 * time.Second

// BufferPool hands out fixed-size buffers (S3 upload parts) from a byte budget shared by every
// upload of a process, so that memory stays bounded however many uploads run: when the budget is
// spent, an upload waits for a buffer another one gives back, and goes slower instead of failing.
// Buffers are reused rather than left to the garbage collector, so a steady stream of uploads
// allocates nothing and the heap does not swing by a part per part.
//
// Waiting cannot deadlock: every buffer out is being filled from a client, sent to storage, or
// waiting for its own upload's previous part to finish, and each of those ends by itself.
type BufferPool struct {
	size int
	// tokens holds one token per buffer the budget allows that is not allocated yet.
	tokens chan struct{}
	free   chan []byte

	mu    sync.Mutex
	inUse int
	// idleSince is when the last buffer out came back; timer releases the free buffers once the
	// pool has been idle for idle.
	idle      time.Duration
	idleSince time.Time
	timer     *time.Timer
}

// NewBufferPool returns a pool of buffers of size bytes within budget bytes (at least one buffer).
func NewBufferPool(size int, budget int64) *BufferPool {
	n := max(int(budget/int64(size)), 1)
	p := &BufferPool{size: size, tokens: make(chan struct{}, n), free: make(chan []byte, n), idle: IdleRelease}
	for range n {
		p.tokens <- struct{}{}
	}
	return p
}

// Size is the length of the pool's buffers.
func (p *BufferPool) Size() int { return p.size }

// Cap is how many buffers the budget allows.
func (p *BufferPool) Cap() int { return cap(p.tokens) }

// InUse is how many buffers are out.
func (p *BufferPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inUse
}

// Get returns a buffer: a free one, a new one while the budget allows, or the next one given
// back; it fails only when ctx ends first.
func (p *BufferPool) Get(ctx context.Context) ([]byte, error) {
	var b []byte
	select {
	case b = <-p.free:
	default:
		select {
		case b = <-p.free:
		case <-p.tokens:
			b = make([]byte, p.size)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	p.inUse++
	p.mu.Unlock()
	return b, nil
}

// Put gives a buffer back for reuse.
func (p *BufferPool) Put(b []byte) {
	p.free <- b[:p.size]
	p.back()
}

// back counts a buffer back in, and starts the idle clock when it was the last one out.
func (p *BufferPool) back() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse--; p.inUse > 0 || p.idle <= 0 {
		return
	}
	p.idleSince = time.Now()
	if p.timer == nil {
		p.timer = time.AfterFunc(p.idle, p.release)
	} else {
		p.timer.Reset(p.idle)
	}
}

// release lets the free buffers go if the pool is still idle, and returns the freed heap to the
// operating system.
func (p *BufferPool) release() {
	p.mu.Lock()
	if p.inUse > 0 || time.Since(p.idleSince) < p.idle {
		p.mu.Unlock()
		return // busy again: the clock restarts when it is idle again
	}
	n := 0
	for drained := false; !drained; {
		select {
		case <-p.free:
			p.tokens <- struct{}{} // its share of the budget, for a buffer allocated later
			n++
		default:
			drained = true
		}
	}
	p.mu.Unlock()
	if n > 0 {
		debug.FreeOSMemory()
	}
}

// Free is how many buffers are allocated and not out (kept for reuse).
func (p *BufferPool) Free() int { return len(p.free) }

// Drop gives up a buffer that must not be reused (after a failed request the HTTP transport may
// still be reading it): its share of the budget returns, and the garbage collector takes the
// buffer once nothing holds it.
func (p *BufferPool) Drop() {
	p.tokens <- struct{}{}
	p.back()
}
