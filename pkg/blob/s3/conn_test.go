package s3

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestLargeWriteConn checks what the transport's writes reach the peer through largeWriteConn:
// a part's bytes (wholeBody) cut where the transport's limit says, and any other body whole.
func TestLargeWriteConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := &largeWriteConn{Conn: raw}
	part := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	wb := &wholeBody{b: part}
	head := make([]byte, 100)
	if _, err := io.ReadFull(wb, head); err != nil { // as bufio.Writer takes the first bytes
		t.Fatal(err)
	}
	if _, err := c.Write(head); err != nil {
		t.Fatal(err)
	}
	lr := &io.LimitedReader{R: wb, N: int64(len(part) - 100 - 7)}
	if n, err := c.ReadFrom(lr); err != nil || n != int64(len(part)-107) {
		t.Fatalf("ReadFrom of the part = %d, %v", n, err)
	}
	other := strings.Repeat("x", 3*sendBuffer+5)
	if n, err := c.ReadFrom(strings.NewReader(other)); err != nil || n != int64(len(other)) {
		t.Fatalf("ReadFrom of another body = %d, %v", n, err)
	}
	raw.Close()
	want := append(append([]byte(nil), part[:len(part)-7]...), other...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the peer read %d bytes, want %d", len(b), len(want))
	}
}

// TestWholeBodyOf checks that only a request whose body is exactly the bytes its context carries
// gets a wholeBody.
func TestWholeBodyOf(t *testing.T) {
	b := []byte("part bytes")
	req, _ := http.NewRequestWithContext(withBodyBytes(t.Context(), b), http.MethodPut, "http://x/", bytes.NewReader(b))
	wholeBodyOf(req)
	if _, ok := req.Body.(*wholeBody); !ok {
		t.Fatalf("body %T, want a wholeBody", req.Body)
	}
	if got, _ := io.ReadAll(req.Body); !bytes.Equal(got, b) {
		t.Fatalf("body %q", got)
	}
	other, _ := http.NewRequestWithContext(withBodyBytes(t.Context(), b), http.MethodPut, "http://x/", strings.NewReader("another"))
	wholeBodyOf(other)
	if _, ok := other.Body.(*wholeBody); ok {
		t.Fatal("a body of another length got the context's bytes")
	}
}
