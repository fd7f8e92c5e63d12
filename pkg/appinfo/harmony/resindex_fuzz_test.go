package harmony

import (
	"testing"

	"github.com/slipwayhq/slipway/pkg/appinfo/harmony/harmonytest"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// FuzzResourcesIndex runs the resources.index decoder alone, then looks up what the parser
// looks up.
func FuzzResourcesIndex(f *testing.F) {
	o := harmonytest.IndexOptions{
		Configs: []harmonytest.IndexConfig{{}, {Language: "en", Region: "US"}, {Density: 480, Dark: true}},
		Resources: []harmonytest.IndexResource{
			{ID: 0x01000000, Type: harmonytest.TypeString, Name: "app_name", Values: []harmonytest.IndexValue{{Config: 0, Value: "A"}, {Config: 1, Value: "B"}}},
			{ID: 0x01000001, Type: harmonytest.TypeMedia, Name: "app_icon", Values: []harmonytest.IndexValue{{Config: 0, Value: "e/resources/base/media/i.png"}, {Config: 2, Value: "x"}}},
			{ID: 0x01000002, Type: 10, Name: "arr", Values: []harmonytest.IndexValue{{Config: 0, Value: "\x01\x00a\x00"}}},
		},
	}
	f.Add(harmonytest.BuildResourcesIndex(o))
	o.V2 = true
	f.Add(harmonytest.BuildResourcesIndex(o))
	if _, ok := fixtures.Dir(); ok {
		f.Add(fixtureIndex(f))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := decodeResourceIndex(b)
		if err != nil {
			if !errs.Is(err, errs.Invalid) {
				t.Fatalf("error %q is not errs.Invalid", err)
			}
			return
		}
		check := func(vals []resValue, err error) {
			if err != nil {
				if !errs.Is(err, errs.Invalid) {
					t.Fatalf("lookup error %q is not errs.Invalid", err)
				}
				return
			}
			if len(vals) > len(x.configs) {
				t.Fatalf("%d values for %d configurations", len(vals), len(x.configs))
			}
			_ = pickString(vals)
			for _, v := range orderMedia(vals) {
				_ = v.config.describe()
			}
		}
		for id := uint32(0x01000000); id < 0x01000004; id++ {
			check(x.lookup(resTypeString, id, ""))
		}
		check(x.lookup(resTypeString, 0, "app_name"))
		check(x.lookup(resTypeMedia, 0, "app_icon"))
	})
}
