package apple

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"io"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// A .pkg's XML (its table of contents, Distribution and PackageInfo files) compresses a
// thousandfold: a 24 KB package held 16 MiB of <file/> elements, which xml.Unmarshal turned into
// 1.4 GB of allocations and seconds of CPU, from one anonymous upload. So the XML is read token
// by token through boundedTokens, which refuses a document past a number of elements, a depth,
// or a token size, before the decoder allocates for it; and the documents of one parse share a
// budget of elements and bytes, which bounds its CPU.

// xmlLimits bounds the parse of one XML document.
type xmlLimits struct {
	elements int // start elements
	depth    int // open elements at once
	token    int // bytes of one token: a text run, a tag with its attributes, a comment
}

// Limits of the .pkg's XML. A real table of contents lists a few dozen files (the payload is one
// of them), about 20 elements each, signature certificates being the longest text; Distribution
// and PackageInfo files hold a few hundred elements, and a Distribution's script may be long.
// One parse reads up to ten documents (the TOC, a Distribution, maxXarPkgInfos PackageInfo
// files), so they also share one budget of elements and bytes (maxPKGXMLElements, maxPKGXMLBytes).
var (
	tocXMLLimits  = xmlLimits{elements: 50_000, depth: 64, token: 64 << 10}
	fileXMLLimits = xmlLimits{elements: 20_000, depth: 64, token: 1 << 20}
)

// Budget of one .pkg parse, across its documents: encoding/xml decodes about 50 MB/s and 1.3 M
// elements a second here, so each of these is under 200 ms of CPU.
const (
	maxPKGXMLElements = 100_000
	maxPKGXMLBytes    = 8 << 20
)

// xmlBudget is what the documents of one parse may still read, shared by them.
type xmlBudget struct {
	elements int
	bytes    int64
}

func newXMLBudget() *xmlBudget {
	return &xmlBudget{elements: maxPKGXMLElements, bytes: maxPKGXMLBytes}
}

// boundedTokens is an xml.TokenReader over an xml.Decoder that stops, with an errs.Invalid error
// naming what, once the document passes its limits.
type boundedTokens struct {
	d        *xml.Decoder
	in       *tokenBytes
	lim      xmlLimits
	budget   *xmlBudget
	what     string // "the .pkg's table of contents"
	elements int
	depth    int
}

// newBoundedTokens reads XML from r within lim, taking its elements from budget.
func newBoundedTokens(r io.Reader, lim xmlLimits, budget *xmlBudget, what string) *boundedTokens {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 32<<10)
	}
	in := &tokenBytes{r: br, max: int64(lim.token), budget: budget, what: what}
	return &boundedTokens{d: xml.NewDecoder(in), in: in, lim: lim, budget: budget, what: what}
}

// Token returns the next token, or an errs.Invalid error: a limit passed, or the XML is not
// well formed.
func (b *boundedTokens) Token() (xml.Token, error) {
	t, err := b.d.Token()
	if b.in.err != nil {
		return nil, b.in.err
	}
	if err != nil {
		if err == io.EOF {
			return nil, err
		}
		var e *errs.Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, errs.Wrap(errs.Invalid, err, "%s is not valid XML", b.what)
	}
	b.in.start = b.d.InputOffset()
	switch t.(type) {
	case xml.StartElement:
		b.elements++
		b.depth++
		b.budget.elements--
		switch {
		case b.elements > b.lim.elements:
			return nil, errs.Invalidf("%s holds more than %d elements", b.what, b.lim.elements)
		case b.budget.elements < 0:
			return nil, errs.Invalidf("the .pkg's XML files hold more than %d elements in all", maxPKGXMLElements)
		case b.depth > b.lim.depth:
			return nil, errs.Invalidf("%s nests elements deeper than %d", b.what, b.lim.depth)
		}
	case xml.EndElement:
		b.depth--
	}
	return t, nil
}

// tokenBytes is the decoder's input: it counts the bytes read since the last token ended and
// fails once one token takes more than max, before the decoder buffers more of it, or once the
// parse's budget of bytes is spent.
type tokenBytes struct {
	r      *bufio.Reader
	n      int64 // bytes read
	start  int64 // offset where the current token began
	max    int64
	budget *xmlBudget
	what   string
	err    error
}

// ReadByte is how xml.Decoder reads (it uses io.ByteReader when the reader has it).
func (t *tokenBytes) ReadByte() (byte, error) {
	if t.err != nil {
		return 0, t.err
	}
	switch {
	case t.n-t.start >= t.max:
		t.err = errs.Invalidf("%s has a text, tag or comment over %d bytes", t.what, t.max)
		return 0, t.err
	case t.budget.bytes <= 0:
		t.err = errs.Invalidf("the .pkg's XML files hold more than %d bytes in all", maxPKGXMLBytes)
		return 0, t.err
	}
	c, err := t.r.ReadByte()
	if err == nil {
		t.n++
		t.budget.bytes--
	}
	return c, err
}

// Read is never called by xml.Decoder (ReadByte is); it is bounded the same way.
func (t *tokenBytes) Read(p []byte) (int, error) {
	for i := range p {
		c, err := t.ReadByte()
		if err != nil {
			return i, err
		}
		p[i] = c
	}
	return len(p), nil
}

// decodeXML unmarshals the document in data into v (as xml.Unmarshal does) within lim and budget.
func decodeXML(data []byte, v any, lim xmlLimits, budget *xmlBudget, what string) error {
	bt := newBoundedTokens(bytes.NewReader(data), lim, budget, what)
	err := xml.NewTokenDecoder(bt).Decode(v)
	switch {
	case err == nil:
		return nil
	case err == io.EOF:
		return errs.Invalidf("%s is not valid XML (empty)", what)
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	return errs.Wrap(errs.Invalid, err, "%s is not valid XML", what)
}
