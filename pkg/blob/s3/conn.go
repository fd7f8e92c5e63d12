package s3

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
)

// sendBuffer is the most of a request body written to the socket in one call.
const sendBuffer = 512 << 10

// Request bodies reach the socket through io.Copy: net/http's transport hands the body (behind
// an io.LimitedReader, which hides any WriterTo) to the connection's ReadFrom, and
// *net.TCPConn's ReadFrom, finding neither a file nor a socket to splice, copies through a
// 32 KiB buffer: an 8 MiB part took 256 write system calls. (http.Transport.WriteBufferSize does
// not change that: its bufio.Writer hands the body to ReadFrom as soon as its buffer is empty.)
// largeWrites gives the transport connections whose ReadFrom copies through sendBuffer bytes
// instead, one write call each: 16 per part. With TLS the transport writes records to the
// connection itself, so only plain http is changed.
func largeWrites(t *http.Transport) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &largeWriteConn{Conn: c}, nil
	}
}

// largeWriteConn is a connection whose ReadFrom writes sendBuffer bytes at a time.
type largeWriteConn struct{ net.Conn }

var sendBuffers = sync.Pool{New: func() any { b := make([]byte, sendBuffer); return &b }}

// ReadFrom writes r to the connection: a part's bytes (wholeBody) in one call, anything else
// through a pooled sendBuffer-byte buffer.
func (c *largeWriteConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if wb, ok := lr.R.(*wholeBody); ok {
			rest := wb.b[wb.off:]
			if int64(len(rest)) > lr.N {
				rest = rest[:lr.N]
			}
			n, err := c.Conn.Write(rest)
			wb.off += n
			lr.N -= int64(n)
			return int64(n), err
		}
	}
	b := sendBuffers.Get().(*[]byte)
	defer sendBuffers.Put(b)
	// The wrappers hide the connection's own ReadFrom (which would copy through 32 KiB) and any
	// WriterTo of r, so that io.CopyBuffer uses b.
	return io.CopyBuffer(writerOnly{c.Conn}, readerOnly{r}, *b)
}

type writerOnly struct{ io.Writer }

type readerOnly struct{ io.Reader }

// The bytes of a part (or a single PutObject) travel to the request in its context, so that
// deadlineClient can give the transport a body the connection recognises: the SDK wraps the
// Body it is given in readers of its own, which the connection cannot see through.
type bodyBytesKey struct{}

// withBodyBytes returns ctx carrying b, the whole body of the request made with it.
func withBodyBytes(ctx context.Context, b []byte) context.Context {
	return context.WithValue(ctx, bodyBytesKey{}, b)
}

// wholeBody is a request body that largeWriteConn writes in one call.
type wholeBody struct {
	b   []byte
	off int
}

func (w *wholeBody) Read(p []byte) (int, error) {
	if w.off >= len(w.b) {
		return 0, io.EOF
	}
	n := copy(p, w.b[w.off:])
	w.off += n
	return n, nil
}

func (w *wholeBody) Close() error { return nil }

// wholeBodyOf replaces req's body by a wholeBody of the bytes its context carries, when they are
// exactly the body the SDK is sending (every attempt starts from their beginning).
func wholeBodyOf(req *http.Request) {
	b, ok := req.Context().Value(bodyBytesKey{}).([]byte)
	if !ok || req.Body == nil || req.Body == http.NoBody || req.ContentLength != int64(len(b)) {
		return
	}
	req.Body = &wholeBody{b: b}
	req.GetBody = func() (io.ReadCloser, error) { return &wholeBody{b: b}, nil }
}
