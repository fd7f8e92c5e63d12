package profileservice_test

import (
	"crypto/ecdsa"
	"crypto/x509"
	"testing"

	"github.com/smallstep/pkcs7"
	"howett.net/plist"

	"github.com/slipwayhq/slipway/pkg/profileservice"
	"github.com/slipwayhq/slipway/pkg/profileservice/profileservicetest"
)

func signedAnswer(t testing.TB, content []byte) []byte { return profileservicetest.Signed(t, content) }

func deviceIdentity(t testing.TB) (*x509.Certificate, *ecdsa.PrivateKey) {
	return profileservicetest.Identity(t)
}

func TestProfileAndAnswer(t *testing.T) {
	raw, err := profileservice.Profile(profileservice.ProfileOptions{CallbackURL: "https://slipway.example/udid/callback", Challenge: "c1", Organization: "Example",
		DisplayName: "Register", Identifier: "example.udid"})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if _, err := plist.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	content := p["PayloadContent"].(map[string]any)
	if p["PayloadType"] != "Profile Service" || content["URL"] != "https://slipway.example/udid/callback" || content["Challenge"] != "c1" ||
		len(content["DeviceAttributes"].([]any)) != len(profileservice.Attributes) || len(p["PayloadUUID"].(string)) != 36 {
		t.Errorf("profile %s", raw)
	}
	// Signed by the operator: the content is the profile, and it verifies.
	cert, key := deviceIdentity(t)
	signed, err := profileservice.Sign(raw, cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	p7, err := pkcs7.Parse(signed)
	if err != nil || p7.Verify() != nil || string(p7.Content) != string(raw) {
		t.Errorf("signed profile: %v", err)
	}

	body, _ := plist.Marshal(map[string]string{"UDID": " 00008030-001A2B3C4D5E6F70 ", "PRODUCT": "iPhone15,2", "VERSION": "21A360",
		"SERIAL": "F2LXXXXXXX", "CHALLENGE": "c1"}, plist.XMLFormat)
	a, err := profileservice.ParseAnswer(signedAnswer(t, body))
	if err != nil {
		t.Fatal(err)
	}
	if a.UDID != "00008030-001A2B3C4D5E6F70" || a.Product != "iPhone15,2" || a.Version != "21A360" || a.Serial != "F2LXXXXXXX" || a.Challenge != "c1" {
		t.Errorf("answer %+v", a)
	}
}

func TestAnswerRefusals(t *testing.T) {
	body, _ := plist.Marshal(map[string]string{"UDID": "00008030-001A2B3C4D5E6F70"}, plist.XMLFormat)
	good := signedAnswer(t, body)
	tampered := append([]byte(nil), good...)
	// Flip a byte of the UDID inside the signed content.
	for i := range tampered {
		if tampered[i] == '7' && i > 40 {
			tampered[i] = '8'
			break
		}
	}
	cert, _ := deviceIdentity(t)
	degenerate, err := pkcs7.DegenerateCertificate(cert.Raw) // certificates, no content, no signer
	if err != nil {
		t.Fatal(err)
	}
	notPlist := signedAnswer(t, []byte("hello, not a plist"))
	for name, c := range map[string]struct {
		body []byte
		want error
	}{
		"empty":         {nil, profileservice.ErrMalformed},
		"garbage":       {[]byte("<?xml version=\"1.0\"?><plist><dict><key>UDID</key></dict></plist>"), profileservice.ErrMalformed},
		"bare plist":    {body, profileservice.ErrMalformed},
		"no signer":     {degenerate, profileservice.ErrMalformed},
		"tampered":      {tampered, profileservice.ErrUnsigned},
		"not a plist":   {notPlist, profileservice.ErrMalformed},
		"truncated cms": {good[:len(good)/2], profileservice.ErrMalformed},
	} {
		if _, err := profileservice.ParseAnswer(c.body); err != c.want {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func FuzzParseAnswer(f *testing.F) {
	body, _ := plist.Marshal(map[string]string{"UDID": "00008030-001A2B3C4D5E6F70"}, plist.XMLFormat)
	f.Add(signedAnswer(f, body))
	f.Add([]byte{0x30, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := profileservice.ParseAnswer(b)
		if err == nil && a == nil {
			t.Fatal("no answer and no error")
		}
	})
}
