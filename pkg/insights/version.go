package insights

import "strings"

// maxVersionParts bounds the dotted parts compared; versions with more are not compared.
const maxVersionParts = 16

// compareVersions compares two dotted versions part by part ("1.10" > "1.9", "1.2" == "1.2.0"):
// each part's leading digits as a number of any length (leading zeros ignored), a missing part
// as 0, an optional leading "v" ignored. ok is false when they cannot be compared: either is
// empty or has a part without leading digits, has more than maxVersionParts parts, or the first
// parts whose numbers are equal differ in what follows the digits ("1.0-beta" and "1.0"), where
// ordering would be a guess.
func compareVersions(a, b string) (c int, ok bool) {
	pa, oka := versionParts(a)
	pb, okb := versionParts(b)
	if !oka || !okb {
		return 0, false
	}
	for i := range max(len(pa), len(pb)) {
		x, y := part{num: "0"}, part{num: "0"}
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if c := compareDigits(x.num, y.num); c != 0 {
			return c, true
		}
		if x.rest != y.rest {
			return 0, false
		}
	}
	return 0, true
}

// part is one dotted part of a version: its leading digits (without leading zeros, "0" for
// zero) and what follows them.
type part struct{ num, rest string }

func versionParts(v string) ([]part, bool) {
	v = strings.TrimSpace(v)
	if len(v) > 1 && (v[0] == 'v' || v[0] == 'V') && v[1] >= '0' && v[1] <= '9' {
		v = v[1:]
	}
	if v == "" || strings.Count(v, ".") >= maxVersionParts {
		return nil, false
	}
	var parts []part
	for _, s := range strings.Split(v, ".") {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		if n == 0 {
			return nil, false
		}
		num := strings.TrimLeft(s[:n], "0")
		if num == "" {
			num = "0"
		}
		parts = append(parts, part{num: num, rest: s[n:]})
	}
	return parts, true
}

// compareDigits compares two decimal numbers without leading zeros, of any length.
func compareDigits(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// numericDotted reports whether v is digits, or digits separated by dots ("87", "1.0.3").
func numericDotted(v string) bool {
	if v == "" {
		return false
	}
	for _, s := range strings.Split(v, ".") {
		if s == "" || strings.Trim(s, "0123456789") != "" {
			return false
		}
	}
	return true
}
