// Package debuginfotest builds synthetic debug-file archives in memory (zipped dSYM bundles with
// minimal Mach-O files, Android mapping archives), so tests of debuginfo and of the packages using
// it run without the shared real fixtures. The builders panic on malformed arguments (an unknown
// architecture, a bad UUID): they are for tests only.
package debuginfotest

import (
	"archive/zip"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"html"
	"path"
	"strings"
)

// Arch is one architecture of a synthetic Mach-O file.
type Arch struct {
	// Name is one of arm64, arm64e, arm64_32, armv7, armv7s, armv7k, x86_64, x86_64h, i386.
	Name string
	// UUID is the LC_UUID, dashed, in any case.
	UUID string
	// Pad is the number of zero bytes after the load commands, standing for the DWARF data.
	Pad int
}

// archs maps names to CPU type, subtype and whether the header is 64-bit.
var archs = map[string]struct {
	cpu, sub uint32
	is64     bool
}{
	"arm64": {0x0100000c, 0, true}, "arm64e": {0x0100000c, 0x80000002, true}, "arm64_32": {0x0200000c, 1, false},
	"armv7": {12, 9, false}, "armv7s": {12, 11, false}, "armv7k": {12, 12, false},
	"x86_64": {0x01000007, 3, true}, "x86_64h": {0x01000007, 8, true}, "i386": {7, 3, false},
}

// Thin returns a little-endian Mach-O file (type MH_DSYM) of one architecture: the header, one
// LC_UUID load command and Pad zero bytes. Its size is ThinSize(a).
func Thin(a Arch) []byte {
	t, ok := archs[a.Name]
	if !ok {
		panic("debuginfotest: unknown architecture " + a.Name)
	}
	le := binary.LittleEndian
	var b []byte
	magic := uint32(0xfeedface)
	if t.is64 {
		magic = 0xfeedfacf
	}
	b = le.AppendUint32(b, magic)
	b = le.AppendUint32(b, t.cpu)
	b = le.AppendUint32(b, t.sub)
	b = le.AppendUint32(b, 0xa) // MH_DSYM
	b = le.AppendUint32(b, 1)   // ncmds
	b = le.AppendUint32(b, 24)  // sizeofcmds
	b = le.AppendUint32(b, 0)   // flags
	if t.is64 {
		b = le.AppendUint32(b, 0) // reserved
	}
	b = le.AppendUint32(b, 0x1b) // LC_UUID
	b = le.AppendUint32(b, 24)
	b = append(b, uuidBytes(a.UUID)...)
	return append(b, make([]byte, a.Pad)...)
}

// ThinSize is the size of Thin(a).
func ThinSize(a Arch) int64 { return int64(len(Thin(a))) }

// MachO returns Thin(archList[0]) for one architecture, or a fat file holding a thin slice per
// architecture (in order, each aligned to 4 KiB) for several. Each slice's size, as debuginfo
// reports it, is ThinSize of its Arch.
func MachO(archList ...Arch) []byte {
	if len(archList) == 1 {
		return Thin(archList[0])
	}
	const align = 12
	be := binary.BigEndian
	var hdr, body []byte
	hdr = be.AppendUint32(hdr, 0xcafebabe)
	hdr = be.AppendUint32(hdr, uint32(len(archList)))
	off := 8 + 20*len(archList)
	for _, a := range archList {
		start := (off + 1<<align - 1) &^ (1<<align - 1)
		body = append(body, make([]byte, start-off)...)
		s := Thin(a)
		t := archs[a.Name]
		hdr = be.AppendUint32(hdr, t.cpu)
		hdr = be.AppendUint32(hdr, t.sub)
		hdr = be.AppendUint32(hdr, uint32(start))
		hdr = be.AppendUint32(hdr, uint32(len(s)))
		hdr = be.AppendUint32(hdr, align)
		body = append(body, s...)
		off = start + len(s)
	}
	return append(hdr, body...)
}

// DSYM describes one synthetic .dSYM bundle.
type DSYM struct {
	// Path is the bundle folder, e.g. "App.app.dSYM" or "dSYMs/App.app.dSYM".
	Path string
	// Identifier is written to Info.plist with the "com.apple.xcode.dsym." prefix, as Xcode does.
	// Info.plist is left out when Identifier, ReleaseVersion and BuildVersion are all empty.
	Identifier     string
	ReleaseVersion string
	BuildVersion   string
	// Object is the DWARF file's name; empty means the bundle name up to its first dot ("App").
	Object string
	// Archs are the Mach-O's architectures: one gives a thin file, several a fat one.
	Archs []Arch
}

// BuildDSYMZip returns a zip of the bundles: for each, Contents/Info.plist and the Mach-O file
// Contents/Resources/DWARF/<Object>.
func BuildDSYMZip(dsyms ...DSYM) []byte {
	var entries []Entry
	for _, d := range dsyms {
		if d.Identifier != "" || d.ReleaseVersion != "" || d.BuildVersion != "" {
			entries = append(entries, Entry{Name: d.Path + "/Contents/Info.plist", Data: InfoPlist(d)})
		}
		obj := d.Object
		if obj == "" {
			obj, _, _ = strings.Cut(path.Base(d.Path), ".")
		}
		entries = append(entries, Entry{Name: d.Path + "/Contents/Resources/DWARF/" + obj, Data: MachO(d.Archs...)})
	}
	return BuildZip(entries...)
}

// InfoPlist returns the XML Info.plist Xcode writes in a dSYM bundle.
func InfoPlist(d DSYM) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>CFBundleDevelopmentRegion</key>
	<string>English</string>
	<key>CFBundleIdentifier</key>
	<string>com.apple.xcode.dsym.%s</string>
	<key>CFBundleInfoDictionaryVersion</key>
	<string>6.0</string>
	<key>CFBundlePackageType</key>
	<string>dSYM</string>
	<key>CFBundleShortVersionString</key>
	<string>%s</string>
	<key>CFBundleVersion</key>
	<string>%s</string>
</dict>
</plist>
`, html.EscapeString(d.Identifier), html.EscapeString(d.ReleaseVersion), html.EscapeString(d.BuildVersion))
}

// Proguard describes a synthetic Android debug archive.
type Proguard struct {
	// Dir is the folder holding the files, "" for the archive's root.
	Dir string
	// Mapping, RTxt and Manifest are the contents of mapping.txt, R.txt and AndroidManifest.xml;
	// nil leaves the file out.
	Mapping, RTxt, Manifest []byte
}

// BuildProguardZip returns a zip of the Android files, in the order manifest, R.txt, mapping.txt.
func BuildProguardZip(p Proguard) []byte {
	var entries []Entry
	for _, f := range []struct {
		name string
		data []byte
	}{{"AndroidManifest.xml", p.Manifest}, {"R.txt", p.RTxt}, {"mapping.txt", p.Mapping}} {
		if f.data != nil {
			entries = append(entries, Entry{Name: path.Join(p.Dir, f.name), Data: f.data})
		}
	}
	return BuildZip(entries...)
}

// Manifest returns a text AndroidManifest.xml with this package name and versions.
func Manifest(pkg, versionName, versionCode string) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android"
    package="%s"
    android:versionCode="%s"
    android:versionName="%s">
    <application android:label="Test" />
</manifest>
`, html.EscapeString(pkg), html.EscapeString(versionCode), html.EscapeString(versionName))
}

// ProguardUUID computes the expected UUID of a mapping file the plain way (reference for tests):
// UUIDv5 of the content in the namespace UUIDv5(DNS, "icyleaf.com").
func ProguardUUID(mapping []byte) string {
	dns := uuidBytes("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	ns := uuidV5(dns, []byte("icyleaf.com"))
	u := uuidV5(ns, mapping)
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func uuidV5(ns, name []byte) []byte {
	sum := sha1.Sum(append(append([]byte{}, ns...), name...))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return u
}

// Entry is one file of a zip built by BuildZip.
type Entry struct {
	Name string
	Data []byte
	// Store leaves the entry uncompressed (default: Deflate).
	Store bool
}

// BuildZip returns a zip archive of the entries, in order. Names are written as given, so tests
// can build hostile archives ("../x", "__MACOSX/._x").
func BuildZip(entries ...Entry) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, e := range entries {
		method := zip.Deflate
		if e.Store {
			method = zip.Store
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: e.Name, Method: method})
		if err != nil {
			panic(err)
		}
		if _, err := f.Write(e.Data); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func uuidBytes(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		panic(fmt.Sprintf("debuginfotest: bad UUID %q", s))
	}
	return b
}
