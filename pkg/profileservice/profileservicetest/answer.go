// Package profileservicetest makes what a device sends back to a UDID profile: real CMS
// SignedData envelopes, signed with a throwaway key made for the test.
package profileservicetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"
)

// Identity is a self-signed certificate and its key, standing in for a device's identity.
func Identity(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "Test Device Identity"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// Signed wraps content in CMS SignedData signed by a fresh identity.
func Signed(t testing.TB, content []byte) []byte {
	t.Helper()
	cert, key := Identity(t)
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.AddSigner(cert, key, pkcs7.SignerInfoConfig{}); err != nil {
		t.Fatal(err)
	}
	out, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Answer is a device's signed answer carrying attrs (UDID, PRODUCT, VERSION, SERIAL, CHALLENGE...).
func Answer(t testing.TB, attrs map[string]string) []byte {
	t.Helper()
	body, err := plist.Marshal(attrs, plist.XMLFormat)
	if err != nil {
		t.Fatal(err)
	}
	return Signed(t, body)
}

// Challenge reads the challenge out of a (unsigned) UDID profile.
func Challenge(t testing.TB, profile []byte) string {
	t.Helper()
	var p struct {
		PayloadContent struct {
			Challenge string `plist:"Challenge"`
		} `plist:"PayloadContent"`
	}
	if _, err := plist.Unmarshal(profile, &p); err != nil {
		t.Fatalf("the profile is not a plist: %v", err)
	}
	return p.PayloadContent.Challenge
}
