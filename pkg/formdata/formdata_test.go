package formdata

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/textproto"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// part is what a reader made of one part.
type part struct {
	Header         textproto.MIMEHeader
	Name, FileName string
	Body           []byte
	BodyErr        string
}

// outcome is what a reader made of a body: its parts, and the error NextPart ended with.
type outcome struct {
	Parts []part
	End   string
}

// chunkReader hands out r in reads no longer than the next size (cycled), as a socket does.
type chunkReader struct {
	r     io.Reader
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.sizes) > 0 {
		n := c.sizes[c.i%len(c.sizes)]
		c.i++
		if n < len(p) {
			p = p[:n]
		}
	}
	return c.r.Read(p)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// readWith reads every part of body with next/read (one of the two readers), reading each part's
// body in reads of readSize.
func readWith(next func() (textproto.MIMEHeader, string, string, io.Reader, error), readSize int) outcome {
	var o outcome
	for range 1000 {
		h, name, file, r, err := next()
		if err != nil {
			o.End = errString(err)
			return o
		}
		p := part{Header: h, Name: name, FileName: file}
		buf := make([]byte, readSize)
		for {
			n, err := r.Read(buf)
			p.Body = append(p.Body, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				p.BodyErr = err.Error()
				break
			}
		}
		o.Parts = append(o.Parts, p)
	}
	o.End = "too many parts"
	return o
}

func readStd(body []byte, boundary string, sizes []int, readSize int) outcome {
	mr := multipart.NewReader(&chunkReader{r: bytes.NewReader(body), sizes: sizes}, boundary)
	return readWith(func() (textproto.MIMEHeader, string, string, io.Reader, error) {
		p, err := mr.NextPart()
		if err != nil {
			return nil, "", "", nil, err
		}
		return p.Header, p.FormName(), p.FileName(), p, nil
	}, readSize)
}

func readOurs(body []byte, boundary string, sizes []int, readSize int) outcome {
	mr := NewReader(&chunkReader{r: bytes.NewReader(body), sizes: sizes}, boundary)
	return readWith(func() (textproto.MIMEHeader, string, string, io.Reader, error) {
		p, err := mr.NextPart()
		if err != nil {
			return nil, "", "", nil, err
		}
		return p.Header, p.FormName(), p.FileName(), p, nil
	}, readSize)
}

// same fails t when the two outcomes differ.
func same(t *testing.T, what string, want, got outcome) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return
	}
	if len(want.Parts) != len(got.Parts) {
		t.Fatalf("%s: mime/multipart read %d parts (end %q), formdata %d (end %q)", what, len(want.Parts), want.End, len(got.Parts), got.End)
	}
	for i := range want.Parts {
		w, g := want.Parts[i], got.Parts[i]
		if !bytes.Equal(w.Body, g.Body) {
			t.Fatalf("%s: part %d: mime/multipart read %d bytes (%q), formdata %d (%q)", what, i, len(w.Body), trim(w.Body), len(g.Body), trim(g.Body))
		}
		if !reflect.DeepEqual(w, g) {
			t.Fatalf("%s: part %d:\nmime/multipart %+v\nformdata       %+v", what, i, w, g)
		}
	}
	t.Fatalf("%s: end: mime/multipart %q, formdata %q", what, want.End, got.End)
}

func trim(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

// form builds a multipart/form-data body as Zealot's clients send it: fields, then the file.
func form(boundary string, fields [][2]string, file []byte, crlf bool) []byte {
	nl := "\r\n"
	if !crlf {
		nl = "\n"
	}
	var b bytes.Buffer
	for _, f := range fields {
		fmt.Fprintf(&b, "--%s%sContent-Disposition: form-data; name=%q%s%s%s%s", boundary, nl, f[0], nl, nl, f[1], nl)
	}
	fmt.Fprintf(&b, "--%s%sContent-Disposition: form-data; name=\"file\"; filename=\"app.ipa\"%sContent-Type: application/octet-stream%s%s", boundary, nl, nl, nl, nl)
	b.Write(file)
	fmt.Fprintf(&b, "%s--%s--%s", nl, boundary, nl)
	return b.Bytes()
}

// The header forms Zealot's clients send: fastlane (Ruby's multipart-post), curl -F, the
// Gradle plugins (OkHttp), Go's multipart.Writer, and odd but valid ones.
var clientBodies = []struct {
	name, boundary, body string
}{
	{"curl -F", "------------------------d74496d66958873e",
		"--------------------------d74496d66958873e\r\nContent-Disposition: form-data; name=\"token\"\r\n\r\nabc\r\n" +
			"--------------------------d74496d66958873e\r\nContent-Disposition: form-data; name=\"file\"; filename=\"app.ipa\"\r\nContent-Type: application/octet-stream\r\n\r\nPK\x03\x04data\r\n--not-it\r\n" +
			"--------------------------d74496d66958873e--\r\n"},
	{"fastlane (multipart-post)", "-----------RubyMultipartPost-3b8c2f", "-------------RubyMultipartPost-3b8c2f\r\nContent-Disposition: form-data; name=\"changelog\"\r\n\r\n- fixed\r\n- more\r\n" +
		"-------------RubyMultipartPost-3b8c2f\r\nContent-Disposition: form-data; name=\"file\"; filename=\"app.ipa\"\r\nContent-Length: 4\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: binary\r\n\r\nPK\x03\x04\r\n" +
		"-------------RubyMultipartPost-3b8c2f--\r\n\r\n"},
	{"OkHttp", "3f1a2b6c-5d4e-4f00-9a8b-7c6d5e4f3a2b", "--3f1a2b6c-5d4e-4f00-9a8b-7c6d5e4f3a2b\r\nContent-Disposition: form-data; name=\"channel_key\"\r\nContent-Length: 3\r\n\r\nabc\r\n" +
		"--3f1a2b6c-5d4e-4f00-9a8b-7c6d5e4f3a2b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"app-release.apk\"\r\nContent-Type: application/vnd.android.package-archive\r\n\r\nPK\x03\x04\r\n" +
		"--3f1a2b6c-5d4e-4f00-9a8b-7c6d5e4f3a2b--\r\n"},
	{"preamble, LWSP after boundaries, folded header, epilogue", "b", "preamble line\r\n--b  \r\nContent-Disposition: form-data;\r\n name=\"x\"\r\n\r\nv\r\n--b\t\r\nContent-Disposition: form-data; name=file; filename=\"C:\\\\dir\\\\a.ipa\"\r\n\r\nzz\r\n--b-- \r\nepilogue"},
	{"LF only", "b", "--b\nContent-Disposition: form-data; name=\"x\"\n\nv\n--b\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\n\nPK\r\n--b\n\n--b--\n"},
	{"quoted-printable", "b", "--b\r\nContent-Disposition: form-data; name=\"x\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\na=3Db=\r\nc\r\n--b--"},
	{"empty part, final boundary without CRLF", "b", "--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n--b\r\n\r\n\r\n--b--"},
	{"cut short in the file", "b", "--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nPK\x03\x04\r\n--b"},
	{"cut short in a header", "b", "--b\r\nContent-Disposition: form-da"},
	{"bad line between parts", "b", "--b\r\nA: b\r\n\r\nx\r\n--b\r\nnope\r\n"},
	{"boundary-like data", "b", "--b\r\nA: b\r\n\r\n\r\n--bb\r\n--b-x\r\n-\r\n--\r\r\n--b--"},
	{"no boundary at all", "b", "hello"},
}

func TestClientBodies(t *testing.T) {
	for _, c := range clientBodies {
		for _, sizes := range [][]int{nil, {1}, {3, 7}, {4096}, {100000}} {
			for _, rs := range []int{1, 512, DirectMin, 1 << 20} {
				want := readStd([]byte(c.body), c.boundary, sizes, rs)
				got := readOurs([]byte(c.body), c.boundary, sizes, rs)
				same(t, fmt.Sprintf("%s, reads of %v, part reads of %d", c.name, sizes, rs), want, got)
			}
		}
	}
}

// TestLargeFile checks a large file with boundary look-alikes everywhere, cut by the socket at
// every kind of place, read in large buffers (the direct path) and small ones.
func TestLargeFile(t *testing.T) {
	const boundary = "------------------------d74496d66958873e"
	rng := rand.New(rand.NewPCG(1, 2))
	file := make([]byte, 3<<20)
	for i := range file {
		file[i] = byte(rng.IntN(256))
	}
	// Look-alikes: the delimiter cut short, followed by other bytes, at random places.
	delim := "\r\n--" + boundary
	for range 300 {
		at := rng.IntN(len(file) - len(delim) - 2)
		cut := rng.IntN(len(delim)) + 1
		copy(file[at:], delim[:cut])
		if cut == len(delim) {
			file[at+cut] = 'x' // "--boundaryx" is data
		}
	}
	// And a look-alike right at the end of the file, which must stay the file's.
	copy(file[len(file)-len(delim)+1:], delim[:len(delim)-1])
	for _, crlf := range []bool{true, false} {
		body := form(boundary, [][2]string{{"token", "t"}, {"changelog", "c"}}, file, crlf)
		for _, sizes := range [][]int{nil, {65536}, {1, 83000, 17}, {4095, 4097}, {len(delim) - 1, 300000}} {
			for _, rs := range []int{4096, DirectMin, 1 << 20, 8 << 20} {
				got := readOurs(body, boundary, sizes, rs)
				if len(got.Parts) != 3 || !bytes.Equal(got.Parts[2].Body, file) || got.End != "EOF" {
					want := readStd(body, boundary, sizes, rs)
					same(t, fmt.Sprintf("crlf %v, reads of %v, part reads of %d", crlf, sizes, rs), want, got)
					t.Fatalf("mime/multipart disagrees with the test: %d parts", len(want.Parts))
				}
			}
		}
	}
}

// FuzzAgainstMimeMultipart checks that formdata reads what mime/multipart reads, on any input:
// the same parts with the same headers, names and bytes, and the same errors at the same places;
// the socket's read sizes and the caller's buffer size come from the input too.
func FuzzAgainstMimeMultipart(f *testing.F) {
	for _, c := range clientBodies {
		f.Add([]byte(c.body), c.boundary, uint16(7), uint32(DirectMin))
		f.Add([]byte(c.body), c.boundary, uint16(0), uint32(1))
	}
	f.Add(form("xyz", [][2]string{{"a", "b"}}, bytes.Repeat([]byte("\r\n--xy"), 9000), true), "xyz", uint16(3), uint32(1<<20))
	f.Fuzz(func(t *testing.T, body []byte, boundary string, chunk uint16, readSize uint32) {
		if len(boundary) > 70 || len(body) > 1<<20 {
			return
		}
		rs := int(readSize%(2*DirectMin)) + 1
		var sizes []int
		if chunk > 0 {
			sizes = []int{int(chunk), int(chunk)/3 + 1, 1}
		}
		want := readStd(body, boundary, sizes, rs)
		got := readOurs(body, boundary, sizes, rs)
		if strings.Contains(got.End, "message too large") {
			return // the bounds differ: MaxHeaderBytes is lower than mime/multipart's
		}
		same(t, "fuzz", want, got)
	})
}

// BenchmarkReadPart reads a 64 MiB file part the way the upload path does (8 MiB buffers),
// through mime/multipart (over the 256 KiB bufio.Reader the server used) and formdata, from a
// reader that hands out 83 KiB at a time (the server's socket reads on loopback).
func BenchmarkReadPart(b *testing.B) {
	const boundary = "------------------------d74496d66958873e"
	file := make([]byte, 64<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range file {
		file[i] = byte(rng.Uint32())
	}
	body := form(boundary, [][2]string{{"token", "t"}}, file, true)
	buf := make([]byte, 8<<20)
	for _, impl := range []string{"mime-multipart", "formdata"} {
		b.Run(impl, func(b *testing.B) {
			b.SetBytes(int64(len(file)))
			cpu0 := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op") }()
			for b.Loop() {
				src := &chunkReader{r: bytes.NewReader(body), sizes: []int{83 << 10}}
				var next func() (io.Reader, error)
				if impl == "formdata" {
					mr := NewReader(src, boundary)
					next = func() (io.Reader, error) { p, err := mr.NextPart(); return p, err }
				} else {
					mr := multipart.NewReader(bufioReader(src), boundary)
					next = func() (io.Reader, error) { p, err := mr.NextPart(); return p, err }
				}
				for {
					p, err := next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					for {
						_, err := io.ReadFull(p, buf)
						if err == io.EOF || err == io.ErrUnexpectedEOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

func bufioReader(r io.Reader) io.Reader { return bufio.NewReaderSize(r, 256<<10) }

// cpuTime is this process's user and system CPU time in nanoseconds: on a shared machine it is
// steadier than the wall time.
func cpuTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
