// Package edsign makes Ed25519 signatures (RFC 8032 "pure" Ed25519, the one Sparkle's sign_update
// makes and Sparkle verifies) of a stored package too large to hold in memory.
//
// Pure Ed25519 hashes the message twice: once with the key's prefix for the nonce r, then again
// after R = rB is known, for the challenge k = SHA-512(R || A || M). crypto/ed25519 takes the
// message as one slice, so a 2 GiB package would have to sit in memory; Ed25519ph, which takes a
// digest, makes a signature Sparkle does not accept. So a Signature is written the message twice,
// one read of the stored object each (the first read is the checksum verifier's own), and the
// result is byte for byte what crypto/ed25519.Sign makes. The scalar and point arithmetic is
// filippo.io/edwards25519, the implementation under crypto/ed25519.
package edsign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"hash"
	"log/slog"

	"filippo.io/edwards25519"
)

// Key is an Ed25519 private key. It prints, formats and logs as its public key only.
type Key struct {
	s      *edwards25519.Scalar // the clamped secret scalar
	prefix []byte               // the second half of SHA-512(seed): the nonce's secret input
	public []byte               // A = sB
}

// ParseKey reads a private key in one of the forms operators hold one in: Sparkle's own export
// (`generate_keys -x`: base64 of the 32-byte seed), base64 of 64 bytes (seed then public key, as
// libsodium and Go keep it), base64 of 96 bytes (old Sparkle keys: the expanded private key then
// the public key), or a PEM "PRIVATE KEY" (PKCS #8, as `openssl genpkey -algorithm ED25519` makes).
// Errors never quote the key.
func ParseKey(text []byte) (*Key, error) {
	text = bytes.TrimSpace(text)
	if block, _ := pem.Decode(text); block != nil {
		if block.Type != "PRIVATE KEY" {
			return nil, errors.New("the PEM block is a " + block.Type + ", not a PRIVATE KEY (PKCS #8)")
		}
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the PEM PRIVATE KEY does not parse as PKCS #8")
		}
		priv, ok := parsed.(ed25519.PrivateKey)
		if !ok {
			return nil, errors.New("the PEM PRIVATE KEY is not an Ed25519 key")
		}
		return fromSeed(priv.Seed()), nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(text))
	if err != nil {
		return nil, errors.New("the key is neither PEM nor base64")
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return fromSeed(raw), nil
	case ed25519.PrivateKeySize:
		k := fromSeed(raw[:32])
		if !bytes.Equal(k.public, raw[32:]) {
			return nil, errors.New("the key's last 32 bytes are not the public key of its first 32 (a seed)")
		}
		return k, nil
	case 96:
		s, err := new(edwards25519.Scalar).SetBytesWithClamping(raw[:32])
		if err != nil {
			return nil, errors.New("the expanded private key does not parse")
		}
		k := &Key{s: s, prefix: bytes.Clone(raw[32:64]), public: new(edwards25519.Point).ScalarBaseMult(s).Bytes()}
		if !bytes.Equal(k.public, raw[64:]) {
			return nil, errors.New("the key's last 32 bytes are not the public key of its expanded private key")
		}
		return k, nil
	default:
		return nil, errors.New("the base64 key is not 32, 64 or 96 bytes long")
	}
}

// fromSeed expands an RFC 8032 seed: SHA-512, the first half clamped is the scalar.
func fromSeed(seed []byte) *Key {
	h := sha512.Sum512(seed)
	s, err := new(edwards25519.Scalar).SetBytesWithClamping(h[:32])
	if err != nil {
		panic("edsign: 32 bytes refused by SetBytesWithClamping") // cannot happen: the length is fixed
	}
	return &Key{s: s, prefix: bytes.Clone(h[32:]), public: new(edwards25519.Point).ScalarBaseMult(s).Bytes()}
}

// Public returns the public key (what an app embeds: Sparkle's SUPublicEDKey is its base64).
func (k *Key) Public() ed25519.PublicKey { return bytes.Clone(k.public) }

// String names the key by its public half, so a key printed by mistake gives nothing away.
func (k *Key) String() string {
	return "Ed25519 key " + base64.StdEncoding.EncodeToString(k.public)
}

// GoString is String: %#v shows no secret either.
func (k *Key) GoString() string { return k.String() }

// LogValue is String for slog.
func (k *Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// Signature is one signature being made. Write the message to it, call Reread, write the same
// message again, then Sum.
type Signature struct {
	key    *Key
	h      hash.Hash
	r      *edwards25519.Scalar
	rBytes []byte
}

// Sign starts a signature; the message's first pass is written next.
func (k *Key) Sign() *Signature {
	h := sha512.New()
	h.Write(k.prefix)
	return &Signature{key: k, h: h}
}

// Write adds p to the pass in progress. It never fails.
func (s *Signature) Write(p []byte) (int, error) { return s.h.Write(p) }

// Reread ends the first pass (the nonce r and R = rB are now known) and starts the second.
func (s *Signature) Reread() {
	var digest [64]byte
	r, err := new(edwards25519.Scalar).SetUniformBytes(s.h.Sum(digest[:0]))
	if err != nil {
		panic("edsign: 64 bytes refused by SetUniformBytes") // cannot happen: the length is fixed
	}
	s.r, s.rBytes = r, new(edwards25519.Point).ScalarBaseMult(r).Bytes()
	s.h = sha512.New()
	s.h.Write(s.rBytes)
	s.h.Write(s.key.public)
}

// Sum ends the second pass and returns the 64-byte signature R || S, S = r + ks. A second pass
// whose bytes differ from the first's still yields a valid signature of the second pass's bytes,
// so the caller checks (by checksum) that both passes read the same object.
func (s *Signature) Sum() []byte {
	if s.r == nil {
		panic("edsign: Sum before Reread")
	}
	var digest [64]byte
	k, err := new(edwards25519.Scalar).SetUniformBytes(s.h.Sum(digest[:0]))
	if err != nil {
		panic("edsign: 64 bytes refused by SetUniformBytes")
	}
	S := new(edwards25519.Scalar).MultiplyAdd(k, s.key.s, s.r)
	return append(bytes.Clone(s.rBytes), S.Bytes()...)
}
