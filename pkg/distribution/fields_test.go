package distribution

import (
	"reflect"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/errs"
)

func TestParseChangelog(t *testing.T) {
	cases := []struct {
		in   string
		want []ChangelogEntry
	}{
		{"", []ChangelogEntry{}},
		{"fix crash\n\n- add login\r\n* tidy up\n   \n", []ChangelogEntry{{Message: "fix crash"}, {Message: "add login"}, {Message: "tidy up"}}},
		{"[FIX] crash on start", []ChangelogEntry{{Message: "[FIX] crash on start"}}},
		{`[{"message":"a","author":"Ann","email":"a@x","date":"2026-11-21 10:00:00"},{"message":"b"}]`,
			[]ChangelogEntry{{Message: "a", Author: "Ann", Email: "a@x", Date: "2026-11-21 10:00:00"}, {Message: "b"}}},
		{"[]", []ChangelogEntry{}},
	}
	for _, c := range cases {
		got, err := ParseChangelog(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseChangelog(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`[1]`, `[{"message": 1}]`, `[{"author":"x"}]`, `["x"]`, `[{"message":"a","date":5}]`} {
		if _, err := ParseChangelog(bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("ParseChangelog(%q) error = %v, want Invalid", bad, err)
		}
	}
	if got := TextChangelog([]ChangelogEntry{{Message: "a"}, {Message: "b"}}); got != "- a\n- b" {
		t.Errorf("TextChangelog = %q", got)
	}
}

func TestParseCustomFields(t *testing.T) {
	for _, none := range []string{"", "[]", `["[]"]`, "  "} {
		got, err := ParseCustomFields(none)
		if err != nil || len(got) != 0 {
			t.Errorf("ParseCustomFields(%q) = %v, %v", none, got, err)
		}
	}
	got, err := ParseCustomFields(`[{"name":"QA","value":"passed","icon":"fa fa-check"}]`)
	if err != nil || !reflect.DeepEqual(got, []CustomField{{Name: "QA", Value: "passed", Icon: "fa fa-check"}}) {
		t.Errorf("got %+v %v", got, err)
	}
	for _, bad := range []string{`{"name":"x"}`, `[1]`, `[{"name":1}]`, `not json`, `[{"value":"no name"}]`} {
		if _, err := ParseCustomFields(bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("ParseCustomFields(%q) error = %v, want Invalid", bad, err)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.10", "1.9", 1}, {"1.9", "1.10", -1}, {"v2.0", "2.0", 0}, {"1.0", "1.0.0", 0}, {"2.1.0", "2.1", 0},
		{"1.0.1", "1.0", 1}, {"10", "9", 1}, {"1.0-beta", "1.0", -1}, {"", "", 0}, {"1.2.3", "1.2.3", 0},
	}
	for _, c := range cases {
		if got := CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if CompareBuilds("10", "9") != 1 || CompareBuilds("1.0.10", "1.0.9") != 1 || CompareBuilds("5", "5") != 0 {
		t.Error("CompareBuilds")
	}
	if !Newer("1.2.0", "1", "1.1.9", "99") || !Newer("1.2", "11", "1.2", "10") || Newer("1.2", "10", "1.2", "10") {
		t.Error("Newer")
	}
}

func TestMatchBundleID(t *testing.T) {
	cases := []struct {
		pattern, id string
		want        bool
	}{
		{"*", "com.a", true}, {"", "x", true}, {"com.a", "com.a", true}, {"com.a", "com.ab", false},
		{"com.example.*", "com.example.app", true}, {"com.example.*", "com.other.app", false},
		{"*.beta", "com.x.beta", true}, {"com.*.app", "com.x.y.app", true}, {"a*a", "a", false},
	}
	for _, c := range cases {
		if got := MatchBundleID(c.pattern, c.id); got != c.want {
			t.Errorf("MatchBundleID(%q, %q) = %v", c.pattern, c.id, got)
		}
	}
}

func TestCleanBranchAndSchemeName(t *testing.T) {
	if CleanBranch("origin/main") != "main" || CleanBranch("feature/origin/x") != "feature/origin/x" {
		t.Error("CleanBranch")
	}
	if SchemeName("") != "Adhoc" || SchemeName("appstore") != "AppStore" || SchemeName("beta") != "Beta" {
		t.Error("SchemeName")
	}
}

// UDIDs: Apple's three shapes, stored in Apple's case.
func TestNormalizeUDID(t *testing.T) {
	for in, want := range map[string]string{
		"00008030-001a2b3c4d5e6f70":            "00008030-001A2B3C4D5E6F70",
		strings.Repeat("AB", 20):               strings.Repeat("ab", 20),
		"a1b2c3d4-e5f6-a7b8-c9d0-e1f2a3b4c5d6": "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6",
		" 00008030-001A2B3C4D5E6F70 ":          "00008030-001A2B3C4D5E6F70",
	} {
		if got, err := NormalizeUDID(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "00008030-001A", strings.Repeat("g", 40), "00008030_001A2B3C4D5E6F70", strings.Repeat("a", 41)} {
		if _, err := NormalizeUDID(bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Effects with nothing behind them do nothing: a part built for a test needs none of them.
func TestEffectsMayBeLeftOut(t *testing.T) {
	var e Effects
	e.Changed(Change{ChannelID: 1})
	e.Wake()
	if e.ReleaseEvents("release.created") != nil {
		t.Error("events without an event maker")
	}
	if err := e.Deleted(t.Context())([]string{"k"}, nil); err != nil {
		t.Error(err)
	}
	if err := e.Deleted(t.Context())(nil, errs.New(errs.NotFound, "x")); !errs.Is(err, errs.NotFound) {
		t.Errorf("a failed deletion's error is lost: %v", err)
	}
}
