package blob_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/blob/blobtest"
)

func TestTail(t *testing.T) {
	data := blobtest.Random(100_000, 1)
	for _, n := range []int{0, 1, 7, 4096, 100_000, 200_000} {
		for seed := range uint64(5) {
			tail := blob.NewTail(n)
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			for off := 0; off < len(data); {
				k := min(len(data)-off, rng.IntN(3*n+10))
				tail.Write(data[off : off+k])
				off += k
				want := data[max(0, off-n):off]
				if got := tail.Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("n=%d after %d bytes: Bytes() has %d bytes, want the last %d", n, off, len(got), len(want))
				}
				if tail.Total() != int64(off) {
					t.Fatalf("Total() = %d, want %d", tail.Total(), off)
				}
			}
		}
	}
}

func TestTailWriteDoesNotAllocate(t *testing.T) {
	tail := blob.NewTail(1 << 20)
	p := make([]byte, 32<<10)
	if a := testing.AllocsPerRun(100, func() { tail.Write(p) }); a != 0 {
		t.Errorf("Write allocates %v times", a)
	}
}
