// Package hostiletest builds small packages made to reach their parser's caps: an entry that
// inflates to the cap from a few KiB of deflate (zeros), logos of the most pixels a header may
// claim, a header that declares a large window. Each is valid as far as its family's claim goes,
// so that the parser, not the detection, meets it. They are small on disk (under 1 MiB), built in
// memory without ever holding what they inflate to, and are shared by the parse-bound tests, the
// memory e2e test and the benchmark.
package hostiletest

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/appinfo/linux/linuxtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
)

// Package is one hostile package.
type Package struct {
	// Name says what it is ("apk-arsc-zeros"); Family is the family that claims it and File a
	// file name to upload it as.
	Name, Family, File string
	Data               []byte
	// Platform is the channel device type that takes it.
	Platform string
}

// Packages returns one hostile package of each kind, built anew (each a few hundred KiB).
func Packages() []Package {
	return []Package{
		{Name: "apk-arsc-zeros", Family: "android", File: "bomb.apk", Platform: "android", Data: APKResourcesZeros()},
		{Name: "apk-arsc-header", Family: "android", File: "table.apk", Platform: "android", Data: APKResourcesHeader()},
		{Name: "aab-resources-zeros", Family: "android", File: "bomb.aab", Platform: "android", Data: AABResourcesZeros()},
		{Name: "msix-4096-logos", Family: "windows", File: "logos.msix", Platform: "windows", Data: MSIXLogos()},
		{Name: "exe-zip-window", Family: "windows-exe-zip", File: "window.zip", Platform: "windows", Data: EXEZipWindow()},
		{Name: "hap-index-zeros", Family: "harmony", File: "bomb.hap", Platform: "harmonyos", Data: HAPIndexZeros()},
		{Name: "hap-index-header", Family: "harmony", File: "index.hap", Platform: "harmonyos", Data: HAPIndexHeader()},
		{Name: "app-inflated-hap", Family: "harmony", File: "bomb.app", Platform: "harmonyos", Data: AppInflatedHAP()},
		{Name: "app-stored-hap", Family: "harmony", File: "stored.app", Platform: "harmonyos", Data: AppStoredHAP()},
		{Name: "deb-control-zeros", Family: "linux", File: "bomb.deb", Platform: "linux", Data: DebControlZeros()},
		{Name: "ipa-huge-plist", Family: "apple", File: "plist.ipa", Platform: "ios", Data: IPAHugePlist()},
	}
}

// entry is one file of an archive: Data, or Zeros bytes of zeros; deflated unless Store.
type entry struct {
	Name  string
	Data  []byte
	Zeros int64
	Store bool
}

// zipOf returns a zip archive of the entries, writing zeros a MiB at a time.
func zipOf(entries ...entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	zeros := make([]byte, 1<<20)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		if e.Store {
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			panic(err)
		}
		if _, err := w.Write(e.Data); err != nil {
			panic(err)
		}
		for left := e.Zeros; left > 0; left -= int64(len(zeros)) {
			if _, err := w.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
				panic(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

var manifest = androidtest.AndroidManifest{Package: "com.example.hostile", VersionCode: 1, VersionName: "1.0",
	LabelStrings: map[string]string{"": "Hostile"}}

// APKResourcesZeros is an APK (about 70 KB) whose resources.arsc is 64 MiB of deflated zeros,
// android.MaxResourcesBytes.
func APKResourcesZeros() []byte {
	return zipOf(entry{Name: "AndroidManifest.xml", Data: androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: manifest})},
		entry{Name: "resources.arsc", Zeros: 64 << 20}, entry{Name: "classes.dex", Data: []byte("dex\n035\x00")})
}

// APKResourcesHeader is APKResourcesZeros with a resource table's header at the start of its
// 64 MiB: the parser reads the table whole before its first chunk fails.
func APKResourcesHeader() []byte {
	const size = 64 << 20
	head := make([]byte, 12)
	binary.LittleEndian.PutUint16(head, 0x0002) // RES_TABLE_TYPE
	binary.LittleEndian.PutUint16(head[2:], 12)
	binary.LittleEndian.PutUint32(head[4:], size)
	binary.LittleEndian.PutUint32(head[8:], 1)
	return zipOf(entry{Name: "AndroidManifest.xml", Data: androidtest.BuildAXML(androidtest.APKOptions{AndroidManifest: manifest})},
		entry{Name: "resources.arsc", Data: head, Zeros: size - int64(len(head))}, entry{Name: "classes.dex", Data: []byte("dex\n035\x00")})
}

// AABResourcesZeros is an app bundle whose base/resources.pb is 64 MiB of deflated zeros.
func AABResourcesZeros() []byte {
	o := androidtest.AABOptions{AndroidManifest: manifest}
	return zipOf(entry{Name: "base/manifest/AndroidManifest.xml", Data: androidtest.BuildAABManifest(o)},
		entry{Name: "base/resources.pb", Zeros: 64 << 20}, entry{Name: "BundleConfig.pb", Data: []byte{}})
}

// PNGZeros is a side×side PNG of 16-bit RGBA (8 bytes a pixel) whose pixels are all zero: a few
// hundred KiB for 4096×4096, 128 MiB once decoded. With truncate, it stops halfway through its
// image data, as a logo cut short would.
func PNGZeros(side int, truncate bool) []byte {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		out.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		out.WriteString(typ)
		out.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		out.Write(n[:])
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(side))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(side))
	ihdr[8], ihdr[9] = 16, 6
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	row := make([]byte, side*8+1)
	for range side {
		_, _ = zw.Write(row)
	}
	_ = zw.Close()
	idat := z.Bytes()
	if truncate {
		chunk("IDAT", idat[:len(idat)/2])
		return out.Bytes()[:out.Len()-4] // cut inside the chunk: no CRC, no IEND
	}
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return out.Bytes()
}

// MSIXLogos is an MSIX whose four logo files are 4096×4096 16-bit PNGs, three of them truncated:
// what decoding every candidate in turn once cost 128 MiB each.
func MSIXLogos() []byte {
	whole, cut := PNGZeros(4096, false), PNGZeros(4096, true)
	files := []windowstest.LogoFile{{Name: "Assets/StoreLogo.scale-400.png", Size: 4096, Data: cut},
		{Name: "Assets/StoreLogo.scale-200.png", Size: 4096, Data: cut}, {Name: "Assets/StoreLogo.scale-150.png", Size: 4096, Data: cut},
		{Name: "Assets/StoreLogo.scale-100.png", Size: 4096, Data: whole}}
	o := windowstest.MSIXOptions{LogoFiles: files}
	entries := []entry{{Name: "AppxManifest.xml", Data: windowstest.AppxManifest(o)}}
	for _, f := range files {
		entries = append(entries, entry{Name: f.Name, Data: f.Data, Store: true})
	}
	return zipOf(entries...)
}

// EXEZipWindow is a zip holding a deflated .exe whose resource section is 64 MiB (its directory,
// then zeros): inflating it to read the resources keeps a 64 MiB window.
func EXEZipWindow() []byte {
	pe := windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Window", "1.0.0.0")})
	const rsrc = 64 << 20
	lfanew := int(binary.LittleEndian.Uint32(pe[0x3c:]))
	sections := int(binary.LittleEndian.Uint16(pe[lfanew+6:]))
	table := lfanew + 24 + int(binary.LittleEndian.Uint16(pe[lfanew+20:]))
	var end int64
	for i := range sections {
		s := pe[table+40*i:]
		if strings.TrimRight(string(s[:8]), "\x00") != ".rsrc" {
			continue
		}
		binary.LittleEndian.PutUint32(s[8:], rsrc)
		binary.LittleEndian.PutUint32(s[16:], rsrc)
		end = int64(binary.LittleEndian.Uint32(s[20:])) + rsrc
	}
	if end == 0 {
		panic("hostiletest: the PE has no .rsrc section")
	}
	return zipOf(entry{Name: "Window/Window.exe", Data: pe, Zeros: end - int64(len(pe))})
}

// hapEntries returns the files of a small HAP, resources.index replaced by 16 MiB of deflated
// zeros (harmony.MaxResourcesIndexBytes) when bomb is set.
func hapEntries(bomb bool) []entry {
	files, err := harmonytest.HAPEntries(harmonytest.HAPOptions{BundleName: "com.example.hostile", IconSize: -1})
	if err != nil {
		panic(err)
	}
	var out []entry
	for _, f := range files {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if f.Name == "resources.index" && bomb {
			out = append(out, entry{Name: f.Name, Zeros: 16 << 20})
			continue
		}
		out = append(out, entry{Name: f.Name, Data: f.Data})
	}
	return out
}

// HAPIndexZeros is a HAP whose resources.index is 16 MiB of deflated zeros.
func HAPIndexZeros() []byte { return zipOf(hapEntries(true)...) }

// HAPIndexHeader is HAPIndexZeros with a restool version at the start of its resources.index:
// the parser reads the index whole before its header fails.
func HAPIndexHeader() []byte {
	entries := hapEntries(true)
	for i := range entries {
		if entries[i].Name == "resources.index" {
			head := make([]byte, 128)
			copy(head, "Restool 4.105")
			entries[i].Data, entries[i].Zeros = head, 16<<20-128
		}
	}
	return zipOf(entries...)
}

// AppInflatedHAP is a HarmonyOS .app whose entry HAP is deflated and inflates to 32 MiB
// (harmony.MaxInflatedHAPBytes): a stored filler of zeros, and resources.index of 16 MiB of
// deflated zeros inside it.
func AppInflatedHAP() []byte {
	return app(zipOf(append(hapEntries(true), entry{Name: "libs/arm64-v8a/libfiller.so", Zeros: 31 << 20, Store: true})...), false)
}

// AppStoredHAP is a HarmonyOS .app whose entry HAP is stored, as the packing tool writes it (read
// in place), and is HAPIndexHeader: a resources.index with a header, then 16 MiB of deflated
// zeros, read whole.
func AppStoredHAP() []byte { return app(HAPIndexHeader(), true) }

// app is an .app of pack.info and the entry HAP hap, stored or deflated.
func app(hap []byte, store bool) []byte {
	packInfo := fmt.Sprintf(`{"summary":{"app":{"bundleName":"com.example.hostile","version":{"code":1000000,"name":"1.0.0"}},`+
		`"modules":[{"mainAbility":"EntryAbility","deviceType":["phone"],"distro":{"moduleType":"entry","moduleName":"entry"}}]},`+
		`"packages":[{"name":"entry-default","moduleType":"entry","deviceType":["phone"],"deliveryWithInstall":true}],"size":%d}`, len(hap))
	return zipOf(entry{Name: "pack.info", Data: []byte(packInfo)}, entry{Name: "entry-default.hap", Data: hap, Store: store})
}

// DebControlZeros is a .deb whose control.tar.gz inflates to 16 MiB (linux.MaxDebControlInflated)
// of zeros before its ./control.
func DebControlZeros() []byte {
	return linuxtest.BuildDeb(linuxtest.DebOptions{Package: "hostile",
		Before: []linuxtest.TarFile{{Name: "./md5sums", Data: make([]byte, 16<<20-8<<10)}}})
}

// IPAHugePlist is an .ipa whose Info.plist is apple.MaxPlistBytes (4 MiB): the identity keys,
// then a string of 4 MiB less a KiB.
func IPAHugePlist() []byte {
	var p strings.Builder
	p.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<plist version="1.0"><dict>`)
	for _, kv := range [][2]string{{"CFBundleIdentifier", "com.example.hostile"}, {"CFBundleName", "Hostile"},
		{"CFBundleShortVersionString", "1.0"}, {"CFBundleVersion", "1"}, {"CFBundleExecutable", "Hostile"}, {"MinimumOSVersion", "15.0"}} {
		fmt.Fprintf(&p, "<key>%s</key><string>%s</string>", kv[0], kv[1])
	}
	p.WriteString("<key>Padding</key><string>")
	p.WriteString(strings.Repeat("A", 4<<20-1024-p.Len()))
	p.WriteString("</string></dict></plist>\n")
	return appletest.BuildIPA(appletest.IPAOptions{AppName: "Hostile", RawInfoPlist: []byte(p.String())})
}
