package devices

import (
	"bytes"
	"context"
	"strings"
	"testing"

	. "github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// memDevices keeps devices in memory; methods a rule is not expected to call panic.
type memDevices struct {
	DeviceStore
	devices     []Device
	savedDevice *Device
	hasDevice   bool
}

func (s *memDevices) UpsertDevice(_ context.Context, d *Device) (*Device, bool, error) {
	s.savedDevice = d
	return d, true, nil
}
func (s *memDevices) ExportableDevices(context.Context) ([]Device, error) { return s.devices, nil }
func (s *memDevices) ReleaseHasDevice(context.Context, int64, string) (bool, error) {
	return s.hasDevice, nil
}

// A device needs a name, as in Zealot; its portal fields are short printable text.
func TestUDIDRules(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &memDevices{}
	s := &Devices{Store: st}
	if _, _, err := s.SyncDevice(ctx, "00008030-001A2B3C4D5E6F70", DeviceChanges{Model: "iPhone"}); errs.KindOf(err) != errs.Invalid || st.savedDevice != nil {
		t.Fatalf("device without name: %v", err)
	}
	if _, _, err := s.SyncDevice(ctx, "00008030-001A2B3C4D5E6F70", DeviceChanges{Name: "x", Status: "EN\x01"}); errs.KindOf(err) != errs.Invalid {
		t.Fatalf("control character in status: %v", err)
	}
	if d, _, err := s.SyncDevice(ctx, "00008030-001a2b3c4d5e6f70", DeviceChanges{Name: " QA "}); err != nil || d.Name != "QA" || d.Source != "api" {
		t.Fatalf("sync: %+v %v", d, err)
	}
}

// The export is the developer portal's "register multiple devices" file: names cleaned and cut
// to 50 characters, Macs told from iOS devices.
func TestExportDevices(t *testing.T) {
	st := &memDevices{devices: []Device{
		{UDID: "00008030-001A2B3C4D5E6F70", Name: "QA\tiPhone\n", Platform: "IOS"},
		{UDID: "A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6", Name: strings.Repeat("é", 60)},
		{UDID: strings.Repeat("ab", 20), Product: "MacBookPro18,1"},
	}}
	out, err := (&Devices{Store: st}).ExportDevices(WithActor(context.Background(), SystemActor("test")))
	if err != nil {
		t.Fatal(err)
	}
	want := "Device ID\tDevice Name\tDevice Platform\n" +
		"00008030-001A2B3C4D5E6F70\tQA iPhone\tios\n" +
		"A1B2C3D4-E5F6-A7B8-C9D0-E1F2A3B4C5D6\t" + strings.Repeat("é", 50) + "\tmac\n" +
		strings.Repeat("ab", 20) + "\t" + strings.Repeat("ab", 20) + "\tmac\n"
	if !bytes.Equal(out, []byte(want)) {
		t.Fatalf("export:\n%q\nwant\n%q", out, want)
	}
}

// A build without a profile installs nowhere; one for all devices installs everywhere without
// asking the database; otherwise the profile's device list decides.
func TestDeviceInProfile(t *testing.T) {
	ctx := WithActor(context.Background(), SystemActor("test"))
	st := &memDevices{hasDevice: true}
	s := &Devices{Store: st}
	if ok, err := s.DeviceInProfile(ctx, &Release{}, "u"); ok || err != nil {
		t.Errorf("no profile: %v %v", ok, err)
	}
	if ok, err := (&Devices{}).DeviceInProfile(ctx, &Release{Profile: &ProfileSummary{AllDevices: true}}, "u"); !ok || err != nil {
		t.Errorf("enterprise profile: %v %v", ok, err)
	}
	if ok, err := s.DeviceInProfile(ctx, &Release{Profile: &ProfileSummary{DeviceCount: 3}}, "u"); !ok || err != nil {
		t.Errorf("listed device: %v %v", ok, err)
	}
}

// A profile-service answer must carry a challenge of this server; anything else records nothing.
func TestForeignAnswersAreRefused(t *testing.T) {
	st := &memDevices{}
	s := &Devices{Store: st, Signer: signing.New([]byte("secret-secret-secret-secret-secret-0"))}
	for _, body := range [][]byte{nil, []byte("not a CMS envelope"), bytes.Repeat([]byte{0x30}, 64)} {
		if _, err := s.RegisterDeviceAnswer(context.Background(), body); errs.KindOf(err) != errs.Invalid {
			t.Errorf("%q: %v", body, err)
		}
	}
	if st.savedDevice != nil {
		t.Fatalf("a refused answer recorded %+v", st.savedDevice)
	}
}
