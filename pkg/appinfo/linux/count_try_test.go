package linux

import "io"

type countingReader struct {
	r        io.ReaderAt
	n, bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.n++
	n, err := c.r.ReadAt(p, off)
	c.bytes += int64(n)
	return n, err
}
