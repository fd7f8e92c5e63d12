// Package profileservice speaks Apple's over-the-air "Profile Service" enrollment, the first
// phase of it, which is all UDID collection needs: a configuration profile asks the device for
// its attributes, and the device POSTs them back as a plist inside a CMS (PKCS #7) SignedData
// envelope signed with its device identity certificate.
package profileservice

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"
)

// Attributes the profile asks the device for.
var Attributes = []string{"UDID", "PRODUCT", "VERSION", "SERIAL", "DEVICE_NAME", "IMEI", "MEID"}

// ProfileOptions shape the configuration profile.
type ProfileOptions struct {
	// CallbackURL is where the device POSTs its answer (https in production: iOS refuses http).
	CallbackURL string
	// Challenge is echoed back by the device; the callback checks it.
	Challenge string
	// Organization and DisplayName are what iOS shows in Settings.
	Organization, DisplayName string
	// Identifier is the profile's PayloadIdentifier (reverse DNS).
	Identifier string
}

type payloadContent struct {
	URL              string   `plist:"URL"`
	DeviceAttributes []string `plist:"DeviceAttributes"`
	Challenge        string   `plist:"Challenge,omitempty"`
}

type profile struct {
	PayloadContent      payloadContent `plist:"PayloadContent"`
	PayloadOrganization string         `plist:"PayloadOrganization"`
	PayloadDisplayName  string         `plist:"PayloadDisplayName"`
	PayloadDescription  string         `plist:"PayloadDescription"`
	PayloadVersion      int            `plist:"PayloadVersion"`
	PayloadUUID         string         `plist:"PayloadUUID"`
	PayloadIdentifier   string         `plist:"PayloadIdentifier"`
	PayloadType         string         `plist:"PayloadType"`
}

// Profile returns the configuration profile (an XML plist) that asks a device for its UDID.
func Profile(o ProfileOptions) ([]byte, error) {
	if o.CallbackURL == "" {
		return nil, errors.New("profileservice: no callback URL")
	}
	var b bytes.Buffer
	enc := plist.NewEncoderForFormat(&b, plist.XMLFormat)
	enc.Indent("\t")
	err := enc.Encode(profile{
		PayloadContent:      payloadContent{URL: o.CallbackURL, DeviceAttributes: Attributes, Challenge: o.Challenge},
		PayloadOrganization: o.Organization, PayloadDisplayName: o.DisplayName,
		PayloadDescription: "Sends this device's identifier (UDID), model and iOS version to " + o.Organization +
			" so that test builds can include it. Nothing is installed on the device.",
		PayloadVersion: 1, PayloadUUID: newUUID(), PayloadIdentifier: o.Identifier, PayloadType: "Profile Service",
	})
	return b.Bytes(), err
}

// Sign wraps a profile in CMS SignedData with the operator's certificate (and its chain), so
// that iOS shows it as verified.
func Sign(profile []byte, cert *x509.Certificate, key crypto.Signer, chain []*x509.Certificate) ([]byte, error) {
	sd, err := pkcs7.NewSignedData(profile)
	if err != nil {
		return nil, err
	}
	if err := sd.AddSignerChain(cert, key, chain, pkcs7.SignerInfoConfig{}); err != nil {
		return nil, fmt.Errorf("profileservice: signing: %w", err)
	}
	return sd.Finish()
}

// Answer is what a device sends back: the attributes it signed, and the certificate it signed
// them with (Signer), with the other certificates of its envelope (Certificates).
type Answer struct {
	Signer       *x509.Certificate   `plist:"-"`
	Certificates []*x509.Certificate `plist:"-"`

	UDID       string `plist:"UDID"`
	Product    string `plist:"PRODUCT"`
	Version    string `plist:"VERSION"`
	Serial     string `plist:"SERIAL"`
	DeviceName string `plist:"DEVICE_NAME"`
	IMEI       string `plist:"IMEI"`
	MEID       string `plist:"MEID"`
	Challenge  string `plist:"CHALLENGE"`
}

// ErrMalformed and ErrUnsigned are answers refused before their content is read.
var (
	ErrMalformed = errors.New("the body is not a CMS SignedData envelope holding a property list")
	ErrUnsigned  = errors.New("the envelope is not signed, or its signature does not match its content")
)

// ParseAnswer reads a device's answer: a CMS SignedData envelope, with its content and at least
// one signer whose signature over the content verifies against the certificate it carries. That
// proves the answer is intact and signed by the key of the certificate inside, not which device
// made it: SignedBy tells whether that certificate chains to a device CA.
func ParseAnswer(body []byte) (*Answer, error) {
	p7, err := pkcs7.Parse(body)
	if err != nil || len(p7.Content) == 0 {
		return nil, ErrMalformed
	}
	if len(p7.Signers) == 0 || len(p7.Certificates) == 0 {
		return nil, ErrUnsigned
	}
	if err := p7.Verify(); err != nil {
		return nil, ErrUnsigned
	}
	var a Answer
	if _, err := plist.Unmarshal(p7.Content, &a); err != nil {
		return nil, ErrMalformed
	}
	a.Signer, a.Certificates = p7.GetOnlySigner(), p7.Certificates
	for _, f := range []*string{&a.UDID, &a.Product, &a.Version, &a.Serial, &a.DeviceName, &a.IMEI, &a.MEID, &a.Challenge} {
		*f = strings.TrimSpace(*f)
	}
	return &a, nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := strings.ToUpper(hex.EncodeToString(b[:]))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
