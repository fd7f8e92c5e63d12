package linux

import (
	"archive/tar"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// hostileCase is one malformed package and a word its error must contain.
type hostileCase struct {
	name string
	data []byte
	want string
}

func runHostile(t *testing.T, parse func([]byte) (*appinfo.Info, error), cases []hostileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := parse(tc.data)
			if err == nil {
				t.Fatalf("parsed as %+v; want an error mentioning %q", info, tc.want)
			}
			wantInvalid(t, err, tc.want)
		})
	}
}

// allocs returns the bytes f allocates.
func allocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// truncations checks that every prefix of data shorter than upTo fails with errs.Invalid, and
// that none panics.
func truncations(t *testing.T, parse func([]byte) (*appinfo.Info, error), data []byte, upTo int, step int) {
	t.Helper()
	for n := 0; n < upTo; n += step {
		if info, err := parse(data[:n]); err == nil || errs.KindOf(err) != errs.Invalid {
			t.Fatalf("truncated at %d of %d bytes: %+v, %v; want an errs.Invalid error", n, len(data), info, err)
		}
	}
}

// zeros returns a tar holding one file of n zero bytes, then ./control: a bomb once compressed.
func zerosThenControl(n int) []byte {
	return linuxtest.Tar(linuxtest.TarFile{Name: "./big", Data: make([]byte, n)},
		linuxtest.TarFile{Name: "./control", Data: []byte(linuxtest.ControlFile(linuxtest.DebOptions{}))})
}

// deb assembles a .deb from its control member (name and bytes).
func deb(controlName string, control []byte) []byte {
	return linuxtest.Ar(linuxtest.ArFile{Name: "debian-binary", Data: []byte("2.0\n")},
		linuxtest.ArFile{Name: controlName, Data: control}, linuxtest.ArFile{Name: "data.tar.gz", Data: []byte("opaque")})
}

func TestDebHostile(t *testing.T) {
	good := linuxtest.BuildDeb(linuxtest.DebOptions{})
	ctrlName, ctrl := linuxtest.ControlTar(linuxtest.DebOptions{})
	db := linuxtest.ArFile{Name: "debian-binary", Data: []byte("2.0\n")}
	control := linuxtest.ArFile{Name: ctrlName, Data: ctrl}
	data := linuxtest.ArFile{Name: "data.tar.gz", Data: []byte("opaque")}
	withSize := func(m linuxtest.ArFile, size string) linuxtest.ArFile { m.Size = size; return m }
	var underscores []linuxtest.ArFile
	underscores = append(underscores, db)
	for i := range 17 {
		underscores = append(underscores, linuxtest.ArFile{Name: fmt.Sprint("_sig", i), Data: []byte("x")})
	}
	badMagic := bytes.Clone(good)
	copy(badMagic[8+58:], "!!")
	var many []linuxtest.TarFile
	for i := range 300 {
		many = append(many, linuxtest.TarFile{Name: fmt.Sprintf("./f%d", i)})
	}
	many = append(many, linuxtest.TarFile{Name: "./control", Data: []byte("Package: x\nVersion: 1\n")})
	gzipTar := func(files ...linuxtest.TarFile) []byte { return linuxtest.Compress("gz", linuxtest.Tar(files...)) }
	runHostile(t, parseDeb, []hostileCase{
		{"empty", nil, "truncated"},
		{"not ar", []byte(strings.Repeat("not an ar archive ", 10)), "not a Debian package"},
		{"bad member magic", badMagic, "header at byte 8 is corrupt"},
		{"member claims 9999999999 bytes", linuxtest.Ar(db, withSize(control, "9999999999"), data), "declares 9999999999 bytes"},
		// 2^63 has 19 digits and the ar size field 10: what fits is its first 10 digits.
		{"member claims 2^63 bytes", linuxtest.Ar(db, withSize(control, fmt.Sprint(uint64(1)<<63)), data), "declares 9223372036 bytes"},
		{"negative size", linuxtest.Ar(db, withSize(control, "-1"), data), "bad size field"},
		{"hex size", linuxtest.Ar(db, withSize(control, "0x10"), data), "bad size field"},
		{"blank size", linuxtest.Ar(db, withSize(control, " "), data), "bad size field"},
		{"debian-binary claims too much", linuxtest.Ar(withSize(db, "4000"), control, data), "declares 4000 bytes"},
		{"format 3.0", linuxtest.Ar(linuxtest.ArFile{Name: "debian-binary", Data: []byte("3.0\n")}, control, data), "format \"3.0\""},
		{"data before control", linuxtest.Ar(db, data, control), "data.tar before control.tar"},
		{"unknown member", linuxtest.Ar(db, linuxtest.ArFile{Name: "evil", Data: []byte("x")}, control, data), "unexpected ar member \"evil\""},
		{"17 signature members", linuxtest.Ar(append(underscores, control, data)...), "more than 16 ar members before"},
		{"no data member", linuxtest.Ar(db, control), "ends before its control.tar and data.tar"},
		{"no control member", linuxtest.Ar(db), "ends before"},
		{"member after control", linuxtest.Ar(db, control, linuxtest.ArFile{Name: "zzz"}, data), "unexpected ar member \"zzz\" before data.tar"},
		{"bzip2 control", deb("control.tar.bz2", ctrl), "unsupported compression"},
		{"control over 4 MiB", deb("control.tar", make([]byte, MaxDebControlBytes+1)), "over the 4194304-byte limit"},
		{"control not gzip", deb("control.tar.gz", []byte("junk")), "not gzip data"},
		{"control not xz", deb("control.tar.xz", []byte("junk")), "not valid xz data"},
		{"control not zstd", deb("control.tar.zst", []byte("junk")), "corrupt"},
		{"gzip cut short", deb("control.tar.gz", ctrl[:len(ctrl)/2]), "truncated"},
		{"gzip bomb", deb("control.tar.gz", linuxtest.Compress("gz", zerosThenControl(32<<20))), "inflates to more than 16777216"},
		{"xz bomb", deb("control.tar.xz", linuxtest.Compress("xz", zerosThenControl(32<<20))), "inflates to more than 16777216"},
		{"zstd bomb", deb("control.tar.zst", linuxtest.Compress("zst", zerosThenControl(32<<20))), "inflates to more than 16777216"},
		{"uncompressed tar bomb", deb("control.tar", zerosThenControl(4<<20)), "over the 4194304-byte limit"},
		{"300 tar entries", deb("control.tar.gz", gzipTar(many...)), "more than 256 entries"},
		{"tar entry claims 2^40 bytes", deb("control.tar.gz", gzipTar(linuxtest.TarFile{Name: "./big", Data: []byte("x"), Size: 1 << 40})), "truncated"},
		{"control claims 2 MiB", deb("control.tar.gz", gzipTar(linuxtest.TarFile{Name: "./control", Data: []byte("Package: x\n"), Size: 2 << 20})), "over the 1048576-byte limit"},
		{"control is a link", deb("control.tar.gz", gzipTar(linuxtest.TarFile{Name: "./control", Type: tar.TypeSymlink})), "not a regular file"},
		{"no control file", deb("control.tar.gz", gzipTar(linuxtest.TarFile{Name: "./md5sums", Data: []byte("x")})), "holds no control file"},
		{"not a tar", deb("control.tar.gz", linuxtest.Compress("gz", []byte(strings.Repeat("x", 2000)))), "corrupt"},
		{"no package", linuxtest.BuildDeb(linuxtest.DebOptions{Control: "Version: 1\n"}), "no Package field"},
		{"no version", linuxtest.BuildDeb(linuxtest.DebOptions{Control: "Package: x\n"}), "no Version field"},
		{"xz with a BCJ filter", deb("control.tar.xz", xzWithBCJ(t, linuxtest.Compress("xz", linuxtest.Tar()))), "BCJ or delta filter, which is not supported"},
	})
	t.Run("truncated anywhere", func(t *testing.T) {
		for _, comp := range []string{"gz", "xz", "zst", "none"} {
			d := linuxtest.BuildDeb(linuxtest.DebOptions{Compression: comp})
			truncations(t, parseDeb, d, debDataEnd(t, d), 1)
		}
	})
	t.Run("xz declaring a 4 GiB dictionary", func(t *testing.T) {
		// The decoder's dictionary is bounded by the output limit, not by what the header says.
		xzData := xzWithDict(t, linuxtest.Compress("xz", linuxtest.Tar(linuxtest.TarFile{Name: "./control", Data: []byte("Package: x\nVersion: 1\n")})), 40)
		var err error
		n := allocs(func() { _, err = parseDeb(deb("control.tar.xz", xzData)) })
		if err != nil {
			t.Fatal(err)
		}
		if n > 40<<20 {
			t.Errorf("parsing allocated %d bytes", n)
		}
	})
	t.Run("zstd declaring a 2 TiB window", func(t *testing.T) {
		// Frame header: no single segment, window descriptor exponent 31; then a raw block.
		frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x01, 0x00, 0x00}
		var err error
		n := allocs(func() { _, err = parseDeb(deb("control.tar.zst", frame)) })
		wantInvalid(t, err, "")
		if n > 8<<20 {
			t.Errorf("parsing allocated %d bytes", n)
		}
	})
	t.Run("corrupt xz check", func(t *testing.T) {
		x := linuxtest.Compress("xz", linuxtest.Tar(linuxtest.TarFile{Name: "./control", Data: []byte("Package: x\nVersion: 1\n")}))
		for i := 40; i < len(x)-12; i += 3 {
			bad := bytes.Clone(x)
			bad[i] ^= 0x55
			if info, err := parseDeb(deb("control.tar.xz", bad)); err != nil && errs.KindOf(err) != errs.Invalid {
				t.Fatalf("flipping byte %d: %+v, %v", i, info, err)
			}
		}
	})
}

// debDataEnd returns where the last ar member's data ends (before its padding byte, if any).
func debDataEnd(t *testing.T, d []byte) int {
	pos := int64(len(arMagic))
	for {
		m, err := parseArHeader(d[pos:pos+arHeaderLen], pos, int64(len(d)))
		if err != nil {
			t.Fatal(err)
		}
		if m.end() >= int64(len(d)) {
			return int(m.off + m.size)
		}
		pos = m.end()
	}
}

// xzBlockHeader returns the position and length of the first block header of an xz stream.
func xzBlockHeader(t *testing.T, x []byte) (int, int) {
	t.Helper()
	if len(x) < 13 || x[12] == 0 {
		t.Fatal("no xz block")
	}
	return 12, (int(x[12]) + 1) * 4
}

// xzWithDict rewrites the LZMA2 dictionary property of the first block header (and its CRC).
func xzWithDict(t *testing.T, x []byte, prop byte) []byte {
	x = bytes.Clone(x)
	pos, n := xzBlockHeader(t, x)
	h := x[pos : pos+n]
	i := bytes.Index(h[2:], []byte{0x21, 0x01})
	if i < 0 {
		t.Fatal("no LZMA2 filter in the block header")
	}
	h[2+i+2] = prop
	binary.LittleEndian.PutUint32(h[n-4:], crc32.ChecksumIEEE(h[:n-4]))
	return x
}

// xzWithBCJ replaces the first block header with one naming two filters (x86 BCJ, LZMA2).
func xzWithBCJ(t *testing.T, x []byte) []byte {
	pos, n := xzBlockHeader(t, x)
	h := []byte{2, 0x01, 0x04, 0x00, 0x21, 0x01, 0x10, 0x00}
	h = binary.LittleEndian.AppendUint32(h, crc32.ChecksumIEEE(h))
	return append(append(bytes.Clone(x[:pos]), h...), x[pos+n:]...)
}

// TestXZReader covers the xz container reader beyond what dpkg-deb writes.
func TestXZReader(t *testing.T) {
	data := bytes.Repeat([]byte("squashfs and deb "), 5000)
	x := linuxtest.Compress("xz", data)
	r, err := newXZReader(x, len(data))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readCapped(r, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("round trip: %v (%d bytes)", err, len(got))
	}
	// A dictionary smaller than the declared one still decodes a stream no longer than it.
	x4g := xzWithDict(t, x, 40)
	r, _ = newXZReader(x4g, len(data))
	if got, err := readCapped(r, len(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("with a declared 4 GiB dictionary: %v", err)
	}
	r, _ = newXZReader(x, 1000)
	if _, err := readCapped(r, 1000); err != errTooBig {
		t.Errorf("over the limit: %v, want errTooBig", err)
	}
	for _, bad := range [][]byte{nil, x[:11], append([]byte{0}, x[1:]...), append(bytes.Clone(x[:7]), append([]byte{0xff}, x[8:]...)...)} {
		if r, err := newXZReader(bad, 100); err == nil {
			if _, err := readCapped(r, 100); err == nil {
				t.Errorf("bad stream %x… accepted", bad[:min(len(bad), 12)])
			}
		}
	}
	// Every truncation fails.
	for n := 12; n < len(x); n++ {
		r, err := newXZReader(x[:n], len(data))
		if err != nil {
			continue
		}
		if _, err := readCapped(r, len(data)); err == nil {
			// Cut inside the index or footer: the data was whole, which is fine.
			if n < len(x)-32 {
				t.Fatalf("truncated at %d of %d: no error", n, len(x))
			}
		}
	}
	if _, _, err := xzVarint([]byte{0x80, 0x00}); err == nil {
		t.Error("a varint with a zero continuation byte is accepted")
	}
	if _, _, err := xzVarint(bytes.Repeat([]byte{0xff}, 10)); err == nil {
		t.Error("a 10-byte varint is accepted")
	}
}

// TestBlockDecoderBombs checks each squashfs decompressor stops at its limit.
func TestBlockDecoderBombs(t *testing.T) {
	zeros := make([]byte, 4<<20)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(zeros)
	zw.Close()
	enc, _ := zstd.NewWriter(nil)
	bombs := map[uint16][]byte{sqGzip: z.Bytes(), sqXZ: linuxtest.Compress("xz", zeros), sqZstd: enc.EncodeAll(zeros, nil)}
	for id, bomb := range bombs {
		d, err := newBlockDecoder(id, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.decode(bomb, sqMetaSize); err != errTooBig {
			t.Errorf("%s: a 4 MiB bomb as a metadata block: %v, want errTooBig", sqCompressorNames[id], err)
		}
		if _, err := d.decode(bomb, 1<<20); err != errTooBig {
			t.Errorf("%s: a 4 MiB bomb as a data block: %v, want errTooBig", sqCompressorNames[id], err)
		}
		d.close()
	}
}

func TestRPMHostile(t *testing.T) {
	good := linuxtest.BuildRPM(linuxtest.RPMOptions{})
	lead := 96
	sigIL := int(binary.BigEndian.Uint32(good[lead+8:]))
	sigDL := int(binary.BigEndian.Uint32(good[lead+12:]))
	sigLen := 16 + 16*sigIL + sigDL
	mainAt := lead + sigLen + (8-sigLen%8)%8
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	patch16 := func(off int, v uint16) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint16(b[off:], v)
		return b
	}
	withTags := func(tags ...linuxtest.RPMTag) []byte {
		return linuxtest.BuildRPM(linuxtest.RPMOptions{Header: linuxtest.RPMHeader(tags)})
	}
	name, version := linuxtest.RPMStr(linuxtest.RPMTagName, "n"), linuxtest.RPMStr(linuxtest.RPMTagVersion, "1")
	badMagic := bytes.Clone(good)
	badMagic[lead] = 0
	badMainMagic := bytes.Clone(good)
	badMainMagic[mainAt+1] = 0
	sizeOff := -1
	for i := 0; i < sigIL; i++ {
		e := good[lead+16+16*i:]
		if binary.BigEndian.Uint32(e) == 1000 {
			sizeOff = lead + 16 + 16*sigIL + int(binary.BigEndian.Uint32(e[8:]))
		}
	}
	if sizeOff < 0 {
		t.Fatal("no SIZE tag in the signature header")
	}
	cases := []hostileCase{
		{"empty", nil, "truncated"},
		{"not rpm", []byte(strings.Repeat("x", 200)), "not an RPM"},
		{"lead version 2", func() []byte { b := bytes.Clone(good); b[4] = 2; return b }(), "format version 2"},
		{"old signature type", patch16(78, 0), "old signature type"},
		{"signature magic", badMagic, "signature header is corrupt"},
		{"main magic", badMainMagic, "main header is corrupt"},
		{"signature claims 2^31 entries", patch(lead+8, 1<<31), "declares 2147483648 tags, over rpm's limit"},
		{"signature claims 4 GiB of data", patch(lead+12, 1<<32-1), "over rpm's limit"},
		{"signature claims 65535 entries", patch(lead+8, 65535), "past the end of the file"},
		{"main claims 2^31 entries", patch(mainAt+8, 1<<31), "declares 2147483648 tags, over rpm's limit"},
		{"main claims 256 MiB of data", patch(mainAt+12, 256<<20), "past the end of the file"},
		{"main claims 4 GiB of data", patch(mainAt+12, 1<<32-1), "over rpm's limit"},
		{"empty main header", patch(mainAt+8, 0), "main header is empty"},
		{"size larger than the file", patch(sizeOff, uint32(len(good))), "signature header records"},
		{"no name", withTags(version), "no Name"},
		{"no version", withTags(name), "no Version"},
		{"offset past the data", withTags(linuxtest.RPMTag{Tag: linuxtest.RPMTagName, Type: linuxtest.RPMString, Data: []byte("n\x00"), Offset: 1 << 30}, version), "points past its data"},
		{"negative offset", withTags(linuxtest.RPMTag{Tag: linuxtest.RPMTagName, Type: linuxtest.RPMString, Data: []byte("n\x00"), Offset: -1}, version), "points past its data"},
		{"unterminated string", withTags(version, linuxtest.RPMTag{Tag: linuxtest.RPMTagName, Type: linuxtest.RPMString, Data: []byte("abc")}), "not a terminated string"},
		{"binary name", withTags(version, linuxtest.RPMTag{Tag: linuxtest.RPMTagName, Type: linuxtest.RPMBin, Data: []byte("abc\x00")}), "has type 7"},
		{"short epoch", withTags(name, version, linuxtest.RPMTag{Tag: linuxtest.RPMTagEpoch, Type: linuxtest.RPMInt32, Data: []byte{1, 2}}), "not a number"},
		{"fields 5 MiB apart", withTags(name, linuxtest.RPMTag{Tag: 5000, Type: linuxtest.RPMBin, Data: make([]byte, 5<<20)}, version), "over the 4194304-byte limit"},
	}
	runHostile(t, parseRPM, cases)
	t.Run("truncated anywhere", func(t *testing.T) {
		truncations(t, parseRPM, good, len(good), 1)
		big := linuxtest.BuildRPM(linuxtest.RPMOptions{PayloadBytes: 100_000})
		truncations(t, parseRPM, big, len(big), 97)
	})
	t.Run("2^31 entries allocate nothing", func(t *testing.T) {
		b := patch(mainAt+8, 1<<31)
		if n := allocs(func() { parseRPM(b) }); n > 1<<20 {
			t.Errorf("allocated %d bytes", n)
		}
	})
}

// pngWithSize returns a small PNG whose header declares w×h pixels.
func pngWithSize(w, h uint32) []byte {
	b := linuxtest.PNG(4, 4)
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

// appImageLayout is a synthetic AppImage with uncompressed metadata, whose structures the
// hostile cases patch in place.
type appImageLayout struct {
	img  []byte
	sb   sqFields
	base int64
}

func newLayout(t *testing.T, o linuxtest.AppImageOptions) *appImageLayout {
	t.Helper()
	o.Squash.Compression = "none"
	img := linuxtest.BuildAppImage(o)
	base := int64(len(linuxtest.Runtime(o.Runtime)))
	return &appImageLayout{img: img, base: base, sb: readSuper(img, base)}
}

// inodeAt returns where the inode of the root entry name starts in the file.
func (l *appImageLayout) inodeAt(t *testing.T, name string) int {
	t.Helper()
	fs, err := openSquashfs(bytes.NewReader(l.img), l.base, int64(len(l.img)))
	if err != nil {
		t.Fatal(err)
	}
	ref := l.sb.root
	if name != "" {
		root, _, err := fs.lookup("", 0)
		if err != nil {
			t.Fatal(err)
		}
		e, err := fs.find(root, name)
		if err != nil {
			t.Fatal(err)
		}
		ref = e.ref
	}
	if ref>>16 != 0 {
		t.Fatal("the inode is not in the first metadata block")
	}
	return int(l.base + l.sb.inodes + 2 + int64(ref&0xffff))
}

// rootListing returns where the root directory's listing starts in the file.
func (l *appImageLayout) rootListing(t *testing.T) int {
	root := l.inodeAt(t, "")
	return int(l.base + l.sb.dirs + 2 + int64(binary.LittleEndian.Uint16(l.img[root+26:])))
}

func (l *appImageLayout) with(off int, v any) []byte {
	b := bytes.Clone(l.img)
	switch v := v.(type) {
	case uint16:
		binary.LittleEndian.PutUint16(b[off:], v)
	case uint32:
		binary.LittleEndian.PutUint32(b[off:], v)
	case uint64:
		binary.LittleEndian.PutUint64(b[off:], v)
	case []byte:
		copy(b[off:], v)
	}
	return b
}

func TestAppImageHostile(t *testing.T) {
	l := newLayout(t, linuxtest.AppImageOptions{})
	nf := newLayout(t, linuxtest.AppImageOptions{NoFragments: true})
	sb := int(l.base)
	desktop := l.inodeAt(t, "demo.desktop")
	nfDesktop := nf.inodeAt(t, "demo.desktop")
	root := l.inodeAt(t, "")
	listing := l.rootListing(t)
	dirIcon := l.inodeAt(t, ".DirIcon")
	fragPtr := int(binary.LittleEndian.Uint64(l.img[l.base+l.sb.fragTable:]))
	fragEntry := int(l.base) + fragPtr + 2
	rt := linuxtest.Runtime(linuxtest.RuntimeOptions{})
	elf := func(off int, v any) []byte { return l.with(off, v) }

	runHostile(t, parseAppImage, []hostileCase{
		{"empty", nil, "truncated"},
		{"runtime only", rt, "no room for the squashfs image"},
		{"bad ELF class", elf(4, []byte{3}), "unknown class"},
		{"bad byte order", elf(5, []byte{9}), "unknown byte order"},
		{"no section headers", elf(0x3c, uint16(0)), "no valid section header table"},
		{"section table at 2^63", elf(0x28, uint64(1)<<63), "no valid section header table"},
		{"section header size 0", elf(0x3a, uint16(0)), "no valid section header table"},
		{"section header size 65535", elf(0x3a, uint16(65535)), "no valid section header table"},
		{"section table past the end", elf(0x3c, uint16(60000)), "section headers end at byte"},
		{"no squashfs magic", l.with(sb, []byte("hsqx")), "no squashfs image where its runtime ends"},
		{"squashfs 3.0", l.with(sb+28, uint16(3)), "version 3.0"},
		{"block size 3000", l.with(sb+12, uint32(3000)), "block size 3000"},
		{"block size 2 MiB", l.with(sb+12, uint32(2<<20)), "block size 2097152"},
		{"block log mismatch", l.with(sb+22, uint16(12)), "block size"},
		{"bytes used past the file", l.with(sb+40, uint64(len(l.img))), "truncated"},
		{"bytes used 2^64-1", l.with(sb+40, ^uint64(0)), "truncated"},
		{"bytes used under a superblock", l.with(sb+40, uint64(10)), "declares 10 bytes"},
		{"inode table after directory table", l.with(sb+64, uint64(l.sb.dirs+1)), "lie outside the image"},
		{"directory table past the end", l.with(sb+72, uint64(l.sb.used)), "lie outside the image"},
		{"2^32-1 fragments", l.with(sb+16, uint32(1<<32-1)), "fragment table lies outside"},
		{"lz4", l.with(sb+20, uint16(5)), "uses lz4 compression"},
		{"lzo", l.with(sb+20, uint16(3)), "uses lzo compression"},
		{"unknown compressor", l.with(sb+20, uint16(99)), "unknown (99)"},
		{"root ref outside the inode table", l.with(sb+32, uint64(1)<<40), "points outside its table"},
		{"root ref past its block", l.with(sb+32, uint64(8191)), "points past its block"},
		{"root is a file", l.with(sb+32, binary.LittleEndian.Uint64(l.img[sb+32:])&^0xffff|uint64(desktop-int(l.base+l.sb.inodes+2))), "root is not a directory"},
		{"metadata block of size 0", l.with(int(l.base+l.sb.inodes), uint16(0x8000)), "bad size (0)"},
		{"metadata block of 32 KiB", l.with(int(l.base+l.sb.inodes), uint16(0x7fff)), "bad size"},
		{"compressed metadata that is not", l.with(int(l.base+l.sb.inodes), binary.LittleEndian.Uint16(l.img[l.base+l.sb.inodes:])&0x7fff), "corrupt"},
		{"root listing size 2", l.with(root+24, uint16(2)), "bad size (2)"},
		{"root listing header counts 1000", l.with(listing, uint32(999)), "counts 1000 entries"},
		{"root listing name of 300 bytes", l.with(listing+12+6, uint16(299)), "a name of 300 bytes"},
		{"root listing name with a slash", l.with(listing+12+8, []byte("/")), "invalid name"},
		{"root listing cut short", l.with(root+24, uint16(3+12+8)), "corrupt"},
		{"desktop file of 4 GiB", l.with(desktop+28, uint32(1<<32-1)), "over the 1048576-byte limit"},
		{"desktop in fragment 5", l.with(desktop+20, uint32(5)), "names fragment 5 of 1"},
		{"desktop tail past its fragment", l.with(desktop+24, uint32(1<<20)), "tail lies outside its fragment"},
		{"fragment entry of size 0", l.with(fragEntry+8, uint32(0)), "fragment entry is corrupt"},
		{"fragment entry past the image", l.with(fragEntry, uint64(1)<<50), "fragment entry is corrupt"},
		{"fragment index points anywhere", l.with(int(l.base+l.sb.fragTable), uint64(1)<<40), "points outside its table"},
		{"data block past the image", nf.with(nfDesktop+16, uint32(1<<32-1)), "points outside itself"},
		{"data block larger than a block", nf.with(nfDesktop+32, uint32(1<<24|1<<23)), "over the block size"},
		{"data block shorter than its file", nf.with(nfDesktop+32, uint32(1<<24|10)), "holds 10 bytes"},
	})
	t.Run("no desktop file", func(t *testing.T) {
		sq := linuxtest.BuildSquashfs(linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{{Name: "AppRun", Data: []byte("x")}, {Name: ".desktop", Data: []byte("x")}}})
		_, err := parseAppImage(append(bytes.Clone(rt), sq...))
		wantInvalid(t, err, "no .desktop file")
	})
	t.Run("desktop link loop", func(t *testing.T) {
		sq := linuxtest.BuildSquashfs(linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "a.desktop", Symlink: "b"}, {Name: "b", Symlink: "a.desktop"}}})
		_, err := parseAppImage(append(bytes.Clone(rt), sq...))
		wantInvalid(t, err, "more than 8 symbolic links")
	})
	t.Run("desktop through a directory loop", func(t *testing.T) {
		// "loop" is the root itself: loop/loop/... never ends by itself.
		sq := linuxtest.BuildSquashfs(linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "a.desktop", Symlink: strings.Repeat("loop/", 100) + "real"}, {Name: "loop", InodeOf: "."},
			{Name: "real", Data: []byte("[Desktop Entry]\nName=R\n")}}})
		_, err := parseAppImage(append(bytes.Clone(rt), sq...))
		wantInvalid(t, err, "longer than 64 steps")
		// A few rounds are a valid path.
		sq = linuxtest.BuildSquashfs(linuxtest.SquashOptions{Root: []linuxtest.SquashEntry{
			{Name: "a.desktop", Symlink: "loop/loop/loop/real"}, {Name: "loop", InodeOf: "."},
			{Name: "real", Data: []byte("[Desktop Entry]\nName=R\n")}}})
		if info, err := parseAppImage(append(bytes.Clone(rt), sq...)); err != nil || info.Name != "R" {
			t.Fatalf("%+v, %v", info, err)
		}
	})
	t.Run("icon problems cost the icon", func(t *testing.T) {
		for name, root := range map[string][]linuxtest.SquashEntry{
			"directory loop": {{Name: ".DirIcon", Symlink: strings.Repeat("loop/", 70) + "demo.png"}, {Name: "loop", InodeOf: "."}},
			"link loop":      {{Name: ".DirIcon", Symlink: "x"}, {Name: "x", Symlink: ".DirIcon"}},
			"link to a dir":  {{Name: ".DirIcon", Symlink: "usr"}},
			"not a png":      {{Name: ".DirIcon", Data: []byte("\x89PNG\r\n\x1a\nbroken")}},
			"100000 pixels":  {{Name: ".DirIcon", Data: pngWithSize(100000, 100000)}},
			"outside":        {{Name: ".DirIcon", Symlink: "../../../../etc/icon.png"}},
		} {
			info, err := parseAppImage(linuxtest.BuildAppImage(linuxtest.AppImageOptions{IconSize: -1, Squash: linuxtest.SquashOptions{Root: root}}))
			if err != nil || info.Icon != nil || info.Name != "Demo" {
				t.Errorf("%s: %+v, %v; want the app without an icon", name, info, err)
			}
		}
		// An icon inode claiming 4 GiB is skipped before anything is read.
		b := l.with(l.inodeAt(t, "demo.png")+28, uint32(1<<32-1))
		if info, err := parseAppImage(b); err != nil || info.Icon != nil {
			t.Errorf("huge icon: %+v, %v", info, err)
		}
		// A symbolic link with a target of 0 or 65535 bytes.
		for _, n := range []uint32{0, 65535} {
			b := l.with(dirIcon+20, n)
			if info, err := parseAppImage(b); err != nil || info.Icon == nil {
				t.Errorf("bad .DirIcon target length %d: %+v, %v; want the icon found by name", n, info, err)
			}
		}
	})
	t.Run("truncated anywhere", func(t *testing.T) {
		for _, comp := range []string{"gzip", "xz", "zstd", "none"} {
			img := linuxtest.BuildAppImage(linuxtest.AppImageOptions{Squash: linuxtest.SquashOptions{Compression: comp}})
			end := int(l.base + readSuper(img, l.base).used)
			truncations(t, parseAppImage, img, end, 1)
			for n := end; n <= len(img); n += 512 { // only padding is missing
				if _, err := parseAppImage(img[:n]); err != nil {
					t.Fatalf("%s: cut in the padding at %d: %v", comp, n, err)
				}
			}
		}
	})
	t.Run("every byte of the metadata flipped", func(t *testing.T) {
		// No panic, no hang, and only errs.Invalid errors, whatever a byte says.
		for _, comp := range []string{"gzip", "none"} {
			img := linuxtest.BuildAppImage(linuxtest.AppImageOptions{Squash: linuxtest.SquashOptions{Compression: comp}})
			s := readSuper(img, l.base)
			for i := int(l.base); i < int(l.base+s.used); i++ {
				if i >= int(l.base)+96 && i < int(l.base+s.inodes) {
					i = int(l.base + s.inodes) // skip the file data
				}
				for _, x := range []byte{0x01, 0x80, 0xff} {
					b := bytes.Clone(img)
					b[i] ^= x
					if _, err := parseAppImage(b); err != nil && errs.KindOf(err) != errs.Invalid {
						t.Fatalf("%s: byte %d ^ %#x: %v", comp, i, x, err)
					}
				}
			}
		}
	})
}
