package android

// resources.arsc, an APK's compiled resource table (ResTable_header, ResTable_package,
// ResTable_type in ResourceTypes.h). Opening it walks and checks the chunk structure and notes
// where each type chunk is; a lookup then reads only the type chunks of the id's package and type.

import (
	"bytes"
	"encoding/binary"
	"sort"

	ab "github.com/shogo82148/androidbinary"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// ResTable_type flags and ResTable_entry flags.
const (
	arscTypeSparse   = 0x01 // entries are {uint16 index, uint16 offset/4} pairs sorted by index
	arscTypeOffset16 = 0x02 // entry offsets are uint16 (offset/4), 0xffff for none
	arscEntryComplex = 0x0001
	arscEntryCompact = 0x0008 // {uint16 key, uint16 flags with the data type in the high byte, uint32 data}
)

// androidARSC is an opened resources.arsc.
type androidARSC struct {
	b     []byte
	pool  *androidStringPool  // the global string pool, holding string values and file paths
	types map[uint16][]uint32 // package id<<8 | type id → offsets of its ResTable_type chunks
	cache map[uint32][]androidResEntry
	work  int // type chunks visited by lookups, against androidMaxLookupWork
}

// decodeARSC checks the structure of a resources.arsc and indexes its type chunks.
func decodeARSC(b []byte) (*androidARSC, error) {
	if len(b) < 12 {
		return nil, errs.Invalidf("resources.arsc is not a resource table (%d bytes)", len(b))
	}
	typ, hdr, size := androidU16(b, 0), uint64(androidU16(b, 2)), uint64(androidU32(b, 4))
	if typ != androidChunkTable || hdr < 12 || size < hdr {
		return nil, errs.Invalidf("resources.arsc is not a resource table (bad file header)")
	}
	if size > uint64(len(b)) {
		return nil, errs.Invalidf("resources.arsc declares %d bytes but holds %d", size, len(b))
	}
	t := &androidARSC{b: b[:size], types: map[uint16][]uint32{}, cache: map[uint32][]androidResEntry{}}
	for off := hdr; off+8 <= size; {
		c, ok := androidNextChunk(t.b, off)
		if !ok {
			return nil, errs.Invalidf("resources.arsc declares a chunk at offset %d that overruns the table", off)
		}
		switch c.typ {
		case androidChunkStringPool:
			if t.pool == nil {
				if t.pool, ok = androidParseStringPool(t.b[off : off+c.end]); !ok {
					return nil, errs.Invalidf("resources.arsc has a malformed string pool")
				}
			}
		case androidChunkPackage:
			if err := t.indexPackage(off, c); err != nil {
				return nil, err
			}
		}
		off += c.end
	}
	return t, nil
}

// indexPackage notes the type chunks of the package chunk at off.
func (t *androidARSC) indexPackage(off uint64, c androidChunk) error {
	if c.hdr < 12 {
		return errs.Invalidf("resources.arsc has a package chunk with a %d-byte header", c.hdr)
	}
	pkgID := uint16(androidU32(t.b, off+8) & 0xff)
	end := off + c.end
	for p := off + c.hdr; p+8 <= end; {
		ic, ok := androidNextChunk(t.b[:end], p)
		if !ok {
			return errs.Invalidf("resources.arsc declares a chunk at offset %d that overruns its package", p)
		}
		if ic.typ == androidChunkType {
			if ic.hdr < 20 {
				return errs.Invalidf("resources.arsc has a type chunk with a %d-byte header", ic.hdr)
			}
			key := pkgID<<8 | uint16(t.b[p+8])
			t.types[key] = append(t.types[key], uint32(p))
		}
		p += ic.end
	}
	return nil
}

// lookup returns the values of resource id in each configuration that defines it.
func (t *androidARSC) lookup(id uint32) ([]androidResEntry, error) {
	if e, ok := t.cache[id]; ok {
		return e, nil
	}
	var out []androidResEntry
	for _, off := range t.types[uint16(id>>24)<<8|uint16(id>>16&0xff)] {
		if t.work++; t.work > androidMaxLookupWork {
			return nil, errs.Invalidf("resources.arsc is too convoluted to resolve the manifest's references")
		}
		c := t.b[off : uint64(off)+uint64(androidU32(t.b, uint64(off)+4))]
		v, ok := t.entry(c, id&0xffff)
		if !ok {
			continue
		}
		cfg, extra := arscConfig(c)
		out = append(out, androidResEntry{cfg: cfg, extra: extra, val: v})
		if len(out) == androidMaxConfigs {
			break
		}
	}
	t.cache[id] = out
	return out, nil
}

// entry reads entry e of type chunk c (ResTable_type, whose header was checked when indexing).
func (t *androidARSC) entry(c []byte, e uint32) (androidValue, bool) {
	hdr, flags := uint64(androidU16(c, 2)), c[9]
	count, start := uint64(androidU32(c, 12)), uint64(androidU32(c, 16))
	n := uint64(len(c))
	var off uint64
	switch {
	case flags&arscTypeSparse != 0:
		if hdr+4*count > n {
			return androidValue{}, false
		}
		i := uint64(sort.Search(int(count), func(i int) bool { return uint32(androidU16(c, hdr+4*uint64(i))) >= e }))
		if i == count || uint32(androidU16(c, hdr+4*i)) != e {
			return androidValue{}, false
		}
		off = 4 * uint64(androidU16(c, hdr+4*i+2))
	case flags&arscTypeOffset16 != 0:
		if uint64(e) >= count || hdr+2*uint64(e)+2 > n {
			return androidValue{}, false
		}
		o := androidU16(c, hdr+2*uint64(e))
		if o == 0xffff {
			return androidValue{}, false
		}
		off = 4 * uint64(o)
	default:
		if uint64(e) >= count || hdr+4*uint64(e)+4 > n {
			return androidValue{}, false
		}
		o := androidU32(c, hdr+4*uint64(e))
		if o == androidNoIndex {
			return androidValue{}, false
		}
		off = uint64(o)
	}
	p := start + off
	if p+8 > n {
		return androidValue{}, false
	}
	size, eflags := uint64(androidU16(c, p)), androidU16(c, p+2)
	switch {
	case eflags&arscEntryCompact != 0:
		return androidValueOf(uint8(eflags>>8), androidU32(c, p+4), t.pool, androidMaxText), true
	case eflags&arscEntryComplex != 0:
		return androidValue{}, false // a bag (style, array, plural): not a simple value
	}
	if p+size+8 > n {
		return androidValue{}, false
	}
	return androidValueOf(c[p+size+3], androidU32(c, p+size+4), t.pool, androidMaxText), true
}

// arscConfig reads the ResTable_config of type chunk c. The first 36 bytes map onto
// androidbinary's ResTableConfig; extra reports a non-zero later field (locale script or variant,
// round screen, color mode...), which that struct cannot express.
func arscConfig(c []byte) (cfg ab.ResTableConfig, extra bool) {
	var raw [64]byte
	n := uint64(androidU16(c, 2)) - 20
	if n >= 4 {
		n = min(n, uint64(androidU32(c, 20)))
	}
	copy(raw[:], c[20:20+min(n, 64)])
	_ = binary.Read(bytes.NewReader(raw[:36]), binary.LittleEndian, &cfg) // cannot fail: 36 bytes
	for _, x := range raw[36:] {
		extra = extra || x != 0
	}
	return cfg, extra
}
