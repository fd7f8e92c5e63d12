package linuxtest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// ELF machines (e_machine) for RuntimeOptions.Machine.
const (
	MachineI386    = 0x03
	MachineARM     = 0x28
	MachineX86_64  = 0x3e
	MachineAArch64 = 0xb7
)

// RuntimeOptions describes the stand-in AppImage runtime: an ELF header with the AppImage
// magic, CodeBytes of filler as its one section, and the section header table last (as gcc and
// the real runtime lay it out).
type RuntimeOptions struct {
	Machine uint16 // default MachineX86_64
	ELF32   bool
	// Type is the AppImage type written at offset 8 (default 2).
	Type byte
	// CodeBytes is the size of the one section's data (default 4096).
	CodeBytes int
	// TrailingSection adds a section whose data (that many bytes) lies after the section
	// header table, so the ELF ends after it rather than at the table.
	TrailingSection int
}

// Runtime returns the runtime o describes; the squashfs image goes right after it.
func Runtime(o RuntimeOptions) []byte {
	machine := o.Machine
	if machine == 0 {
		machine = MachineX86_64
	}
	code := o.CodeBytes
	if code == 0 {
		code = 4096
	}
	typ := o.Type
	if typ == 0 {
		typ = 2
	}
	ehsize, shentsize := 64, 64
	if o.ELF32 {
		ehsize, shentsize = 52, 40
	}
	type section struct {
		typ       uint32
		off, size uint64
	}
	sections := []section{{}, {typ: 1, off: uint64(ehsize), size: uint64(code)}} // null, PROGBITS
	shoff := ehsize + code
	nsec := len(sections)
	if o.TrailingSection > 0 {
		nsec++
		sections = append(sections, section{typ: 1, off: uint64(shoff + nsec*shentsize), size: uint64(o.TrailingSection)})
	}
	b := make([]byte, shoff+nsec*shentsize+o.TrailingSection)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // 64-bit, little-endian, version 1
	if o.ELF32 {
		b[4] = 1
	}
	b[8], b[9], b[10] = 'A', 'I', typ
	le := binary.LittleEndian
	le.PutUint16(b[16:], 2) // ET_EXEC
	le.PutUint16(b[18:], machine)
	le.PutUint32(b[20:], 1)
	if o.ELF32 {
		le.PutUint32(b[0x20:], uint32(shoff))
		le.PutUint16(b[0x28:], uint16(ehsize))
		le.PutUint16(b[0x2e:], uint16(shentsize))
		le.PutUint16(b[0x30:], uint16(nsec))
	} else {
		le.PutUint64(b[0x28:], uint64(shoff))
		le.PutUint16(b[0x34:], uint16(ehsize))
		le.PutUint16(b[0x3a:], uint16(shentsize))
		le.PutUint16(b[0x3c:], uint16(nsec))
	}
	for i := ehsize; i < ehsize+code; i++ {
		b[i] = 0x90 // filler "code"
	}
	for i, s := range sections {
		h := b[shoff+i*shentsize:]
		le.PutUint32(h[4:], s.typ)
		if o.ELF32 {
			le.PutUint32(h[16:], uint32(s.off))
			le.PutUint32(h[20:], uint32(s.size))
		} else {
			le.PutUint64(h[24:], s.off)
			le.PutUint64(h[32:], s.size)
		}
	}
	return b
}

// AppImageOptions describes a type 2 AppImage. Zero values give a small valid one: demo.desktop
// (Name "Demo", X-AppImage-Version 1.2.3), a 64×64 demo.png and a .DirIcon link to it, AppRun.
type AppImageOptions struct {
	DesktopName string // the desktop file is DesktopName + ".desktop" (default "demo")
	Name        string // default "Demo"
	Version     string // X-AppImage-Version (default "1.2.3"; "-" for none)
	Comment     string
	Categories  string // default "Utility;"
	Icon        string // the Icon key (default DesktopName)
	// Desktop, when set, is the whole desktop file.
	Desktop string
	// IconSize is the PNG icon's width and height (default 64; -1 for no icon file).
	IconSize int
	// NoDirIcon leaves out the .DirIcon link to the icon.
	NoDirIcon bool
	Runtime   RuntimeOptions
	// Squash sets the image's compression and block size; its Root entries are added to
	// AppDir's, and its Fragments is ignored (see NoFragments).
	Squash SquashOptions
	// NoFragments stores every file's tail in a block of its own instead of packing small files
	// into fragment blocks, as mksquashfs does by default.
	NoFragments bool
	// PayloadBytes, when not zero, adds usr/lib/payload.bin of that many pseudo-random bytes,
	// streamed by WriteAppImage.
	PayloadBytes int64
}

// DesktopFile returns the desktop file o describes.
func DesktopFile(o AppImageOptions) string {
	if o.Desktop != "" {
		return o.Desktop
	}
	id := or(o.DesktopName, "demo")
	var b strings.Builder
	fmt.Fprintf(&b, "[Desktop Entry]\nType=Application\nName=%s\nExec=%s\nIcon=%s\nCategories=%s\n",
		or(o.Name, "Demo"), id, or(o.Icon, id), or(o.Categories, "Utility;"))
	if o.Comment != "" {
		fmt.Fprintf(&b, "Comment=%s\n", o.Comment)
	}
	if v := or(o.Version, "1.2.3"); v != "-" {
		fmt.Fprintf(&b, "X-AppImage-Version=%s\n", v)
	}
	return b.String()
}

// AppDir returns the root entries of the AppImage's squashfs image (without the payload).
func AppDir(o AppImageOptions) []SquashEntry {
	id := or(o.DesktopName, "demo")
	root := []SquashEntry{
		{Name: "AppRun", Data: []byte("#!/bin/sh\nexec \"$APPDIR/usr/bin/" + id + "\" \"$@\"\n")},
		{Name: id + ".desktop", Data: []byte(DesktopFile(o))},
		{Name: "usr", IsDir: true, Dir: []SquashEntry{{Name: "bin", IsDir: true, Dir: []SquashEntry{{Name: id, Data: []byte("#!/bin/sh\necho demo\n")}}}}},
	}
	if o.IconSize >= 0 {
		size := o.IconSize
		if size == 0 {
			size = 64
		}
		icon := or(o.Icon, id)
		root = append(root, SquashEntry{Name: icon + ".png", Data: PNG(size, size)})
		if !o.NoDirIcon {
			root = append(root, SquashEntry{Name: ".DirIcon", Symlink: icon + ".png"})
		}
	}
	return append(root, o.Squash.Root...)
}

// BuildAppImage returns the AppImage o describes.
func BuildAppImage(o AppImageOptions) []byte {
	var b bytes.Buffer
	if _, err := WriteAppImage(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteAppImage streams the AppImage o describes to w and returns its size: the runtime, then
// the squashfs image of AppDir (with the payload, if any).
func WriteAppImage(w io.Writer, o AppImageOptions) (int64, error) {
	sq := o.Squash
	sq.Root = AppDir(o)
	if sq.Compression == "" {
		sq.Compression = "gzip"
	}
	sq.Fragments = !o.NoFragments
	if o.PayloadBytes > 0 {
		for i, e := range sq.Root {
			if e.Name == "usr" {
				sq.Root[i].Dir = append(sq.Root[i].Dir, SquashEntry{Name: "lib", IsDir: true, Dir: []SquashEntry{{Name: "payload.bin", Size: o.PayloadBytes, Content: Filler(o.PayloadBytes, 3)}}})
			}
		}
	}
	cw := &countWriter{w: w}
	if _, err := cw.Write(Runtime(o.Runtime)); err != nil {
		return cw.n, err
	}
	_, err := WriteSquashfs(cw, sq)
	return cw.n, err
}
