package distribution

import (
	"context"
	"regexp"
	"strings"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// Apple device identifiers come in three shapes: 40 hex digits (devices before 2018), 8 and 16
// hex digits joined by a dash (newer iPhones, iPads and Apple silicon Macs), and a UUID (Intel
// Macs, as the developer portal takes them).
var (
	udidLegacyRe = regexp.MustCompile(`^[0-9a-fA-F]{40}$`)
	udidModernRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{16}$`)
	udidMacRe    = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// NormalizeUDID checks a UDID is in one of Apple's formats and returns its canonical form (40-hex
// ones lower case, the others upper case, as devices report them), or an errs.Invalid.
func NormalizeUDID(udid string) (string, error) {
	udid = strings.TrimSpace(udid)
	switch {
	case udidLegacyRe.MatchString(udid):
		return strings.ToLower(udid), nil
	case udidModernRe.MatchString(udid), udidMacRe.MatchString(udid):
		return strings.ToUpper(udid), nil
	}
	return "", errs.Field("udid", "is not an Apple device identifier (40 hex digits, 8-16 hex digits such as 00008030-001A2B3C4D5E6F70, or a Mac's UUID)")
}

// DeviceChanges are a device's fields as a sync or a client sends them; empty ones leave the
// stored value as it is.
type DeviceChanges struct {
	Name, Model, Platform, DeviceID, Status string
}

// SyncDevice creates the device with this UDID or updates the fields ch sets (fastlane's
// zealot_sync_devices sends each device of the developer portal). The name is required, as in
// Zealot. created reports which.
func (s *Service) SyncDevice(ctx context.Context, udid string, ch DeviceChanges) (*Device, bool, error) {
	udid, err := NormalizeUDID(udid)
	if err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(ch.Name) == "" {
		return nil, false, errs.Field("name", "can't be blank")
	}
	d := &Device{UDID: udid, Source: "api"}
	for field, p := range map[string][2]*string{"name": {&ch.Name, &d.Name}, "model": {&ch.Model, &d.Model}} {
		if *p[1], err = shortText(field, *p[0]); err != nil {
			return nil, false, err
		}
	}
	for field, p := range map[string][2]*string{"platform": {&ch.Platform, &d.Platform}, "device_id": {&ch.DeviceID, &d.DeviceID}, "status": {&ch.Status, &d.Status}} {
		v := strings.TrimSpace(*p[0])
		if len(v) > 64 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			return nil, false, errs.Field(field, "must be at most 64 printable ASCII characters")
		}
		*p[1] = v
	}
	return s.Store.UpsertDevice(ctx, d)
}

// Devices returns a page of devices, newest first.
func (s *Service) Devices(ctx context.Context, p Page) ([]Device, error) {
	return s.Store.ListDevices(ctx, p)
}
