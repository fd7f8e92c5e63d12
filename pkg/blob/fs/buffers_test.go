package fs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
)

// TestPutGivesItsBufferBack: whether Put stores the stream, fails on a broken one or is
// cancelled, its write buffer goes back to the pool (a leaked one would shrink the budget until
// uploads waited for ever), and the next Put reuses it instead of allocating.
func TestPutGivesItsBufferBack(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	data := bytes.Repeat([]byte("slipway "), 3*writeBuffer/8+11) // three buffers and a bit
	if n, err := s.Put(ctx, "a/b", bytes.NewReader(data), blob.PutOptions{}); err != nil || n != int64(len(data)) {
		t.Fatalf("Put: %d, %v", n, err)
	}
	broken := io.MultiReader(bytes.NewReader(data[:writeBuffer+5]), iotestErr{})
	if _, err := s.Put(ctx, "a/c", broken, blob.PutOptions{}); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Put of a broken stream: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cancelled, "a/d", bytes.NewReader(data), blob.PutOptions{}); err == nil {
		t.Fatal("a cancelled Put succeeded")
	}
	if in, free := s.buffers.InUse(), s.buffers.Free(); in != 0 || free != 1 {
		t.Fatalf("after three Puts: %d buffers out, %d free (want 0 and 1)", in, free)
	}
	got, err := s.GetRange(ctx, "a/b", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if b, _ := io.ReadAll(got); !bytes.Equal(b, data) {
		t.Fatalf("stored %d bytes, want the %d put", len(b), len(data))
	}
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
