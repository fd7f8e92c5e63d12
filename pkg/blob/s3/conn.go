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

// ReadFrom copies r to the connection through a pooled sendBuffer-byte buffer.
func (c *largeWriteConn) ReadFrom(r io.Reader) (int64, error) {
	b := sendBuffers.Get().(*[]byte)
	defer sendBuffers.Put(b)
	// The wrappers hide the connection's own ReadFrom (which would copy through 32 KiB) and any
	// WriterTo of r, so that io.CopyBuffer uses b.
	return io.CopyBuffer(writerOnly{c.Conn}, readerOnly{r}, *b)
}

type writerOnly struct{ io.Writer }

type readerOnly struct{ io.Reader }
