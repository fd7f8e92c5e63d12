package profileservice_test

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/pkg/profileservice"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
)

// The embedded Apple chain is intact: each certificate is signed by the next, the last is the
// Apple Root CA Apple publishes (its SHA-256 fingerprint), and the anchor is Apple iPhone Device CA.
func TestAppleDeviceCA(t *testing.T) {
	chain := profileservice.AppleChain()
	names := []string{"Apple iPhone Device CA", "Apple iPhone Certification Authority", "Apple Root CA"}
	for i, c := range chain {
		if c.Subject.CommonName != names[i] || !c.IsCA {
			t.Errorf("certificate %d: %s (CA %v), want the CA %s", i, c.Subject.CommonName, c.IsCA, names[i])
		}
		parent := chain[min(i+1, len(chain)-1)]
		if err := parent.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
			t.Errorf("%s is not signed by %s: %v", names[i], parent.Subject.CommonName, err)
		}
	}
	sum := sha256.Sum256(chain[2].Raw)
	if got := strings.ToUpper(hex.EncodeToString(sum[:])); got != profileservice.AppleRootCASHA256 {
		t.Errorf("Apple Root CA fingerprint %s, Apple publishes %s", got, profileservice.AppleRootCASHA256)
	}
	if a := profileservice.AppleDeviceCAs(); len(a) != 1 || a[0].Subject.CommonName != "Apple iPhone Device CA" {
		t.Errorf("anchors: %v", a)
	}
	// Apple's own chain walks like a device's: the Device CA "signs" nothing here, but the
	// Certification Authority chains to the root through nothing but signatures.
	a := &profileservice.Answer{Signer: chain[0], Certificates: chain[1:2]}
	if !a.SignedBy(chain[2:]) {
		t.Error("Apple iPhone Device CA does not chain to Apple Root CA through the Certification Authority (SHA-1 signatures)")
	}
}

// Only a signer that chains to an anchor through CA certificates is a device; a self-signed
// answer, one from another CA, or one "issued" by a certificate that is not a CA is not.
func TestAnswerSignedBy(t *testing.T) {
	ca := profileservicetest.NewCA(t, "Test iPhone Device CA")
	other := profileservicetest.NewCA(t, "Test iPhone Device CA") // same name, other key
	inter := ca.Intermediate(t, "Test intermediate")
	attrs := map[string]string{"UDID": "00008030-001A35E23C08802E", "CHALLENGE": "c"}
	parse := func(body []byte) *profileservice.Answer {
		t.Helper()
		a, err := profileservice.ParseAnswer(body)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	notCA, notCAKey := ca.Device(t)
	fake := &profileservicetest.CA{Cert: notCA, Key: notCAKey} // a device posing as a CA
	for name, c := range map[string]struct {
		body []byte
		want bool
	}{
		"issued by the anchor":        {ca.SignedAnswer(t, attrs), true},
		"through an intermediate":     {inter.SignedAnswer(t, attrs, inter.Cert), true},
		"intermediate not sent":       {inter.SignedAnswer(t, attrs), false},
		"self-signed":                 {profileservicetest.Answer(t, attrs), false},
		"another CA of the same name": {other.SignedAnswer(t, attrs), false},
		"issued by a device":          {fake.SignedAnswer(t, attrs, notCA), false},
		"Apple's CA, not this one":    {ca.SignedAnswer(t, attrs), false},
	} {
		anchors := ca.Cert
		if name == "Apple's CA, not this one" {
			anchors = profileservice.AppleDeviceCAs()[0]
		}
		if got := parse(c.body).SignedBy([]*x509.Certificate{anchors}); got != c.want {
			t.Errorf("%s: signed by a device CA %v, want %v", name, got, c.want)
		}
	}
}
