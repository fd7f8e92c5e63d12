package linuxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// Field is one control file field, in order.
type Field struct{ Name, Value string }

// TarFile is one entry of a tar archive.
type TarFile struct {
	Name string
	Data []byte
	// Size, when not zero, is the size the header declares instead of len(Data) (a lie).
	Size int64
	// Type is the tar type flag (default tar.TypeReg).
	Type byte
}

// DebOptions describes a Debian package. Zero values give a small valid package named "demo".
type DebOptions struct {
	Package      string // default "demo"
	Version      string // default "1.2.3-1"
	Architecture string // default "amd64"
	Maintainer   string // default "Demo Team <demo@example.com>"
	Description  string // default "demo app\n A demo package built in code."
	// Extra fields follow the standard ones (Depends, Section, Homepage, ...).
	Extra []Field
	// Control, when set, is the whole control file, replacing the fields above.
	Control string
	// Compression of control.tar and data.tar: "gz" (default), "xz", "zst" or "none".
	Compression string
	// Before are control.tar entries written before ./control (md5sums, scripts, or hostile
	// entries for tests); After follow it.
	Before, After []TarFile
	// GNUNames ends ar member names with "/", as GNU ar writes them.
	GNUNames bool
	// DataBytes, when not zero, makes data.tar an uncompressed tar holding one file of that many
	// pseudo-random bytes, streamed by WriteDeb (the parser never reads it).
	DataBytes int64
}

// ArFile is one member of an ar archive.
type ArFile struct {
	Name string
	Data []byte
	// Size, when not empty, is written in the header's size field as is (a lie, or garbage).
	Size string
}

// Ar returns an ar archive of the members (the "!<arch>\n" magic, 60-byte headers, data
// padded to even sizes).
func Ar(members ...ArFile) []byte {
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range members {
		size := m.Size
		if size == "" {
			size = fmt.Sprint(len(m.Data))
		}
		writeArHeader(&b, m.Name, size)
		b.Write(m.Data)
		if len(m.Data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func writeArHeader(w io.Writer, name, size string) {
	fmt.Fprintf(w, "%-16.16s%-12d%-6d%-6d%-8s%-10.10s`\n", name, 1700000000, 0, 0, "100644", size)
}

// ControlFile returns the control file o describes.
func ControlFile(o DebOptions) string {
	if o.Control != "" {
		return o.Control
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\n",
		or(o.Package, "demo"), or(o.Version, "1.2.3-1"), or(o.Architecture, "amd64"), or(o.Maintainer, "Demo Team <demo@example.com>"))
	for _, f := range o.Extra {
		fmt.Fprintf(&b, "%s: %s\n", f.Name, f.Value)
	}
	fmt.Fprintf(&b, "Description: %s\n", or(o.Description, "demo app\n A demo package built in code."))
	return b.String()
}

// Tar returns a tar archive of the files (a "./" directory entry first, as dpkg-deb writes).
func Tar(files ...TarFile) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	mtime := time.Unix(1700000000, 0)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime, Format: tar.FormatGNU})
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Typeflag: f.Type, Mode: 0o644, Size: int64(len(f.Data)), ModTime: mtime, Format: tar.FormatGNU}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if f.Size != 0 {
			// Write the header for the declared size, then only the data there is: the tar is
			// cut short, as a lying archive would be.
			h.Size = f.Size
			tw.WriteHeader(h)
			tw.Write(f.Data)
			return b.Bytes()
		}
		tw.WriteHeader(h)
		tw.Write(f.Data)
	}
	tw.Close()
	return b.Bytes()
}

// Compress compresses data as "gz", "xz", "zst" or "none" (as dpkg-deb would).
func Compress(kind string, data []byte) []byte {
	var b bytes.Buffer
	switch kind {
	case "", "gz":
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(data)
		zw.Close()
	case "xz":
		xw, err := xz.WriterConfig{CheckSum: xz.CRC64}.NewWriter(&b)
		if err != nil {
			panic(err)
		}
		xw.Write(data)
		xw.Close()
	case "zst":
		zw, _ := zstd.NewWriter(&b, zstd.WithEncoderConcurrency(1))
		zw.Write(data)
		zw.Close()
	case "none":
		return data
	default:
		panic("linuxtest: unknown compression " + kind)
	}
	return b.Bytes()
}

// debExt is the member name suffix of a compression kind.
func debExt(kind string) string {
	switch kind {
	case "", "gz":
		return ".gz"
	case "none":
		return ""
	}
	return "." + kind
}

// ControlTar returns control.tar (compressed) of o and its member name.
func ControlTar(o DebOptions) (name string, data []byte) {
	files := append(append(append([]TarFile{}, o.Before...), TarFile{Name: "./control", Data: []byte(ControlFile(o))}), o.After...)
	return "control.tar" + debExt(o.Compression), Compress(o.Compression, Tar(files...))
}

// BuildDeb returns the Debian package o describes.
func BuildDeb(o DebOptions) []byte {
	var b bytes.Buffer
	if _, err := WriteDeb(&b, o); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WriteDeb streams the Debian package o describes to w and returns its size.
func WriteDeb(w io.Writer, o DebOptions) (int64, error) {
	cw := &countWriter{w: w}
	name := func(n string) string {
		if o.GNUNames {
			return n + "/"
		}
		return n
	}
	cname, control := ControlTar(o)
	io.WriteString(cw, "!<arch>\n")
	for _, m := range []ArFile{{Name: name("debian-binary"), Data: []byte("2.0\n")}, {Name: name(cname), Data: control}} {
		writeArHeader(cw, m.Name, fmt.Sprint(len(m.Data)))
		cw.Write(m.Data)
		if len(m.Data)%2 == 1 {
			cw.Write([]byte{'\n'})
		}
	}
	if o.DataBytes == 0 {
		data := Compress(o.Compression, Tar(TarFile{Name: "./usr/bin/" + or(o.Package, "demo"), Data: []byte("#!/bin/sh\necho demo\n")}))
		writeArHeader(cw, name("data.tar"+debExt(o.Compression)), fmt.Sprint(len(data)))
		cw.Write(data)
		if len(data)%2 == 1 {
			cw.Write([]byte{'\n'})
		}
		return cw.n, nil
	}
	// An uncompressed data.tar: a "./" entry, one big file, padding, the two zero blocks.
	pad := (512 - o.DataBytes%512) % 512
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	mtime := time.Unix(1700000000, 0)
	tw.WriteHeader(&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime, Format: tar.FormatGNU})
	tw.WriteHeader(&tar.Header{Name: "./usr/share/demo/payload.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: o.DataBytes, ModTime: mtime, Format: tar.FormatGNU})
	tarLen := int64(hdr.Len()) + o.DataBytes + pad + 1024
	writeArHeader(cw, name("data.tar"), fmt.Sprint(tarLen))
	cw.Write(hdr.Bytes())
	if _, err := io.Copy(cw, Filler(o.DataBytes, 1)); err != nil {
		return cw.n, err
	}
	if _, err := cw.Write(make([]byte, pad+1024+tarLen%2)); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}
