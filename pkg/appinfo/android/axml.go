package android

// Binary XML (AXML), the compiled form of an APK's AndroidManifest.xml, and the string pool it
// shares with resources.arsc. Layouts are those of frameworks/base libs/androidfw ResourceTypes.h.
// Everything read is bounds-checked against the chunk holding it, and nothing is allocated from a
// declared count, so hostile input costs at most a walk over its own bytes.

import (
	"encoding/binary"
	"unicode/utf16"

	ab "github.com/shogo82148/androidbinary"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Chunk types (ResourceTypes.h).
const (
	androidChunkStringPool   = uint16(ab.ResStringPoolChunkType)
	androidChunkTable        = uint16(ab.ResTableChunkType)
	androidChunkXML          = uint16(ab.ResXMLChunkType)
	androidChunkStartElement = uint16(ab.ResXMLStartElementType)
	androidChunkEndElement   = uint16(ab.ResXMLEndElementType)
	androidChunkResourceMap  = uint16(ab.ResXMLResourceMapType)
	androidChunkPackage      = uint16(ab.ResTablePackageType)
	androidChunkType         = uint16(ab.ResTableTypeType)
)

const androidNoIndex = 0xFFFFFFFF // a null string-pool reference

func androidU16(b []byte, off uint64) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func androidU32(b []byte, off uint64) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// androidChunk is a chunk header checked to lie within its parent.
type androidChunk struct {
	typ      uint16
	hdr, end uint64 // header size; chunk size
}

// androidNextChunk reads the chunk header at off in b (the parent's bytes).
func androidNextChunk(b []byte, off uint64) (androidChunk, bool) {
	if off+8 > uint64(len(b)) {
		return androidChunk{}, false
	}
	c := androidChunk{typ: androidU16(b, off), hdr: uint64(androidU16(b, off+2)), end: uint64(androidU32(b, off+4))}
	return c, c.hdr >= 8 && c.end >= c.hdr && off+c.end <= uint64(len(b))
}

// androidStringPool reads strings from a ResStringPool chunk on demand.
type androidStringPool struct {
	b       []byte // the whole chunk
	count   uint64
	offsets uint64 // where the count uint32 offsets start
	start   uint64 // where string data starts
	utf8    bool
}

// androidParseStringPool checks a string pool chunk's header and offset table.
func androidParseStringPool(c []byte) (*androidStringPool, bool) {
	if len(c) < 28 {
		return nil, false
	}
	hdr := uint64(androidU16(c, 2))
	p := &androidStringPool{
		b:       c,
		count:   uint64(androidU32(c, 8)),
		offsets: hdr,
		start:   uint64(androidU32(c, 20)),
		utf8:    androidU32(c, 16)&uint32(ab.UTF8Flag) != 0,
	}
	styles := uint64(androidU32(c, 12))
	if hdr < 28 || hdr+4*(p.count+styles) > uint64(len(c)) || (p.count > 0 && p.start > uint64(len(c))) {
		return nil, false
	}
	return p, true
}

// str returns string i, truncated to max bytes (UTF-8) or code units (UTF-16); ok is false when
// i or the string's bounds are out of the pool.
func (p *androidStringPool) str(i uint32, max int) (string, bool) {
	if p == nil || uint64(i) >= p.count {
		return "", false
	}
	off := p.start + uint64(androidU32(p.b, p.offsets+4*uint64(i)))
	if off >= uint64(len(p.b)) {
		return "", false
	}
	s := p.b[off:]
	if p.utf8 {
		// Two lengths, each 1 or 2 bytes: UTF-16 units (skipped), then bytes.
		_, n1 := androidLen8(s)
		if n1 == 0 {
			return "", false
		}
		size, n2 := androidLen8(s[n1:])
		if n2 == 0 || uint64(n1+n2)+uint64(size) > uint64(len(s)) {
			return "", false
		}
		data := s[n1+n2 : n1+n2+size]
		return string(data[:min(len(data), max)]), true
	}
	if len(s) < 2 {
		return "", false
	}
	size, n := uint64(androidU16(s, 0)), uint64(2)
	if size&0x8000 != 0 {
		if len(s) < 4 {
			return "", false
		}
		size, n = (size&0x7fff)<<16|uint64(androidU16(s, 2)), 4
	}
	if n+2*size > uint64(len(s)) {
		return "", false
	}
	units := make([]uint16, min(size, uint64(max)))
	for k := range units {
		units[k] = androidU16(s, n+2*uint64(k))
	}
	return string(utf16.Decode(units)), true
}

// androidLen8 decodes a UTF-8 pool length (1 byte, or 2 with the high bit set); n is 0 when s is
// too short.
func androidLen8(s []byte) (v, n int) {
	switch {
	case len(s) >= 1 && s[0]&0x80 == 0:
		return int(s[0]), 1
	case len(s) >= 2:
		return int(s[0]&0x7f)<<8 | int(s[1]), 2
	}
	return 0, 0
}

// androidValueOf interprets a Res_value (type and data) with strings from pool.
func androidValueOf(typ uint8, data uint32, pool *androidStringPool, maxText int) androidValue {
	switch typ {
	case androidTypeNull:
		return androidValue{}
	case androidTypeReference, androidTypeDynamicRef:
		if data == 0 {
			return androidValue{} // @null
		}
		return androidValue{kind: androidRef, num: data}
	case androidTypeString:
		if s, ok := pool.str(data, maxText); ok {
			return androidValue{kind: androidString, str: s}
		}
		return androidValue{}
	case androidTypeIntDec, androidTypeIntHex:
		return androidValue{kind: androidInt, num: data}
	case androidTypeIntBoolean:
		return androidValue{kind: androidBool, num: data}
	}
	return androidValue{kind: androidOther, num: data}
}

// errAXML is the error for a manifest that cannot be decoded.
func errAXML(why string, args ...any) error {
	return errs.Invalidf("AndroidManifest.xml is not a valid binary XML document ("+why+")", args...)
}

// decodeAXML decodes an APK's binary AndroidManifest.xml. Only the elements and attributes the
// parser needs are decoded; attributes are identified by resource id (see androidFieldOf).
func decodeAXML(b []byte) (*androidManifest, error) {
	if androidLooksLikeText(b) {
		return nil, errs.Invalidf("AndroidManifest.xml is plain-text XML, not the compiled binary form an APK carries")
	}
	if len(b) < 8 {
		return nil, errAXML("%d bytes", len(b))
	}
	// Android does not check the document's chunk type and obfuscators zero it (fixture
	// a3ee88cf1492), so 0 is accepted besides RES_XML_TYPE.
	typ, hdr, size := androidU16(b, 0), uint64(androidU16(b, 2)), uint64(androidU32(b, 4))
	if typ != androidChunkXML && typ != 0 {
		return nil, errAXML("file type 0x%04x", typ)
	}
	if hdr < 8 || size < hdr || size > uint64(len(b)) {
		return nil, errAXML("header declares %d bytes, the file holds %d", size, len(b))
	}
	b = b[:size]
	var (
		pool   *androidStringPool
		resMap []byte // uint32 resource ids of the pool's first strings
		depth  int
		m      = &androidManifest{}
	)
	for off := hdr; off+8 <= size; {
		c, ok := androidNextChunk(b, off)
		if !ok {
			return nil, errAXML("bad chunk at offset %d", off)
		}
		chunk := b[off : off+c.end]
		switch c.typ {
		case androidChunkStringPool:
			if pool == nil {
				if pool, ok = androidParseStringPool(chunk); !ok {
					return nil, errAXML("malformed string pool")
				}
			}
		case androidChunkResourceMap:
			if resMap == nil {
				resMap = chunk[c.hdr:]
			}
		case androidChunkStartElement:
			depth++
			if err := axmlElement(m, chunk, c.hdr, depth, pool, resMap); err != nil {
				return nil, err
			}
		case androidChunkEndElement:
			depth = max(depth-1, 0)
		}
		off += c.end
	}
	if !m.rootSeen {
		return nil, errAXML("no elements")
	}
	if !m.hasRoot {
		return nil, errs.Invalidf("AndroidManifest.xml's root element is not <manifest>")
	}
	return m, nil
}

// axmlElement decodes one start-element chunk (ResXMLTree_node + ResXMLTree_attrExt) into m.
func axmlElement(m *androidManifest, c []byte, hdr uint64, depth int, pool *androidStringPool, resMap []byte) error {
	if hdr+20 > uint64(len(c)) {
		return errAXML("truncated element")
	}
	name, _ := pool.str(androidU32(c, hdr+4), 32)
	elem := androidElemOf(depth, name)
	if depth == 1 {
		m.root(elem)
	}
	if elem == androidElemOther {
		return nil
	}
	attrStart, attrSize, attrCount := uint64(androidU16(c, hdr+8)), uint64(androidU16(c, hdr+10)), uint64(androidU16(c, hdr+12))
	if attrCount == 0 {
		return nil
	}
	if attrSize < 20 || hdr+attrStart+attrSize*attrCount > uint64(len(c)) {
		return errAXML("attributes of <%s> lie outside their chunk", name)
	}
	for i := range attrCount {
		a := hdr + attrStart + i*attrSize
		nameIdx := androidU32(c, a+4)
		var id uint32
		if uint64(nameIdx) < uint64(len(resMap)/4) {
			id = androidU32(resMap, 4*uint64(nameIdx))
		}
		var ns string
		if nsIdx := androidU32(c, a); nsIdx != androidNoIndex {
			ns, _ = pool.str(nsIdx, len(androidNS)+1)
		}
		attrName, _ := pool.str(nameIdx, 32)
		f := androidFieldOf(elem, id, ns, attrName)
		if !m.want(f) {
			continue
		}
		maxText := f.maxText()
		// The typed value is what Android reads; the raw string is a fallback for old tools.
		v := androidValueOf(c[a+15], androidU32(c, a+16), pool, maxText)
		if v.kind == androidNone {
			if raw := androidU32(c, a+8); raw != androidNoIndex {
				if s, ok := pool.str(raw, maxText); ok {
					v = androidValue{kind: androidString, str: s}
				}
			}
		}
		if v.kind != androidNone {
			m.set(f, v)
		}
	}
	return nil
}

// androidLooksLikeText reports whether b starts like a text XML document.
func androidLooksLikeText(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n', 0xef, 0xbb, 0xbf: // whitespace or a UTF-8 byte-order mark
			continue
		case '<':
			return true
		}
		return false
	}
	return false
}
