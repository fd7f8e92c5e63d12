package harmony_test

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// wantInvalid fails unless err is an errs.Invalid error whose message contains want.
func wantInvalid(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("no error, want one containing %q", want)
	case !errs.Is(err, errs.Invalid):
		t.Errorf("error %q is not errs.Invalid", err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}

// patchCD rewrites a field of the central-directory record of the entry name: off is the
// field's offset in the record (10 method, 20 compressed size, 24 size, 42 local header
// offset), size its width in bytes.
func patchCD(t *testing.T, zipBytes []byte, name string, off, size int, v uint32) []byte {
	t.Helper()
	b := bytes.Clone(zipBytes)
	for i := bytes.LastIndex(b, []byte("PK\x05\x06")); i >= 0; i-- {
		if !bytes.HasPrefix(b[i:], []byte("PK\x01\x02")) || i+46 > len(b) {
			continue
		}
		n := int(binary.LittleEndian.Uint16(b[i+28:]))
		if i+46+n <= len(b) && string(b[i+46:i+46+n]) == name {
			if size == 2 {
				binary.LittleEndian.PutUint16(b[i+off:], uint16(v))
			} else {
				binary.LittleEndian.PutUint32(b[i+off:], v)
			}
			return b
		}
	}
	t.Fatalf("no central-directory record for %q", name)
	return nil
}

func TestHostileHAP(t *testing.T) {
	hap := func(o harmonytest.HAPOptions) []byte { return harmonytest.BuildHAP(o) }
	raw := func(moduleJSON string) []byte {
		return hap(harmonytest.HAPOptions{RawModuleJSON: []byte(moduleJSON)})
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"module.json not JSON", raw(`{"app": {`), "module.json is not valid JSON"},
		{"module.json is JSON5", raw("{\n // built from module.json5\n app: {bundleName: 'a.b.c'}}"), "not the JSON5 of a project's source files"},
		{"module.json is an array", raw(`[]`), "module.json is not a JSON object"},
		{"module.json nests deeply", raw(`{"app":` + deep + `}`), "module.json"},
		{"module.json without app or module", raw(`{"other": 1}`), "neither an \"app\" nor a \"module\" object"},
		{"bundleName is a number", raw(`{"app": {"bundleName": 5}}`), "app.bundleName is a JSON number, not the expected string"},
		{"deviceTypes is a string", raw(`{"app": {"bundleName": "a.b"}, "module": {"deviceTypes": "phone"}}`), "module.deviceTypes is a JSON string, not the expected array"},
		{"debug is a string", raw(`{"app": {"bundleName": "a.b", "debug": "yes"}}`), "app.debug is a JSON string"},
		{"versionCode is negative", raw(`{"app": {"bundleName": "a.b", "versionCode": -5}}`), "versionCode \"-5\" is not a non-negative 32-bit integer"},
		{"versionCode is huge", raw(`{"app": {"bundleName": "a.b", "versionCode": 1e300}}`), "is not a non-negative 32-bit integer"},
		{"versionCode is text", raw(`{"app": {"bundleName": "a.b", "versionCode": "abc"}}`), "module.json"},
		{"no bundle name", hap(harmonytest.HAPOptions{App: map[string]any{"bundleName": nil}, NoPackInfo: true}), "names no bundle"},
		{"bundle name climbs", hap(harmonytest.HAPOptions{BundleName: "../../etc/passwd"}), "not a valid HarmonyOS bundle name"},
		{"bundle name too long", hap(harmonytest.HAPOptions{BundleName: "a" + strings.Repeat(".b", 100)}), "not a valid HarmonyOS bundle name"},
		{"pack.info not JSON", hap(harmonytest.HAPOptions{RawPackInfo: []byte("{,}")}), "pack.info is not valid JSON"},
		{"pack.info of the wrong shape", hap(harmonytest.HAPOptions{RawPackInfo: []byte(`{"summary": []}`)}), "pack.info: summary is a JSON array"},
		{"resources.index garbage", hap(harmonytest.HAPOptions{RawIndex: []byte("garbage")}), "resources.index is not a valid resource table"},
		{"module.json over its cap", patchCD(t, hap(harmonytest.HAPOptions{}), "module.json", 24, 4, 3<<20), "over the"},
		{"resources.index over its cap", patchCD(t, hap(harmonytest.HAPOptions{}), "resources.index", 24, 4, 17<<20), "over the 16777216-byte limit"},
		{"resources.index size lies", patchCD(t, patchCD(t, hap(harmonytest.HAPOptions{}), "resources.index", 24, 4, 100), "resources.index", 20, 4, 100), "resources.index"},
		{"module.json offset lies", patchCD(t, hap(harmonytest.HAPOptions{}), "module.json", 42, 4, 0x7fffff00), "module.json"},
		{"module.json unknown method", patchCD(t, hap(harmonytest.HAPOptions{}), "module.json", 10, 2, 99), "unsupported compression method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.data)
			wantInvalid(t, err, tt.want)
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

func TestHostileApp(t *testing.T) {
	app := func(o harmonytest.AppOptions) []byte { return harmonytest.BuildApp(o) }
	good := app(harmonytest.AppOptions{})
	hapInHAP := harmonytest.BuildHAP(harmonytest.HAPOptions{Extra: []harmonytest.Entry{{Name: "libs/inner.hap", Data: harmonytest.BuildHAP(harmonytest.HAPOptions{})}}})
	appInApp := harmonytest.BuildApp(harmonytest.AppOptions{})
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"hap in a hap in an app", app(harmonytest.AppOptions{RawHAP: hapInHAP}), "nested more than one level deep are refused"},
		{"app in an app", app(harmonytest.AppOptions{RawHAP: appInApp}), "nested more than one level deep are refused"},
		{"entry HAP is not a zip", app(harmonytest.AppOptions{RawHAP: []byte("not a zip at all, just text")}), "is not a zip archive"},
		{"entry HAP truncated", app(harmonytest.AppOptions{RawHAP: harmonytest.BuildHAP(harmonytest.HAPOptions{})[:2000]}), "in the entry HAP \"entry-default.hap\""},
		{"entry HAP without module.json", app(harmonytest.AppOptions{RawHAP: harmonytest.BuildZip(harmonytest.Entry{Name: "x", Data: []byte("x")})}), "has no module.json"},
		{"entry HAP of another bundle", app(harmonytest.AppOptions{RawHAP: harmonytest.BuildHAP(harmonytest.HAPOptions{BundleName: "com.evil.other"})}), "is bundle \"com.evil.other\""},
		{"entry HAP with broken module.json", app(harmonytest.AppOptions{RawHAP: harmonytest.BuildHAP(harmonytest.HAPOptions{RawModuleJSON: []byte("{")})}), "in the entry HAP \"entry-default.hap\": module.json is not valid JSON"},
		{"pack.info not JSON", app(harmonytest.AppOptions{RawPackInfo: []byte("nope")}), "pack.info is not valid JSON"},
		{"pack.info names a missing entry", app(harmonytest.AppOptions{RawPackInfo: []byte(`{"packages":[{"name":"gone","moduleType":"entry","deliveryWithInstall":true}]}`)}), "has no \"gone.hap\""},
		{"pack.info versionCode bad", app(harmonytest.AppOptions{RawPackInfo: []byte(`{"summary":{"app":{"version":{"code":-1}}}}`)}), "is not a non-negative 32-bit integer"},
		{"no entry among several HAPs", app(harmonytest.AppOptions{RawPackInfo: []byte(`{}`), Extra: []harmonytest.Entry{{Name: "b.hap", Data: harmonytest.BuildHAP(harmonytest.HAPOptions{})}}}), "names no entry module among"},
		{"entry size beyond the file", patchCD(t, patchCD(t, good, "entry-default.hap", 20, 4, 1<<30), "entry-default.hap", 24, 4, 1<<30), "declares 1073741824 bytes but the .app ends before them"},
		{"entry sizes disagree", patchCD(t, good, "entry-default.hap", 24, 4, 12), "declares"},
		{"entry offset beyond the file", patchCD(t, good, "entry-default.hap", 42, 4, 0x7fffff00), "entry HAP \"entry-default.hap\" is unreadable"},
		{"entry unknown method", patchCD(t, good, "entry-default.hap", 10, 2, 12), "unsupported compression method 12"},
		{"deflated entry over the inflate cap", patchCD(t, app(harmonytest.AppOptions{DeflateHAP: true}), "entry-default.hap", 24, 4, 40<<20), "inflated only up to"},
		{"deflated entry lying about its size", patchCD(t, app(harmonytest.AppOptions{DeflateHAP: true}), "entry-default.hap", 24, 4, 50), "entry-default.hap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.data)
			wantInvalid(t, err, tt.want)
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestTruncatedAndCorrupted cuts and corrupts the fixtures and synthetic packages at many
// offsets: every result is a clean errs.Invalid error or an Info, never a panic. A truncated
// package is refused, with one exception: an .app cut after its stored entry HAP still holds that
// HAP whole, behind a prefix (the .app's local header), and Go's zip reader, like unzip, reads an
// archive behind a prefix (self-extracting archives); so the cut .app parses as the HAP it holds.
func TestTruncatedAndCorrupted(t *testing.T) {
	inputs := map[string][]byte{
		"hap":    harmonytest.BuildHAP(harmonytest.HAPOptions{Layered: true}),
		"hap v2": harmonytest.BuildHAP(harmonytest.HAPOptions{IndexV2: true}),
		"app":    harmonytest.BuildApp(harmonytest.AppOptions{}),
	}
	if _, ok := fixtures.Dir(); ok {
		inputs["fixture hap"] = fixtures.Read(t, "other/harmony-myapplication-1.0.0.hap")
		inputs["fixture app"] = fixtures.Read(t, "other/harmony-myapplication-1.0.0.app")
	}
	for name, b := range inputs {
		t.Run(name, func(t *testing.T) {
			step := max(len(b)/150, 1)
			for n := 0; n < len(b); n += step {
				info, err := parse(t, b[:n])
				if err == nil && strings.HasSuffix(name, "app") && info.Format == appinfo.FormatHAP {
					continue // the entry HAP, whole behind the cut .app's first local header
				}
				if err == nil || !errs.Is(err, errs.Invalid) {
					t.Fatalf("truncated at %d of %d: %v, want errs.Invalid", n, len(b), err)
				}
			}
			for n := 0; n < len(b); n += step {
				c := bytes.Clone(b)
				for k := n; k < min(n+8, len(c)); k++ {
					c[k] ^= 0xa5
				}
				if _, err := parse(t, c); err != nil && !errs.Is(err, errs.Invalid) {
					t.Fatalf("corrupted at %d: %v is not errs.Invalid", n, err)
				}
			}
		})
	}
}

// TestHugeIndexEntry: a resources.index that really inflates past the cap is stopped there.
func TestHugeIndexEntry(t *testing.T) {
	huge := make([]byte, 17<<20)
	copy(huge, "Restool 5.008")
	data := harmonytest.BuildHAP(harmonytest.HAPOptions{NoIndex: true, Extra: []harmonytest.Entry{{Name: "resources.index", Data: huge, Deflate: true}}})
	_, err := parse(t, data)
	wantInvalid(t, err, "resources.index")
}
