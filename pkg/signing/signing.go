// Package signing makes and checks HMAC-SHA256 signatures with the shared SLIPWAY_SECRET: signed,
// expiring URLs for objects the service serves itself (filesystem storage), channel-password
// cookies, install links for password-protected channels, the console's OpenID Connect flow
// state and CSRF tokens, upload-session part URLs and UDID challenges. Every replica with the
// same secret accepts what another signed, so no state is shared.
//
// A Signer signs with one key and verifies with that key and any previous ones
// (SLIPWAY_SECRET_PREVIOUS), so the secret can be rotated while replicas with the old and the new
// key run side by side and what the old key signed stays valid for a window (docs/operations.md,
// "Rotating SLIPWAY_SECRET").
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Signer signs with its current key and verifies with the current and the previous keys.
type Signer struct {
	key      []byte
	previous [][]byte
}

// New returns a Signer that signs with secret and also accepts signatures made with any of the
// previous secrets.
func New(secret []byte, previous ...[]byte) *Signer {
	return &Signer{key: secret, previous: previous}
}

// Sign returns a URL-safe signature of purpose and parts, with the current key; purpose keeps
// signatures made for one use from being replayed for another.
func (s *Signer) Sign(purpose string, parts ...string) string {
	return sign(s.key, purpose, parts)
}

func sign(key []byte, purpose string, parts []string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SignAll returns the signatures of purpose and parts with the current key, then with each
// previous one: for keys derived from the secret (the console's sealed flash cookie), which a
// replica still on the previous key must be able to open during a rotation.
func (s *Signer) SignAll(purpose string, parts ...string) []string {
	out := []string{sign(s.key, purpose, parts)}
	for _, k := range s.previous {
		out = append(out, sign(k, purpose, parts))
	}
	return out
}

// Verify checks a signature in constant time against the current key, then each previous one.
func (s *Signer) Verify(sig, purpose string, parts ...string) bool {
	ok := hmac.Equal([]byte(sig), []byte(sign(s.key, purpose, parts)))
	for _, k := range s.previous {
		// Every key is tried, so the time taken does not tell which one matched.
		ok = hmac.Equal([]byte(sig), []byte(sign(k, purpose, parts))) || ok
	}
	return ok
}

// Token returns "<unix expiry>.<signature>" for purpose and parts, valid until now+ttl.
func (s *Signer) Token(purpose string, ttl time.Duration, parts ...string) string {
	exp := strconv.FormatInt(time.Now().Add(ttl).Unix(), 10)
	return exp + "." + s.Sign(purpose, append([]string{exp}, parts...)...)
}

// CheckToken reports whether token was made by Token for purpose and parts and has not expired.
func (s *Signer) CheckToken(token, purpose string, parts ...string) bool {
	exp, sig, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || time.Now().Unix() > n {
		return false
	}
	return s.Verify(sig, purpose, append([]string{exp}, parts...)...)
}
