package appletest

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"html"
	"io"
)

// PKGOptions describes a synthetic macOS installer package (xar). Zero values get defaults.
type PKGOptions struct {
	// Distribution makes a product archive (productbuild): a Distribution file at the root and a
	// component package AppName.pkg/ with its PackageInfo. Otherwise the package is a component
	// package (pkgbuild) with PackageInfo at its root.
	Distribution bool
	Title        string // the Distribution's <title>, omitted when empty
	AppName      string // "Demo", installed as Demo.app
	BundleID     string // "com.example.pkg"
	Version      string // CFBundleShortVersionString and the package version, "1.0"
	Build        string // CFBundleVersion, "1"
	MinOS        string // allowed-os-versions min in the Distribution, omitted when empty
	// OmitBundle leaves out the <bundle> elements, so only package identifiers and versions remain.
	OmitBundle bool
	// Uncompressed stores the heap files as application/octet-stream instead of zlib ("gzip").
	Uncompressed bool
}

// BuildPKG returns a minimal xar archive: a 28-byte header, the zlib-compressed XML table of
// contents, and a heap starting with the TOC's SHA-1 and holding the Distribution, PackageInfo and
// a small Payload.
func BuildPKG(o PKGOptions) []byte {
	app := appleOr(o.AppName, "Demo")
	id := appleOr(o.BundleID, "com.example.pkg")
	ver, build := appleOr(o.Version, "1.0"), appleOr(o.Build, "1")
	esc := html.EscapeString
	bundle := ""
	if !o.OmitBundle {
		bundle = fmt.Sprintf(`<bundle path="./%s.app" id="%s" CFBundleShortVersionString="%s" CFBundleVersion="%s"/>`, esc(app), esc(id), esc(ver), esc(build))
	}
	pkgInfo := fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>
<pkg-info overwrite-permissions="true" relocatable="false" identifier="%s.pkg" postinstall-action="none" version="%s" format-version="2" install-location="/Applications" auth="root">
    <payload numberOfFiles="3" installKBytes="64"/>
    %s
</pkg-info>
`, esc(id), esc(ver), bundle)

	var heap bytes.Buffer
	heap.Write(make([]byte, sha1.Size)) // TOC checksum, filled in below
	var files bytes.Buffer
	nextID := 1
	addFile := func(name string, data []byte) {
		stored, style := data, "application/octet-stream"
		if !o.Uncompressed {
			var z bytes.Buffer
			zw := zlib.NewWriter(&z)
			_, _ = zw.Write(data)
			_ = zw.Close()
			stored, style = z.Bytes(), "application/x-gzip"
		}
		fmt.Fprintf(&files, `<file id="%d"><name>%s</name><type>file</type><data><length>%d</length><offset>%d</offset><size>%d</size><encoding style="%s"/><extracted-checksum style="sha1">%x</extracted-checksum><archived-checksum style="sha1">%x</archived-checksum></data></file>`,
			nextID, esc(name), len(data), heap.Len(), len(stored), style, sha1.Sum(data), sha1.Sum(stored))
		nextID++
		heap.Write(stored)
	}
	if o.Distribution {
		title, minOS, versions := "", "", ""
		if o.Title != "" {
			title = "<title>" + esc(o.Title) + "</title>"
		}
		if o.MinOS != "" {
			minOS = `<allowed-os-versions><os-version min="` + esc(o.MinOS) + `"/></allowed-os-versions>`
		}
		if !o.OmitBundle {
			versions = "<bundle-version>" + bundle + "</bundle-version>"
		}
		dist := fmt.Sprintf(`<?xml version="1.0" encoding="utf-8"?>
<installer-gui-script minSpecVersion="2">
    %s
    %s
    <pkg-ref id="%s.pkg">%s</pkg-ref>
    <options customize="never" require-scripts="false" hostArchitectures="x86_64,arm64"/>
    <choices-outline><line choice="default"><line choice="%s.pkg"/></line></choices-outline>
    <choice id="default"/>
    <choice id="%s.pkg" visible="false"><pkg-ref id="%s.pkg"/></choice>
    <pkg-ref id="%s.pkg" version="%s" onConclusion="none">#%s.pkg</pkg-ref>
</installer-gui-script>
`, title, minOS, esc(id), versions, esc(id), esc(id), esc(id), esc(id), esc(ver), esc(app))
		addFile("Distribution", []byte(dist))
		fmt.Fprintf(&files, `<file id="%d"><name>%s.pkg</name><type>directory</type>`, nextID, esc(app))
		nextID++
		addFile("PackageInfo", []byte(pkgInfo))
		addFile("Payload", []byte("synthetic payload"))
		files.WriteString(`</file>`)
	} else {
		addFile("PackageInfo", []byte(pkgInfo))
		addFile("Payload", []byte("synthetic payload"))
	}
	toc := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<xar><toc><creation-time>2024-01-01T00:00:00</creation-time><checksum style="sha1"><offset>0</offset><size>20</size></checksum>%s</toc></xar>`, files.String())
	var ztoc bytes.Buffer
	zw := zlib.NewWriter(&ztoc)
	_, _ = zw.Write([]byte(toc))
	_ = zw.Close()

	sum := sha1.Sum(ztoc.Bytes())
	h := heap.Bytes()
	copy(h, sum[:])
	out := make([]byte, 28, 28+ztoc.Len()+len(h))
	copy(out, "xar!")
	binary.BigEndian.PutUint16(out[4:], 28)
	binary.BigEndian.PutUint16(out[6:], 1)
	binary.BigEndian.PutUint64(out[8:], uint64(ztoc.Len()))
	binary.BigEndian.PutUint64(out[16:], uint64(len(toc)))
	binary.BigEndian.PutUint32(out[24:], 1) // SHA-1
	out = append(out, ztoc.Bytes()...)
	return append(out, h...)
}

// BuildXar returns a xar archive holding toc as its table of contents (zlib-compressed at the best
// ratio, with its real inflated size in the header) and heap after it. Hostile tests build their
// archives with it.
func BuildXar(toc, heap []byte) []byte {
	return buildXarStream(func(w io.Writer) { _, _ = w.Write(toc) }, uint64(len(toc)), heap)
}

// BuildTOCBomb returns a .pkg whose table of contents is "<xar><toc>", head, unit repeated to
// about tocBytes in all, then "</toc></xar>", followed by heap; the TOC is compressed without
// ever being held in memory. BuildTOCBomb("", "<file/>", 16<<20, nil) is a 24 KB package whose
// table of contents inflates to 16 MiB of empty file elements: what once cost the parser 1.4 GB.
func BuildTOCBomb(head, unit string, tocBytes int, heap []byte) []byte {
	const open, end = "<xar><toc>", "</toc></xar>"
	n := max(0, (tocBytes-len(open)-len(end)-len(head))/max(1, len(unit)))
	size := len(open) + len(head) + n*len(unit) + len(end)
	return buildXarStream(func(w io.Writer) {
		bw := bufio.NewWriterSize(w, 64<<10)
		bw.WriteString(open + head)
		for range n {
			bw.WriteString(unit)
		}
		bw.WriteString(end)
		_ = bw.Flush()
	}, uint64(size), heap)
}

// buildXarStream writes a xar archive whose TOC (of tocLen bytes) write produces.
func buildXarStream(write func(io.Writer), tocLen uint64, heap []byte) []byte {
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	write(zw)
	_ = zw.Close()
	out := make([]byte, 28, 28+z.Len()+len(heap))
	copy(out, "xar!")
	binary.BigEndian.PutUint16(out[4:], 28)
	binary.BigEndian.PutUint16(out[6:], 1)
	binary.BigEndian.PutUint64(out[8:], uint64(z.Len()))
	binary.BigEndian.PutUint64(out[16:], tocLen)
	out = append(out, z.Bytes()...)
	return append(out, heap...)
}
