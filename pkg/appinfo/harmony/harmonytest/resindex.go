package harmonytest

import (
	"encoding/binary"
	"sort"
)

// Resource types of resources.index used by the builders.
const (
	TypeString  = 9
	TypeColor   = 14
	TypeMedia   = 19
	TypeProfile = 20
)

// IndexConfig is one qualifier folder of a resources.index; the zero value is base.
type IndexConfig struct {
	Language string // "en", "zh"
	Region   string // "US", "CN"
	Density  uint32 // screen density in dpi (120, 160, 240, 320, 480, 640), 0 for none
	Dark     bool   // the dark colour mode
	// RawParams, when set, are written as the qualifiers instead (pairs of type and value).
	RawParams [][2]uint32
}

// IndexValue is the value of a resource in one configuration (an index into Configs).
type IndexValue struct {
	Config int
	Value  string
}

// IndexResource is one resource: its id (0x01000000 upwards), type and name, and its values.
type IndexResource struct {
	ID     uint32
	Type   uint32
	Name   string
	Values []IndexValue
}

// IndexOptions describes a synthetic resources.index.
type IndexOptions struct {
	// V2 writes restool 6's layout ("RestoolV2 6.0.0.001") instead of the legacy one
	// ("Restool 5.008").
	V2 bool
	// Configs are the qualifier folders; nil means base only.
	Configs   []IndexConfig
	Resources []IndexResource
}

// packed returns a qualifier text packed as restool packs it, first letter most significant.
func packed(s string) uint32 {
	var v uint32
	for i := 0; i < len(s) && i < 4; i++ {
		v = v<<8 | uint32(s[i])
	}
	return v
}

func (c IndexConfig) params() [][2]uint32 {
	if c.RawParams != nil {
		return c.RawParams
	}
	var p [][2]uint32
	if c.Language != "" {
		p = append(p, [2]uint32{0, packed(c.Language)})
	}
	if c.Region != "" {
		p = append(p, [2]uint32{1, packed(c.Region)})
	}
	if c.Density != 0 {
		p = append(p, [2]uint32{2, c.Density})
	}
	if c.Dark {
		p = append(p, [2]uint32{6, 0})
	}
	return p
}

type buf []byte

func (b *buf) u16(v uint16)    { *b = binary.LittleEndian.AppendUint16(*b, v) }
func (b *buf) u32(v uint32)    { *b = binary.LittleEndian.AppendUint32(*b, v) }
func (b *buf) str(s string)    { *b = append(*b, s...) }
func (b *buf) at(p int, v int) { binary.LittleEndian.PutUint32((*b)[p:], uint32(v)) }

// BuildResourcesIndex returns a resources.index in the layout restool writes.
func BuildResourcesIndex(o IndexOptions) []byte {
	configs := o.Configs
	if configs == nil {
		configs = []IndexConfig{{}}
	}
	if o.V2 {
		return buildIndexV2(configs, o.Resources)
	}
	return buildIndexV1(configs, o.Resources)
}

func version(b *buf, v string) {
	*b = append(*b, make([]byte, 128)...)
	copy((*b)[len(*b)-128:], v)
}

func buildIndexV1(configs []IndexConfig, res []IndexResource) []byte {
	var b buf
	version(&b, "Restool 5.008")
	b.u32(0) // file size, set last
	b.u32(uint32(len(configs)))
	keyAt := make([]int, len(configs))
	for i, c := range configs {
		b.str("KEYS")
		keyAt[i] = len(b)
		b.u32(0) // id table offset, set below
		p := c.params()
		b.u32(uint32(len(p)))
		for _, kv := range p {
			b.u32(kv[0])
			b.u32(kv[1])
		}
	}
	// One id table per configuration, listing the resources that have a value in it; the
	// items follow all tables.
	type ref struct {
		at  int // where the item offset goes
		res IndexResource
		val string
	}
	var refs []ref
	for i := range configs {
		b.at(keyAt[i], len(b))
		var in []ref
		for _, r := range res {
			for _, v := range r.Values {
				if v.Config == i {
					in = append(in, ref{res: r, val: v.Value})
					break
				}
			}
		}
		b.str("IDSS")
		b.u32(uint32(len(in)))
		for _, r := range in {
			b.u32(r.res.ID)
			r.at = len(b)
			b.u32(0)
			refs = append(refs, r)
		}
	}
	for _, r := range refs {
		b.at(r.at, len(b))
		value, name := r.val+"\x00", r.res.Name+"\x00"
		b.u32(uint32(4 + 4 + 2 + len(value) + 2 + len(name)))
		b.u32(r.res.Type)
		b.u32(r.res.ID)
		b.u16(uint16(len(value)))
		b.str(value)
		b.u16(uint16(len(name)))
		b.str(name)
	}
	b.at(128, len(b))
	return b
}

func buildIndexV2(configs []IndexConfig, res []IndexResource) []byte {
	var b buf
	version(&b, "RestoolV2 6.0.0.001")
	b.u32(0) // file size
	b.u32(uint32(len(configs)))
	b.u32(0) // data block offset
	for i, c := range configs {
		b.str("KEYS")
		b.u32(uint32(i)) // configuration id
		p := c.params()
		b.u32(uint32(len(p)))
		for _, kv := range p {
			b.u32(kv[0])
			b.u32(kv[1])
		}
	}
	// The id table, grouped by type.
	byType := map[uint32][]IndexResource{}
	var types []uint32
	for _, r := range res {
		if _, ok := byType[r.Type]; !ok {
			types = append(types, r.Type)
		}
		byType[r.Type] = append(byType[r.Type], r)
	}
	sort.Slice(types, func(i, j int) bool { return types[i] < types[j] })
	idss := len(b)
	b.str("IDSS")
	b.u32(0) // length, to the data block
	b.u32(uint32(len(types)))
	b.u32(uint32(len(res)))
	infoAt := map[uint32]int{}
	for _, t := range types {
		start := len(b)
		b.u32(t)
		b.u32(0) // length of the block
		b.u32(uint32(len(byType[t])))
		for _, r := range byType[t] {
			b.u32(r.ID)
			infoAt[r.ID] = len(b)
			b.u32(0) // info offset
			b.u32(uint32(len(r.Name)))
			b.str(r.Name)
		}
		b.at(start+4, len(b)-start)
	}
	data := len(b)
	b.at(idss+4, data-idss)
	b.at(128+8, data)
	b.str("DATA")
	b.u32(0)
	b.u32(uint32(len(res)))
	type slot struct {
		at  int
		val string
	}
	var slots []slot
	for _, t := range types {
		for _, r := range byType[t] {
			b.at(infoAt[r.ID], len(b))
			b.u32(r.ID)
			b.u32(uint32(12 + 8*len(r.Values)))
			b.u32(uint32(len(r.Values)))
			for _, v := range r.Values {
				b.u32(uint32(v.Config))
				slots = append(slots, slot{at: len(b), val: v.Value})
				b.u32(0)
			}
		}
	}
	for _, s := range slots {
		b.at(s.at, len(b))
		b.u16(uint16(len(s.val)))
		b.str(s.val)
		b = append(b, 0)
	}
	b.at(data+4, len(b)-data)
	b.at(128, len(b))
	return b
}
