package android_test

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/android"
	"github.com/slipwayhq/slipway/pkg/appinfo/android/androidtest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// fuzzManifests are synthetic manifests covering the builders' options, with tiny icons: large
// seeds make the fuzzer spend its time minimizing.
func fuzzManifests() []androidtest.AndroidManifest {
	full := fullManifest
	full.Icons = []androidtest.AndroidIcon{
		{Density: 160, Path: "res/mipmap-mdpi-v4/ic_launcher.png", Data: androidtest.AndroidPNG(1, 1)},
		{Density: 0xfffe, Path: "res/mipmap-anydpi-v26/ic_launcher.xml", Data: []byte("\x03\x00\x08\x00")},
		{Density: 640, Path: "res/mipmap-xxxhdpi-v4/ic_launcher.webp", Data: androidtest.AndroidWebPHead(4, 4)},
	}
	watch := full
	watch.Features = []string{"android.hardware.type.watch", "android.software.leanback"}
	watch.Label, watch.LabelStrings = "Literal", nil
	return []androidtest.AndroidManifest{
		full, watch,
		{Package: "a.b", VersionCode: -1, VersionName: "x", Icons: []androidtest.AndroidIcon{{Density: 160, Path: "res/i.png", Data: androidtest.AndroidPNG(2, 2)}}},
	}
}

// checkFuzzResult holds for any input: an errs.Invalid error, or an Info with sane fields.
func checkFuzzResult(t *testing.T, info *appinfo.Info, err error) {
	if err != nil {
		if !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %q is not errs.Invalid", err)
		}
		return
	}
	if info.Platform != appinfo.Android || info.BundleID == "" || info.Name == "" {
		t.Fatalf("incomplete info %+v", info)
	}
	for _, s := range []string{info.Name, info.BundleID, info.ReleaseVersion, info.BuildVersion, info.MinOS, info.TargetSDK} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > 1024 {
			t.Fatalf("unclean text %q", s)
		}
	}
	if ic := info.Icon; ic != nil && (ic.Width <= 0 || ic.Height <= 0 || ic.Width > 4096 || ic.Height > 4096 || len(ic.Data) > appinfo.MaxIconBytes) {
		t.Fatalf("icon %s %dx%d, %d bytes", ic.ContentType, ic.Width, ic.Height, len(ic.Data))
	}
}

// FuzzAndroidZip parses arbitrary zip archives as APKs or app bundles.
func FuzzAndroidZip(f *testing.F) {
	for _, m := range fuzzManifests() {
		f.Add(androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m}))
		f.Add(androidtest.BuildAPK(androidtest.APKOptions{AndroidManifest: m, SparseResources: true, UTF8: true}))
		f.Add(androidtest.BuildAAB(androidtest.AABOptions{AndroidManifest: m}))
	}
	// Fixtures of a few MB slow every execution down to seconds (instrumented inflation); their
	// manifests and tables seed FuzzAXML and FuzzAAB instead.
	for _, pattern := range []string{"android/*.apk", "android/*.aab"} {
		for _, path := range fixtures.Glob(pattern) {
			if b, err := os.ReadFile(path); err == nil && len(b) <= 256<<10 {
				f.Add(b)
			}
		}
	}
	for _, path := range fixtures.Glob("android/axml/*.bin") {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(androidtest.BuildAPK(androidtest.APKOptions{Manifest: b, NoResources: true}))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := android.AndroidParseZip(data)
		checkFuzzResult(t, info, err)
	})
}

// FuzzAXML decodes arbitrary binary manifests and resources.arsc tables (empty for none),
// resolving the label, versions and icon files.
func FuzzAXML(f *testing.F) {
	for _, m := range fuzzManifests() {
		for _, o := range []androidtest.APKOptions{{AndroidManifest: m}, {AndroidManifest: m, SparseResources: true, UTF8: true}} {
			f.Add(androidtest.BuildAXML(o), androidtest.BuildARSC(o))
		}
	}
	for _, path := range fixtures.Glob("android/*.apk") {
		f.Add(readZipEntry(path, "AndroidManifest.xml"), readZipEntry(path, "resources.arsc"))
	}
	for _, path := range fixtures.Glob("android/axml/*.bin") {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(b, []byte{})
		}
	}
	f.Fuzz(func(t *testing.T, manifest, arsc []byte) {
		if len(arsc) == 0 {
			arsc = nil
		}
		info, _, err := android.AndroidDecodeAPK(manifest, arsc)
		checkFuzzResult(t, info, err)
	})
}

// FuzzAAB decodes arbitrary aapt2 protobuf manifests and resource tables (empty for none).
func FuzzAAB(f *testing.F) {
	for _, m := range fuzzManifests() {
		for _, o := range []androidtest.AABOptions{{AndroidManifest: m}, {AndroidManifest: m, TextValuesOnly: true}} {
			f.Add(androidtest.BuildAABManifest(o), androidtest.BuildAABResources(o))
		}
	}
	for _, path := range fixtures.Glob("android/*.aab") {
		f.Add(readZipEntry(path, "base/manifest/AndroidManifest.xml"), readZipEntry(path, "base/resources.pb"))
	}
	f.Fuzz(func(t *testing.T, manifest, pb []byte) {
		if len(pb) == 0 {
			pb = nil
		}
		info, _, err := android.AndroidDecodeAAB(manifest, pb)
		checkFuzzResult(t, info, err)
	})
}
