package blob

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxKeyLen is the longest key accepted, in bytes: S3's limit, so a key valid on one backend is
// valid on every backend.
const MaxKeyLen = 1024

// CheckKey returns nil if key is a valid object key, and otherwise an error wrapping ErrInvalidKey.
// Every backend applies the same rules, so a key that works with the filesystem in development
// works with S3 in production: a relative, slash-separated path of valid UTF-8 without control
// characters or backslashes, whose segments are neither empty nor "." nor "..".
func CheckKey(key string) error {
	reason := ""
	switch {
	case key == "":
		reason = "empty"
	case len(key) > MaxKeyLen:
		reason = fmt.Sprintf("longer than %d bytes", MaxKeyLen)
	case !utf8.ValidString(key):
		reason = "not valid UTF-8"
	case strings.ContainsRune(key, '\\'):
		reason = "contains a backslash"
	case strings.HasPrefix(key, "/"):
		reason = "absolute"
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		reason = "contains a control character"
	default:
		for seg := range strings.SplitSeq(key, "/") {
			switch seg {
			case "":
				reason = "has an empty path segment"
			case ".", "..":
				reason = "has a . or .. path segment"
			}
			if reason != "" {
				break
			}
		}
	}
	if reason != "" {
		return fmt.Errorf("%w %q: %s", ErrInvalidKey, truncate(key), reason)
	}
	return nil
}

// truncate keeps error messages short when a key is absurdly long.
func truncate(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
