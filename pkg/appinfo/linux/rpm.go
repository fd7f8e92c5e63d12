package linux

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strconv"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// An RPM package: a 96-byte lead (magic ED AB EE DB), the signature header padded to 8 bytes,
// the main header, the payload. A header is an intro (magic 8E AD E8 01, 4 reserved bytes, the
// index entry count and the data store size, big-endian), the index (16 bytes per entry: tag,
// type, offset into the data store, count) and the data store.

const (
	rpmLeadLen  = 96
	rpmIntroLen = 16
	// maxRPMIndex and maxRPMData are rpm's own limits on a header (tags below 2^16, data below
	// 256 MiB); both are also checked against the file.
	maxRPMIndex = 0xffff
	maxRPMData  = 256 << 20
	// maxRPMSigRead bounds the signature header read whole (with the main header's intro).
	maxRPMSigRead = 256 << 10
	// maxRPMSpan bounds the part of the data store read: the tags used sit together near its
	// start (a few KiB, descriptions included).
	maxRPMSpan = 4 << 20
)

// RPM header tags the parser uses.
const (
	rpmTagName      = 1000
	rpmTagVersion   = 1001
	rpmTagRelease   = 1002
	rpmTagEpoch     = 1003
	rpmTagSummary   = 1004
	rpmTagVendor    = 1011
	rpmTagLicense   = 1014
	rpmTagPackager  = 1015
	rpmTagURL       = 1020
	rpmTagArch      = 1022
	rpmTagSourceRPM = 1044

	rpmSigSize     = 1000 // in the signature header: main header + payload bytes
	rpmSigLongSize = 270  // the same, 64-bit
)

// RPM header value types.
const (
	rpmInt32       = 4
	rpmInt64       = 5
	rpmString      = 6
	rpmStringArray = 8
	rpmI18NString  = 9
)

var (
	rpmLeadMagic   = []byte{0xed, 0xab, 0xee, 0xdb}
	rpmHeaderMagic = []byte{0x8e, 0xad, 0xe8, 0x01}
)

func isRPMHead(b []byte) bool { return bytes.HasPrefix(b, rpmLeadMagic) }

// IsRPM reports whether r starts with an RPM lead. It reads 4 bytes.
func IsRPM(r io.ReaderAt, size int64) bool { return isRPMHead(head(r, size, 4)) }

// rpmEntry is one index entry of a header.
type rpmEntry struct {
	tag, typ   uint32
	off, count uint32
	end        int64 // where its data may end: the next entry's offset, or the data store's end
	wanted     bool
}

// ParseRPM reads an RPM package's main header (see the package doc for the fields). It reads
// the lead, the signature header's intro, the main header's intro and index and the part of
// its data store holding the tags it uses; never the payload.
func ParseRPM(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	if size < rpmLeadLen+rpmIntroLen {
		return nil, errs.Invalidf("the .rpm is truncated (%d bytes)", size)
	}
	lead, err := zipread.ReadFullAt(r, 0, rpmLeadLen+rpmIntroLen)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .rpm's lead is unreadable")
	}
	if !isRPMHead(lead) {
		return nil, errs.Invalidf("not an RPM package (no lead magic)")
	}
	if lead[4] < 3 {
		return nil, errs.Invalidf("the .rpm has format version %d; Slipway reads version 3 and later", lead[4])
	}
	if sigType := binary.BigEndian.Uint16(lead[78:]); sigType != 5 {
		return nil, errs.Invalidf("the .rpm has an old signature type (%d); Slipway reads packages of rpm 4 and later", sigType)
	}
	il, dl, err := rpmIntro(lead[rpmLeadLen:], "signature", rpmLeadLen, size)
	if err != nil {
		return nil, err
	}
	sigLen := rpmIntroLen + 16*il + dl
	h := int64(rpmLeadLen) + sigLen + (8-sigLen%8)%8
	if h > size-rpmIntroLen {
		return nil, errs.Invalidf("the .rpm is truncated: it ends before its main header")
	}
	// The signature header is small (digests, a signature, reserved space): read it with the
	// main header's intro in one read, and check the package's size it records. A larger one
	// (IMA file signatures) is not read, and the size is not checked.
	var intro []byte
	sigStart := int64(rpmLeadLen + rpmIntroLen)
	if h+rpmIntroLen-sigStart <= maxRPMSigRead {
		sig, err := zipread.ReadFullAt(r, sigStart, int(h+rpmIntroLen-sigStart))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .rpm's signature header is unreadable")
		}
		if err := rpmCheckSize(sig[:16*il], sig[16*il:16*il+dl], size-h); err != nil {
			return nil, err
		}
		intro = sig[len(sig)-rpmIntroLen:]
	} else if intro, err = zipread.ReadFullAt(r, h, rpmIntroLen); err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .rpm's main header is unreadable")
	}
	if il, dl, err = rpmIntro(intro, "main", h, size); err != nil {
		return nil, err
	}
	if il == 0 {
		return nil, errs.Invalidf("the .rpm's main header is empty")
	}
	zipread.Prefetch(r, h+rpmIntroLen, 16*il)
	index, err := zipread.ReadFullAt(r, h+rpmIntroLen, int(16*il))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .rpm's main header index is unreadable")
	}
	return rpmParseHeader(r, index, h+rpmIntroLen+16*il, dl)
}

// rpmIntro checks a header intro found at off and returns its entry count and data size, both
// checked against rpm's limits and against the bytes left in the file.
func rpmIntro(b []byte, which string, off, size int64) (il, dl int64, err error) {
	if !bytes.Equal(b[:4], rpmHeaderMagic) {
		return 0, 0, errs.Invalidf("the .rpm's %s header is corrupt (no header magic at byte %d)", which, off)
	}
	il, dl = int64(binary.BigEndian.Uint32(b[8:])), int64(binary.BigEndian.Uint32(b[12:]))
	switch {
	case il > maxRPMIndex:
		return 0, 0, errs.Invalidf("the .rpm's %s header declares %d tags, over rpm's limit of %d", which, il, maxRPMIndex)
	case dl > maxRPMData:
		return 0, 0, errs.Invalidf("the .rpm's %s header declares %d bytes of data, over rpm's limit of %d", which, dl, maxRPMData)
	case rpmIntroLen+16*il+dl > size-off:
		return 0, 0, errs.Invalidf("the .rpm is truncated: its %s header declares %d tags and %d bytes, past the end of the file", which, il, dl)
	}
	return il, dl, nil
}

// rpmCheckSize compares the size the signature header records for the main header and the
// payload (SIZE, or LONGSIZE past 4 GiB) with what the file holds after the signature: a
// shorter file is a truncated upload.
func rpmCheckSize(index, store []byte, have int64) error {
	for i := 0; i+16 <= len(index); i += 16 {
		tag, typ := binary.BigEndian.Uint32(index[i:]), binary.BigEndian.Uint32(index[i+4:])
		off := int64(binary.BigEndian.Uint32(index[i+8:]))
		var want int64
		switch {
		case tag == rpmSigSize && typ == rpmInt32 && off <= int64(len(store))-4:
			want = int64(binary.BigEndian.Uint32(store[off:]))
		case tag == rpmSigLongSize && typ == rpmInt64 && off <= int64(len(store))-8:
			want = int64(binary.BigEndian.Uint64(store[off:]) & (1<<63 - 1))
		default:
			continue
		}
		if want > have {
			return errs.Invalidf("the .rpm is truncated: its signature header records %d bytes of header and payload, the file holds %d", want, have)
		}
		return nil
	}
	return nil
}

// rpmParseHeader reads the wanted tags of the main header whose index is given; its data store
// starts at store and holds dl bytes.
func rpmParseHeader(r io.ReaderAt, index []byte, store, dl int64) (*appinfo.Info, error) {
	entries := make([]rpmEntry, len(index)/16)
	offs := make([]int64, 0, len(entries)+1)
	for i := range entries {
		e := index[16*i:]
		entries[i] = rpmEntry{tag: binary.BigEndian.Uint32(e), typ: binary.BigEndian.Uint32(e[4:]),
			off: binary.BigEndian.Uint32(e[8:]), count: binary.BigEndian.Uint32(e[12:])}
		offs = append(offs, int64(entries[i].off))
	}
	offs = append(offs, dl)
	slices.Sort(offs)
	var lo, hi int64 = dl, 0
	var source = true
	for i := range entries {
		e := &entries[i]
		switch e.tag {
		case rpmTagSourceRPM:
			source = false
			continue
		case rpmTagName, rpmTagVersion, rpmTagRelease, rpmTagEpoch, rpmTagSummary, rpmTagVendor,
			rpmTagLicense, rpmTagPackager, rpmTagURL, rpmTagArch:
		default:
			continue
		}
		off := int64(e.off)
		if off >= dl {
			return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d points past its data)", e.tag)
		}
		// The next distinct offset bounds this entry's data.
		j, _ := slices.BinarySearch(offs, off+1)
		e.end = dl
		if j < len(offs) {
			e.end = offs[j]
		}
		e.wanted = true
		lo, hi = min(lo, off), max(hi, e.end)
	}
	var data []byte
	if hi > lo {
		if hi-lo > maxRPMSpan {
			return nil, errs.Invalidf("the .rpm's main header spreads its name and version over %d bytes, over the %d-byte limit", hi-lo, maxRPMSpan)
		}
		zipread.Prefetch(r, store+lo, hi-lo)
		var err error
		if data, err = zipread.ReadFullAt(r, store+lo, int(hi-lo)); err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .rpm's main header data is unreadable")
		}
	}
	vals := map[uint32]string{}
	for _, e := range entries {
		if !e.wanted {
			continue
		}
		if _, dup := vals[e.tag]; dup {
			continue
		}
		v := data[int64(e.off)-lo : e.end-lo]
		switch e.typ {
		case rpmString, rpmStringArray, rpmI18NString:
			i := bytes.IndexByte(v, 0)
			if i < 0 || e.count == 0 {
				return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d is not a terminated string)", e.tag)
			}
			vals[e.tag] = clean(string(v[:i]))
		case rpmInt32:
			if e.count < 1 || len(v) < 4 || e.off%4 != 0 {
				return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d is not a number)", e.tag)
			}
			vals[e.tag] = strconv.FormatUint(uint64(binary.BigEndian.Uint32(v)), 10)
		default:
			return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d has type %d)", e.tag, e.typ)
		}
	}
	name, version, release := vals[rpmTagName], vals[rpmTagVersion], vals[rpmTagRelease]
	if name == "" {
		return nil, errs.Invalidf("the .rpm's header has no Name")
	}
	if version == "" {
		return nil, errs.Invalidf("the .rpm's header has no Version (package %s)", name)
	}
	info := &appinfo.Info{
		Platform: appinfo.Linux, Format: appinfo.FormatRPM, Device: appinfo.DeviceLinux,
		Name: name, BundleID: name, ReleaseVersion: version, BuildVersion: version,
		Description: vals[rpmTagSummary], Publisher: vals[rpmTagVendor],
	}
	if release != "" {
		info.BuildVersion = version + "-" + release
	}
	if info.Publisher == "" {
		info.Publisher = vals[rpmTagPackager]
	}
	if arch := vals[rpmTagArch]; arch != "" {
		info.Architectures = []string{arch}
	}
	info.SetProperty("Release", release)
	info.SetProperty("Epoch", vals[rpmTagEpoch])
	info.SetProperty("License", vals[rpmTagLicense])
	info.SetProperty("URL", vals[rpmTagURL])
	if source {
		info.SetProperty("SourcePackage", "true")
	}
	return info, nil
}
