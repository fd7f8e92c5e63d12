package distribution

import (
	"strconv"
	"strings"
	"unicode"
)

// CompareVersions compares release versions numerically segment by segment ("1.10" > "1.9",
// "v2.0" == "2.0", "1.0" == "1.0.0"); a segment that is not a number compares as text after
// numbers. It returns -1, 0 or 1.
func CompareVersions(a, b string) int {
	as, bs := versionSegments(a), versionSegments(b)
	for i := 0; i < max(len(as), len(bs)); i++ {
		x, y := "0", "0"
		if i < len(as) {
			x = as[i]
		}
		if i < len(bs) {
			y = bs[i]
		}
		if c := compareSegment(x, y); c != 0 {
			return c
		}
	}
	return 0
}

// CompareBuilds compares build versions: as integers when both are integers, else as versions.
func CompareBuilds(a, b string) int {
	x, errA := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	y, errB := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if errA == nil && errB == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return CompareVersions(a, b)
}

// Newer reports whether the release (release, build) is newer than (curRelease, curBuild): a higher
// release version, or the same release version with a higher build.
func Newer(release, build, curRelease, curBuild string) bool {
	if c := CompareVersions(release, curRelease); c != 0 {
		return c > 0
	}
	return CompareBuilds(build, curBuild) > 0
}

func versionSegments(v string) []string {
	v = strings.TrimSpace(v)
	v = strings.TrimLeft(v, "vV")
	segs := strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == '-' || r == '_' || r == '+' || unicode.IsSpace(r) })
	// Trailing zero segments do not make a version newer: 1.0 == 1.0.0.
	for len(segs) > 1 && isZero(segs[len(segs)-1]) {
		segs = segs[:len(segs)-1]
	}
	return segs
}

func isZero(s string) bool { return strings.Trim(s, "0") == "" && s != "" }

func compareSegment(x, y string) int {
	nx, errX := strconv.ParseUint(x, 10, 64)
	ny, errY := strconv.ParseUint(y, 10, 64)
	switch {
	case errX == nil && errY == nil:
		switch {
		case nx < ny:
			return -1
		case nx > ny:
			return 1
		}
		return 0
	case errX == nil:
		return 1 // 1.0 > 1.0-beta's "beta"
	case errY == nil:
		return -1
	}
	return strings.Compare(strings.ToLower(x), strings.ToLower(y))
}
