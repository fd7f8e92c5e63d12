package distribution

import (
	"bytes"
	"io"
	"path"
	"strings"
	"unicode"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// cleanFilename keeps the base name of a client's file name, printable and at most 200 bytes, for
// Content-Disposition; "" when nothing usable remains.
func cleanFilename(name string) string {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" || name == ".." {
		return ""
	}
	name = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) || r == '"' {
			return -1
		}
		return r
	}, name)
	for len(name) > 200 {
		_, size := lastRune(name)
		name = name[:len(name)-size]
	}
	return strings.TrimSpace(name)
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] < 0x80 || s[i] >= 0xC0 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

// MatchBundleID reports whether a channel's bundle_id pattern allows id: "*" allows anything, a
// "*" inside a pattern matches any run of characters ("com.example.*"), anything else must match
// exactly.
func MatchBundleID(pattern, id string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == id
	}
	if !strings.HasPrefix(id, parts[0]) {
		return false
	}
	id = id[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(id, p)
		if i < 0 {
			return false
		}
		id = id[i+len(p):]
	}
	return strings.HasSuffix(id, last)
}
