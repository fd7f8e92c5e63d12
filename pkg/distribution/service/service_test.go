package service

import (
	"log/slog"
	"reflect"
	"testing"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/config"
)

// New builds every part (a part left nil would fail only when first used) and starts nothing.
func TestNewBuildsEveryPart(t *testing.T) {
	cfg, err := config.Load(func(k string) string {
		if k == "SLIPWAY_SECRET" {
			return "test-secret-test-secret-test-secret-0123"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	type store struct{ Store }
	type backend struct{ blob.Backend }
	s := New(cfg, store{}, backend{}, nil, slog.New(slog.DiscardHandler))
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if f.IsExported() && f.Type.Kind() == reflect.Pointer && v.Field(i).IsNil() {
			t.Errorf("%s is nil", f.Name)
		}
	}
}
