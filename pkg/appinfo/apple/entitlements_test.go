package apple

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/appinfo/apple/appletest"
	"github.com/slipwayhq/slipway/test/fixtures"
)

// TestEntitlementsFixture reads the capabilities of very-capable-app's profile (the README:
// "many capability entitlements, aps-environment=development").
func TestEntitlementsFixture(t *testing.T) {
	info, err := appleParseFile(t, fixtures.Path(t, "ios/very-capable-app-1.0-1.ipa"))
	if err != nil {
		t.Fatal(err)
	}
	ent := info.Profile.Entitlements
	for k, want := range map[string]string{
		"aps-environment":                                  "development",
		"application-identifier":                           "TestFixture.org.fastlane.very-capable-app",
		"com.apple.developer.team-identifier":              "TestFixture",
		"com.apple.developer.healthkit":                    "true",
		"com.apple.developer.icloud-container-environment": "Development, Production",
		"com.apple.developer.networking.networkextension":  "app-proxy-provider, content-filter-provider, packet-tunnel-provider, dns-proxy",
		"com.apple.developer.in-app-payments":              "", // an empty array
		"get-task-allow":                                   "true",
		"keychain-access-groups":                           "TestFixture.*",
	} {
		if got, ok := ent[k]; !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", k, got, ok, want)
		}
	}
	if len(ent) < 20 {
		t.Errorf("%d entitlements: %v", len(ent), ent)
	}
}

// TestEntitlementsSynthetic: the synthetic profile's entitlements, and none without a profile.
func TestEntitlementsSynthetic(t *testing.T) {
	info := appleMustParse(t, appletest.BuildIPA(appletest.IPAOptions{Profile: &appletest.ProfileOptions{TeamID: "ABCDE12345", GetTaskAllow: true}}))
	want := map[string]string{"application-identifier": "ABCDE12345.com.example.demo", "com.apple.developer.team-identifier": "ABCDE12345", "get-task-allow": "true"}
	if fmt.Sprint(info.Profile.Entitlements) != fmt.Sprint(want) {
		t.Errorf("Entitlements = %v, want %v", info.Profile.Entitlements, want)
	}
	if p := appleMustParse(t, appletest.BuildIPA(appletest.IPAOptions{})).Profile; p != nil {
		t.Errorf("Profile = %+v without a profile", p)
	}
}

// TestRenderEntitlements covers each property-list type and the caps.
func TestRenderEntitlements(t *testing.T) {
	many := make([]any, 100)
	for i := range many {
		many[i] = "g"
	}
	ent := plistDict{
		"bool":    false,
		"string":  "production",
		"uint":    uint64(7),
		"int":     int64(-3),
		"float":   1.5,
		"date":    time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
		"data":    []byte{1, 2, 3},
		"array":   []any{"a", []any{"b", "c"}, true},
		"deep":    []any{[]any{[]any{[]any{"x"}}}},
		"dict":    map[string]any{"z": 1, "a": 2},
		"many":    many,
		"long":    strings.Repeat("é", 400),
		"control": "a\x00b\nc\u2028",
		"":        "empty key",
		"nil":     nil,
	}
	got := entitlements(ent)
	for k, want := range map[string]string{
		"bool": "false", "string": "production", "uint": "7", "int": "-3", "float": "1.5",
		"date": "2025-01-02T02:04:05Z", "data": "<3 bytes>", "array": "a, [b, c], true", "deep": "[[[…]]]",
		"dict": "{a, z}", "control": "abc", "nil": "", // U+2028 is trimmed as space
		"many": strings.Repeat("g, ", 64) + "…",
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if l := got["long"]; len(l) > maxEntitlementBytes+len("…") || !strings.HasSuffix(l, "…") {
		t.Errorf("long = %d bytes", len(l))
	}
	if _, ok := got[""]; ok {
		t.Error("an empty key kept")
	}
	big := plistDict{}
	for i := range 1000 {
		big[fmt.Sprintf("k%04d", i)] = true
	}
	if got := entitlements(big); len(got) != maxEntitlements || got["k0000"] != "true" {
		t.Errorf("%d entitlements kept", len(got))
	}
	if entitlements(nil) != nil {
		t.Error("entitlements(nil) is not nil")
	}
}
