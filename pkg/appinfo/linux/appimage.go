package linux

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image/png"
	"io"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
)

const (
	elfHeadRead = 64 // an ELF64 header; an ELF32 one is 52 bytes
	shtNobits   = 8  // a section that takes no room in the file (.bss)
	// maxSectionHeader bounds e_shentsize (64 for ELF64, 40 for ELF32).
	maxSectionHeader = 1024
	// maxIconSide bounds an icon's width and height (hicolor themes stop at 512; a larger
	// declared size is a decompression bomb for whoever decodes it).
	maxIconSide = 4096
)

// ELF machines (e_machine), as AppImage file names spell the architectures.
var elfMachines = map[uint16]string{
	0x03: "i686",
	0x28: "armhf",
	0x3e: "x86_64",
	0xb7: "aarch64",
}

// isAppImageHead reports an ELF file with the AppImage magic of the given type at offset 8.
func isAppImageHead(b []byte, typ byte) bool {
	return len(b) >= 11 && string(b[:4]) == "\x7fELF" && b[8] == 'A' && b[9] == 'I' && b[10] == typ
}

// IsAppImage reports whether r is a type 2 AppImage: an ELF file with "AI\x02" at offset 8.
// It reads 11 bytes.
func IsAppImage(r io.ReaderAt, size int64) bool { return isAppImageHead(head(r, size, 11), 2) }

// ParseAppImage reads a type 2 AppImage's desktop entry and icon (see the package doc for the
// fields): the ELF header, the squashfs superblock where the ELF ends, then the root directory
// and the few files it needs from the squashfs image.
func ParseAppImage(r io.ReaderAt, size int64) (*appinfo.Info, error) {
	if size < elfHeadRead {
		return nil, errs.Invalidf("the AppImage is truncated (%d bytes)", size)
	}
	eh, err := zipread.ReadFullAt(r, 0, elfHeadRead)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the AppImage's ELF header is unreadable")
	}
	if !isAppImageHead(eh, 2) {
		return nil, errs.Invalidf("not a type 2 AppImage (no ELF header with \"AI\\x02\" at byte 8)")
	}
	base, sb, err := appImageOffset(r, size, eh)
	if err != nil {
		return nil, err
	}
	fs, err := parseSuperblock(r, base, size, sb)
	if err != nil {
		return nil, squashInvalid(err, "the AppImage's squashfs image")
	}
	defer fs.close()

	info := &appinfo.Info{Platform: appinfo.Linux, Format: appinfo.FormatAppImage, Device: appinfo.DeviceLinux}
	order := binary.ByteOrder(binary.LittleEndian)
	if eh[5] == 2 {
		order = binary.BigEndian
	}
	if arch := elfMachines[order.Uint16(eh[18:])]; arch != "" {
		info.Architectures = []string{arch}
	}

	root, _, err := fs.lookup("", 0)
	if err != nil {
		return nil, squashInvalid(err, "the AppImage's root directory")
	}
	var desktopName string
	err = fs.walkDir(root, func(name []byte, _ uint64, typ uint16) bool {
		if bytes.HasSuffix(name, []byte(".desktop")) && len(name) > len(".desktop") && (typ == sqFileType || typ == sqSymlinkType) {
			desktopName = string(name)
			return false
		}
		return true
	})
	if err != nil {
		return nil, squashInvalid(err, "the AppImage's root directory")
	}
	if desktopName == "" {
		return nil, errs.Invalidf("the AppImage has no .desktop file at the root of its image (AppImages must have one)")
	}
	in, _, err := fs.lookup(desktopName, MaxDesktopFileBytes)
	if err != nil {
		return nil, squashInvalid(err, "the AppImage's "+clean(desktopName))
	}
	if in.kind != sqFileType {
		return nil, errs.Invalidf("the AppImage's %s is not a file", clean(desktopName))
	}
	if in.size > MaxDesktopFileBytes {
		return nil, errs.Invalidf("the AppImage's %s is %d bytes, over the %d-byte limit", clean(desktopName), in.size, MaxDesktopFileBytes)
	}
	data, err := fs.readFile(in)
	if err != nil {
		return nil, squashInvalid(err, "the AppImage's "+clean(desktopName))
	}
	d := parseDesktopEntry(data)
	if info.BundleID = clean(strings.TrimSuffix(desktopName, ".desktop")); info.BundleID == "" {
		return nil, errs.Invalidf("the AppImage's desktop file has an unusable name %q", desktopName)
	}
	info.Name = clean(d["Name"])
	if info.Name == "" {
		info.Name = info.BundleID
	}
	info.ReleaseVersion = clean(d["X-AppImage-Version"])
	info.BuildVersion = info.ReleaseVersion
	info.Description = clean(d["Comment"])
	info.SetProperty("Categories", clean(strings.TrimSuffix(strings.TrimSpace(d["Categories"]), ";")))
	info.Icon = appImageIcon(fs, strings.TrimSpace(d["Icon"]))
	return info, nil
}

// appImageOffset finds where the squashfs image starts: where the ELF ends, computed as the
// AppImage runtime does (the end of the section header table, or of the last section's data if
// that is further), and returns it with the superblock found there. It reads the last section
// header and the superblock after it in one read.
func appImageOffset(r io.ReaderAt, size int64, eh []byte) (int64, []byte, error) {
	var shoff, shentsize, shnum uint64
	order := binary.ByteOrder(binary.LittleEndian)
	switch {
	case eh[5] == 2:
		order = binary.BigEndian
	case eh[5] != 1:
		return 0, nil, errs.Invalidf("the AppImage's ELF header has an unknown byte order (%d)", eh[5])
	}
	switch eh[4] {
	case 2: // ELF64
		shoff, shentsize, shnum = order.Uint64(eh[0x28:]), uint64(order.Uint16(eh[0x3a:])), uint64(order.Uint16(eh[0x3c:]))
	case 1: // ELF32
		shoff, shentsize, shnum = uint64(order.Uint32(eh[0x20:])), uint64(order.Uint16(eh[0x2e:])), uint64(order.Uint16(eh[0x30:]))
	default:
		return 0, nil, errs.Invalidf("the AppImage's ELF header has an unknown class (%d)", eh[4])
	}
	minEnt := uint64(40)
	if eh[4] == 2 {
		minEnt = 64
	}
	if shnum == 0 || shentsize < minEnt || shentsize > maxSectionHeader || shoff > uint64(size) {
		return 0, nil, errs.Invalidf("the AppImage's runtime has no valid section header table, so its squashfs image cannot be found")
	}
	shtEnd := shoff + shentsize*shnum // no overflow: each term is bounded above
	if shtEnd > uint64(size-sqSuperLen) {
		return 0, nil, errs.Invalidf("the AppImage is truncated: its runtime's section headers end at byte %d, leaving no room for the squashfs image", shtEnd)
	}
	b, err := zipread.ReadFullAt(r, int64(shtEnd-shentsize), int(shentsize+sqSuperLen))
	if err != nil {
		return 0, nil, errs.Wrap(errs.Invalid, err, "the AppImage's section headers are unreadable")
	}
	candidates := []uint64{shtEnd}
	var typ uint32 = order.Uint32(b[4:])
	var secEnd uint64
	if eh[4] == 2 {
		secEnd = order.Uint64(b[24:]) + order.Uint64(b[32:])
	} else {
		secEnd = uint64(order.Uint32(b[16:])) + uint64(order.Uint32(b[20:]))
	}
	if typ != shtNobits && secEnd > shtEnd && secEnd <= uint64(size-sqSuperLen) {
		candidates = []uint64{secEnd, shtEnd}
	}
	for _, c := range candidates {
		sb := b[shentsize:]
		if c != shtEnd {
			if sb, err = zipread.ReadFullAt(r, int64(c), sqSuperLen); err != nil {
				continue
			}
		}
		if binary.LittleEndian.Uint32(sb) == sqMagic {
			return int64(c), sb, nil
		}
	}
	return 0, nil, errs.Invalidf("the AppImage has no squashfs image where its runtime ends (byte %d)", candidates[0])
}

// squashInvalid turns a squashfs reading error into an errs.Invalid error about what.
func squashInvalid(err error, what string) error {
	var se *errSquash
	switch {
	case errors.As(err, &se):
		return errs.Invalidf("%s cannot be read: %s", what, se.msg)
	case errors.Is(err, errNotFound):
		return errs.Invalidf("%s is missing", what)
	}
	return errs.Wrap(errs.Invalid, err, "%s cannot be read", what)
}

// parseDesktopEntry returns the keys of the [Desktop Entry] group of a desktop file
// (specifications.freedesktop.org/desktop-entry-spec), without localized variants (Name[de]).
func parseDesktopEntry(b []byte) map[string]string {
	out := map[string]string{}
	in := false
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#':
		case line[0] == '[':
			if in { // the group ended
				return out
			}
			in = line == "[Desktop Entry]"
		case in:
			k, v, ok := strings.Cut(line, "=")
			k = strings.TrimSpace(k)
			if !ok || strings.Contains(k, "[") {
				continue
			}
			if _, dup := out[k]; !dup {
				out[k] = desktopUnescape(strings.TrimSpace(v))
			}
		}
	}
	return out
}

// desktopUnescape decodes the escapes of a desktop entry string value.
func desktopUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\s`, " ", `\n`, " ", `\t`, " ", `\r`, "", `\\`, `\`).Replace(s)
}

// appImageIcon returns the root <icon>.png, else .DirIcon, following symbolic links inside the
// image; nil when neither is a readable PNG. Problems with the icon cost the icon, not the
// upload. Icons over maxIconSide pixels a side are skipped.
func appImageIcon(fs *squashFS, name string) *appinfo.Icon {
	var candidates []string
	if name != "" && !strings.Contains(name, "/") {
		if !strings.HasSuffix(name, ".png") {
			name += ".png"
		}
		candidates = append(candidates, name)
	}
	candidates = append(candidates, ".DirIcon")
	for _, c := range candidates {
		in, _, err := fs.lookup(c, appinfo.MaxIconBytes)
		if err != nil || in.kind != sqFileType || in.size > appinfo.MaxIconBytes {
			continue
		}
		data, err := fs.readFile(in)
		if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
			continue
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxIconSide || cfg.Height > maxIconSide {
			continue
		}
		return &appinfo.Icon{Data: data, ContentType: "image/png", Width: cfg.Width, Height: cfg.Height}
	}
	return nil
}
