package linux

import (
	"bytes"
	"encoding/binary"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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

// RPM header tags the parser uses: the core ones (name, version and what the release page
// shows) and the ones a package repository's index lists (pkg/repos/rpmmd), read when they are
// near enough (rpmExtra).
const (
	rpmTagName        = 1000
	rpmTagVersion     = 1001
	rpmTagRelease     = 1002
	rpmTagEpoch       = 1003
	rpmTagSummary     = 1004
	rpmTagDescription = 1005
	rpmTagBuildTime   = 1006
	rpmTagBuildHost   = 1007
	rpmTagSize        = 1009
	rpmTagVendor      = 1011
	rpmTagLicense     = 1014
	rpmTagPackager    = 1015
	rpmTagGroup       = 1016
	rpmTagURL         = 1020
	rpmTagArch        = 1022
	rpmTagSourceRPM   = 1044
	rpmTagProvideName = 1047
	rpmTagRequireFlag = 1048
	rpmTagRequireName = 1049
	rpmTagRequireVer  = 1050
	rpmTagConflictFlg = 1053
	rpmTagConflictNam = 1054
	rpmTagConflictVer = 1055
	rpmTagObsoleteNam = 1090
	rpmTagProvideFlag = 1112
	rpmTagProvideVer  = 1113
	rpmTagObsoleteFlg = 1114
	rpmTagObsoleteVer = 1115

	rpmSigSize        = 1000 // in the signature header: main header + payload bytes
	rpmSigLongSize    = 270  // the same, 64-bit
	rpmSigPayloadSize = 1007 // in the signature header: the uncompressed payload (cpio archive)
	rpmSigLongArchive = 271  // the same, 64-bit
	rpmSigDSA         = 267  // OpenPGP signatures of the header (DSA, RSA or EdDSA) and of the
	rpmSigRSA         = 268  // header and payload (PGP, GPG)
	rpmSigPGP         = 1002
	rpmSigGPG         = 1005
)

// rpmCoreTags are the tags whose data the parser must read: they sit together at the start of
// the data store (rpm writes the data in tag order); rpmExtraTags are read when they fit
// (rpmExtra), and are left out otherwise.
var (
	rpmCoreTags = []uint32{rpmTagName, rpmTagVersion, rpmTagRelease, rpmTagEpoch, rpmTagSummary, rpmTagVendor,
		rpmTagLicense, rpmTagPackager, rpmTagURL, rpmTagArch}
	rpmExtraTags = []uint32{rpmTagDescription, rpmTagBuildTime, rpmTagBuildHost, rpmTagSize, rpmTagGroup, rpmTagSourceRPM,
		rpmTagProvideName, rpmTagProvideFlag, rpmTagProvideVer, rpmTagRequireName, rpmTagRequireFlag, rpmTagRequireVer,
		rpmTagConflictNam, rpmTagConflictFlg, rpmTagConflictVer, rpmTagObsoleteNam, rpmTagObsoleteFlg, rpmTagObsoleteVer}
)

// The further reads of the extra tags: a tag further than rpmGap past a span gets a read of its
// own, at most rpmMaxReads reads of at most maxRPMSpan bytes each in all. Past them the file
// lists (1027-1043, 1095-1097, 1116-1118) and the changelog (1080-1082) sit, which are never
// read: a package of many files costs up to three more reads of a few KiB each.
const (
	rpmGap      = 64 << 10
	rpmMaxReads = 4
	// maxRPMDeps bounds the dependency entries kept per kind, and maxRPMDepText their text.
	maxRPMDeps    = 128
	maxRPMDepText = 4096
	// maxRPMDescription bounds the full description.
	maxRPMDescription = 4096
)

// RPM header value types.
const (
	rpmInt16       = 3
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
//
// For a package repository's index it also keeps (Info.Properties): the full Description,
// BuildTime, BuildHost, InstalledSize, Group, Packager, Vendor, SourceRPM, ArchiveSize, Signed
// (the signature header carries an OpenPGP signature), HeaderStart and HeaderEnd (the main
// header's byte range in the file, as createrepo computes it) and Provides, Requires, Conflicts
// and Obsoletes (see rpmDeps).
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
	var sig rpmSigFacts
	sigStart := int64(rpmLeadLen + rpmIntroLen)
	if h+rpmIntroLen-sigStart <= maxRPMSigRead {
		b, err := zipread.ReadFullAt(r, sigStart, int(h+rpmIntroLen-sigStart))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .rpm's signature header is unreadable")
		}
		if sig, err = rpmSignature(b[:16*il], b[16*il:16*il+dl], size-h); err != nil {
			return nil, err
		}
		intro = b[len(b)-rpmIntroLen:]
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
	info, err := rpmParseHeader(r, index, h+rpmIntroLen+16*il, dl)
	if err != nil {
		return nil, err
	}
	info.SetProperty("HeaderStart", strconv.FormatInt(h, 10))
	info.SetProperty("HeaderEnd", strconv.FormatInt(h+rpmIntroLen+16*il+dl, 10))
	if sig.archiveSize > 0 {
		info.SetProperty("ArchiveSize", strconv.FormatInt(sig.archiveSize, 10))
	}
	if sig.signed {
		info.SetProperty("Signed", "true")
	}
	return info, nil
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

// rpmSigFacts is what the signature header says beside the sizes checked.
type rpmSigFacts struct {
	archiveSize int64 // the uncompressed payload (0: not recorded)
	signed      bool  // an OpenPGP signature of the header or of header and payload
}

// rpmSignature reads the signature header whose index and data store are given. It compares
// the size it records for the main header and the payload (SIZE, or LONGSIZE past 4 GiB) with
// what the file holds after the signature: a shorter file is a truncated upload.
func rpmSignature(index, store []byte, have int64) (rpmSigFacts, error) {
	var f rpmSigFacts
	checked := false
	for i := 0; i+16 <= len(index); i += 16 {
		tag, typ := binary.BigEndian.Uint32(index[i:]), binary.BigEndian.Uint32(index[i+4:])
		off := int64(binary.BigEndian.Uint32(index[i+8:]))
		var want int64
		switch {
		case tag == rpmSigDSA || tag == rpmSigRSA || tag == rpmSigPGP || tag == rpmSigGPG:
			f.signed = true
			continue
		case tag == rpmSigPayloadSize && typ == rpmInt32 && off <= int64(len(store))-4 && off%4 == 0:
			if f.archiveSize == 0 {
				f.archiveSize = int64(binary.BigEndian.Uint32(store[off:]))
			}
			continue
		case tag == rpmSigLongArchive && typ == rpmInt64 && off <= int64(len(store))-8 && off%8 == 0:
			f.archiveSize = int64(binary.BigEndian.Uint64(store[off:]) & (1<<63 - 1))
			continue
		case checked:
			continue
		case tag == rpmSigSize && typ == rpmInt32 && off <= int64(len(store))-4:
			want = int64(binary.BigEndian.Uint32(store[off:]))
		case tag == rpmSigLongSize && typ == rpmInt64 && off <= int64(len(store))-8:
			want = int64(binary.BigEndian.Uint64(store[off:]) & (1<<63 - 1))
		default:
			continue
		}
		if want > have {
			return f, errs.Invalidf("the .rpm is truncated: its signature header records %d bytes of header and payload, the file holds %d", want, have)
		}
		checked = true
	}
	return f, nil
}

// rpmSpan is one read of the main header's data store: [lo, hi).
type rpmSpan struct {
	lo, hi int64
	data   []byte
}

// rpmParseHeader reads the wanted tags of the main header whose index is given; its data store
// starts at store and holds dl bytes. The core tags are read in one span (an error when they
// spread over more than maxRPMSpan); the extra tags join it, or further spans (rpmGap,
// rpmMaxReads), or are left out.
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
	core := rpmSpan{lo: dl}
	var extras []*rpmEntry
	source := true
	for i := range entries {
		e := &entries[i]
		isCore := slices.Contains(rpmCoreTags, e.tag)
		if e.tag == rpmTagSourceRPM {
			source = false
		}
		if !isCore && !slices.Contains(rpmExtraTags, e.tag) {
			continue
		}
		off := int64(e.off)
		if off >= dl {
			if !isCore {
				continue
			}
			return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d points past its data)", e.tag)
		}
		// The next distinct offset bounds this entry's data.
		j, _ := slices.BinarySearch(offs, off+1)
		e.end = dl
		if j < len(offs) {
			e.end = offs[j]
		}
		if !isCore {
			extras = append(extras, e)
			continue
		}
		e.wanted = true
		core.lo, core.hi = min(core.lo, off), max(core.hi, e.end)
	}
	if core.hi-core.lo > maxRPMSpan {
		return nil, errs.Invalidf("the .rpm's main header spreads its name and version over %d bytes, over the %d-byte limit", core.hi-core.lo, maxRPMSpan)
	}
	spans := rpmPlan(core, extras)
	for i := range spans {
		sp := &spans[i]
		if sp.hi <= sp.lo {
			continue
		}
		zipread.Prefetch(r, store+sp.lo, sp.hi-sp.lo)
		var err error
		if sp.data, err = zipread.ReadFullAt(r, store+sp.lo, int(sp.hi-sp.lo)); err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .rpm's main header data is unreadable")
		}
	}
	value := func(e *rpmEntry) []byte {
		for _, sp := range spans {
			if int64(e.off) >= sp.lo && e.end <= sp.hi {
				return sp.data[int64(e.off)-sp.lo : e.end-sp.lo]
			}
		}
		return nil
	}
	vals := map[uint32]string{}
	arrays := map[uint32][]string{}
	for i := range entries {
		e := &entries[i]
		if !e.wanted {
			continue
		}
		if _, dup := vals[e.tag]; dup {
			continue
		}
		if _, dup := arrays[e.tag]; dup {
			continue
		}
		v := value(e)
		core := slices.Contains(rpmCoreTags, e.tag)
		switch {
		case rpmArrayTag(e.tag):
			if a, ok := rpmArray(e, v); ok {
				arrays[e.tag] = a
			}
			continue
		case e.typ == rpmString || e.typ == rpmStringArray || e.typ == rpmI18NString:
			i := bytes.IndexByte(v, 0)
			if i < 0 || e.count == 0 {
				if !core {
					continue
				}
				return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d is not a terminated string)", e.tag)
			}
			if e.tag == rpmTagDescription {
				vals[e.tag] = cleanLines(string(v[:i]), maxRPMDescription)
			} else {
				vals[e.tag] = clean(string(v[:i]))
			}
		case e.typ == rpmInt32:
			if e.count < 1 || len(v) < 4 || e.off%4 != 0 {
				if !core {
					continue
				}
				return nil, errs.Invalidf("the .rpm's main header is corrupt (tag %d is not a number)", e.tag)
			}
			vals[e.tag] = strconv.FormatUint(uint64(binary.BigEndian.Uint32(v)), 10)
		default:
			if !core {
				continue
			}
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
	for _, p := range []struct {
		key string
		tag uint32
	}{
		{"Description", rpmTagDescription}, {"BuildTime", rpmTagBuildTime}, {"BuildHost", rpmTagBuildHost},
		{"InstalledSize", rpmTagSize}, {"Group", rpmTagGroup}, {"Packager", rpmTagPackager}, {"Vendor", rpmTagVendor},
		{"SourceRPM", rpmTagSourceRPM},
	} {
		info.SetProperty(p.key, vals[p.tag])
	}
	info.SetProperty("Provides", rpmDeps(arrays, rpmTagProvideName, rpmTagProvideFlag, rpmTagProvideVer))
	info.SetProperty("Requires", rpmDeps(arrays, rpmTagRequireName, rpmTagRequireFlag, rpmTagRequireVer))
	info.SetProperty("Conflicts", rpmDeps(arrays, rpmTagConflictNam, rpmTagConflictFlg, rpmTagConflictVer))
	info.SetProperty("Obsoletes", rpmDeps(arrays, rpmTagObsoleteNam, rpmTagObsoleteFlg, rpmTagObsoleteVer))
	return info, nil
}

// rpmPlan returns the spans to read: core, and the extra entries merged into it or into further
// spans; the entries it reaches are marked wanted, those it does not are left out.
func rpmPlan(core rpmSpan, extras []*rpmEntry) []rpmSpan {
	slices.SortFunc(extras, func(a, b *rpmEntry) int { return int(int64(a.off) - int64(b.off)) })
	spans := []rpmSpan{core}
	for _, e := range extras {
		off := int64(e.off)
		placed := false
		for i := range spans {
			sp := &spans[i]
			if sp.hi <= sp.lo { // the empty core span (no core tags)
				if e.end-off <= maxRPMSpan {
					sp.lo, sp.hi, placed = off, e.end, true
				}
				break
			}
			lo, hi := min(sp.lo, off), max(sp.hi, e.end)
			if off <= sp.hi+rpmGap && e.end >= sp.lo-rpmGap && hi-lo <= maxRPMSpan {
				sp.lo, sp.hi, placed = lo, hi, true
				break
			}
		}
		if !placed && len(spans) < rpmMaxReads && e.end-off <= maxRPMSpan {
			spans, placed = append(spans, rpmSpan{lo: off, hi: e.end}), true
		}
		e.wanted = placed
	}
	return spans
}

// rpmArrayTag reports whether tag is one of a dependency's arrays (names, flags, versions).
func rpmArrayTag(tag uint32) bool {
	return tag >= rpmTagProvideName && tag <= rpmTagConflictVer && tag != 1051 && tag != 1052 ||
		tag == rpmTagObsoleteNam || tag >= rpmTagProvideFlag && tag <= rpmTagObsoleteVer
}

// rpmArray reads at most maxRPMDeps values of a string or int32 array entry, as text; a
// malformed one is left out (ok false).
func rpmArray(e *rpmEntry, v []byte) ([]string, bool) {
	n := int(min(e.count, maxRPMDeps))
	out := make([]string, 0, n)
	switch e.typ {
	case rpmInt32:
		if e.off%4 != 0 || int64(len(v)) < 4*int64(n) {
			return nil, false
		}
		for i := range n {
			out = append(out, strconv.FormatUint(uint64(binary.BigEndian.Uint32(v[4*i:])), 10))
		}
	case rpmStringArray, rpmString:
		for range n {
			j := bytes.IndexByte(v, 0)
			if j < 0 {
				return nil, false
			}
			out = append(out, clean(string(v[:j])))
			v = v[j+1:]
		}
	default:
		return nil, false
	}
	return out, true
}

// rpm's dependency flags (rpmds.h): the comparison, and the bits that mark a requirement of a
// scriptlet run before install (createrepo's pre="1").
const (
	rpmSenseLess    = 1 << 1
	rpmSenseGreater = 1 << 2
	rpmSenseEqual   = 1 << 3
	rpmSensePre     = 1<<6 | 1<<9 | 1<<10 // prereq, script_pre, script_post
)

// rpmDeps renders one kind of dependency as "name [op version]" entries, joined by ", " (the
// way rpm -q --requires writes them; op is <, <=, =, >= or >), a requirement of a scriptlet
// marked " [pre]". rpmlib() requirements are left out (createrepo leaves them out of the index:
// they are rpm's own features), and so are entries whose names hold ", "; at most maxRPMDeps
// entries, cut at an entry boundary within maxRPMDepText bytes.
func rpmDeps(arrays map[uint32][]string, nameTag, flagTag, verTag uint32) string {
	names := arrays[nameTag]
	flags, vers := arrays[flagTag], arrays[verTag]
	var b strings.Builder
	for i, n := range names {
		if n == "" || strings.HasPrefix(n, "rpmlib(") || strings.Contains(n, ", ") {
			continue
		}
		entry := n
		var f uint64
		if i < len(flags) {
			f, _ = strconv.ParseUint(flags[i], 10, 32)
		}
		if i < len(vers) && vers[i] != "" && !strings.ContainsAny(vers[i], " ,") {
			op := ""
			switch f & (rpmSenseLess | rpmSenseGreater | rpmSenseEqual) {
			case rpmSenseLess:
				op = "<"
			case rpmSenseLess | rpmSenseEqual:
				op = "<="
			case rpmSenseEqual:
				op = "="
			case rpmSenseGreater | rpmSenseEqual:
				op = ">="
			case rpmSenseGreater:
				op = ">"
			}
			if op != "" {
				entry += " " + op + " " + vers[i]
			}
		}
		if nameTag == rpmTagRequireName && f&rpmSensePre != 0 {
			entry += " [pre]"
		}
		if b.Len()+2+len(entry) > maxRPMDepText {
			break
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(entry)
	}
	return b.String()
}

// cleanLines is clean for a text of several lines: control characters and invalid UTF-8
// dropped except the line breaks (tabs become spaces), trailing spaces of each line and blank
// lines around the text trimmed, at most max bytes (on a rune boundary).
func cleanLines(s string, max int) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = strings.ToValidUTF8(s[:min(len(s), 4*max)], "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case r == utf8.RuneError || unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(l, unicode.IsSpace)
	}
	s = strings.Trim(strings.Join(lines, "\n"), "\n")
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.TrimRightFunc(s, unicode.IsSpace)
}
