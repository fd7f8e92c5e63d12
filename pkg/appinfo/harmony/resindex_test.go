package harmony

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

func TestAPIVersionText(t *testing.T) {
	tests := map[string]string{
		"50000012":    "5.0.0(12)", // the fixture; DevEco's "5.0.0(12)"
		"50001013":    "5.0.1(13)",
		"50002014":    "5.0.2(14)", // Huawei: distributionOSApiVersion 50002 for 5.0.2(14)
		"50005017":    "5.0.5(17)",
		"50100018":    "5.1.0(18)",
		"60000020":    "6.0.0(20)",
		"60102024":    "6.1.2(24)",
		"12":          "12", // OpenHarmony: a bare API level
		"9":           "9",
		"260000000":   "26.0.0", // no API level part
		"0":           "",
		"":            "",
		"-1":          "",
		"1.5":         "",
		"99999999999": "",
	}
	for in, want := range tests {
		if got := apiVersionText(json.Number(in)); got != want {
			t.Errorf("apiVersionText(%s) = %q, want %q", in, got, want)
		}
	}
}

// fixtureIndex returns the resources.index of the HAP fixture.
func fixtureIndex(t testing.TB) []byte {
	b := fixtures.Read(t, "other/harmony-myapplication-1.0.0.hap")
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.Open("resources.index")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestFixtureIndexLayout checks the decoded layout of the fixture's index (restool 5.008):
// three configurations (base, en_US, zh_CN), twelve resources in base.
func TestFixtureIndexLayout(t *testing.T) {
	x, err := decodeResourceIndex(fixtureIndex(t))
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []string
	for i := range x.configs {
		cfgs = append(cfgs, x.configs[i].describe())
	}
	if x.v2 || strings.Join(cfgs, " ") != "base en_US zh_CN" || len(x.idss) != 3 || x.idss[0].count != 12 {
		t.Fatalf("v2 %v, configs %v, id tables %+v", x.v2, cfgs, x.idss)
	}
	lookups := []struct {
		typ  uint32
		id   uint32
		name string
		want string // config=value pairs
	}{
		{resTypeString, 0x01000000, "", "base=MyApplication"},
		{resTypeString, 0, "app_name", "base=MyApplication"},
		{resTypeMedia, 0x01000001, "", "base=entry/resources/base/media/app_icon.png"},
		{resTypeMedia, 0, "layered_image", "base=entry/resources/base/media/layered_image.json"},
		{resTypeString, 0, "module_desc", "base=module description en_US=module description zh_CN=模块描述"},
		{resTypeString, 0, "no_such", ""},
		{resTypeMedia, 0, "app_name", ""}, // a name of another type
	}
	for _, l := range lookups {
		vals, err := x.lookup(l.typ, l.id, l.name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range vals {
			got = append(got, v.config.describe()+"="+v.value)
		}
		if strings.Join(got, " ") != l.want {
			t.Errorf("lookup(%d, %#x, %q) = %q, want %q", l.typ, l.id, l.name, strings.Join(got, " "), l.want)
		}
	}
}

// TestIndexLayouts round-trips both layouts of the builder, with qualifiers.
func TestIndexLayouts(t *testing.T) {
	o := harmonytest.IndexOptions{
		Configs: []harmonytest.IndexConfig{{}, {Language: "zh", Region: "CN"}, {Density: 640}, {Dark: true}},
		Resources: []harmonytest.IndexResource{
			{ID: 0x01000000, Type: harmonytest.TypeString, Name: "app_name", Values: []harmonytest.IndexValue{{Config: 0, Value: "Demo"}, {Config: 1, Value: "演示"}}},
			{ID: 0x01000001, Type: harmonytest.TypeMedia, Name: "icon", Values: []harmonytest.IndexValue{{Config: 0, Value: "entry/resources/base/media/icon.png"}, {Config: 2, Value: "entry/resources/xxxldpi/media/icon.png"}, {Config: 3, Value: "entry/resources/dark/media/icon.png"}}},
			{ID: 0x01000002, Type: harmonytest.TypeColor, Name: "bg", Values: []harmonytest.IndexValue{{Config: 0, Value: "#FFFFFF"}}},
		},
	}
	for _, v2 := range []bool{false, true} {
		o.V2 = v2
		x, err := decodeResourceIndex(harmonytest.BuildResourcesIndex(o))
		if err != nil {
			t.Fatalf("v2=%v: %v", v2, err)
		}
		vals, err := x.lookup(resTypeMedia, 0x01000001, "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range orderMedia(vals) {
			got = append(got, v.config.describe()+"="+v.value)
		}
		want := "xxxldpi=entry/resources/xxxldpi/media/icon.png base=entry/resources/base/media/icon.png dark=entry/resources/dark/media/icon.png"
		if strings.Join(got, " ") != want || x.v2 != v2 {
			t.Errorf("v2=%v: media in probing order %q, want %q", v2, strings.Join(got, " "), want)
		}
		vals, err = x.lookup(resTypeString, 0, "app_name")
		if err != nil || pickString(vals) != "Demo" || len(vals) != 2 || vals[1].config.describe() != "zh_CN" || vals[1].value != "演示" {
			t.Errorf("v2=%v: app_name = %+v, %v", v2, vals, err)
		}
	}
}

// TestIndexHostile: every malformed index is an errs.Invalid error, refused before allocating
// anything in proportion to what it declares.
func TestIndexHostile(t *testing.T) {
	good := harmonytest.BuildResourcesIndex(harmonytest.IndexOptions{Resources: []harmonytest.IndexResource{
		{ID: 0x01000000, Type: harmonytest.TypeString, Name: "app_name", Values: []harmonytest.IndexValue{{Config: 0, Value: "Demo"}}}}})
	goodV2 := harmonytest.BuildResourcesIndex(harmonytest.IndexOptions{V2: true, Resources: []harmonytest.IndexResource{
		{ID: 0x01000000, Type: harmonytest.TypeString, Name: "app_name", Values: []harmonytest.IndexValue{{Config: 0, Value: "Demo"}}}}})
	set := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	// V1: KEYS at 136 (no qualifiers), IDSS at 148, its one IdParam at 156, the item at 164.
	// V2: KEYS at 140, IDSS at 152, the type block at 168, its item at 180.
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "fewer than its 136-byte header"},
		{"not restool", append([]byte("PK\x03\x04"), make([]byte, 200)...), "does not start with a restool version"},
		{"declared size over the file", set(good, 128, uint32(len(good)+1)), "truncated"},
		{"declared size under the header", set(good, 128, 10), "fewer than the header"},
		{"huge configuration count", set(good, 132, 0xffffffff), "more than its"},
		{"too many configurations", func() []byte {
			b := append(bytes.Clone(good), make([]byte, 12*5000)...)
			return set(set(b, 128, uint32(len(b))), 132, 5000)
		}(), "over the limit"},
		{"no KEYS tag", set(good, 136, 0), "does not start with KEYS"},
		{"huge qualifier count", set(good, 144, 0xffffffff), "qualifiers"},
		{"id table outside the file", set(good, 140, 0xfffffff0), "outside the file"},
		{"id table before the header", set(good, 140, 4), "outside the file"},
		{"huge id count", set(good, 152, 0x7fffffff), "more than the file holds"},
		{"item outside the file", set(good, 160, 0xffffff00), "outside the file"},
		{"item of another id", set(good, 164+8, 0x01000009), "points at the item of"},
		{"unknown type", set(good, 164+4, 99), "unknown type"},
		{"value length over the file", func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint16(b[176:], 0xffff)
			return b
		}(), "runs past the end"},
		{"truncated", good[:len(good)-3], "truncated"},
		{"overlapping id tables", func() []byte {
			// 300 configurations all pointing at one id table of 40 ids: 300×(8+320) bytes of
			// tables in a file of ~4 KiB.
			var b []byte
			b = append(b, good[:136]...)
			for range 300 {
				b = append(b, "KEYS"...)
				b = binary.LittleEndian.AppendUint32(b, uint32(136+12*300))
				b = binary.LittleEndian.AppendUint32(b, 0)
			}
			b = append(b, "IDSS"...)
			b = binary.LittleEndian.AppendUint32(b, 40)
			b = append(b, make([]byte, 40*8)...)
			b = set(b, 128, uint32(len(b)))
			return set(b, 132, 300)
		}(), "overlapping"},
		{"V2 data offset past the file", set(goodV2, 136, 0xffffff00), "past the end of the file"},
		{"V2 no IDSS", set(goodV2, 152, 0), "no IDSS"},
		{"V2 id table past the data block", set(goodV2, 156, 0x7fffffff), "past the data block"},
		{"V2 huge type count", set(goodV2, 160, 0x0fffffff), "more than its"},
		{"V2 unknown type", set(goodV2, 168, 77), "unknown type"},
		{"V2 huge id count in a type", set(goodV2, 176, 0x0fffffff), "past the end of the id table"},
		{"V2 name past the table", set(goodV2, 188, 0xffff), "runs past the end of the id table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeResourceIndex(tt.b)
			runtime.ReadMemStats(&after)
			switch {
			case err == nil:
				t.Fatalf("no error, want one containing %q", tt.want)
			case !errs.Is(err, errs.Invalid):
				t.Fatalf("error %q is not errs.Invalid", err)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 1<<20 {
				t.Errorf("decoding allocated %d bytes", grown)
			}
		})
	}
}

// TestIndexHostileLookups: V2 infos and values are checked when looked up.
func TestIndexHostileLookups(t *testing.T) {
	b := harmonytest.BuildResourcesIndex(harmonytest.IndexOptions{V2: true, Resources: []harmonytest.IndexResource{
		{ID: 0x01000000, Type: harmonytest.TypeString, Name: "app_name", Values: []harmonytest.IndexValue{{Config: 0, Value: "Demo"}}}}})
	info := int(binary.LittleEndian.Uint32(b[184:])) // the item's info offset
	tests := []struct {
		name string
		off  int
		v    uint32
		want string
	}{
		{"info outside the file", 184, 0xfffffff0, "outside the file"},
		{"info of another id", info, 0x01000005, "points at the data of"},
		{"huge value count", info + 8, 0x0fffffff, "more than the file holds"},
		{"value outside the file", info + 16, 0xfffffff0, "outside the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := bytes.Clone(b)
			binary.LittleEndian.PutUint32(c[tt.off:], tt.v)
			x, err := decodeResourceIndex(c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = x.lookup(resTypeString, 0x01000000, "")
			if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("lookup error %v, want errs.Invalid containing %q", err, tt.want)
			}
		})
	}
}
