package platforms_test

import (
	"archive/zip"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/appinfo/windows/windowstest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// component is a component a breakdown must have (name and kind).
type component struct{ name, kind string }

// TestFixtureBreakdowns checks, for every package of the shared fixtures, that the breakdown's
// components add up to the file's size (Download) and to the entries' uncompressed total
// (Install, counted again here with archive/zip), that every file is counted once and listed
// with its sizes, and that the components the README's layout implies are there. Non-zip
// packages have only Download.
func TestFixtureBreakdowns(t *testing.T) {
	for _, tc := range []struct {
		file string
		zip  bool
		want []component
	}{
		{"ios/appinfodemo-iphone-1.2.3-5.ipa", true, []component{{"AppInfoDemo", appinfo.KindExecutable}, {"Localizations", appinfo.KindLocalization}}},
		{"ios/bundle-ipad-1.0-1.ipa", true, []component{{"bundle", appinfo.KindExecutable}, {"Symbols", appinfo.KindSymbols}, {"BCSymbolMaps", appinfo.KindSymbols}}},
		{"ios/demo-universal-enterprise-1.0-1.ipa", true, []component{{"Demo", appinfo.KindExecutable}, {"PlugIns/Notification.appex", appinfo.KindExtension}}},
		{"ios/ios-simple-objc-1.0-1.ipa", true, []component{{"ios-simple-objc", appinfo.KindExecutable}}},
		{"ios/test-assetscar-icon-1.0-1.ipa", true, []component{{"Test", appinfo.KindExecutable}, {"Assets.car", appinfo.KindAssets}}},
		{"ios/very-capable-app-1.0-1.ipa", true, []component{{"very-capable-app", appinfo.KindExecutable}}},
		{"ios/helloworld-legacy-ios5-1.0-1.0.ipa", true, []component{{"helloworld", appinfo.KindExecutable}}},
		{"android/appinfodemo-2.1.0-10.apk", true, []component{{"Dex", appinfo.KindCode}, {"resources.arsc", appinfo.KindResources}, {"res/", appinfo.KindResources}, {"META-INF/", appinfo.KindSignature}}},
		{"android/appinfodemo-2.1.0-10.aab", true, []component{{"base/", appinfo.KindModule}, {"META-INF/", appinfo.KindSignature}, {"BUNDLE-METADATA/", appinfo.KindSymbols}}},
		{"android/appinfoweardemo-wear-1.0-1.apk", true, []component{{"Dex", appinfo.KindCode}}},
		{"android/politedroid-1.3-4.apk", true, []component{{"Dex", appinfo.KindCode}, {"res/", appinfo.KindResources}}},
		{"macos/guiapp-unsigned-1.0-1.zip", true, []component{{"Contents/MacOS/GuiApp", appinfo.KindExecutable}, {"Assets.car", appinfo.KindAssets}, {"Localizations", appinfo.KindLocalization}}},
		{"other/harmony-myapplication-1.0.0.hap", true, []component{{"Bytecode", appinfo.KindCode}, {"Resources", appinfo.KindResources}}},
		{"other/harmony-myapplication-1.0.0.app", true, []component{{"entry-default.hap", appinfo.KindModule}}},
		{"other/windows-topbar-1.0.0.zip", true, []component{{"TopBar.exe", appinfo.KindExecutable}, {"Top-level files", appinfo.KindFolder}}},
		{"other/windows-upx-3.08.exe", false, nil},
		{"windows/fieldtool-0.9.1.msi", false, nil},
		{"linux/field-tool_0.9.1-1_arm64.deb", false, nil},
		{"linux/field-tool-0.9.1-7.noarch.rpm", false, nil},
		{"linux/Field_Tool-0.9.1-aarch64.AppImage", false, nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data := fixtures.Read(t, tc.file)
			checkBreakdown(t, data, tc.zip, tc.want)
		})
	}
}

// TestSyntheticBreakdowns cuts packages built in code, so a clone without the fixtures covers
// every family's components: frameworks, extensions, ABIs, modules, folders.
func TestSyntheticBreakdowns(t *testing.T) {
	blob := bytes.Repeat([]byte("slipway "), 4096)
	app := "Payload/Demo.app/"
	for _, tc := range []struct {
		name string
		data []byte
		want []component
	}{
		{"ipa", appletest.BuildIPA(appletest.IPAOptions{Profile: &appletest.ProfileOptions{}, Extra: []appletest.Entry{
			{Name: app + "Frameworks/Lottie.framework/Lottie", Data: blob},
			{Name: app + "Frameworks/libswiftCore.dylib", Data: blob},
			{Name: app + "PlugIns/Widget.appex/Widget", Data: blob},
			{Name: app + "PlugIns/Widget.appex/Assets.car", Data: blob},
			{Name: app + "Watch/Watch.app/Watch", Data: blob},
			{Name: app + "Assets.car", Data: blob},
			{Name: app + "en.lproj/Localizable.strings", Data: blob},
			{Name: app + "fr.lproj/Localizable.strings", Data: blob},
			{Name: "SwiftSupport/iphoneos/libswiftCore.dylib", Data: blob},
			{Name: "Symbols/0000.symbols", Data: blob},
		}}), []component{
			{"Demo", appinfo.KindExecutable}, {"Frameworks/Lottie.framework", appinfo.KindFramework},
			{"Frameworks/libswiftCore.dylib", appinfo.KindFramework}, {"PlugIns/Widget.appex", appinfo.KindExtension},
			{"Watch/Watch.app", appinfo.KindExtension}, {"Assets.car", appinfo.KindAssets},
			{"Localizations", appinfo.KindLocalization}, {"Resources", appinfo.KindResources},
			{"SwiftSupport", appinfo.KindOther}, {"Symbols", appinfo.KindSymbols},
		}},
		{"macOS zip", appletest.BuildMacZip(appletest.MacZipOptions{Extra: []appletest.Entry{
			{Name: "Demo.app/Contents/Frameworks/Sparkle.framework/Versions/B/Sparkle", Data: blob},
			{Name: "Demo.app/Contents/PlugIns/Finder.appex/Contents/MacOS/Finder", Data: blob},
			{Name: "Demo.app/Contents/Resources/Assets.car", Data: blob},
		}}), []component{
			{"Contents/Frameworks/Sparkle.framework", appinfo.KindFramework},
			{"Contents/PlugIns/Finder.appex", appinfo.KindExtension}, {"Assets.car", appinfo.KindAssets},
		}},
		{"apk", androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.a"}, Entries: []androidtest.AndroidEntry{
			{Name: "lib/arm64-v8a/libapp.so", Data: blob}, {Name: "lib/x86_64/libapp.so", Data: blob},
			{Name: "assets/data.bin", Data: blob}, {Name: "res/raw/a.bin", Data: blob},
			{Name: "META-INF/CERT.RSA", Data: blob}, {Name: "classes2.dex", Data: blob},
		}}), []component{
			{"Dex", appinfo.KindCode}, {"lib/arm64-v8a/", appinfo.KindNative}, {"lib/x86_64/", appinfo.KindNative},
			{"resources.arsc", appinfo.KindResources}, {"res/", appinfo.KindResources}, {"assets/", appinfo.KindAssets},
			{"META-INF/", appinfo.KindSignature}, {appinfo.ComponentOther, appinfo.KindOther},
		}},
		{"aab", androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.a"}, Entries: []androidtest.AndroidEntry{
			{Name: "base/lib/arm64-v8a/libapp.so", Data: blob}, {Name: "base/dex/classes.dex", Data: blob},
			{Name: "camera/manifest/AndroidManifest.xml", Data: blob}, {Name: "camera/lib/arm64-v8a/libcam.so", Data: blob},
			{Name: "BUNDLE-METADATA/com.android.tools.build.obfuscation/proguard.map", Data: blob},
		}}), []component{
			{"base/", appinfo.KindModule}, {"base/lib/arm64-v8a/", appinfo.KindNative},
			{"camera/", appinfo.KindModule}, {"camera/lib/arm64-v8a/", appinfo.KindNative},
			{"BUNDLE-METADATA/", appinfo.KindSymbols}, {appinfo.ComponentOther, appinfo.KindOther},
		}},
		{"hap", harmonytest.BuildHAP(harmonytest.HAPOptions{Architectures: []string{"arm64-v8a", "x86_64"},
			Extra: []harmonytest.Entry{{Name: "ets/widget.abc", Data: blob}}}), []component{
			{"libs/arm64-v8a/", appinfo.KindNative}, {"libs/x86_64/", appinfo.KindNative},
			{"Bytecode", appinfo.KindCode}, {"Resources", appinfo.KindResources}, {appinfo.ComponentOther, appinfo.KindOther},
		}},
		{"harmony app", harmonytest.BuildApp(harmonytest.AppOptions{HAP: harmonytest.HAPOptions{Architectures: []string{"arm64-v8a"}}}),
			[]component{{"entry-default.hap", appinfo.KindModule}, {appinfo.ComponentOther, appinfo.KindOther}}},
		{"msix", windowstest.BuildMSIX(windowstest.MSIXOptions{}), []component{
			{"App/", appinfo.KindFolder}, {"Assets/", appinfo.KindFolder}, {"Package metadata", appinfo.KindSignature},
		}},
		{"msix bundle", windowstest.BuildMSIXBundle(windowstest.BundleOptions{}), []component{
			{"FieldTool_1.2.3.0_x64.msix", appinfo.KindModule}, {"FieldTool_1.2.3.0_arm64.msix", appinfo.KindModule},
			{"Package metadata", appinfo.KindSignature},
		}},
		{"exe zip", windowstest.BuildZip(
			windowstest.Entry{Name: "Demo/demo.exe", Data: windowstest.BuildPE(windowstest.PEOptions{Version: windowstest.DefaultVersion("Demo", "1.0.0.0")})},
			windowstest.Entry{Name: "Demo/readme.txt", Data: blob},
			windowstest.Entry{Name: "Demo/locales/fr.pak", Data: blob},
		), []component{
			{"Demo/demo.exe", appinfo.KindExecutable}, {"Demo/locales/", appinfo.KindFolder}, {"Top-level files", appinfo.KindFolder},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkBreakdown(t, tc.data, true, tc.want) })
	}
}

// TestNestedLargest checks that the largest files of an .app and an MSIX bundle list the files
// inside the nested package the parse opened, under its name.
func TestNestedLargest(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"harmony app", "entry-default.hap/libs/arm64-v8a/libentry.so", harmonytest.BuildApp(harmonytest.AppOptions{HAP: harmonytest.HAPOptions{Architectures: []string{"arm64-v8a"}}})},
		{"msix bundle", "FieldTool_1.2.3.0_x64.msix/App/FieldTool.exe", windowstest.BuildMSIXBundle(windowstest.BundleOptions{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := parse(t, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			b := info.Sizes
			if !slices.ContainsFunc(b.Largest, func(f appinfo.File) bool { return f.Path == tc.want }) {
				t.Errorf("Largest = %v, want %s among them", b.Largest, tc.want)
			}
			if len(b.Largest) != b.Files {
				t.Errorf("%d files listed, Files = %d", len(b.Largest), b.Files)
			}
			sum := 0
			for _, c := range b.Components {
				sum += c.Files
			}
			if sum >= b.Files {
				t.Errorf("components hold %d files, Files = %d: the nested package's files should count instead of it", sum, b.Files)
			}
		})
	}
}

// checkBreakdown parses data and checks its breakdown's sums, file list and components.
func checkBreakdown(t *testing.T, data []byte, isZip bool, want []component) {
	t.Helper()
	info, err := parse(t, data)
	if err != nil {
		t.Fatal(err)
	}
	b := info.Sizes
	if b == nil {
		t.Fatal("no Sizes")
	}
	if b.Download != int64(len(data)) {
		t.Errorf("Download = %d, want the file size %d", b.Download, len(data))
	}
	if !isZip {
		if b.Install != 0 || len(b.Components) != 0 || len(b.Largest) != 0 || b.Files != 0 {
			t.Errorf("a package that is not a zip has %+v, want Download alone", b)
		}
		return
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var install int64
	files := map[string][2]int64{}
	for _, f := range zr.File {
		install += int64(f.UncompressedSize64)
		if !strings.HasSuffix(f.Name, "/") {
			files[f.Name] = [2]int64{int64(f.CompressedSize64), int64(f.UncompressedSize64)}
		}
	}
	var download, inst int64
	var nfiles int
	seen := map[component]bool{}
	for _, c := range b.Components {
		download += c.Download
		inst += c.Install
		nfiles += c.Files
		k := component{c.Name, c.Kind}
		if seen[k] {
			t.Errorf("component %v twice", k)
		}
		seen[k] = true
	}
	if download != b.Download {
		t.Errorf("components' Download add up to %d, want %d", download, b.Download)
	}
	if inst != b.Install || b.Install != install {
		t.Errorf("components' Install add up to %d, Install = %d, the archive's entries to %d", inst, b.Install, install)
	}
	nested := info.Format == appinfo.FormatHarmonyApp || info.Format == appinfo.FormatMSIXBundle
	if nfiles != len(files) || b.Files != len(files) && !nested {
		t.Errorf("components hold %d files, Files = %d, the archive %d", nfiles, b.Files, len(files))
	}
	if !seen[component{appinfo.ComponentOverhead, appinfo.KindOverhead}] {
		t.Errorf("no %s component", appinfo.ComponentOverhead)
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no component %v in %v", w, b.Components)
		}
	}
	for i, f := range b.Largest {
		if i > 0 {
			p := b.Largest[i-1]
			if p.Install < f.Install || p.Install == f.Install && p.Download < f.Download {
				t.Errorf("Largest is not largest first at %d: %v then %v", i, p, f)
			}
		}
		if nested {
			continue // nested files are listed under their package's name
		}
		if got, ok := files[f.Path]; !ok || got != [2]int64{f.Download, f.Install} {
			t.Errorf("Largest lists %v, the archive has %v (%v)", f, got, ok)
		}
	}
	if n := len(b.Largest); n != min(b.Files, appinfo.MaxListedFiles) {
		t.Errorf("Largest lists %d of %d files", n, len(files))
	}
	if got := b.LargestFiles(appinfo.LargestShown); len(got) != min(len(b.Largest), appinfo.LargestShown) {
		t.Errorf("LargestFiles(%d) = %d files", appinfo.LargestShown, len(got))
	}
}

// TestLyingDirectoryKeepsParse: an entry the parse does not read claims more compressed bytes
// than the file holds; the parse still succeeds, with Download alone.
func TestLyingDirectoryKeepsParse(t *testing.T) {
	data := androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: androidtest.AndroidManifest{Package: "com.example.lie"}})
	// classes.dex's central-directory header: its compressed size (offset 20) claims 1 GiB.
	name := []byte("classes.dex")
	for off := 0; ; off++ {
		i := bytes.Index(data[off:], []byte("PK\x01\x02"))
		if i < 0 {
			t.Fatal("no classes.dex header")
		}
		off += i
		if bytes.HasPrefix(data[off+46:], name) {
			data[off+20], data[off+21], data[off+22], data[off+23] = 0, 0, 0, 0x40
			break
		}
	}
	info, err := parse(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if b := info.Sizes; b == nil || b.Download != int64(len(data)) || len(b.Components) != 0 {
		t.Errorf("Sizes = %+v, want Download %d alone", b, len(data))
	}
}
