package blob

// Tail is an io.Writer that keeps the last n bytes written to it, in a fixed ring buffer (no
// allocation per Write). The upload path writes the stream through it (io.MultiWriter(hash, tail))
// and then seeds a ReaderAt with the tail, so reading a zip's end records and central directory
// costs no request to storage. A Tail is not safe for concurrent use.
type Tail struct {
	buf   []byte
	pos   int   // where the next byte goes
	total int64 // bytes written in all
}

// NewTail returns a Tail that keeps the last n bytes.
func NewTail(n int) *Tail {
	return &Tail{buf: make([]byte, max(n, 0))}
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if len(t.buf) == 0 {
		return n, nil
	}
	if len(p) >= len(t.buf) {
		copy(t.buf, p[len(p)-len(t.buf):])
		t.pos = 0
		return n, nil
	}
	c := copy(t.buf[t.pos:], p)
	if c < len(p) {
		copy(t.buf, p[c:])
	}
	t.pos = (t.pos + len(p)) % len(t.buf)
	return n, nil
}

// Bytes returns a copy of the kept bytes, oldest first: the last min(n, Total()) bytes written.
// They start at stream offset Total()-len(Bytes()).
func (t *Tail) Bytes() []byte {
	if t.total < int64(len(t.buf)) {
		return append([]byte(nil), t.buf[:t.total]...)
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.pos:]...)
	return append(out, t.buf[:t.pos]...)
}

// Total returns the number of bytes written so far.
func (t *Tail) Total() int64 { return t.total }
