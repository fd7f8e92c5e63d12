package appletest

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// BenchIPAOptions describes a large synthetic .ipa laid out like a real one, for end-to-end
// benchmarks (test/bench): unlike WriteIPA's FillerBytes, which puts every bundle file at the
// tail (where an upload's kept tail makes parsing free), the files a parser reads sit where they
// would in an exported app, so parsing costs the storage requests it costs in production.
//
// In archive order:
//
//	Payload/X.app/Info.plist, PkgInfo, embedded.mobileprovision, _CodeSignature/CodeResources
//	Payload/X.app/X                          the executable: ExecutableBytes, incompressible
//	Payload/X.app/Assets.car                 incompressible, sized so the archive is exactly Size
//	Payload/X.app/AppIcon*.png               the declared icons (Apple-crushed PNGs)
//	Payload/X.app/Frameworks/*.framework/    Frameworks binaries of 4 MiB, with Info.plist
//	Payload/X.app/*.lproj, *.nib, *.png, ... Resources small files (deflated text, stored images)
//
// The central directory therefore holds about Resources+30 entries (a few hundred KiB for the
// default 4000), as in an app with a few thousand resource files.
type BenchIPAOptions struct {
	// Size is the exact size of the archive in bytes. It must leave room for the other entries
	// (about ExecutableBytes + Frameworks×4 MiB + 20 MiB of resources).
	Size int64
	// App names the bundle (AppName, BundleID, Version, Build, MinOS, ...). Its FillerBytes and
	// Extra are ignored. Icons default to the iPhone and iPad app icon set and Profile to an
	// ad-hoc profile with a few devices.
	App IPAOptions
	// ExecutableBytes is the main executable's size (default Size/4).
	ExecutableBytes int64
	// Frameworks is the number of embedded frameworks (default 6; -1 for none).
	Frameworks int
	// Resources is the number of small resource files (default 4000; -1 for none).
	Resources int
}

// benchFrameworkBytes is the binary size of each embedded framework.
const benchFrameworkBytes = 4 << 20

// WriteBenchIPA streams the .ipa o describes to w and returns its size, which is exactly o.Size.
// The content is deterministic: the same options always give the same bytes.
func WriteBenchIPA(w io.Writer, o BenchIPAOptions) (int64, error) {
	if o.Size <= 0 {
		return 0, errors.New("appletest: BenchIPAOptions.Size must be positive")
	}
	// A dry run with an empty Assets.car measures everything else; Assets.car takes the rest.
	// Sizes do not depend on the random content, so the real run lands exactly on Size.
	var dry benchCounter
	if err := writeBenchIPA(&dry, o, 0); err != nil {
		return 0, err
	}
	assets := o.Size - dry.n
	if assets < 0 {
		return 0, fmt.Errorf("appletest: %d bytes is too small for this layout (it needs at least %d)", o.Size, dry.n)
	}
	cw := &benchCounter{w: w}
	if err := writeBenchIPA(cw, o, assets); err != nil {
		return cw.n, err
	}
	if cw.n != o.Size {
		return cw.n, fmt.Errorf("appletest: wrote %d bytes, want %d (layout sizes are not deterministic)", cw.n, o.Size)
	}
	return cw.n, nil
}

func writeBenchIPA(w io.Writer, o BenchIPAOptions, assetsBytes int64) error {
	a := o.App
	a.AppName = appleOr(a.AppName, "Demo")
	if a.Icons == nil {
		a.Icons = []IconFile{
			{Name: "AppIcon60x60@2x.png", Size: 120, CgBI: true},
			{Name: "AppIcon60x60@3x.png", Size: 180, CgBI: true},
			{Name: "AppIcon76x76@2x~ipad.png", Size: 152, CgBI: true},
			{Name: "AppIcon83.5x83.5@2x~ipad.png", Size: 167, CgBI: true},
		}
	}
	if a.Profile == nil && a.RawProfile == nil {
		a.Profile = &ProfileOptions{Devices: []string{
			"00008030-000A1B2C3D4E5F60", "00008101-001122334455667A", "00008110-00ABCDEF01234567"}}
	}
	execBytes := o.ExecutableBytes
	if execBytes <= 0 {
		execBytes = o.Size / 4
	}
	frameworks := o.Frameworks
	if frameworks == 0 {
		frameworks = 6
	}
	resources := o.Resources
	if resources == 0 {
		resources = 4000
	}
	app := "Payload/" + a.AppName + ".app/"

	// The bundle's Info.plist, as WriteIPA writes it.
	info := map[string]any{
		"CFBundleName":               a.AppName,
		"CFBundleExecutable":         a.AppName,
		"CFBundleIdentifier":         appleOr(a.BundleID, "com.example.demo"),
		"CFBundleShortVersionString": appleOr(a.Version, "1.0"),
		"CFBundleVersion":            appleOr(a.Build, "1"),
		"CFBundlePackageType":        "APPL",
		"MinimumOSVersion":           appleOr(a.MinOS, "13.0"),
		"DTPlatformName":             appleOr(a.PlatformName, "iphoneos"),
		"CFBundleSupportedPlatforms": []string{"iPhoneOS"},
		"UIDeviceFamily":             a.DeviceFamily,
	}
	if a.DeviceFamily == nil {
		info["UIDeviceFamily"] = []int{1, 2}
	}
	if a.DisplayName != "" {
		info["CFBundleDisplayName"] = a.DisplayName
	}
	if names := appleIconNames(a.Icons); len(names) > 0 {
		info["CFBundleIcons"] = map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": names}}
		info["CFBundleIcons~ipad"] = map[string]any{"CFBundlePrimaryIcon": map[string]any{"CFBundleIconFiles": names}}
	}
	plistData, err := appleEncodeInfo(info, a.InfoPlist, a.RawInfoPlist, a.BinaryPlist)
	if err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(0x5117, 0xa7))
	res := benchResources(rng, app, resources)

	zw := zip.NewWriter(w)
	// Bundle head: what a parser reads first.
	head := []Entry{{Name: "Payload/"}, {Name: app}, {Name: app + "Info.plist", Data: plistData},
		{Name: app + "PkgInfo", Data: []byte("APPL????")}}
	if p := appleProfileBytes(a.Profile, a.RawProfile); p != nil {
		head = append(head, Entry{Name: app + "embedded.mobileprovision", Data: p})
	}
	head = append(head, Entry{Name: app + "_CodeSignature/", Data: nil},
		Entry{Name: app + "_CodeSignature/CodeResources", Data: benchCodeResources(rng, res)})
	if err := appleWriteEntries(zw, head); err != nil {
		return err
	}
	// The executable and the asset catalog: most of the bytes.
	blobs := rand.NewChaCha8([32]byte{'s', 'l', 'i', 'p', 'w', 'a', 'y', '-', 'b', 'e', 'n', 'c', 'h'})
	if err := benchBlob(zw, app+a.AppName, execBytes, appleFakeMachO(), blobs); err != nil {
		return err
	}
	if err := benchBlob(zw, app+"Assets.car", assetsBytes, []byte("BOMStore"), blobs); err != nil {
		return err
	}
	// Icons, in the middle of the archive.
	var icons []Entry
	for _, ic := range a.Icons {
		data := StandardPNG(ic.Size, ic.Size)
		if ic.CgBI {
			data = CgBIPNG(ic.Size, ic.Size)
		}
		icons = append(icons, Entry{Name: app + ic.Name, Data: data, Store: true})
	}
	if err := appleWriteEntries(zw, icons); err != nil {
		return err
	}
	// Embedded frameworks.
	for i := range max(frameworks, 0) {
		fw := fmt.Sprintf("%sFrameworks/Lib%02d.framework/", app, i)
		fwInfo := appleMustPlistXML(map[string]any{"CFBundleIdentifier": fmt.Sprintf("com.example.lib%02d", i),
			"CFBundleExecutable": fmt.Sprintf("Lib%02d", i), "CFBundlePackageType": "FMWK"})
		if err := appleWriteEntries(zw, []Entry{{Name: fw}, {Name: fw + "Info.plist", Data: fwInfo}}); err != nil {
			return err
		}
		if err := benchBlob(zw, fmt.Sprintf("%sLib%02d", fw, i), benchFrameworkBytes, appleFakeMachO(), blobs); err != nil {
			return err
		}
	}
	// A few thousand small resources; the central directory follows them.
	if err := appleWriteEntries(zw, res); err != nil {
		return err
	}
	return zw.Close()
}

// benchBlob writes a stored entry of n bytes starting with magic, the rest pseudo-random.
func benchBlob(zw *zip.Writer, name string, n int64, magic []byte, rng *rand.ChaCha8) error {
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	m := min(int64(len(magic)), n)
	if _, err := w.Write(magic[:m]); err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for left := n - m; left > 0; {
		c := chunk[:min(left, int64(len(chunk)))]
		_, _ = rng.Read(c)
		if _, err := w.Write(c); err != nil {
			return err
		}
		left -= int64(len(c))
	}
	return nil
}

// benchResources returns n small resource entries under app, with realistic names and sizes:
// localized strings and nibs (deflated text) and images (stored, incompressible).
func benchResources(rng *rand.Rand, app string, n int) []Entry {
	if n <= 0 {
		return nil
	}
	langs := []string{"Base", "en", "de", "fr", "es", "it", "ja", "ko", "zh-Hans", "zh-Hant", "pt-BR", "ru", "nl",
		"sv", "da", "fi", "nb", "pl", "tr", "ar", "he", "th", "id", "ms", "vi", "uk", "cs", "hu", "ro", "el"}
	words := strings.Fields("account settings profile upload release channel build version install download " +
		"cancel confirm delete share title subtitle message error retry network offline welcome continue back " +
		"next done edit save search filter sort notification privacy terms help about language theme")
	text := func(size int) []byte {
		var b bytes.Buffer
		for b.Len() < size {
			fmt.Fprintf(&b, "\"%s_%s_%d\" = \"%s %s %s\";\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))],
				rng.IntN(1000), words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		}
		return b.Bytes()[:size]
	}
	random := func(size int) []byte {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	// Sizes are log-uniform between 256 B and 32 KiB (about 6 KiB on average).
	size := func() int { return int(256 * float64(uint(1)<<rng.IntN(8)) * (1 + rng.Float64())) }
	var out []Entry
	dirs := map[string]bool{}
	add := func(name string, data []byte, store bool) {
		if i := strings.LastIndexByte(name, '/'); i >= 0 && !dirs[name[:i+1]] {
			dirs[name[:i+1]] = true
			out = append(out, Entry{Name: name[:i+1]})
		}
		out = append(out, Entry{Name: name, Data: data, Store: store})
	}
	for i := 0; len(out) < n; i++ {
		switch k := i % 8; {
		case k < 3: // localized strings
			lang := langs[(i/8)%len(langs)]
			add(fmt.Sprintf("%s%s.lproj/Strings%04d.strings", app, lang, i), text(size()), false)
		case k < 5: // compiled storyboards
			add(fmt.Sprintf("%sBase.lproj/Screen%02d.storyboardc/View%04d.nib", app, i%40, i), text(size()), false)
		case k < 7: // images outside the asset catalog
			add(fmt.Sprintf("%sImages/image%04d@2x.png", app, i), append([]byte("\x89PNG\r\n\x1a\n"), random(size())...), true)
		default: // data files
			add(fmt.Sprintf("%sData/record%04d.json", app, i), text(size()), false)
		}
	}
	return out[:n]
}

// benchCodeResources returns a CodeResources property list naming every resource with a
// (random) hash, as _CodeSignature/CodeResources does.
func benchCodeResources(rng *rand.Rand, res []Entry) []byte {
	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">\n<dict>\n\t<key>files</key>\n\t<dict>\n")
	h := make([]byte, 20)
	for _, e := range res {
		if strings.HasSuffix(e.Name, "/") {
			continue
		}
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		_, name, _ := strings.Cut(strings.TrimPrefix(e.Name, "Payload/"), "/")
		fmt.Fprintf(&b, "\t\t<key>%s</key>\n\t\t<data>%s</data>\n", name, base64.StdEncoding.EncodeToString(h))
	}
	b.WriteString("\t</dict>\n</dict>\n</plist>\n")
	return b.Bytes()
}

// appleMustPlistXML encodes v as an XML property list.
func appleMustPlistXML(v any) []byte {
	b, err := appleEncodeInfo(map[string]any{}, v.(map[string]any), nil, false)
	if err != nil {
		panic(err)
	}
	return b
}

// benchCounter counts the bytes written through it, to w when w is not nil.
type benchCounter struct {
	w io.Writer
	n int64
}

func (c *benchCounter) Write(p []byte) (int, error) {
	if c.w == nil {
		c.n += int64(len(p))
		return len(p), nil
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
