package insights

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		c    int
		ok   bool
	}{
		{"1.10", "1.9", 1, true},
		{"1.2", "1.2.0", 0, true},
		{"1.2.1", "1.2", 1, true},
		{"2", "10", -1, true},
		{"0010", "9", 1, true},
		{"v1.2", "1.3", -1, true},
		{"99999999999999999999999", "99999999999999999999998", 1, true},
		{"2.0-beta", "1.9", 1, true},
		{"1.0-beta", "1.0", 0, false},
		{"1.0-beta", "1.0-beta", 0, true},
		{"5.0.0(12)", "5.0.0(14)", 0, false},
		{"5.1.0(18)", "5.0.0(12)", 1, true},
		{"abc", "1", 0, false},
		{"", "1", 0, false},
		{"1..2", "1", 0, false},
		{"1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17", "1", 0, false},
	} {
		c, ok := compareVersions(tc.a, tc.b)
		if c != tc.c || ok != tc.ok {
			t.Errorf("compareVersions(%q, %q) = %d, %v; want %d, %v", tc.a, tc.b, c, ok, tc.c, tc.ok)
		}
		if c2, ok2 := compareVersions(tc.b, tc.a); c2 != -c || ok2 != ok {
			t.Errorf("compareVersions(%q, %q) = %d, %v: not the reverse", tc.b, tc.a, c2, ok2)
		}
	}
}

func TestNumericDotted(t *testing.T) {
	for v, want := range map[string]bool{"87": true, "1.0.3": true, "": false, "1.": false, "1a": false, "v1": false} {
		if got := numericDotted(v); got != want {
			t.Errorf("numericDotted(%q) = %v", v, got)
		}
	}
}
