// Package signing makes and checks HMAC-SHA256 signatures with the shared SLIPWAY_SECRET: signed,
// expiring URLs for objects the service serves itself (filesystem storage), channel-password
// cookies, and install links for password-protected channels. Every replica with the same secret
// accepts what another signed, so no state is shared.
package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Signer signs with one key.
type Signer struct {
	key []byte
}

// New returns a Signer for the secret.
func New(secret []byte) *Signer { return &Signer{key: secret} }

// Sign returns a URL-safe signature of purpose and parts; purpose keeps signatures made for one
// use from being replayed for another.
func (s *Signer) Sign(purpose string, parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	for _, p := range parts {
		m.Write([]byte{0})
		m.Write([]byte(p))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a signature in constant time.
func (s *Signer) Verify(sig, purpose string, parts ...string) bool {
	return hmac.Equal([]byte(sig), []byte(s.Sign(purpose, parts...)))
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
