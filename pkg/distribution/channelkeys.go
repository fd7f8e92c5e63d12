package distribution

import (
	"regexp"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// What a channel takes: the bundle ids its pattern allows, and the keys that name it.

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

// slugRe is what a channel key may be.
var slugRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidSlug reports whether s may be a channel key.
func ValidSlug(s string) bool { return slugRe.MatchString(s) }

// CheckChannelKey trims a channel key a client sent: errs.Invalid when it is missing,
// errs.NotFound when it cannot be one (so it never reaches the database).
func CheckChannelKey(key string) (string, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return "", errs.Field("channel_key", "is required")
	}
	if !slugRe.MatchString(key) {
		return "", errs.New(errs.NotFound, "channel not found")
	}
	return key, nil
}
