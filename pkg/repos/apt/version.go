package apt

import "strings"

// CompareVersions compares two Debian versions as dpkg does (deb-version(7)): the epoch as a
// number, then the upstream version and the revision, each alternately by non-digit runs (letters
// before non-letters, "~" before everything, even the end) and digit runs as numbers. It returns
// -1, 0 or 1.
func CompareVersions(a, b string) int {
	ea, ua, ra := splitVersion(a)
	eb, ub, rb := splitVersion(b)
	if c := compareNumbers(ea, eb); c != 0 {
		return c
	}
	if c := compareFragment(ua, ub); c != 0 {
		return c
	}
	return compareFragment(ra, rb)
}

func splitVersion(v string) (epoch, upstream, revision string) {
	epoch, upstream = "0", v
	if e, rest, ok := strings.Cut(v, ":"); ok {
		epoch, upstream = e, rest
	}
	if i := strings.LastIndexByte(upstream, '-'); i >= 0 {
		upstream, revision = upstream[:i], upstream[i+1:]
	}
	return epoch, upstream, revision
}

// order is dpkg's weight of a character in a non-digit run.
func order(c byte) int {
	switch {
	case c == '~':
		return -1
	case c >= '0' && c <= '9':
		return 0
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return int(c)
	default:
		return int(c) + 256
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func compareFragment(a, b string) int {
	for a != "" || b != "" {
		// The non-digit prefix, character by character (the end weighs 0).
		for (a != "" && !isDigit(a[0])) || (b != "" && !isDigit(b[0])) {
			var ac, bc int
			if a != "" && !isDigit(a[0]) {
				ac = order(a[0])
			}
			if b != "" && !isDigit(b[0]) {
				bc = order(b[0])
			}
			if ac != bc {
				if ac < bc {
					return -1
				}
				return 1
			}
			if a != "" && !isDigit(a[0]) {
				a = a[1:]
			}
			if b != "" && !isDigit(b[0]) {
				b = b[1:]
			}
		}
		// Then the digit run, as a number.
		i, j := 0, 0
		for i < len(a) && isDigit(a[i]) {
			i++
		}
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if c := compareNumbers(a[:i], b[:j]); c != 0 {
			return c
		}
		a, b = a[i:], b[j:]
	}
	return 0
}

// compareNumbers compares two runs of digits as numbers of any length.
func compareNumbers(a, b string) int {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}
