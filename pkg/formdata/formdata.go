// Package formdata reads a multipart/form-data body part by part, as mime/multipart does, but
// lets a large read of a part go straight from the body into the caller's buffer.
//
// mime/multipart reads through a 4 KiB bufio.Reader of its own: every byte of a part is read
// into it, scanned for the boundary there, and copied out, 4 KiB per call, whatever the size of
// the caller's buffer. Here a Read of a part into a buffer of at least DirectMin bytes reads the
// body into that buffer, scans it there once for the boundary, and gives back (to be read again)
// only what follows the part's end, or the few bytes at the end of the read that could begin a
// boundary: one copy of each byte (the kernel's) instead of three, and one call per read of the
// body instead of one per 4 KiB. The upload path hands it whole part buffers (8 MiB on S3,
// 1 MiB on the filesystem).
//
// Everything else (the boundary rules, headers, the preamble, LF-only line endings,
// quoted-printable parts, the errors) is mime/multipart's, whose code this adapts (Copyright The
// Go Authors, BSD licence); FuzzAgainstMimeMultipart checks that both read the same parts, the
// same bytes and fail on the same inputs. Headers are read with net/textproto within
// MaxHeaderBytes and MaxHeaders per part.
package formdata

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"path/filepath"
	"strings"
)

const (
	// DirectMin is the smallest read of a part that goes straight into the caller's buffer: a
	// smaller one goes through the 4 KiB buffer, so that no read of the body is smaller than it.
	DirectMin = peekBufferSize
	// directMax bounds one read of the body into the caller's buffer, and so what may have to be
	// given back after it (the start of the next part when a part ends inside the read). On
	// loopback a read of the socket brings what has arrived: about 200 KiB.
	directMax = 1 << 20
	// peekBufferSize is the buffer headers, fields and small reads go through (mime/multipart's).
	peekBufferSize = 4096
	// MaxHeaderBytes bounds the header section of one part.
	MaxHeaderBytes = 64 << 10
	// MaxHeaders bounds the header lines of one part (mime/multipart's default limit).
	MaxHeaders = 10000
)

// ErrMessageTooLarge is mime/multipart's: a part's headers exceed MaxHeaderBytes or MaxHeaders.
var ErrMessageTooLarge = multipart.ErrMessageTooLarge

var emptyParams = make(map[string]string)

// Reader is an iterator over the parts of a multipart body.
type Reader struct {
	src *source
	br  *bufio.Reader

	currentPart *Part
	partsRead   int

	nl               []byte  // "\r\n" or "\n" (set after seeing first boundary line)
	delim            *finder // finds nl + "--boundary"
	dashBoundaryDash []byte  // "--boundary--"
	dashBoundary     []byte  // "--boundary"
}

// NewReader returns a Reader of the parts of r, whose boundary is boundary (the Content-Type's
// parameter).
func NewReader(r io.Reader, boundary string) *Reader {
	b := []byte("\r\n--" + boundary + "--")
	src := &source{r: r}
	return &Reader{
		src:              src,
		br:               bufio.NewReaderSize(src, peekBufferSize),
		nl:               b[:2],
		delim:            newFinder(b[:len(b)-2]),
		dashBoundaryDash: b[2:],
		dashBoundary:     b[2 : len(b)-2],
	}
}

// source is the body as the bufio.Reader and the direct reads see it: the bytes given back
// first, then the body, with its first error kept (a Read after an error returns it again, as
// mime/multipart's stickyErrorReader does).
type source struct {
	r       io.Reader
	err     error
	pending []byte // given back, read before r
	store   []byte // pending's backing array, reused
}

func (s *source) Read(p []byte) (int, error) {
	if len(s.pending) > 0 {
		n := copy(p, s.pending)
		s.pending = s.pending[n:]
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}

// giveBack makes b the next bytes read; pending must be empty.
func (s *source) giveBack(b []byte) {
	s.store = append(s.store[:0], b...)
	s.pending = s.store
}

// Part is one part of the body.
type Part struct {
	// Header holds the part's headers, canonicalized as net/http's are.
	Header textproto.MIMEHeader

	mr *Reader

	disposition       string
	dispositionParams map[string]string

	// r reads the raw bytes (partReader) or decodes them (quoted-printable).
	r io.Reader

	n       int   // known data bytes waiting in mr.br
	total   int64 // data bytes read so far
	err     error // error to return when n == 0
	readErr error // read error observed from mr.br
}

// FormName returns the name parameter of a Content-Disposition of type form-data, or "".
func (p *Part) FormName() string {
	if p.dispositionParams == nil {
		p.parseContentDisposition()
	}
	if p.disposition != "form-data" {
		return ""
	}
	return p.dispositionParams["name"]
}

// FileName returns the filename parameter of the Content-Disposition, through filepath.Base, or "".
func (p *Part) FileName() string {
	if p.dispositionParams == nil {
		p.parseContentDisposition()
	}
	filename := p.dispositionParams["filename"]
	if filename == "" {
		return ""
	}
	return filepath.Base(filename)
}

func (p *Part) parseContentDisposition() {
	v := p.Header.Get("Content-Disposition")
	var err error
	p.disposition, p.dispositionParams, err = mime.ParseMediaType(v)
	if err != nil {
		p.dispositionParams = emptyParams
	}
}

// Read reads the part's body.
func (p *Part) Read(d []byte) (int, error) { return p.r.Read(d) }

// Close reads the rest of the part and drops it.
func (p *Part) Close() error {
	_, _ = io.Copy(io.Discard, p)
	return nil
}

func newPart(mr *Reader) (*Part, error) {
	bp := &Part{Header: make(map[string][]string), mr: mr}
	header, err := mr.readHeader()
	if err != nil {
		return nil, err
	}
	bp.Header = header
	bp.r = partReader{bp}
	const cte = "Content-Transfer-Encoding"
	if strings.EqualFold(bp.Header.Get(cte), "quoted-printable") {
		bp.Header.Del(cte)
		bp.r = quotedprintable.NewReader(bp.r)
	}
	return bp, nil
}

// readHeader reads a part's header section, up to and including its empty line, within
// MaxHeaderBytes, and parses it with net/textproto.
func (r *Reader) readHeader() (textproto.MIMEHeader, error) {
	var raw []byte
	for {
		line, err := r.br.ReadSlice('\n')
		if len(raw)+len(line) > MaxHeaderBytes {
			return nil, ErrMessageTooLarge
		}
		raw = append(raw, line...)
		if err == bufio.ErrBufferFull {
			continue // a long line: go on reading it
		}
		if err == io.EOF {
			break // textproto says what the cut section is
		}
		if err != nil {
			return nil, err
		}
		if (len(line) == 2 && line[0] == '\r') || len(line) == 1 {
			// "\r\n" or "\n" alone ends the section, unless it continues a long line.
			if len(raw) == len(line) || raw[len(raw)-len(line)-1] == '\n' {
				break
			}
		}
	}
	h, err := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	n := 0
	for _, v := range h {
		n += len(v)
	}
	if n > MaxHeaders {
		return nil, ErrMessageTooLarge
	}
	return h, nil
}

// partReader reads the raw bytes of a part.
type partReader struct{ p *Part }

func (pr partReader) Read(d []byte) (int, error) {
	p := pr.p
	mr := p.mr
	br := mr.br

	// Read into the buffer until we identify some data to return, or find a reason to stop
	// (boundary or read error); or, for a large read, read into d itself: once per call, after
	// which the buffered path goes on (it meets a read error kept by the source, and counts reads
	// that bring nothing).
	direct := len(d) >= DirectMin
	for p.n == 0 && p.err == nil {
		peek, _ := br.Peek(br.Buffered())
		p.n, p.err = scanUntilBoundary(peek, mr.dashBoundary, mr.delim, p.total, p.readErr)
		if p.n == 0 && p.err == nil {
			if direct && p.readErr == nil && mr.src.err == nil && len(mr.src.pending) == 0 {
				if n, err, done := p.readDirect(d, peek); done {
					return n, err
				}
				direct = false
				continue
			}
			// Force buffered I/O to read more into buffer.
			_, p.readErr = br.Peek(len(peek) + 1)
			if p.readErr == io.EOF {
				p.readErr = io.ErrUnexpectedEOF
			}
		}
	}

	// Read out from the "data to return" part of the buffer.
	if p.n == 0 {
		return 0, p.err
	}
	n := min(len(d), p.n)
	n, _ = br.Read(d[:n])
	p.total += int64(n)
	p.n -= n
	if p.n == 0 {
		return n, p.err
	}
	return n, nil
}

// readDirect reads the body into d after held (what the buffer holds: too little to tell whether
// it begins a boundary), finds how much of it is the part's, and gives the rest back to the
// source. done is false when the read brought too little to tell yet (all of it given back).
func (p *Part) readDirect(d, held []byte) (n int, err error, done bool) {
	mr := p.mr
	k := copy(d, held)
	_, _ = mr.br.Discard(k)
	m, rerr := mr.src.Read(d[k:min(len(d), k+directMax)])
	t := d[:k+m]
	readErr := rerr
	if readErr == io.EOF {
		readErr = io.ErrUnexpectedEOF
	}
	n, err = scanUntilBoundary(t, mr.dashBoundary, mr.delim, p.total, readErr)
	if n < len(t) {
		// The rest goes back; the source keeps the read error for when it is reached, as the
		// buffered path would meet it.
		mr.src.giveBack(t[n:])
		if err == readErr {
			err = nil
		}
	} else {
		p.readErr = readErr
	}
	if n == 0 && err == nil {
		return 0, nil, false
	}
	p.total += int64(n)
	p.err = err
	return n, err, true
}

// scanUntilBoundary scans buf to identify how much of it can be safely returned as part of the
// part's body (mime/multipart's, with the search for a boundary's start at the end limited to
// where one could start, and the search itself the finder's). dashBoundary is "--boundary", delim
// finds "\r\n--boundary" or "\n--boundary". total is the number of bytes read out so far: at 0 a leading "--boundary" is
// recognised. readErr is the read error, if any, that followed the bytes in buf. It returns the
// number of data bytes and the error to return once they are read.
func scanUntilBoundary(buf, dashBoundary []byte, delim *finder, total int64, readErr error) (int, error) {
	nlDashBoundary := delim.pat
	if total == 0 {
		// At beginning of body, allow dashBoundary.
		if bytes.HasPrefix(buf, dashBoundary) {
			switch matchAfterPrefix(buf, dashBoundary, readErr) {
			case -1:
				return len(dashBoundary), nil
			case 0:
				return 0, nil
			case +1:
				return 0, io.EOF
			}
		}
		if bytes.HasPrefix(dashBoundary, buf) {
			return 0, readErr
		}
	}

	// Search for "\n--boundary".
	if i := delim.index(buf); i >= 0 {
		switch matchAfterPrefix(buf[i:], nlDashBoundary, readErr) {
		case -1:
			return i + len(nlDashBoundary), nil
		case 0:
			return i, nil
		case +1:
			return i, io.EOF
		}
	}
	if bytes.HasPrefix(nlDashBoundary, buf) {
		return 0, readErr
	}

	// Otherwise, anything up to the final \n is not part of the boundary and so must be part of
	// the body. Also if the section from the final \n onward is not a prefix of the boundary, it
	// too must be part of the body. (Only the last len(nlDashBoundary)-1 bytes can hold such a
	// prefix: a longer one would be the whole boundary, which the search above found.)
	from := max(len(buf)-len(nlDashBoundary)+1, 0)
	if i := bytes.LastIndexByte(buf[from:], nlDashBoundary[0]); i >= 0 && bytes.HasPrefix(nlDashBoundary, buf[from+i:]) {
		return from + i, nil
	}
	return len(buf), readErr
}

// matchAfterPrefix checks whether buf, which begins with prefix ("--boundary", "\r\n--boundary"
// or "\n--boundary"), matches the boundary: +1 if the prefix is followed by a double dash, space,
// tab, cr, nl or the end of input; -1 if by anything else ("--foobar" does not match "--foo"); 0
// if more input is needed to tell.
func matchAfterPrefix(buf, prefix []byte, readErr error) int {
	if len(buf) == len(prefix) {
		if readErr != nil {
			return +1
		}
		return 0
	}
	c := buf[len(prefix)]
	if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		return +1
	}
	if c == '-' {
		if len(buf) == len(prefix)+1 {
			if readErr != nil {
				return -1
			}
			return 0
		}
		if buf[len(prefix)+1] == '-' {
			return +1
		}
	}
	return -1
}

// NextPart returns the next part, or io.EOF after the last. The part before is read to its end
// and dropped. A quoted-printable part's Content-Transfer-Encoding header is removed and its
// body decoded, as mime/multipart does.
func (r *Reader) NextPart() (*Part, error) {
	if r.currentPart != nil {
		r.currentPart.Close()
	}
	if string(r.dashBoundary) == "--" {
		return nil, errors.New("multipart: boundary is empty")
	}
	expectNewPart := false
	for {
		line, err := r.br.ReadSlice('\n')
		if err == io.EOF && r.isFinalBoundary(line) {
			// "--boundary--" at the very end, without its "\r\n", is a valid end too.
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("multipart: NextPart: %w", err)
		}
		if r.isBoundaryDelimiterLine(line) {
			r.partsRead++
			bp, err := newPart(r)
			if err != nil {
				return nil, err
			}
			r.currentPart = bp
			return bp, nil
		}
		if r.isFinalBoundary(line) {
			return nil, io.EOF
		}
		if expectNewPart {
			return nil, fmt.Errorf("multipart: expecting a new Part; got line %q", string(line))
		}
		if r.partsRead == 0 {
			continue // the preamble
		}
		// The "\n" or "\r\n" between the previous part's body and the boundary line.
		if bytes.Equal(line, r.nl) {
			expectNewPart = true
			continue
		}
		return nil, fmt.Errorf("multipart: unexpected line in Next(): %q", line)
	}
}

// isFinalBoundary reports whether line is `^--boundary--[ \t]*(\r\n)?$`.
func (r *Reader) isFinalBoundary(line []byte) bool {
	if !bytes.HasPrefix(line, r.dashBoundaryDash) {
		return false
	}
	rest := skipLWSPChar(line[len(r.dashBoundaryDash):])
	return len(rest) == 0 || bytes.Equal(rest, r.nl)
}

// isBoundaryDelimiterLine reports whether line is "--boundary", optional linear whitespace and
// the line ending (RFC 2046, section 5.1); on the first part it switches to LF-only endings if
// the line ends so.
func (r *Reader) isBoundaryDelimiterLine(line []byte) bool {
	if !bytes.HasPrefix(line, r.dashBoundary) {
		return false
	}
	rest := skipLWSPChar(line[len(r.dashBoundary):])
	if r.partsRead == 0 && len(rest) == 1 && rest[0] == '\n' {
		r.nl = r.nl[1:]
		r.delim = newFinder(r.delim.pat[1:])
	}
	return bytes.Equal(rest, r.nl)
}

// skipLWSPChar returns b with leading spaces and tabs removed.
func skipLWSPChar(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}
