package distribution

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Rules more than one part applies to what clients send.

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

// ShortText trims v and checks it is valid text of at most 255 characters.
func ShortText(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if utf8.RuneCountInString(v) > 255 || !utf8.ValidString(v) {
		return "", errs.Field(field, "must be valid text of at most 255 characters")
	}
	return v, nil
}

var releaseTypeRe = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// NormReleaseType lower-cases a release type and checks it is one short word ("" for none).
func NormReleaseType(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v != "" && !releaseTypeRe.MatchString(v) {
		return "", errs.Field("release_type", "must be a word such as debug, beta, adhoc, release or enterprise")
	}
	return v, nil
}

// WebURL trims v and checks it is an http or https URL of at most 2048 characters ("" for none).
func WebURL(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(v) > 2048 {
		return "", errs.Field(field, "must be an http or https URL of at most 2048 characters")
	}
	return v, nil
}

// MaxPasswordBytes is bcrypt's limit: it reads no more, so a longer password would be cut silently.
const MaxPasswordBytes = 72

// HashPassword returns the bcrypt hash of a channel password, or nil for "" (no password).
func HashPassword(password string) (*string, error) {
	if password == "" {
		return nil, nil
	}
	if len(password) > MaxPasswordBytes {
		return nil, errs.Field("password", "must be at most %d bytes", MaxPasswordBytes)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	hash := string(h)
	return &hash, nil
}

// Apple device identifiers come in three shapes: 40 hex digits (devices before 2018), 8 and 16
// hex digits joined by a dash (newer iPhones, iPads and Apple silicon Macs), and a UUID (Intel
// Macs, as the developer portal takes them).
var (
	udidLegacyRe = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	udidModernRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{16}$`)
	udidMacRe    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// NormalizeUDID checks a UDID is in one of Apple's formats and returns its canonical form (40-hex
// ones lower case, the others upper case, as devices report them), or an errs.Invalid.
func NormalizeUDID(udid string) (string, error) {
	udid = strings.TrimSpace(udid)
	switch {
	case udidLegacyRe.MatchString(udid):
		return strings.ToLower(udid), nil
	case udidModernRe.MatchString(udid), udidMacRe.MatchString(udid):
		return strings.ToUpper(udid), nil
	}
	return "", errs.Field("udid", "is not an Apple device identifier (40 hex digits, 8-16 hex digits such as 00008030-001A2B3C4D5E6F70, or a Mac's UUID)")
}

// IsMacUDID reports whether a UDID has the shape of an Intel Mac's (a UUID).
func IsMacUDID(udid string) bool { return udidMacRe.MatchString(udid) }

// WithArticle puts "a" or "an" before a word, by its first letter: "an android", "a macos".
func WithArticle(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an " + word
	}
	return "a " + word
}

// NewFeedToken returns a new channel feed token (32 random bytes, base64url) and the SHA-256 hex
// the channel keeps of it.
func NewFeedToken() (token, hash string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	token = "sft_" + base64.RawURLEncoding.EncodeToString(b)
	return token, FeedTokenHash(token)
}

// FeedTokenHash is the SHA-256 (hex) a channel keeps of its feed token.
func FeedTokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CheckFeedToken reports whether token is the channel's feed token (in constant time).
func (c *Channel) CheckFeedToken(token string) bool {
	if c.FeedTokenHash == "" || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(FeedTokenHash(token)), []byte(c.FeedTokenHash)) == 1
}
