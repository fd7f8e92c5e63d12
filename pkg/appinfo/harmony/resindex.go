package harmony

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Resource types of resources.index (OpenHarmony's ResType): the ones this package looks up.
const (
	resTypeString = 9
	resTypeMedia  = 19
	// resTypeMax is one past the last type restool writes; an entry of a larger type is refused,
	// as the OpenHarmony resource manager refuses it.
	resTypeMax = 25
)

// Qualifier (KeyParam) types of a resource configuration (OpenHarmony's KeyType).
const (
	keyLanguage  = 0
	keyRegion    = 1
	keyDensity   = 2
	keyColorMode = 6
)

const (
	resVersionLen   = 128  // the NUL-padded version text that opens the file
	resV1HeaderLen  = 136  // version, file size, configuration count
	resV2HeaderLen  = 140  // version, file size, configuration count, data block offset
	resKeyLen       = 12   // "KEYS", offset (V1) or configuration id (V2), qualifier count
	resKeyParamLen  = 8    // qualifier type, value
	resMaxKeyParams = 32   // qualifiers of one configuration; restool knows 11 types
	resMaxConfigs   = 4096 // configurations (qualifier folders); real apps have tens to hundreds
	resIDSSLenV1    = 8    // "IDSS", id count
	resIDParamLen   = 8    // id, item offset
	resItemLenV1    = 12   // size, type, id
	resIDSSLenV2    = 16   // "IDSS", length, type count, id count
	resTypeLenV2    = 12   // type, length, item count
	resItemLenV2    = 12   // id, info offset, name length
	resInfoLenV2    = 12   // id, length, value count
	resConfigLenV2  = 8    // configuration id, value offset
)

// resIndex is a decoded resources.index: its structure checked once, its values found by
// scanning when looked up (a parse looks up a handful of resources, so nothing is kept per
// resource and memory does not grow with the counts a file declares).
type resIndex struct {
	b       []byte
	v2      bool
	configs []resConfig
	// idss lists the V1 id tables (one per configuration, index into configs).
	idss []resIDSS
	// items is the V2 id table: [itemsStart, itemsEnd) holds its types type blocks.
	itemsStart, itemsEnd int
	types                uint32
}

// resConfig is one qualifier set (a resources/<qualifiers>/ folder): base has no qualifiers.
type resConfig struct {
	id     uint32 // V2 configuration id
	params []resKeyParam
}

type resKeyParam struct{ typ, val uint32 }

type resIDSS struct {
	config int
	off    int // first IdParam
	count  int
}

// resValue is one value of a resource under one configuration.
type resValue struct {
	config *resConfig
	typ    uint32
	id     uint32
	name   string
	value  string
}

// decodeResourceIndex checks the structure of a resources.index and returns it ready for
// lookups. Every count, length and offset is checked against the bytes really present before
// anything is allocated for it; a malformed index is an errs.Invalid error.
func decodeResourceIndex(b []byte) (*resIndex, error) {
	if len(b) < resV1HeaderLen {
		return nil, indexErr("it has %d bytes, fewer than its %d-byte header", len(b), resV1HeaderLen)
	}
	version := b[:resVersionLen]
	if i := bytes.IndexByte(version, 0); i >= 0 {
		version = version[:i]
	}
	if !bytes.HasPrefix(version, []byte("Restool")) {
		return nil, indexErr("it does not start with a restool version (%q)", clean(string(version)))
	}
	declared := binary.LittleEndian.Uint32(b[resVersionLen:])
	if uint64(declared) > uint64(len(b)) {
		return nil, indexErr("its header declares %d bytes but the file has %d (truncated?)", declared, len(b))
	}
	if declared < resV1HeaderLen {
		return nil, indexErr("its header declares %d bytes, fewer than the header itself", declared)
	}
	x := &resIndex{b: b[:declared], v2: bytes.HasPrefix(version, []byte("RestoolV2"))}
	if x.v2 {
		return x, x.decodeV2()
	}
	return x, x.decodeV1()
}

func indexErr(format string, args ...any) error {
	return errs.Invalidf("resources.index is not a valid resource table: "+format, args...)
}

// readKeys reads count configurations ("KEYS" records) at off and returns the offset past them.
// V1 records carry their id table's offset where V2 ones carry a configuration id; both are
// returned in the record's id field and checked by the caller.
func (x *resIndex) readKeys(off int, count uint32) (int, []uint32, error) {
	b := x.b
	if uint64(count)*resKeyLen > uint64(len(b)-off) {
		return 0, nil, indexErr("it declares %d configurations, more than its %d bytes can hold", count, len(b))
	}
	if count > resMaxConfigs {
		return 0, nil, indexErr("it declares %d configurations, over the limit of %d", count, resMaxConfigs)
	}
	x.configs = make([]resConfig, 0, count)
	ids := make([]uint32, 0, count)
	for i := range int(count) {
		if off+resKeyLen > len(b) {
			return 0, nil, indexErr("configuration %d is cut off at byte %d", i, off)
		}
		if string(b[off:off+4]) != "KEYS" {
			return 0, nil, indexErr("configuration %d at byte %d does not start with KEYS", i, off)
		}
		field := binary.LittleEndian.Uint32(b[off+4:])
		n := binary.LittleEndian.Uint32(b[off+8:])
		off += resKeyLen
		if n > resMaxKeyParams || uint64(n)*resKeyParamLen > uint64(len(b)-off) {
			return 0, nil, indexErr("configuration %d declares %d qualifiers (at most %d, within the file)", i, n, resMaxKeyParams)
		}
		c := resConfig{id: field}
		if n > 0 {
			c.params = make([]resKeyParam, n)
			for j := range c.params {
				c.params[j] = resKeyParam{binary.LittleEndian.Uint32(b[off:]), binary.LittleEndian.Uint32(b[off+4:])}
				off += resKeyParamLen
			}
		}
		x.configs = append(x.configs, c)
		ids = append(ids, field)
	}
	return off, ids, nil
}

// decodeV1 checks the legacy layout (restool up to 5.x, "Restool 5.008"):
//
//	header   version[128] fileSize:u32 configCount:u32
//	configs  configCount × { "KEYS" idssOffset:u32 qualifierCount:u32 { type:u32 value:u32 }* }
//	ids      at each idssOffset: "IDSS" count:u32 count × { id:u32 itemOffset:u32 }
//	items    at each itemOffset: size:u32 type:u32 id:u32 valueLen:u16 value[valueLen]
//	         nameLen:u16 name[nameLen]; value and name end with a NUL counted in their length,
//	         an array value is a run of { len:u16 text NUL } ending in one more NUL.
//
// Offsets are from the start of the file, numbers little-endian.
func (x *resIndex) decodeV1() error {
	b := x.b
	count := binary.LittleEndian.Uint32(b[resVersionLen+4:])
	_, idssOffs, err := x.readKeys(resV1HeaderLen, count)
	if err != nil {
		return err
	}
	// The id tables of the configurations are disjoint in a real index, so together they fit in
	// the file; refusing more bounds the work of a crafted index whose tables all overlap.
	total := uint64(0)
	for i, o := range idssOffs {
		if uint64(o)+resIDSSLenV1 > uint64(len(b)) || o < resV1HeaderLen {
			return indexErr("configuration %d points its id table at byte %d, outside the file", i, o)
		}
		p := int(o)
		if string(b[p:p+4]) != "IDSS" {
			return indexErr("the id table of configuration %d (byte %d) does not start with IDSS", i, p)
		}
		n := binary.LittleEndian.Uint32(b[p+4:])
		if uint64(n)*resIDParamLen > uint64(len(b)-p-resIDSSLenV1) {
			return indexErr("the id table of configuration %d declares %d ids, more than the file holds", i, n)
		}
		total += resIDSSLenV1 + uint64(n)*resIDParamLen
		if total > uint64(len(b)) {
			return indexErr("its id tables declare more ids than the file holds (overlapping tables)")
		}
		x.idss = append(x.idss, resIDSS{config: i, off: p + resIDSSLenV1, count: int(n)})
	}
	for _, t := range x.idss {
		for k := range t.count {
			p := t.off + k*resIDParamLen
			id, item := binary.LittleEndian.Uint32(b[p:]), binary.LittleEndian.Uint32(b[p+4:])
			if _, _, _, err := x.itemV1(id, item); err != nil {
				return err
			}
		}
	}
	return nil
}

// itemV1 decodes the item at off, which the id table lists under id: its type, and its value
// and name as they lie in the file (with their NULs).
func (x *resIndex) itemV1(id, off uint32) (typ uint32, value, name []byte, err error) {
	b := x.b
	if uint64(off) < resV1HeaderLen || uint64(off)+resItemLenV1+4 > uint64(len(b)) {
		return 0, nil, nil, indexErr("resource 0x%08x points at byte %d, outside the file", id, off)
	}
	p := int(off)
	typ = binary.LittleEndian.Uint32(b[p+4:])
	if got := binary.LittleEndian.Uint32(b[p+8:]); got != id {
		return 0, nil, nil, indexErr("resource 0x%08x points at the item of resource 0x%08x", id, got)
	}
	if typ >= resTypeMax {
		return 0, nil, nil, indexErr("resource 0x%08x has unknown type %d", id, typ)
	}
	p += resItemLenV1
	value, p, ok := lenPrefixed(b, p)
	if !ok {
		return 0, nil, nil, indexErr("the value of resource 0x%08x runs past the end of the file", id)
	}
	name, _, ok = lenPrefixed(b, p)
	if !ok {
		return 0, nil, nil, indexErr("the name of resource 0x%08x runs past the end of the file", id)
	}
	return typ, value, name, nil
}

// nameIs reports whether the name field n (NUL-terminated) is name, without allocating.
func nameIs(n []byte, name string) bool {
	if i := bytes.IndexByte(n, 0); i >= 0 {
		n = n[:i]
	}
	return string(n) == name
}

// lenPrefixed returns the n bytes after a little-endian u16 n at p, and the offset past them.
func lenPrefixed(b []byte, p int) ([]byte, int, bool) {
	if p+2 > len(b) {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint16(b[p:]))
	p += 2
	if n > len(b)-p {
		return nil, 0, false
	}
	return b[p : p+n], p + n, true
}

// trimNUL returns b as text without its terminating NUL (and anything after a NUL).
func trimNUL(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// isArrayType reports the types whose value is a list (string and integer arrays, themes,
// plurals, patterns): they hold no single text, so lookups return them without one.
func isArrayType(typ uint32) bool {
	switch typ {
	case 10, 11, 16, 17, 22:
		return true
	}
	return false
}

// decodeV2 checks the layout of restool 6 ("RestoolV2 6.0.0.001", API 20 and later):
//
//	header   version[128] fileSize:u32 configCount:u32 dataOffset:u32
//	configs  configCount × { "KEYS" configId:u32 qualifierCount:u32 { type:u32 value:u32 }* }
//	ids      "IDSS" length:u32 typeCount:u32 idCount:u32, then typeCount ×
//	         { type:u32 length:u32 count:u32, count × { id:u32 infoOffset:u32 nameLen:u32 name } }
//	data     at dataOffset; each resource's info at its infoOffset:
//	         id:u32 length:u32 valueCount:u32 valueCount × { configId:u32 valueOffset:u32 }
//	values   at valueOffset: len:u16 text (names and values are not NUL-terminated)
//
// The id table ends at dataOffset. Infos and values are checked when looked up.
func (x *resIndex) decodeV2() error {
	b := x.b
	if len(b) < resV2HeaderLen {
		return indexErr("it has %d bytes, fewer than its %d-byte header", len(b), resV2HeaderLen)
	}
	count := binary.LittleEndian.Uint32(b[resVersionLen+4:])
	dataOff := binary.LittleEndian.Uint32(b[resVersionLen+8:])
	if uint64(dataOff) > uint64(len(b)) {
		return indexErr("its data block starts at byte %d, past the end of the file (%d bytes)", dataOff, len(b))
	}
	off, _, err := x.readKeys(resV2HeaderLen, count)
	if err != nil {
		return err
	}
	if off+resIDSSLenV2 > int(dataOff) || string(b[off:off+4]) != "IDSS" {
		return indexErr("no IDSS id table after the configurations (byte %d)", off)
	}
	length := binary.LittleEndian.Uint32(b[off+4:])
	types := binary.LittleEndian.Uint32(b[off+8:])
	ids := binary.LittleEndian.Uint32(b[off+12:])
	end := uint64(off) + uint64(length)
	if end > uint64(dataOff) || length < resIDSSLenV2 {
		return indexErr("its id table declares %d bytes, past the data block at byte %d", length, dataOff)
	}
	if uint64(types)*resTypeLenV2+uint64(ids)*resItemLenV2 > uint64(length) {
		return indexErr("its id table declares %d types and %d ids, more than its %d bytes hold", types, ids, length)
	}
	x.itemsStart, x.itemsEnd, x.types = off+resIDSSLenV2, int(end), types
	seen := uint64(0)
	err = x.eachV2(func(typ, id, info uint32, name []byte) bool { seen++; return true })
	if err != nil {
		return err
	}
	if seen > uint64(ids) {
		return indexErr("its id table holds %d ids, more than the %d it declares", seen, ids)
	}
	return nil
}

// eachV2 walks the type blocks of the V2 id table, calling fn for each id until fn returns
// false. A block's declared length is only checked to lie within the table: the resource
// manager finds the next block by reading the ids, and so does this.
func (x *resIndex) eachV2(fn func(typ, id, info uint32, name []byte) bool) error {
	b := x.b[:x.itemsEnd]
	p := x.itemsStart
	for t := uint32(0); t < x.types; t++ {
		if p+resTypeLenV2 > len(b) {
			return indexErr("type block %d of the id table is cut off", t)
		}
		typ := binary.LittleEndian.Uint32(b[p:])
		length := binary.LittleEndian.Uint32(b[p+4:])
		n := binary.LittleEndian.Uint32(b[p+8:])
		if typ >= resTypeMax {
			return indexErr("type block %d has unknown type %d", t, typ)
		}
		if uint64(length) > uint64(len(b)-p) || uint64(n)*resItemLenV2 > uint64(len(b)-p-resTypeLenV2) {
			return indexErr("type block %d (type %d) declares %d ids in %d bytes, past the end of the id table", t, typ, n, length)
		}
		q := p + resTypeLenV2
		for k := range n {
			if q+resItemLenV2 > len(b) {
				return indexErr("id %d of type %d is cut off", k, typ)
			}
			id := binary.LittleEndian.Uint32(b[q:])
			info := binary.LittleEndian.Uint32(b[q+4:])
			nl := binary.LittleEndian.Uint32(b[q+8:])
			q += resItemLenV2
			if uint64(nl) > uint64(len(b)-q) {
				return indexErr("the name of resource 0x%08x runs past the end of the id table", id)
			}
			if !fn(typ, id, info, b[q:q+int(nl)]) {
				return nil
			}
			q += int(nl)
		}
		p = q
	}
	return nil
}

// valuesV2 reads the info at off of resource id and returns its values, one per configuration
// the index knows.
func (x *resIndex) valuesV2(typ, id, off uint32, name string) ([]resValue, error) {
	b := x.b
	if uint64(off)+resInfoLenV2 > uint64(len(b)) {
		return nil, indexErr("resource 0x%08x points at byte %d, outside the file", id, off)
	}
	p := int(off)
	if got := binary.LittleEndian.Uint32(b[p:]); got != id {
		return nil, indexErr("resource 0x%08x points at the data of resource 0x%08x", id, got)
	}
	n := binary.LittleEndian.Uint32(b[p+8:])
	p += resInfoLenV2
	if uint64(n)*resConfigLenV2 > uint64(len(b)-p) {
		return nil, indexErr("resource 0x%08x declares %d values, more than the file holds", id, n)
	}
	var out []resValue
	for range n {
		cfgID, voff := binary.LittleEndian.Uint32(b[p:]), binary.LittleEndian.Uint32(b[p+4:])
		p += resConfigLenV2
		cfg := x.configByID(cfgID)
		if cfg == nil {
			continue // the resource manager skips values of unknown configurations too
		}
		if uint64(voff) > uint64(len(b)) {
			return nil, indexErr("a value of resource 0x%08x lies at byte %d, outside the file", id, voff)
		}
		value, _, ok := lenPrefixed(b, int(voff))
		if !ok {
			return nil, indexErr("a value of resource 0x%08x runs past the end of the file", id)
		}
		v := resValue{config: cfg, typ: typ, id: id, name: name}
		if !isArrayType(typ) {
			v.value = trimNUL(value)
		}
		out = append(out, v)
		if len(out) == len(x.configs) {
			break // no more configurations to find; a longer list only repeats them
		}
	}
	return out, nil
}

func (x *resIndex) configByID(id uint32) *resConfig {
	for i := range x.configs {
		if x.configs[i].id == id {
			return &x.configs[i]
		}
	}
	return nil
}

// lookup returns the values of the resource of this type with this id, or, when id is 0, the
// one named name; nil when the index has none.
func (x *resIndex) lookup(typ, id uint32, name string) ([]resValue, error) {
	if x == nil {
		return nil, nil
	}
	match := func(t, i uint32, n []byte) bool {
		if id != 0 {
			return t == typ && i == id
		}
		return t == typ && nameIs(n, name)
	}
	if x.v2 {
		var (
			out  []resValue
			ferr error
		)
		err := x.eachV2(func(t, i, info uint32, n []byte) bool {
			if !match(t, i, n) {
				return true
			}
			out, ferr = x.valuesV2(t, i, info, string(n))
			return false
		})
		if err == nil {
			err = ferr
		}
		return out, err
	}
	var out []resValue
	for _, t := range x.idss {
		for k := range t.count {
			p := t.off + k*resIDParamLen
			i, item := binary.LittleEndian.Uint32(x.b[p:]), binary.LittleEndian.Uint32(x.b[p+4:])
			if id != 0 && i != id {
				continue
			}
			t2, value, n, err := x.itemV1(i, item)
			if err != nil {
				return nil, err
			}
			if t2 != typ || (id == 0 && !nameIs(n, name)) {
				continue
			}
			v := resValue{config: &x.configs[t.config], typ: t2, id: i, name: trimNUL(n)}
			if !isArrayType(t2) {
				v.value = trimNUL(value)
			}
			out = append(out, v)
			break // one value per configuration
		}
	}
	return out, nil
}

// text returns the text of a language, script or region qualifier: its letters packed
// into the value, most significant byte first ("en" is 0x656e).
func (p resKeyParam) text() string {
	var s []byte
	for shift := 24; shift >= 0; shift -= 8 {
		if c := byte(p.val >> shift); c != 0 {
			s = append(s, c)
		}
	}
	return string(s)
}

// describe names a configuration as restool's folder names do ("base", "en_US", "dark", "xldpi").
func (c *resConfig) describe() string {
	if c == nil || len(c.params) == 0 {
		return "base"
	}
	var parts []string
	for _, p := range c.params {
		switch p.typ {
		case keyLanguage, keyRegion, 5:
			parts = append(parts, p.text())
		case keyDensity:
			parts = append(parts, densityName(p.val))
		case keyColorMode:
			if p.val == 0 {
				parts = append(parts, "dark")
			} else {
				parts = append(parts, "light")
			}
		}
	}
	return strings.Join(parts, "_")
}

func densityName(dpi uint32) string {
	switch dpi {
	case 120:
		return "sdpi"
	case 160:
		return "mdpi"
	case 240:
		return "ldpi"
	case 320:
		return "xldpi"
	case 480:
		return "xxldpi"
	case 640:
		return "xxxldpi"
	}
	return "dpi"
}

// param returns the value of the configuration's qualifier of this type.
func (c *resConfig) param(typ uint32) (uint32, bool) {
	if c == nil {
		return 0, false
	}
	for _, p := range c.params {
		if p.typ == typ {
			return p.val, true
		}
	}
	return 0, false
}
