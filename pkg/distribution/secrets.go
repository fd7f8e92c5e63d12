package distribution

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// A channel's secrets: its download password (bcrypt) and its feed token (only a SHA-256 kept).

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

// NewSecret returns a random secret (32 bytes, base64url) for a session or a one-time link, and
// the hash stored in its place (HashSecret).
func NewSecret() (secret, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	secret = base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashSecret(secret), nil
}

// HashSecret is the SHA-256 (hex) kept of a session's or link's secret.
func HashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
