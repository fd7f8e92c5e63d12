package devices

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/profileservice"
)

// UDIDConfig shapes the UDID profile service.
type UDIDConfig struct {
	// Organization is shown by iOS when it installs the profile.
	Organization string
	// Cert, Key and Chain sign the profile (optional: iOS then shows it as verified).
	Cert  *x509.Certificate
	Key   crypto.Signer
	Chain []*x509.Certificate
	// DeviceCAs are the anchors a device's answer must chain to, to be verified: Apple iPhone
	// Device CA (profileservice.AppleDeviceCAs) when empty. Tests set their own.
	DeviceCAs []*x509.Certificate
}

// challengeTTL is how long a downloaded profile may take to come back with its answer.
const challengeTTL = time.Hour

const challengePurpose = "udid-challenge"

// newChallenge returns a challenge: a random nonce and a signed token of it that expires after
// challengeTTL. Nothing is stored: a profile costs the server nothing until its answer comes.
func (d *Devices) newChallenge() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	return nonce + "." + d.Signer.Token(challengePurpose, challengeTTL, nonce)
}

// checkChallenge reports whether c is a current challenge of this server, and when it expires.
func (d *Devices) checkChallenge(c string) (time.Time, bool) {
	nonce, tok, ok := strings.Cut(c, ".")
	if !ok || nonce == "" || !d.Signer.CheckToken(tok, challengePurpose, nonce) {
		return time.Time{}, false
	}
	exp, _, _ := strings.Cut(tok, ".")
	n, err := strconv.ParseInt(exp, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(n, 0), true
}

// UDIDProfile returns the configuration profile that asks a device for its UDID, answering to
// callbackURL, signed when a certificate is configured. Its challenge is a signed, expiring
// token of a random nonce, so only answers to this server's profiles are taken, each once.
func (d *Devices) UDIDProfile(callbackURL string) ([]byte, error) {
	org := d.UDID.Organization
	if org == "" {
		org = "Slipway"
	}
	p, err := profileservice.Profile(profileservice.ProfileOptions{CallbackURL: callbackURL, Organization: org,
		DisplayName: org + ": register this device", Identifier: "dev.slipway.udid",
		Challenge: d.newChallenge()})
	if err != nil || d.UDID.Cert == nil {
		return p, err
	}
	return profileservice.Sign(p, d.UDID.Cert, d.UDID.Key, d.UDID.Chain)
}

// RegisterDeviceAnswer records the device a profile-service answer describes (a CMS envelope,
// see profileservice.ParseAnswer). Malformed, unsigned or foreign answers, and answers whose
// challenge was used already, are refused and record nothing. An answer whose signer does not
// chain to a device CA (Apple's) records an unverified device, left out of the portal export
// until an admin approves it; it changes nothing of a device already verified.
func (d *Devices) RegisterDeviceAnswer(ctx context.Context, body []byte) (*distribution.Device, error) {
	a, err := profileservice.ParseAnswer(body)
	if err != nil {
		return nil, errs.Wrap(errs.Invalid, err, "the device's answer was refused: %s", err.Error())
	}
	expires, ok := d.checkChallenge(a.Challenge)
	if !ok {
		return nil, errs.New(errs.Invalid, "the device's answer does not carry a current challenge of this server: download the profile again from /udid")
	}
	anchors := d.UDID.DeviceCAs
	if len(anchors) == 0 {
		anchors = profileservice.AppleDeviceCAs()
	}
	udid, err := distribution.NormalizeUDID(a.UDID)
	if err != nil {
		return nil, err
	}
	nd := &distribution.Device{UDID: udid, Source: "profile", Product: printable(a.Product, 64), OSVersion: printable(a.Version, 64),
		Serial: printable(a.Serial, 64), Platform: "ios", Unverified: !a.SignedBy(anchors)}
	if strings.HasPrefix(nd.Product, "Mac") {
		nd.Platform = "mac"
	}
	nd.Name = printable(a.DeviceName, 255)
	if nd.Name == "" {
		nd.Name = nd.Product
	}
	nd.Model = nd.Product
	sum := sha256.Sum256([]byte(a.Challenge))
	return d.Store.RegisterAnswer(ctx, sum[:], expires, nd)
}

// ApproveDevice lets an unverified device into the portal export (admins), audited as the
// context's actor.
func (d *Devices) ApproveDevice(ctx context.Context, udid string) (*distribution.Device, error) {
	if err := d.Policy.Authorize(ctx, policy.ManageDevices, policy.Installation); err != nil {
		return nil, err
	}
	udid, err := distribution.NormalizeUDID(udid)
	if err != nil {
		return nil, err
	}
	dev, err := d.Store.ApproveDevice(ctx, udid)
	if err != nil {
		return nil, err
	}
	d.Audit.Record(ctx, "device.approve", distribution.AuditTarget{Kind: distribution.TargetDevice, ID: dev.ID, Name: dev.UDID}, nil)
	return dev, nil
}

// printable keeps at most n bytes of s's printable characters.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

// Device returns a registered device by UDID (in any of Apple's spellings).
func (d *Devices) Device(ctx context.Context, udid string) (*distribution.Device, error) {
	udid, err := distribution.NormalizeUDID(udid)
	if err != nil {
		return nil, err
	}
	return d.Store.GetDevice(ctx, udid)
}

// DeleteDevice deletes a registered device.
func (d *Devices) DeleteDevice(ctx context.Context, udid string) error {
	if err := d.Policy.Authorize(ctx, policy.ManageDevices, policy.Installation); err != nil {
		return err
	}
	udid, err := distribution.NormalizeUDID(udid)
	if err != nil {
		return err
	}
	if err := d.Store.DeleteDevice(ctx, udid); err != nil {
		return err
	}
	d.Audit.Record(ctx, "device.delete", distribution.AuditTarget{Kind: distribution.TargetDevice, Name: udid}, nil)
	return nil
}

// InstallableReleases returns the newest iOS releases a device may install: those whose profile
// lists it, and enterprise builds.
func (d *Devices) InstallableReleases(ctx context.Context, udid string) ([]distribution.ReleaseContext, error) {
	return d.Store.ReleasesForDevice(ctx, udid, 50)
}

// DeviceInProfile reports whether a release's provisioning profile lets a device install it.
func (d *Devices) DeviceInProfile(ctx context.Context, r *distribution.Release, udid string) (bool, error) {
	if r.Profile == nil {
		return false, nil
	}
	if r.Profile.AllDevices {
		return true, nil
	}
	return d.Store.ReleaseHasDevice(ctx, r.ID, udid)
}

// appleNameLimit is the longest device name the developer portal takes.
const appleNameLimit = 50

// ExportDevices writes the devices in the Apple developer portal's "register multiple devices"
// format: a header line, then Device ID, Device Name and Device Platform (ios or mac), separated
// by tabs. Names lose tabs and line breaks and are cut to the portal's 50 characters, and a name
// a spreadsheet would run as a formula (starting with = + - or @) is quoted with an apostrophe,
// since the file is as often opened in one as uploaded. Devices awaiting approval are left out.
func (d *Devices) ExportDevices(ctx context.Context) ([]byte, error) {
	if err := d.Policy.Authorize(ctx, policy.ReadDevices, policy.Installation); err != nil {
		return nil, err
	}
	devices, err := d.Store.ExportableDevices(ctx)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("Device ID\tDevice Name\tDevice Platform\n")
	for _, dev := range devices {
		name := strings.Join(strings.Fields(dev.Name), " ")
		if name == "" {
			name = dev.UDID
		}
		if strings.ContainsRune("=+-@", rune(name[0])) {
			name = "'" + name
		}
		if r := []rune(name); len(r) > appleNameLimit {
			name = string(r[:appleNameLimit])
		}
		platform := "ios"
		if isMac(&dev) {
			platform = "mac"
		}
		b.WriteString(dev.UDID + "\t" + name + "\t" + platform + "\n")
	}
	return b.Bytes(), nil
}

// isMac tells a Mac from an iOS device: the platform a sync gave, a Mac's product name, or a
// UUID-shaped identifier (Intel Macs).
func isMac(d *distribution.Device) bool {
	p := strings.ToLower(d.Platform)
	switch {
	case strings.Contains(p, "mac"), strings.Contains(p, "osx"):
		return true
	case p == "ios" || strings.Contains(p, "iphone") || strings.Contains(p, "ipad"):
		return false
	}
	return strings.HasPrefix(d.Product, "Mac") || distribution.IsMacUDID(d.UDID)
}
