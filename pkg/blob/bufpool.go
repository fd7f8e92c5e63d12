package blob

import (
	"context"
	"sync"
)

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
}

// NewBufferPool returns a pool of buffers of size bytes within budget bytes (at least one buffer).
func NewBufferPool(size int, budget int64) *BufferPool {
	n := max(int(budget/int64(size)), 1)
	p := &BufferPool{size: size, tokens: make(chan struct{}, n), free: make(chan []byte, n)}
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
	p.mu.Lock()
	p.inUse--
	p.mu.Unlock()
	p.free <- b[:p.size]
}

// Drop gives up a buffer that must not be reused (after a failed request the HTTP transport may
// still be reading it): its share of the budget returns, and the garbage collector takes the
// buffer once nothing holds it.
func (p *BufferPool) Drop() {
	p.mu.Lock()
	p.inUse--
	p.mu.Unlock()
	p.tokens <- struct{}{}
}
