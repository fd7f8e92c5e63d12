package harmony_test

import (
	"bytes"
	"image/color"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/zipread"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// fuzzSeeds are small synthetic packages covering the builders' options (tiny icons: large
// seeds make the fuzzer spend its time minimizing).
func fuzzSeeds() [][]byte {
	hap := []harmonytest.HAPOptions{
		{IconSize: 2},
		{IconSize: 2, IndexV2: true, ByName: true, Labels: map[string]string{"zh": "演示"}},
		{IconSize: 2, Layered: true, IconDensities: map[uint32]int{640: 3}},
		{IconSize: -1, NoIndex: true, Permissions: []string{"ohos.permission.INTERNET"}, Architectures: []string{"arm64-v8a"}},
	}
	var out [][]byte
	for _, o := range hap {
		out = append(out, harmonytest.BuildHAP(o), harmonytest.BuildApp(harmonytest.AppOptions{HAP: o}))
	}
	return append(out, harmonytest.BuildApp(harmonytest.AppOptions{DeflateHAP: true, HAP: hap[0]}))
}

// fixtureSeeds are the real fixtures' metadata files (module.json, pack.info, resources.index)
// in small packages: the fixtures themselves, 140 KB of mostly images, slow the fuzzer to a
// crawl without adding coverage.
func fixtureSeeds(tb testing.TB) [][]byte {
	hapBytes := fixtures.Read(tb, "other/harmony-myapplication-1.0.0.hap")
	appBytes := fixtures.Read(tb, "other/harmony-myapplication-1.0.0.app")
	entry := func(b []byte, name string) []byte {
		a, err := zipread.Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			tb.Fatal(err)
		}
		data, err := a.ReadName(name, 1<<20)
		if err != nil || data == nil {
			tb.Fatalf("%s: %v", name, err)
		}
		return data
	}
	tiny := harmonytest.PNG(2, 2, color.NRGBA{A: 255})
	hap := func(b []byte) []byte {
		return harmonytest.BuildZip(
			harmonytest.Entry{Name: "module.json", Data: entry(b, "module.json")},
			harmonytest.Entry{Name: "pack.info", Data: entry(b, "pack.info")},
			harmonytest.Entry{Name: "resources.index", Data: entry(b, "resources.index")},
			harmonytest.Entry{Name: "resources/base/media/app_icon.png", Data: tiny},
			harmonytest.Entry{Name: "resources/base/media/layered_image.json", Data: entry(b, "resources/base/media/layered_image.json")},
			harmonytest.Entry{Name: "resources/base/media/foreground.png", Data: tiny},
			harmonytest.Entry{Name: "resources/base/media/background.png", Data: tiny})
	}
	inner := hap(entry(appBytes, "entry-default.hap"))
	app := harmonytest.BuildZip(
		harmonytest.Entry{Name: "entry-default.hap", Data: inner},
		harmonytest.Entry{Name: "pack.info", Data: entry(appBytes, "pack.info")})
	return [][]byte{hap(hapBytes), app}
}

// checkFuzzResult holds for any input: an errs.Invalid error, or an Info with sane fields.
func checkFuzzResult(t *testing.T, info *appinfo.Info, err error) {
	if err != nil {
		if !errs.Is(err, errs.Invalid) {
			t.Fatalf("error %q is not errs.Invalid", err)
		}
		return
	}
	if info.Platform != appinfo.HarmonyOS || info.BundleID == "" || info.Name == "" {
		t.Fatalf("incomplete info %+v", info)
	}
	texts := []string{info.Name, info.BundleID, info.ReleaseVersion, info.BuildVersion, info.MinOS, info.TargetSDK, info.Device, info.Publisher, info.Description}
	texts = append(append(texts, info.Permissions...), info.Architectures...)
	for _, v := range info.Properties {
		texts = append(texts, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > 1024*256 {
			t.Fatalf("unclean text %q", s)
		}
	}
	if ic := info.Icon; ic != nil && (ic.Width <= 0 || ic.Height <= 0 || ic.Width > 4096 || ic.Height > 4096 || len(ic.Data) == 0) {
		t.Fatalf("icon %s %dx%d, %d bytes", ic.ContentType, ic.Width, ic.Height, len(ic.Data))
	}
}

// FuzzParseHAP runs the whole parser, both ways in (a HAP and an .app), over arbitrary zips.
// The seeds are a few KiB, so run it with a short -fuzzminimizetime (3s): by default each new
// input is minimized for a minute and few inputs get run.
func FuzzParseHAP(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	if _, ok := fixtures.Dir(); ok {
		for _, s := range fixtureSeeds(f) {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		if !zipread.IsZip(r, int64(len(data))) {
			return
		}
		a, err := zipread.Open(r, int64(len(data)))
		if err != nil {
			checkFuzzResult(t, nil, err)
			return
		}
		info, err := harmony.ParseHAP(a)
		checkFuzzResult(t, info, err)
		info, err = harmony.ParseApp(a)
		checkFuzzResult(t, info, err)
	})
}
