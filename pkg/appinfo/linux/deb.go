package linux

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

// (The package doc, linux.go, lists the fields kept.)

const (
	arMagic     = "!<arch>\n"
	arHeaderLen = 60
	debHeadRead = 4096 // the first read: ar headers and, usually, the control member
	// maxArMembers bounds the members walked before control.tar: dpkg allows only debian-binary
	// and members whose names start with "_" there.
	maxArMembers = 16
	// maxTarEntries bounds the control.tar entries read before ./control (real ones hold a
	// dozen: control, md5sums, conffiles, maintainer scripts, triggers, shlibs, symbols).
	maxTarEntries = 256
)

// debClaim is what a .deb starts with: the ar magic, then the first member's name.
var debClaim = []byte(arMagic + "debian-binary")

func isDebHead(b []byte) bool { return bytes.HasPrefix(b, debClaim) }

// IsDeb reports whether r starts like a Debian package: an ar archive whose first member is
// debian-binary. It reads 21 bytes.
func IsDeb(r io.ReaderAt, size int64) bool { return isDebHead(head(r, size, len(debClaim))) }

// arMember is one member header of an ar archive.
type arMember struct {
	name string
	off  int64 // where the data starts
	size int64
}

// end is where the next member header starts (data is padded to an even size).
func (m arMember) end() int64 { return m.off + m.size + m.size&1 }

// ParseDeb reads a Debian package's control file (see the package doc for the fields). It reads
// the ar member headers and the control member, never data.tar.
func ParseDeb(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	if size < int64(len(arMagic))+arHeaderLen {
		return nil, errs.Invalidf("the .deb is truncated (%d bytes)", size)
	}
	head, err := zipread.ReadFullAt(r, 0, int(min(size, debHeadRead)))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .deb's first bytes are unreadable")
	}
	if !isDebHead(head) {
		return nil, errs.Invalidf("not a Debian package: it does not start with an ar archive holding debian-binary")
	}
	// at returns size bytes at off, from the first read when it holds them.
	at := func(off int64, n int64) ([]byte, error) {
		if off+n <= int64(len(head)) {
			return head[off : off+n], nil
		}
		zipread.Prefetch(r, off, n)
		return zipread.ReadFullAt(r, off, int(n))
	}
	member := func(pos int64) (arMember, error) {
		if pos > size-arHeaderLen {
			return arMember{}, errs.Invalidf("the .deb is truncated: it ends before its control.tar and data.tar members")
		}
		h, err := at(pos, arHeaderLen)
		if err != nil {
			return arMember{}, errs.Wrap(errs.Invalid, err, "the .deb's ar member header at byte %d is unreadable", pos)
		}
		return parseArHeader(h, pos, size)
	}

	m, err := member(int64(len(arMagic)))
	if err != nil {
		return nil, err
	}
	vers, err := at(m.off, min(m.size, 16))
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .deb's debian-binary member is unreadable")
	}
	if !bytes.HasPrefix(vers, []byte("2.")) {
		return nil, errs.Invalidf("the .deb has format %q; Slipway reads format 2.x (debian-binary)", clean(string(bytes.TrimSpace(vers))))
	}
	var control arMember
	for i := 0; control.name == ""; i++ {
		if i == maxArMembers {
			return nil, errs.Invalidf("the .deb has more than %d ar members before control.tar", maxArMembers)
		}
		if m, err = member(m.end()); err != nil {
			return nil, err
		}
		switch {
		case strings.HasPrefix(m.name, "control.tar"):
			control = m
		case strings.HasPrefix(m.name, "_"): // dpkg ignores these (signatures and the like)
		case strings.HasPrefix(m.name, "data.tar"):
			return nil, errs.Invalidf("the .deb has data.tar before control.tar (not a valid Debian package)")
		default:
			return nil, errs.Invalidf("the .deb has an unexpected ar member %q before control.tar", clean(m.name))
		}
	}
	// The data member must be there and whole: a truncated upload is refused here, without
	// reading any of it.
	for i := 0; ; i++ {
		if i == maxArMembers {
			return nil, errs.Invalidf("the .deb has more than %d ar members after control.tar", maxArMembers)
		}
		if m, err = member(m.end()); err != nil {
			return nil, err
		}
		if strings.HasPrefix(m.name, "data.tar") {
			break
		}
		if !strings.HasPrefix(m.name, "_") {
			return nil, errs.Invalidf("the .deb has an unexpected ar member %q before data.tar", clean(m.name))
		}
	}
	if control.size > MaxDebControlBytes {
		return nil, errs.Invalidf("the .deb's %s is %d bytes, over the %d-byte limit", control.name, control.size, MaxDebControlBytes)
	}
	data, err := at(control.off, control.size)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the .deb's %s member is unreadable", control.name)
	}
	controlFile, err := debControlFile(control.name, data)
	if err != nil {
		return nil, err
	}
	return debInfo(parseDeb822(controlFile))
}

// parseArHeader reads a 60-byte ar member header found at pos and checks that the member lies
// within the file.
func parseArHeader(h []byte, pos, size int64) (arMember, error) {
	if string(h[58:60]) != "`\n" {
		return arMember{}, errs.Invalidf("the .deb's ar member header at byte %d is corrupt (truncated or not an ar archive)", pos)
	}
	name := strings.TrimRight(string(h[:16]), " ")
	name = strings.TrimSuffix(name, "/") // GNU ar ends names with "/"
	field := strings.TrimRight(string(h[48:58]), " ")
	n, err := strconv.ParseUint(field, 10, 63)
	if err != nil || field == "" {
		return arMember{}, errs.Invalidf("the .deb's ar member %q has a bad size field %q", clean(name), clean(field))
	}
	off := pos + arHeaderLen
	if n > uint64(size-off) {
		return arMember{}, errs.Invalidf("the .deb is truncated: ar member %q declares %d bytes, but only %d remain", clean(name), n, size-off)
	}
	return arMember{name: name, off: off, size: int64(n)}, nil
}

// debControlFile inflates control.tar[.gz|.xz|.zst] and returns its ./control file.
func debControlFile(member string, data []byte) ([]byte, error) {
	var src io.Reader
	switch ext := strings.TrimPrefix(member, "control.tar"); ext {
	case "":
		src = bytes.NewReader(data)
	case ".gz":
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .deb's %s is not gzip data", member)
		}
		src = zr
	case ".xz":
		xr, err := newXZReader(data, MaxDebControlInflated)
		if err != nil {
			return nil, errs.Wrap(errs.Invalid, err, "the .deb's %s is not valid xz data", member)
		}
		src = xr
	case ".zst":
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxDebControlInflated))
		if err != nil {
			return nil, errs.Wrap(errs.Internal, err, "zstd decoder")
		}
		out, err := d.DecodeAll(data, nil)
		d.Close()
		if err != nil {
			return nil, debInflateErr(member, err)
		}
		src = bytes.NewReader(out)
	default:
		return nil, errs.Invalidf("the .deb's control member %q uses an unsupported compression (Slipway reads control.tar, .gz, .xz and .zst)", clean(member))
	}
	tr := tar.NewReader(&cappedReader{r: src, left: MaxDebControlInflated})
	for i := 0; i < maxTarEntries; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, errs.Invalidf("the .deb's %s holds no control file", member)
		}
		if err != nil {
			return nil, debInflateErr(member, err)
		}
		if path.Clean(strings.TrimPrefix(h.Name, "./")) != "control" {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, errs.Invalidf("the .deb's control file is not a regular file")
		}
		if h.Size > MaxDebControlFile {
			return nil, errs.Invalidf("the .deb's control file is %d bytes, over the %d-byte limit", h.Size, MaxDebControlFile)
		}
		b, err := readCapped(tr, MaxDebControlFile)
		if err != nil {
			return nil, debInflateErr(member, err)
		}
		return b, nil
	}
	return nil, errs.Invalidf("the .deb's %s has more than %d entries before its control file", member, maxTarEntries)
}

func debInflateErr(member string, err error) error {
	if errors.Is(err, errTooBig) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return errs.Invalidf("the .deb's %s inflates to more than %d bytes (or needs a larger window)", member, MaxDebControlInflated)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errs.Wrap(errs.Invalid, err, "the .deb's %s is truncated", member)
	}
	return errs.Wrap(errs.Invalid, err, "the .deb's %s is corrupt", member)
}

// extendedDescription is the key parseDeb822 keeps Description's continuation lines under, one
// per line without their first space (" ." stays "."); maxExtendedDescription bounds them.
const (
	extendedDescription    = "description\n"
	maxExtendedDescription = appinfo.MaxIndexProperty
)

// debIndexFields are the control fields an APT index repeats (pkg/repos/apt), kept as Properties
// under their control-file names, besides those with a place of their own.
var debIndexFields = []string{"Depends", "Pre-Depends", "Recommends", "Suggests", "Enhances", "Breaks", "Conflicts",
	"Replaces", "Provides", "Built-Using", "Section", "Priority", "Homepage", "Installed-Size", "Multi-Arch", "Essential"}

// parseDeb822 reads the first paragraph of a control file: "Field: value" lines, continued by
// lines starting with a space or tab. Field names are matched case-insensitively (kept in their
// canonical case by the caller's lookups); the first occurrence wins.
func parseDeb822(b []byte) map[string]string {
	fields := map[string]string{}
	var key string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.TrimSpace(line) == "":
			if len(fields) > 0 {
				return fields
			}
			key = ""
		case line[0] == ' ' || line[0] == '\t':
			switch key {
			case "":
			case "description": // the extended description: its lines as written (deb-control(5))
				if ext := fields[extendedDescription]; len(ext) < maxExtendedDescription {
					if ext != "" {
						ext += "\n"
					}
					fields[extendedDescription] = ext + strings.TrimRight(line[1:], " \t")
				}
			default:
				fields[key] += " " + strings.TrimSpace(line)
			}
		case line[0] == '#':
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				key = ""
				continue
			}
			key = strings.ToLower(strings.TrimSpace(k))
			if _, dup := fields[key]; dup {
				key = ""
				continue
			}
			fields[key] = strings.TrimSpace(v)
		}
	}
	return fields
}

// debInfo builds an Info from a control file's fields.
func debInfo(f map[string]string) (*appinfo.Info, error) {
	pkg, version := clean(f["package"]), clean(f["version"])
	if pkg == "" {
		return nil, errs.Invalidf("the .deb's control file has no Package field")
	}
	if version == "" {
		return nil, errs.Invalidf("the .deb's control file has no Version field (package %s)", pkg)
	}
	epoch, upstream, revision := splitDebVersion(version)
	info := &appinfo.Info{
		Platform: appinfo.Linux, Format: appinfo.FormatDeb, Device: appinfo.DeviceLinux,
		Name: pkg, BundleID: pkg, ReleaseVersion: upstream, BuildVersion: version,
		Publisher: clean(f["maintainer"]), Description: clean(f["description"]),
	}
	if arch := clean(f["architecture"]); arch != "" {
		info.Architectures = strings.Fields(arch)
	}
	info.SetProperty("Revision", revision)
	info.SetProperty("Epoch", epoch)
	for _, k := range debIndexFields {
		info.SetProperty(k, clean(f[strings.ToLower(k)]))
	}
	if n := info.Properties["Installed-Size"]; n != "" && strings.Trim(n, "0123456789") != "" {
		delete(info.Properties, "Installed-Size") // KiB, digits only; anything else would break the index
	}
	info.SetProperty("Extended-Description", debDescriptionLines(f[extendedDescription], maxExtendedDescription))
	return info, nil
}

// debDescriptionLines is clean for a value of several lines: each line cleaned, the newlines kept, blank
// lines dropped (a paragraph break is written "." in a control file), at most max bytes of whole
// lines.
func debDescriptionLines(s string, max int) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		lead := len(line) - len(strings.TrimLeft(line, " "))
		line = appinfo.CleanText(line, maxTextLen)
		if line == "" {
			continue
		}
		if lead > 0 && lead < 8 {
			line = strings.Repeat(" ", lead) + line // verbatim lines (two spaces) keep their indent
		}
		if b.Len()+len(line)+1 > max {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String()
}

// splitDebVersion splits [epoch:]upstream[-revision] (deb-version(7)).
func splitDebVersion(v string) (epoch, upstream, revision string) {
	upstream = v
	if e, rest, ok := strings.Cut(upstream, ":"); ok && e != "" && strings.Trim(e, "0123456789") == "" {
		epoch, upstream = e, rest
	}
	if i := strings.LastIndexByte(upstream, '-'); i > 0 {
		upstream, revision = upstream[:i], upstream[i+1:]
	}
	return epoch, upstream, revision
}
