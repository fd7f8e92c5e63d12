package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
)

const deviceColumns = `id, udid, name, model, platform, device_id, status, product, os_version, serial, source, created_at, updated_at`

func deviceDest(d *distribution.Device) []any {
	return []any{&d.ID, &d.UDID, &d.Name, &d.Model, &d.Platform, &d.DeviceID, &d.Status, &d.Product, &d.OSVersion, &d.Serial,
		&d.Source, &d.CreatedAt, &d.UpdatedAt}
}

// UpsertDevice creates the device with d.UDID, or updates it: empty fields of d leave the stored
// ones as they are, so a sync that sends only a name keeps the model a profile answer recorded.
// One statement, so concurrent syncs of one UDID make one row.
func (db *DB) UpsertDevice(ctx context.Context, d *distribution.Device) (*distribution.Device, bool, error) {
	var out distribution.Device
	var created bool
	source := d.Source
	if source == "" {
		source = "api"
	}
	err := db.Pool.QueryRow(ctx, `INSERT INTO devices AS d (udid, name, model, platform, device_id, status, product, os_version, serial, source)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (udid) DO UPDATE SET
			name = coalesce(nullif(EXCLUDED.name, ''), d.name), model = coalesce(nullif(EXCLUDED.model, ''), d.model),
			platform = coalesce(nullif(EXCLUDED.platform, ''), d.platform), device_id = coalesce(nullif(EXCLUDED.device_id, ''), d.device_id),
			status = coalesce(nullif(EXCLUDED.status, ''), d.status), product = coalesce(nullif(EXCLUDED.product, ''), d.product),
			os_version = coalesce(nullif(EXCLUDED.os_version, ''), d.os_version), serial = coalesce(nullif(EXCLUDED.serial, ''), d.serial),
			updated_at = now()
		RETURNING `+deviceColumns+`, xmax = 0`,
		d.UDID, d.Name, d.Model, d.Platform, d.DeviceID, d.Status, d.Product, d.OSVersion, d.Serial, source).
		Scan(append(deviceDest(&out), &created)...)
	if err != nil {
		return nil, false, dbErr(err)
	}
	return &out, created, nil
}

// ListDevices returns a page of devices, newest first.
func (db *DB) ListDevices(ctx context.Context, p distribution.Page) ([]distribution.Device, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+deviceColumns+` FROM devices ORDER BY id DESC LIMIT $1 OFFSET $2`, p.PerPage, p.Offset())
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Device, error) {
		var d distribution.Device
		return d, r.Scan(deviceDest(&d)...)
	})
	if out == nil {
		out = []distribution.Device{}
	}
	return out, dbErr(err)
}
