// Package devices is what Slipway knows of Apple devices: registered by a sync from the developer
// portal, over the API, or by the device itself through the UDID profile service; listed, exported
// in the portal's format, and matched against the provisioning profiles of iOS builds.
package devices

import (
	"context"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// DeviceStore keeps registered devices.
type DeviceStore interface {
	// UpsertDevice creates the device with this UDID or updates the given fields of it; created
	// reports which.
	UpsertDevice(ctx context.Context, d *distribution.Device) (dev *distribution.Device, created bool, err error)
	ListDevices(ctx context.Context, p distribution.Page) ([]distribution.Device, error)
	GetDevice(ctx context.Context, udid string) (*distribution.Device, error)
	DeleteDevice(ctx context.Context, udid string) error
	// ExportableDevices lists every device but those awaiting approval, oldest first (the export).
	ExportableDevices(ctx context.Context) ([]distribution.Device, error)
	// RegisterAnswer uses up a profile answer's challenge (by hash; errs.Invalid when used
	// already) and records its device, in one transaction.
	RegisterAnswer(ctx context.Context, challengeHash []byte, expires time.Time, d *distribution.Device) (*distribution.Device, error)
	// ApproveDevice lets an unverified device into the export (errs.NotFound for an unknown one).
	ApproveDevice(ctx context.Context, udid string) (*distribution.Device, error)
	// ReleasesForDevice returns the newest iOS releases (at most limit) whose profile lists udid
	// or provisions all devices, with their channels.
	ReleasesForDevice(ctx context.Context, udid string, limit int) ([]distribution.ReleaseContext, error)
	// ReleaseHasDevice reports whether a release's profile lists udid.
	ReleaseHasDevice(ctx context.Context, releaseID int64, udid string) (bool, error)
}

// Devices runs the use cases of devices.
type Devices struct {
	Store DeviceStore
	// Signer signs the profile service's challenges.
	Signer *signing.Signer
	// UDID shapes the UDID profile service.
	UDID UDIDConfig
	// Audit records deletions as the context's actor (nil: not recorded).
	Audit *distribution.AuditLog
	// Policy decides who may list, sync, delete and approve devices. A device's own page, the
	// profile service and the installable-build lookups go by the UDID, which only the device
	// and those it was given to know.
	Policy *policy.Policy
}

// DeviceChanges are a device's fields as a sync or a client sends them; empty ones leave the
// stored value as it is.
type DeviceChanges struct {
	Name     string `param:"name"`
	Model    string `param:"model"`
	Platform string `param:"platform"`
	DeviceID string `param:"device_id"`
	Status   string `param:"status"`
}

// SyncDevice creates the device with this UDID or updates the fields ch sets (fastlane's
// zealot_sync_devices sends each device of the developer portal). The name is required, as in
// Zealot. created reports which. A device the export would hand to Apple's portal must be
// vouched for: a sync by an actor who may not manage devices (an upload token) adds a new device
// unverified, for an admin to approve, and changes nothing of a device already verified; an
// admin's sync verifies it.
func (d *Devices) SyncDevice(ctx context.Context, udid string, ch DeviceChanges) (*distribution.Device, bool, error) {
	if err := d.Policy.Authorize(ctx, policy.SyncDevice, policy.Installation); err != nil {
		return nil, false, err
	}
	udid, err := distribution.NormalizeUDID(udid)
	if err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(ch.Name) == "" {
		return nil, false, errs.Field("name", "can't be blank")
	}
	dev := &distribution.Device{UDID: udid, Source: "api", Unverified: !d.Policy.Allowed(ctx, policy.ManageDevices, policy.Installation)}
	for field, p := range map[string][2]*string{"name": {&ch.Name, &dev.Name}, "model": {&ch.Model, &dev.Model}} {
		if *p[1], err = distribution.ShortText(field, *p[0]); err != nil {
			return nil, false, err
		}
	}
	for field, p := range map[string][2]*string{"platform": {&ch.Platform, &dev.Platform}, "device_id": {&ch.DeviceID, &dev.DeviceID}, "status": {&ch.Status, &dev.Status}} {
		v := strings.TrimSpace(*p[0])
		if len(v) > 64 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			return nil, false, errs.Field(field, "must be at most 64 printable ASCII characters")
		}
		*p[1] = v
	}
	return d.Store.UpsertDevice(ctx, dev)
}

// Devices returns a page of devices, newest first.
func (d *Devices) Devices(ctx context.Context, p distribution.Page) ([]distribution.Device, error) {
	if err := d.Policy.Authorize(ctx, policy.ReadDevices, policy.Installation); err != nil {
		return nil, err
	}
	return d.Store.ListDevices(ctx, p)
}
