package edsign

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// sign writes msg twice, in uneven pieces, as the verifier's two reads of an object do.
func sign(k *Key, msg []byte) []byte {
	s := k.Sign()
	io.CopyBuffer(s, bytes.NewReader(msg), make([]byte, 7))
	s.Reread()
	io.CopyBuffer(s, bytes.NewReader(msg), make([]byte, 4096))
	return s.Sum()
}

// The streamed signature is byte for byte crypto/ed25519's over the whole message (RFC 8032 is
// deterministic), and crypto/ed25519 verifies it, for every length class: empty, one block, many.
func TestSignatureIsCryptoEd25519s(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 1000, 1 << 20} {
		pub, priv, _ := ed25519.GenerateKey(nil)
		msg := make([]byte, n)
		rand.Read(msg)
		k, err := ParseKey([]byte(base64.StdEncoding.EncodeToString(priv.Seed())))
		if err != nil {
			t.Fatal(err)
		}
		got := sign(k, msg)
		if want := ed25519.Sign(priv, msg); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: signature %x, crypto/ed25519 %x", n, got, want)
		}
		if !ed25519.Verify(pub, msg, got) || !bytes.Equal(k.Public(), pub) {
			t.Fatalf("%d bytes: does not verify", n)
		}
		if n > 0 {
			msg[n/2] ^= 1
			if ed25519.Verify(pub, msg, got) {
				t.Fatalf("%d bytes: verifies over other bytes", n)
			}
		}
	}
}

// Every form an operator may hold the key in parses to the same key; a wrong one is refused
// with an error that does not quote it.
func TestParseKeyForms(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	der, _ := x509.MarshalPKCS8PrivateKey(priv)
	h := sha512.Sum512(priv.Seed())
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	legacy := append(append([]byte{}, h[:]...), pub...)
	b64 := base64.StdEncoding.EncodeToString
	msg := []byte("the package")
	for name, text := range map[string]string{
		"seed (Sparkle's generate_keys -x)":   b64(priv.Seed()) + "\n",
		"seed and public key (libsodium, Go)": b64(priv),
		"old Sparkle expanded key":            b64(legacy),
		"PEM PKCS #8":                         string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
	} {
		k, err := ParseKey([]byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(k.Public(), pub) || !bytes.Equal(sign(k, msg), ed25519.Sign(priv, msg)) {
			t.Fatalf("%s: another key", name)
		}
	}

	_, other, _ := ed25519.GenerateKey(nil)
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ecKey)
	for name, text := range map[string]string{
		"empty":                 "",
		"not base64":            "%%%secret%%%",
		"wrong length":          b64(priv.Seed()[:31]),
		"mismatched public key": b64(append(priv.Seed(), other.Public().(ed25519.PublicKey)...)),
		"mismatched legacy key": b64(append(h[:], other.Public().(ed25519.PublicKey)...)),
		"PEM of another type":   string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})),
		"PEM of an EC key":      string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER})),
		"PEM garbage":           string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")})),
	} {
		_, err := ParseKey([]byte(text))
		if err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if secret := b64(priv.Seed()); strings.Contains(err.Error(), secret[:12]) {
			t.Fatalf("%s: the error quotes the key: %v", name, err)
		}
	}
}

// A key printed, formatted or logged by mistake shows its public half only.
func TestKeyNeverPrintsItsSecret(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(nil)
	k, _ := ParseKey([]byte(base64.StdEncoding.EncodeToString(priv.Seed())))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("key", "key", k)
	for _, out := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), logged.String()} {
		for _, secret := range [][]byte{priv.Seed(), k.prefix} {
			if strings.Contains(out, base64.StdEncoding.EncodeToString(secret)[:12]) || strings.Contains(out, fmt.Sprintf("%x", secret[:6])) {
				t.Fatalf("the secret shows in %q", out)
			}
		}
		if !strings.Contains(out, base64.StdEncoding.EncodeToString(k.public)) {
			t.Fatalf("the public key is not in %q", out)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	_, priv, _ := ed25519.GenerateKey(nil)
	f.Add([]byte(base64.StdEncoding.EncodeToString(priv.Seed())))
	f.Add([]byte(base64.StdEncoding.EncodeToString(priv)))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		k, err := ParseKey(text)
		if err != nil {
			return
		}
		msg := []byte("m")
		if !ed25519.Verify(k.Public(), msg, sign(k, msg)) {
			t.Fatal("a key that parsed signs what its public key does not verify")
		}
	})
}

// BenchmarkSign measures both passes over a 16 MiB package: SetBytes makes -bench report the
// throughput per byte of package (the verifier's first read is shared with the checksums).
func BenchmarkSign(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(nil)
	k, _ := ParseKey([]byte(base64.StdEncoding.EncodeToString(priv.Seed())))
	msg := make([]byte, 16<<20)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		s := k.Sign()
		s.Write(msg)
		s.Reread()
		s.Write(msg)
		s.Sum()
	}
}
