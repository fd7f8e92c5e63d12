package debuginfo

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/slipwayhq/slipway/pkg/debuginfo/debuginfotest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
	"github.com/slipwayhq/slipway/test/testkit"
)

func parseBytes(t testing.TB, b []byte) (*Archive, error) {
	t.Helper()
	return Parse(bytes.NewReader(b), int64(len(b)))
}

func mustParse(t testing.TB, b []byte) *Archive {
	t.Helper()
	a, err := parseBytes(t, b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return a
}

func parseFixture(t *testing.T, rel string) (*Archive, error) {
	t.Helper()
	f, err := os.Open(fixtures.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return Parse(f, st.Size())
}

func TestFixtures(t *testing.T) {
	const fullUUID = "81384aeb-4837-5f73-a771-417b4399a483"
	tests := []struct {
		file string
		want *Archive
	}{
		{"debug/ios-dsym-single-arm64.zip", &Archive{Kind: KindDSYM, DSYMs: []DSYM{{
			Name: "ios.DSYM", Path: "ios.DSYM", Identifier: "com.icyleaf.iOS", ReleaseVersion: "1.0", BuildVersion: "1", Main: true,
			Slices: []Slice{{UUID: "EA9BBF2D-BFDD-3CE0-85B2-1CBE7152FCA5", Arch: "arm64", Object: "iOS", Size: 866911}},
		}}}},
		{"debug/ios-dsym-single-fat-armv7-arm64.zip", &Archive{Kind: KindDSYM, DSYMs: []DSYM{{
			Name: "iOS.app.dSYM", Path: "iOS.app.dSYM", Identifier: "com.icyleaf.iOS", ReleaseVersion: "1.0", BuildVersion: "2", Main: true,
			Slices: []Slice{
				{UUID: "26DFC15D-BDCE-351F-B5DE-6EE9F5DD6D85", Arch: "armv7", Object: "iOS", Size: 866526},
				{UUID: "17F58291-DD25-3FC8-9417-CCBE8163D33E", Arch: "arm64", Object: "iOS", Size: 866911},
			},
		}}}},
		{"debug/ios-dsyms-two-at-root.zip", &Archive{Kind: KindDSYM, DSYMs: []DSYM{
			{
				Name: "AppInfo.app.dSYM", Path: "AppInfo.app.dSYM", Identifier: "im.ews.ios.AppInfo", ReleaseVersion: "1.0", BuildVersion: "1", Main: true,
				Slices: []Slice{{UUID: "52E65DBE-8234-3387-B733-C5044E26653F", Arch: "arm64", Object: "AppInfo", Size: 1029092}},
			},
			{
				Name: "AppInfoNotificationCenter.appex.dSYM", Path: "AppInfoNotificationCenter.appex.dSYM",
				Identifier: "im.ews.ios.AppInfo.AppInfoNotificationCenter", ReleaseVersion: "1.0", BuildVersion: "1",
				Slices: []Slice{{UUID: "628E9796-746C-3FEC-91E7-586B4BED352A", Arch: "arm64", Object: "AppInfoNotificationCenter", Size: 988131}},
			},
		}}},
		{"debug/android-proguard-full.zip", &Archive{Kind: KindProguard, Proguard: &Proguard{
			UUID: fullUUID, PackageName: "com.icyleaf.appinfo", ReleaseVersion: "1.0", BuildVersion: "1",
			Files: []File{{"AndroidManifest.xml", 1268}, {"R.txt", 147585}, {"mapping.txt", 1666940}},
		}}},
		{"debug/android-proguard-mapping-only.zip", &Archive{Kind: KindProguard, Proguard: &Proguard{
			UUID: fullUUID, Files: []File{{"mapping.txt", 1666940}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := parseFixture(t, tt.file)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", describe(got), describe(tt.want))
			}
		})
	}
}

func describe(a *Archive) any {
	return struct {
		Kind     Kind
		DSYMs    []DSYM
		Proguard any
	}{a.Kind, a.DSYMs, deref(a.Proguard)}
}

func deref(p *Proguard) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestFixtureInvalidEmptyFolder(t *testing.T) {
	_, err := parseFixture(t, "debug/invalid/zip-with-only-empty-folder.zip")
	testkit.WantInvalid(t, err, "no .dSYM bundle or Android mapping/R.txt/AndroidManifest.xml found")
}

// TestFixturesNotDebugFiles checks that app packages are rejected as debug files, cleanly.
func TestFixturesNotDebugFiles(t *testing.T) {
	files := append(fixtures.Glob("ios/*.ipa"), fixtures.Glob("android/*.ap[kb]")...)
	if len(files) == 0 {
		t.Skip("fixtures not present")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		a, err := parseBytes(t, b)
		if err == nil {
			t.Errorf("%s: got %+v, want an error", p, describe(a))
		} else if !errs.Is(err, errs.Invalid) {
			t.Errorf("%s: err = %v, want errs.Invalid", p, err)
		} else {
			t.Logf("%s: %v", p, err)
		}
	}
}

func TestSyntheticDSYMs(t *testing.T) {
	arm64 := debuginfotest.Arch{Name: "arm64", UUID: "ea9bbf2d-bfdd-3ce0-85b2-1cbe7152fca5", Pad: 5000}
	armv7 := debuginfotest.Arch{Name: "armv7", UUID: "26DFC15D-BDCE-351F-B5DE-6EE9F5DD6D85", Pad: 100}
	ext := debuginfotest.Arch{Name: "arm64e", UUID: "628E9796-746C-3FEC-91E7-586B4BED352A"}
	b := debuginfotest.BuildDSYMZip(
		debuginfotest.DSYM{Path: "Build/dSYMs/Ext.appex.DSYM", Identifier: "com.example.app.ext", ReleaseVersion: "2.0", BuildVersion: "7", Archs: []debuginfotest.Arch{ext}},
		debuginfotest.DSYM{Path: "Build/dSYMs/App.app.dSYM", Identifier: "com.example.app", ReleaseVersion: "2.0", BuildVersion: "7", Archs: []debuginfotest.Arch{armv7, arm64}},
		debuginfotest.DSYM{Path: "Kit.framework.dSYM", Archs: []debuginfotest.Arch{{Name: "x86_64", UUID: "00000000-0000-0000-0000-0000000000AB"}}},
	)
	got := mustParse(t, b)
	want := &Archive{Kind: KindDSYM, DSYMs: []DSYM{
		{Name: "Ext.appex.DSYM", Path: "Build/dSYMs/Ext.appex.DSYM", Identifier: "com.example.app.ext", ReleaseVersion: "2.0", BuildVersion: "7",
			Slices: []Slice{{UUID: "628E9796-746C-3FEC-91E7-586B4BED352A", Arch: "arm64e", Object: "Ext", Size: debuginfotest.ThinSize(ext)}}},
		{Name: "App.app.dSYM", Path: "Build/dSYMs/App.app.dSYM", Identifier: "com.example.app", ReleaseVersion: "2.0", BuildVersion: "7", Main: true,
			Slices: []Slice{
				{UUID: "26DFC15D-BDCE-351F-B5DE-6EE9F5DD6D85", Arch: "armv7", Object: "App", Size: debuginfotest.ThinSize(armv7)},
				{UUID: "EA9BBF2D-BFDD-3CE0-85B2-1CBE7152FCA5", Arch: "arm64", Object: "App", Size: debuginfotest.ThinSize(arm64)},
			}},
		{Name: "Kit.framework.dSYM", Path: "Kit.framework.dSYM",
			Slices: []Slice{{UUID: "00000000-0000-0000-0000-0000000000AB", Arch: "x86_64", Object: "Kit", Size: debuginfotest.ThinSize(debuginfotest.Arch{Name: "x86_64", UUID: "00000000-0000-0000-0000-0000000000AB"})}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", describe(got), describe(want))
	}
}

func TestMainWithoutAppBundle(t *testing.T) {
	a := debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"}
	got := mustParse(t, debuginfotest.BuildDSYMZip(
		debuginfotest.DSYM{Path: "A.framework.dSYM", Archs: []debuginfotest.Arch{a}},
		debuginfotest.DSYM{Path: "B.framework.dSYM", Archs: []debuginfotest.Arch{a}},
	))
	if !got.DSYMs[0].Main || got.DSYMs[1].Main {
		t.Errorf("Main = %v, %v; want the first bundle only", got.DSYMs[0].Main, got.DSYMs[1].Main)
	}
}

func TestJunkAndOddEntriesIgnored(t *testing.T) {
	mo := debuginfotest.MachO(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"})
	b := debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "__MACOSX/App.app.dSYM/Contents/Resources/DWARF/._App", Data: []byte("junk")},
		debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/._App", Data: []byte("junk")},
		debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/.DS_Store", Data: []byte("junk")},
		debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/sub/x", Data: []byte("junk")},
		debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/"},
		debuginfotest.Entry{Name: `App.app.dSYM\Contents\Resources\DWARF\App`, Data: mo},
		debuginfotest.Entry{Name: "Other.dSYM/Contents/Info.plist", Data: []byte("no macho here")},
		debuginfotest.Entry{Name: "notes.dSYM", Data: []byte("a file, not a bundle")},
	)
	got := mustParse(t, b)
	if len(got.DSYMs) != 1 || len(got.DSYMs[0].Slices) != 1 || got.DSYMs[0].Slices[0].Object != "App" || got.Proguard != nil {
		t.Errorf("got %+v", describe(got))
	}
}

func TestBundleWithoutMachO(t *testing.T) {
	b := debuginfotest.BuildZip(debuginfotest.Entry{Name: "App.app.dSYM/Contents/Info.plist",
		Data: debuginfotest.InfoPlist(debuginfotest.DSYM{Identifier: "x"})})
	_, err := parseBytes(t, b)
	testkit.WantInvalid(t, err, "no .dSYM bundle or Android", `"App.app.dSYM" has no Mach-O file`)
}

func TestInfoPlistVariants(t *testing.T) {
	mo := debuginfotest.MachO(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"})
	build := func(plist string) []byte {
		return debuginfotest.BuildZip(
			debuginfotest.Entry{Name: "App.app.dSYM/Contents/Info.plist", Data: []byte(plist)},
			debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/App", Data: mo},
		)
	}
	// OpenStep text and a numeric version.
	got := mustParse(t, build(`{CFBundleIdentifier = "com.apple.xcode.dsym.a.b"; CFBundleShortVersionString = "3.1"; CFBundleVersion = 42;}`))
	if d := got.DSYMs[0]; d.Identifier != "a.b" || d.ReleaseVersion != "3.1" || d.BuildVersion != "42" {
		t.Errorf("got %+v", d)
	}
	_, err := parseBytes(t, build(`<plist><dict><key>x</dict>`))
	testkit.WantInvalid(t, err, `"App.app.dSYM/Contents/Info.plist" is not a valid property list`)
	_, err = parseBytes(t, build(`bplist00garbagegarbagegarbagegarbagegarbagegarbage`))
	testkit.WantInvalid(t, err, "not a valid property list")
}

func TestProguardSynthetic(t *testing.T) {
	mapping := []byte("com.example.Foo -> a:\n    void bar() -> a\n")
	rtxt := []byte("int string app_name 0x7f0e001b\n")
	b := debuginfotest.BuildProguardZip(debuginfotest.Proguard{
		Dir: "app/build/outputs/mapping/release", Mapping: mapping, RTxt: rtxt,
		Manifest: debuginfotest.Manifest("com.example.app", "2.3.4", "234"),
	})
	got := mustParse(t, b)
	want := &Archive{Kind: KindProguard, Proguard: &Proguard{
		UUID: debuginfotest.ProguardUUID(mapping), PackageName: "com.example.app", ReleaseVersion: "2.3.4", BuildVersion: "234",
		Files: []File{
			{"AndroidManifest.xml", int64(len(debuginfotest.Manifest("com.example.app", "2.3.4", "234")))},
			{"R.txt", int64(len(rtxt))}, {"mapping.txt", int64(len(mapping))},
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", describe(got), describe(want))
	}

	// Only R.txt: recognised, no UUID.
	got = mustParse(t, debuginfotest.BuildProguardZip(debuginfotest.Proguard{RTxt: rtxt}))
	if got.Kind != KindProguard || got.Proguard.UUID != "" || len(got.Proguard.Files) != 1 {
		t.Errorf("R.txt only: got %+v", describe(got))
	}
}

func TestProguardNamespace(t *testing.T) {
	// The namespace constant is UUIDv5(DNS, "icyleaf.com"), recomputed by the reference code.
	if got, want := formatUUID(proguardNamespace[:], false), "5c87d8ec-e11f-5c5d-bc36-1b36b714429b"; got != want {
		t.Fatalf("namespace = %s, want %s", got, want)
	}
	for _, m := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("abc\n"), 100000)} {
		b := debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: m})
		if got, want := mustParse(t, b).Proguard.UUID, debuginfotest.ProguardUUID(m); got != want {
			t.Errorf("UUID of %d bytes = %s, want %s", len(m), got, want)
		}
	}
}

func TestMappingChoice(t *testing.T) {
	b := debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "old-mapping.txt", Data: []byte("old")},
		debuginfotest.Entry{Name: "release/mapping.txt", Data: []byte("new")},
		debuginfotest.Entry{Name: "release/seeds.txt", Data: []byte("seeds")},
	)
	got := mustParse(t, b)
	if got.Proguard.UUID != debuginfotest.ProguardUUID([]byte("new")) || !reflect.DeepEqual(got.Proguard.Files, []File{{"mapping.txt", 3}}) {
		t.Errorf("got %+v", *got.Proguard)
	}
}

func TestManifestVariants(t *testing.T) {
	build := func(m string) []byte {
		return debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: []byte("m"), Manifest: []byte(m)})
	}
	// Binary AXML: accepted, not read.
	axml := "\x03\x00\x08\x00\x10\x00\x00\x00binary"
	got := mustParse(t, build(axml))
	if p := got.Proguard; p.PackageName != "" || len(p.Files) != 2 {
		t.Errorf("binary manifest: got %+v", *p)
	}
	// ... but alone, it is an app package, not a debug archive.
	_, err := parseBytes(t, debuginfotest.BuildZip(debuginfotest.Entry{Name: "AndroidManifest.xml", Data: []byte(axml)},
		debuginfotest.Entry{Name: "classes.dex", Data: []byte("dex")}))
	testkit.WantInvalid(t, err, "no .dSYM bundle or Android", `"AndroidManifest.xml" is a compiled manifest`)
	// Undeclared android: prefix still read.
	got = mustParse(t, build(`<manifest package="a.b" android:versionName="1" android:versionCode="2"/>`))
	if p := got.Proguard; p.PackageName != "a.b" || p.ReleaseVersion != "1" || p.BuildVersion != "2" {
		t.Errorf("got %+v", *p)
	}
	for m, want := range map[string]string{
		`<manifest package="a"`: "not a valid AndroidManifest.xml",
		`<application/>`:        "root element is <application>",
		``:                      "no <manifest> element",
		`<!DOCTYPE x [<!ENTITY a "aaaa">]><m>&a;</m>`: "not a valid AndroidManifest.xml",
	} {
		_, err = parseBytes(t, build(m))
		testkit.WantInvalid(t, err, want)
	}
}

func TestBothDSYMAndAndroid(t *testing.T) {
	mo := debuginfotest.MachO(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"})
	b := debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "android/mapping.txt", Data: []byte("m")},
		debuginfotest.Entry{Name: "ios/App.app.dSYM/Contents/Resources/DWARF/App", Data: mo},
		// Android-looking names inside a bundle are not Android files.
		debuginfotest.Entry{Name: "ios/App.app.dSYM/Contents/Resources/R.txt", Data: []byte("r")},
	)
	got := mustParse(t, b)
	if got.Kind != KindDSYM || len(got.DSYMs) != 1 || got.Proguard == nil || len(got.Proguard.Files) != 1 {
		t.Errorf("got %+v", describe(got))
	}
}

func TestNotZip(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("hello"), bytes.Repeat([]byte{0xcf, 0xfa, 0xed, 0xfe}, 100)} {
		_, err := parseBytes(t, b)
		testkit.WantInvalid(t, err, "the debug file is not a zip archive")
	}
	// Starts like a zip, but is cut short.
	z := debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: []byte("m")})
	_, err := parseBytes(t, z[:len(z)/2])
	testkit.WantInvalid(t, err)
}

func TestPathTraversal(t *testing.T) {
	mo := debuginfotest.MachO(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"})
	for _, name := range []string{"../App.app.dSYM/Contents/Resources/DWARF/App", "/abs/mapping.txt", `x\..\..\mapping.txt`, "a/../../R.txt"} {
		_, err := parseBytes(t, debuginfotest.BuildZip(debuginfotest.Entry{Name: name, Data: mo}))
		testkit.WantInvalid(t, err)
	}
}

func TestHostileMachO(t *testing.T) {
	good := debuginfotest.Thin(debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555", Pad: 64})
	fat := debuginfotest.MachO(debuginfotest.Arch{Name: "armv7", UUID: "11111111-2222-3333-4444-555555555555", Pad: 100},
		debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555556", Pad: 100})
	// Fat layout: magic 0-3, count 4-7, arch 0 at 8 (cpu 8, sub 12, offset 16, size 20), arch 1 at 28.
	le, be := binary.LittleEndian, binary.BigEndian
	mod := func(b []byte, f func([]byte)) []byte {
		c := bytes.Clone(b)
		f(c)
		return c
	}
	tests := map[string]struct {
		data []byte
		want string
	}{
		"empty":              {nil, "truncated"},
		"truncated header":   {good[:20], "truncated"},
		"truncated commands": {good[:40], "truncated"},
		"not macho":          {[]byte("just some text file"), "unknown magic number"},
		"no uuid":            {mod(good, func(b []byte) { le.PutUint32(b[32:], 0x2) }), "no LC_UUID"},
		"short uuid cmd":     {mod(good, func(b []byte) { le.PutUint32(b[36:], 16); le.PutUint32(b[20:], 16) }), "too short"},
		"cmdsize zero":       {mod(good, func(b []byte) { le.PutUint32(b[36:], 0) }), "invalid size 0"},
		"cmdsize too big":    {mod(good, func(b []byte) { le.PutUint32(b[36:], 4096) }), "invalid size 4096"},
		"too many cmds":      {mod(good, func(b []byte) { le.PutUint32(b[16:], 1000) }), "declares 1000 load commands"},
		"huge sizeofcmds":    {mod(good, func(b []byte) { le.PutUint32(b[20:], 0xfffffff0) }), "over the limit"},
		"fat 1000 arches":    {mod(fat, func(b []byte) { be.PutUint32(b[4:], 1000) }), "claims 1000 architectures"},
		"fat no arches":      {mod(fat, func(b []byte) { be.PutUint32(b[4:], 0) }), "no architectures"},
		"fat truncated":      {fat[:len(fat)-10], "past the end of the file"},
		"fat table cut":      {fat[:20], "truncated"},
		"fat overlap":        {mod(fat, func(b []byte) { be.PutUint32(b[36:], be.Uint32(b[16:])) }), "inside the fat header or another"},
		"fat inside header":  {mod(fat, func(b []byte) { be.PutUint32(b[16:], 4) }), "inside the fat header"},
		"fat tiny size":      {mod(fat, func(b []byte) { be.PutUint32(b[20:], 4) }), "invalid offset"},
		"fat cpu mismatch":   {mod(fat, func(b []byte) { be.PutUint32(b[8:], 7) }), "listed as i386"},
		"fat nested":         {mod(fat, func(b []byte) { copy(b[4096:], []byte{0xca, 0xfe, 0xba, 0xbe}) }), "unknown magic"},
		"fat slice overrun":  {mod(fat, func(b []byte) { be.PutUint32(b[20:], 30) }), "run past its end"},
		"java class":         {[]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52, 1, 2, 3}, "claims 52 architectures"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := readMachO(bytes.NewReader(tt.data), "X.dSYM/Contents/Resources/DWARF/X")
			testkit.WantInvalid(t, err, `"X.dSYM/Contents/Resources/DWARF/X"`, tt.want)

			// Through Parse too: the error names the file.
			z := debuginfotest.BuildZip(debuginfotest.Entry{Name: "X.dSYM/Contents/Resources/DWARF/X", Data: tt.data})
			_, err = parseBytes(t, z)
			testkit.WantInvalid(t, err, `"X.dSYM/Contents/Resources/DWARF/X"`)
		})
	}
}

func TestLimits(t *testing.T) {
	saved := lim
	t.Cleanup(func() { lim = saved })
	mo := debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555", Pad: 2000}

	lim = saved
	lim.mapping = 1 << 20
	// A zip bomb: 16 MiB of zeros deflates to ~16 KiB.
	bomb := debuginfotest.BuildProguardZip(debuginfotest.Proguard{Mapping: make([]byte, 16<<20)})
	_, err := parseBytes(t, bomb)
	testkit.WantInvalid(t, err, "mapping.txt", "limit")

	lim = saved
	lim.inflated = 3000
	_, err = parseBytes(t, debuginfotest.BuildDSYMZip(
		debuginfotest.DSYM{Path: "A.dSYM", Archs: []debuginfotest.Arch{mo}},
		debuginfotest.DSYM{Path: "B.dSYM", Archs: []debuginfotest.Arch{mo}}))
	testkit.WantInvalid(t, err, "inflates to more than 3000 bytes in total")

	lim = saved
	lim.dwarfFile = 1000
	_, err = parseBytes(t, debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "A.dSYM", Archs: []debuginfotest.Arch{mo}}))
	testkit.WantInvalid(t, err, "limit")

	lim = saved
	lim.bundles = 2
	var ds []debuginfotest.DSYM
	for _, n := range []string{"A", "B", "C"} {
		ds = append(ds, debuginfotest.DSYM{Path: n + ".dSYM", Archs: []debuginfotest.Arch{mo}})
	}
	_, err = parseBytes(t, debuginfotest.BuildDSYMZip(ds...))
	testkit.WantInvalid(t, err, "more than 2 .dSYM bundles")

	lim = saved
	lim.machOFiles = 1
	_, err = parseBytes(t, debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "A.dSYM/Contents/Resources/DWARF/A", Data: debuginfotest.Thin(mo)},
		debuginfotest.Entry{Name: "A.dSYM/Contents/Resources/DWARF/B", Data: debuginfotest.Thin(mo)}))
	testkit.WantInvalid(t, err, "more than 1 files")

	lim = saved
	lim.infoPlist = 10
	_, err = parseBytes(t, debuginfotest.BuildDSYMZip(debuginfotest.DSYM{Path: "A.dSYM", Identifier: "a", Archs: []debuginfotest.Arch{mo}}))
	testkit.WantInvalid(t, err, "Info.plist", "limit")

	lim = saved
	lim.manifest = 10
	_, err = parseBytes(t, debuginfotest.BuildProguardZip(debuginfotest.Proguard{Manifest: debuginfotest.Manifest("a", "1", "1")}))
	testkit.WantInvalid(t, err, "AndroidManifest.xml", "limit")
}

// TestUnderstatedSize: an entry whose header declares fewer bytes than it inflates to is refused
// (archive/zip checks the size at EOF), so a declared size cannot be used to slip past a limit.
func TestUnderstatedSize(t *testing.T) {
	data := bytes.Repeat([]byte("mapping line\n"), 1000)
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.DefaultCompression)
	fw.Write(data)
	fw.Close()
	h := &zip.FileHeader{Name: "mapping.txt", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(data),
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: 10}
	raw, err := w.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write(comp.Bytes())
	w.Close()
	_, err = parseBytes(t, buf.Bytes())
	testkit.WantInvalid(t, err, "mapping.txt")
}

// TestParseMemoryBound parses an archive inflating to 24 MiB (a fat DWARF file and a mapping)
// and checks Parse allocates a small fraction of that: memory does not grow with entry sizes.
func TestParseMemoryBound(t *testing.T) {
	const pad = 8 << 20
	z := debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "App.app.dSYM/Contents/Resources/DWARF/App", Data: debuginfotest.MachO(
			debuginfotest.Arch{Name: "armv7", UUID: "11111111-2222-3333-4444-555555555555", Pad: pad},
			debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555556", Pad: pad})},
		debuginfotest.Entry{Name: "mapping.txt", Data: bytes.Repeat([]byte("a.b.C -> a:\n"), 8<<20/12)},
	)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	a, err := parseBytes(t, z)
	runtime.ReadMemStats(&after)
	if err != nil || len(a.DSYMs) != 1 || a.Proguard == nil {
		t.Fatalf("%+v, %v", a, err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("allocated %d bytes", n)
	} else {
		t.Logf("allocated %d bytes for a %d-byte zip inflating to 24 MiB", n, len(z))
	}
}

func TestDuplicateNames(t *testing.T) {
	a := debuginfotest.Arch{Name: "arm64", UUID: "11111111-2222-3333-4444-555555555555"}
	b := debuginfotest.Arch{Name: "arm64", UUID: "66666666-7777-8888-9999-AAAAAAAAAAAA"}
	got := mustParse(t, debuginfotest.BuildZip(
		debuginfotest.Entry{Name: "A.dSYM/Contents/Resources/DWARF/A", Data: debuginfotest.Thin(a)},
		debuginfotest.Entry{Name: "A.dSYM/Contents/Resources/DWARF/A", Data: debuginfotest.Thin(b)},
	))
	if s := got.DSYMs[0].Slices; len(s) != 1 || s[0].UUID != "11111111-2222-3333-4444-555555555555" {
		t.Errorf("got %+v", s)
	}
}
