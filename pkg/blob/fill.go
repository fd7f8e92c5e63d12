package blob

import "io"

// Fill fills buf from r, in as many reads as it takes (each straight into buf). eof reports that
// r ended with io.EOF (buf may then be partly filled); any other error, io.ErrUnexpectedEOF
// included (a client that went away mid-body), is returned as err, so a truncated stream is never
// stored as if complete.
func Fill(r io.Reader, buf []byte) (n int, eof bool, err error) {
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}
