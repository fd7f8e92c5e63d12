// Package profileservicetest makes what a device sends back to a UDID profile: real CMS
// SignedData envelopes, signed with a throwaway key made for the test, self-signed (anyone's
// answer) or issued by a CA made for the test (a device's, when the test trusts that CA).
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

// Signed wraps content in CMS SignedData signed by a fresh self-signed identity: what anyone can
// make, an answer that chains to no device CA.
func Signed(t testing.TB, content []byte) []byte {
	t.Helper()
	cert, key := Identity(t)
	return sign(t, content, cert, key, nil)
}

func sign(t testing.TB, content []byte, cert *x509.Certificate, key *ecdsa.PrivateKey, chain []*x509.Certificate) []byte {
	t.Helper()
	sd, err := pkcs7.NewSignedData(content)
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.AddSigner(cert, key, pkcs7.SignerInfoConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range chain { // as given, unchecked: a test may send a broken chain
		sd.AddCertificate(c)
	}
	out, err := sd.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CA is a certificate authority made for a test, standing in for Apple iPhone Device CA.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a CA named name (self-signed).
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	return &CA{Cert: issue(t, tmpl, nil, &key.PublicKey, key), Key: key}
}

func issue(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, signer *ecdsa.PrivateKey) *x509.Certificate {
	t.Helper()
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// Device makes a device identity issued by the CA, as Apple iPhone Device CA issues one to each
// device.
func (ca *CA) Device(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "device"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	return issue(t, tmpl, ca.Cert, &key.PublicKey, ca.Key), key
}

// Intermediate makes a CA issued by this one.
func (ca *CA) Intermediate(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	return &CA{Cert: issue(t, tmpl, ca.Cert, &key.PublicKey, ca.Key), Key: key}
}

// SignedAnswer is a device's answer carrying attrs, signed by a device identity the CA issued
// (with chain, the CAs between it and the anchor, in the envelope).
func (ca *CA) SignedAnswer(t testing.TB, attrs map[string]string, chain ...*x509.Certificate) []byte {
	t.Helper()
	cert, key := ca.Device(t)
	return sign(t, plistOf(t, attrs), cert, key, chain)
}

func plistOf(t testing.TB, attrs map[string]string) []byte {
	t.Helper()
	body, err := plist.Marshal(attrs, plist.XMLFormat)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// Answer is a device's signed answer carrying attrs (UDID, PRODUCT, VERSION, SERIAL, CHALLENGE...).
func Answer(t testing.TB, attrs map[string]string) []byte {
	t.Helper()
	return Signed(t, plistOf(t, attrs))
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
