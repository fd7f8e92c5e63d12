package linuxtest

import (
	"bytes"
	"encoding/binary"
	"io"
)

// RPM header value types.
const (
	RPMInt16       = 3
	RPMInt32       = 4
	RPMString      = 6
	RPMBin         = 7
	RPMStringArray = 8
	RPMI18NString  = 9
)

// RPMTag is one header entry. Data is the value as stored (strings NUL-terminated); Count
// defaults to 1. Offset, when not zero, is written in the index as is instead of where the
// data landed (a lie).
type RPMTag struct {
	Tag, Type uint32
	Data      []byte
	Count     uint32
	Offset    int32
}

// RPMStr returns a STRING tag.
func RPMStr(tag uint32, s string) RPMTag {
	return RPMTag{Tag: tag, Type: RPMString, Data: append([]byte(s), 0)}
}

// RPMOptions describes an RPM package. Zero values give a small valid binary package.
type RPMOptions struct {
	Name     string // default "demo"
	Version  string // default "1.2.3"
	Release  string // default "1"
	Arch     string // default "x86_64"
	Summary  string // default "Demo package"
	Vendor   string
	Packager string
	License  string // default "MIT"
	URL      string
	Epoch    int // written when > 0
	// Source makes a source package: type 1 in the lead and no SOURCERPM tag.
	Source bool
	// Tags are further main header tags (file lists, or hostile entries for tests).
	Tags []RPMTag
	// Header, when not nil, replaces the whole main header (see RPMHeader).
	Header []byte
	// PayloadBytes is the size of the payload after the headers: pseudo-random bytes, streamed
	// by WriteRPM (the parser never reads it). Default 64.
	PayloadBytes int64
}

// RPM header tags the builders write.
const (
	RPMTagName        = 1000
	RPMTagVersion     = 1001
	RPMTagRelease     = 1002
	RPMTagEpoch       = 1003
	RPMTagSummary     = 1004
	RPMTagDescription = 1005
	RPMTagBuildTime   = 1006
	RPMTagVendor      = 1011
	RPMTagLicense     = 1014
	RPMTagPackager    = 1015
	RPMTagGroup       = 1016
	RPMTagURL         = 1020
	RPMTagOS          = 1021
	RPMTagArch        = 1022
	RPMTagFileSizes   = 1028
	RPMTagSourceRPM   = 1044
	RPMTagDirNames    = 1118
)

// RPMHeader returns a header structure: the intro (magic, reserved, index count, data size),
// the index and the data store, each value aligned as rpm aligns it.
func RPMHeader(tags []RPMTag) []byte {
	var store bytes.Buffer
	index := make([]byte, 0, 16*len(tags))
	for _, t := range tags {
		align := map[uint32]int{RPMInt16: 2, RPMInt32: 4, 5: 8}[t.Type]
		for align > 0 && store.Len()%align != 0 {
			store.WriteByte(0)
		}
		off := int32(store.Len())
		if t.Offset != 0 {
			off = t.Offset
		}
		count := t.Count
		if count == 0 {
			count = 1
		}
		index = binary.BigEndian.AppendUint32(index, t.Tag)
		index = binary.BigEndian.AppendUint32(index, t.Type)
		index = binary.BigEndian.AppendUint32(index, uint32(off))
		index = binary.BigEndian.AppendUint32(index, count)
		store.Write(t.Data)
	}
	out := []byte{0x8e, 0xad, 0xe8, 0x01, 0, 0, 0, 0}
	out = binary.BigEndian.AppendUint32(out, uint32(len(tags)))
	out = binary.BigEndian.AppendUint32(out, uint32(store.Len()))
	out = append(out, index...)
	return append(out, store.Bytes()...)
}

// RPMRegionHeader is RPMHeader with the region tag rpm 4 puts first (region is 62,
// HEADERSIGNATURES, for a signature header; 63, HEADERIMMUTABLE, for a main header): an index
// entry pointing at a 16-byte trailer at the end of the data store, which holds the same tag
// with the negated size of the index.
func RPMRegionHeader(region uint32, tags []RPMTag) []byte {
	n := len(tags) + 1
	storeLen := len(RPMHeader(tags)) - 16 - 16*len(tags)
	trailer := binary.BigEndian.AppendUint32(nil, region)
	trailer = binary.BigEndian.AppendUint32(trailer, RPMBin)
	trailer = binary.BigEndian.AppendUint32(trailer, uint32(int32(-16*n)))
	trailer = binary.BigEndian.AppendUint32(trailer, 16)
	all := append([]RPMTag{{Tag: region, Type: RPMBin, Count: 16, Offset: int32(storeLen)}}, tags...)
	all = append(all, RPMTag{Tag: 0xffffffff, Data: trailer})
	h := RPMHeader(all)
	// Drop the placeholder entry that carried the trailer's bytes: the trailer belongs to no
	// index entry of its own.
	out := append([]byte(nil), h[:16+16*len(all)-16]...)
	out = append(out, h[16+16*len(all):]...)
	binary.BigEndian.PutUint32(out[8:], uint32(n))
	return out
}

// RPMLead returns the 96-byte lead of a binary (or source) package named name.
func RPMLead(name string, source bool) []byte {
	lead := make([]byte, 96)
	copy(lead, []byte{0xed, 0xab, 0xee, 0xdb, 3, 0})
	if source {
		lead[7] = 1
	}
	binary.BigEndian.PutUint16(lead[8:], 1) // archnum
	copy(lead[10:75], name)
	binary.BigEndian.PutUint16(lead[76:], 1) // osnum
	binary.BigEndian.PutUint16(lead[78:], 5) // header-style signature
	return lead
}

// RPMMainTags returns the main header tags o describes, in rpm's order (by tag number).
func RPMMainTags(o RPMOptions) []RPMTag {
	name, version, release := or(o.Name, "demo"), or(o.Version, "1.2.3"), or(o.Release, "1")
	i18n := func(tag uint32, s string) RPMTag {
		return RPMTag{Tag: tag, Type: RPMI18NString, Data: append([]byte(s), 0)}
	}
	tags := []RPMTag{
		{Tag: 100, Type: RPMStringArray, Data: []byte("C\x00")}, // HEADERI18NTABLE
		RPMStr(RPMTagName, name), RPMStr(RPMTagVersion, version), RPMStr(RPMTagRelease, release),
	}
	if o.Epoch > 0 {
		tags = append(tags, RPMTag{Tag: RPMTagEpoch, Type: RPMInt32, Data: binary.BigEndian.AppendUint32(nil, uint32(o.Epoch))})
	}
	tags = append(tags, i18n(RPMTagSummary, or(o.Summary, "Demo package")),
		i18n(RPMTagDescription, "A demo package built in code."),
		RPMTag{Tag: RPMTagBuildTime, Type: RPMInt32, Data: binary.BigEndian.AppendUint32(nil, 1700000000)})
	if o.Vendor != "" {
		tags = append(tags, RPMStr(RPMTagVendor, o.Vendor))
	}
	tags = append(tags, RPMStr(RPMTagLicense, or(o.License, "MIT")))
	if o.Packager != "" {
		tags = append(tags, RPMStr(RPMTagPackager, o.Packager))
	}
	tags = append(tags, i18n(RPMTagGroup, "Unspecified"))
	if o.URL != "" {
		tags = append(tags, RPMStr(RPMTagURL, o.URL))
	}
	tags = append(tags, RPMStr(RPMTagOS, "linux"), RPMStr(RPMTagArch, or(o.Arch, "x86_64")),
		RPMTag{Tag: RPMTagFileSizes, Type: RPMInt32, Data: binary.BigEndian.AppendUint32(nil, 21)})
	if !o.Source {
		tags = append(tags, RPMStr(RPMTagSourceRPM, name+"-"+version+"-"+release+".src.rpm"))
	}
	tags = append(tags, RPMTag{Tag: RPMTagDirNames, Type: RPMStringArray, Data: []byte("/usr/bin/\x00")})
	return append(tags, o.Tags...)
}

// BuildRPM returns the RPM package o describes.
func BuildRPM(o RPMOptions) []byte {
	var b bytes.Buffer
	if _, err := WriteRPM(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteRPM streams the RPM package o describes to w and returns its size: the lead, a
// signature header (SIZE and PAYLOADSIZE tags, padded to 8 bytes as rpm pads it), the main
// header and the payload.
func WriteRPM(w io.Writer, o RPMOptions) (int64, error) {
	main := o.Header
	if main == nil {
		main = RPMRegionHeader(63, RPMMainTags(o))
	}
	payload := o.PayloadBytes
	if payload == 0 {
		payload = 64
	}
	sig := RPMRegionHeader(62, []RPMTag{
		{Tag: 1000, Type: RPMInt32, Data: binary.BigEndian.AppendUint32(nil, uint32(int64(len(main))+payload))}, // SIZE
		{Tag: 1007, Type: RPMInt32, Data: binary.BigEndian.AppendUint32(nil, uint32(payload))},                  // PAYLOADSIZE
	})
	sig = append(sig, make([]byte, (8-len(sig)%8)%8)...)
	cw := &countWriter{w: w}
	cw.Write(RPMLead(or(o.Name, "demo")+"-"+or(o.Version, "1.2.3")+"-"+or(o.Release, "1"), o.Source))
	cw.Write(sig)
	cw.Write(main)
	if _, err := io.Copy(cw, Filler(payload, 2)); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}
