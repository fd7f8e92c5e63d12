package profileservice

import (
	"bytes"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"fmt"
	"sync"
)

// appleChainPEM is Apple's "Apple iPhone Device CA", which issues the identity certificate every
// iPhone, iPad and iPod touch signs its profile-service answer with, followed by the CA that
// issued it ("Apple iPhone Certification Authority") and Apple's root ("Apple Root CA"). Where it
// came from, and how it was checked, is in docs/security.md (UDID answers); TestAppleDeviceCA
// checks the chain and the root's published SHA-256 fingerprint.
//
//go:embed apple_iphone_device_ca.pem
var appleChainPEM []byte

// AppleRootCASHA256 is the SHA-256 fingerprint Apple publishes for "Apple Root CA"
// (https://www.apple.com/certificateauthority/, AppleIncRootCertificate.cer).
const AppleRootCASHA256 = "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024"

var appleChain = sync.OnceValues(func() ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := appleChainPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) != 3 {
		return nil, fmt.Errorf("profileservice: the embedded Apple chain holds %d certificates, want 3", len(out))
	}
	return out, nil
})

// AppleChain returns the embedded chain: Apple iPhone Device CA, Apple iPhone Certification
// Authority, Apple Root CA.
func AppleChain() []*x509.Certificate {
	c, err := appleChain()
	if err != nil {
		panic(err) // the embedded file is checked by TestAppleDeviceCA
	}
	return c
}

// AppleDeviceCAs are the anchors a device's answer must chain to: Apple iPhone Device CA, as
// Apple's Over-the-Air Profile Delivery and Configuration guide says to check.
func AppleDeviceCAs() []*x509.Certificate { return AppleChain()[:1] }

// maxChainDepth bounds the intermediates between a signer and an anchor.
const maxChainDepth = 4

// SignedBy reports whether the answer's signing certificate chains to one of anchors, through
// the other certificates of its envelope. Validity dates are not checked, as Apple's guide says
// for device certificates issued by Apple iPhone Device CA (the CA's own certificate expired in
// 2014; devices activated since still carry identities it signed); what is proved is that the
// answer was signed with a key an anchor vouched for. SHA-1 signatures, which those
// certificates use, are accepted. Each intermediate must be a CA.
func (a *Answer) SignedBy(anchors []*x509.Certificate) bool {
	if a.Signer == nil || len(anchors) == 0 {
		return false
	}
	return chainsTo(a.Signer, a.Certificates, anchors, maxChainDepth)
}

func chainsTo(c *x509.Certificate, pool, anchors []*x509.Certificate, depth int) bool {
	for _, an := range anchors {
		if c.Equal(an) || issuedBy(c, an) {
			return true
		}
	}
	if depth == 0 {
		return false
	}
	for _, p := range pool {
		if p.Equal(c) || !p.BasicConstraintsValid || !p.IsCA || !issuedBy(c, p) {
			continue
		}
		if chainsTo(p, pool, anchors, depth-1) {
			return true
		}
	}
	return false
}

// issuedBy reports whether parent's key signed c (names matching).
func issuedBy(c, parent *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, parent.RawSubject) &&
		parent.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) == nil
}
