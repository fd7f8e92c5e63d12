package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

const deviceColumns = `id, udid, name, model, platform, device_id, status, product, os_version, serial, source, unverified, created_at, updated_at`

func deviceDest(d *distribution.Device) []any {
	return []any{&d.ID, &d.UDID, &d.Name, &d.Model, &d.Platform, &d.DeviceID, &d.Status, &d.Product, &d.OSVersion, &d.Serial,
		&d.Source, &d.Unverified, &d.CreatedAt, &d.UpdatedAt}
}

// UpsertDevice creates the device with d.UDID, or updates it: empty fields of d leave the stored
// ones as they are, so a sync that sends only a name keeps the model a profile answer recorded.
// One statement, so concurrent syncs of one UDID make one row.
func (db *Devices) UpsertDevice(ctx context.Context, d *distribution.Device) (*distribution.Device, bool, error) {
	out, created, err := upsertDevice(ctx, db.Pool, d)
	return out, created, dbErr(err)
}

// upsertDevice: see UpsertDevice. An unverified answer or sync (d.Unverified) makes a new device
// unverified and changes nothing of a device already known, unless that one is unverified too; a
// verified one (a profile answer chained to Apple's CA, an admin's sync) verifies the device.
func upsertDevice(ctx context.Context, q querier, d *distribution.Device) (*distribution.Device, bool, error) {
	var out distribution.Device
	var created bool
	source := d.Source
	if source == "" {
		source = "api"
	}
	err := q.QueryRow(ctx, `INSERT INTO devices AS d (udid, name, model, platform, device_id, status, product, os_version, serial, source, unverified)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (udid) DO UPDATE SET
			name = coalesce(nullif(EXCLUDED.name, ''), d.name), model = coalesce(nullif(EXCLUDED.model, ''), d.model),
			platform = coalesce(nullif(EXCLUDED.platform, ''), d.platform), device_id = coalesce(nullif(EXCLUDED.device_id, ''), d.device_id),
			status = coalesce(nullif(EXCLUDED.status, ''), d.status), product = coalesce(nullif(EXCLUDED.product, ''), d.product),
			os_version = coalesce(nullif(EXCLUDED.os_version, ''), d.os_version), serial = coalesce(nullif(EXCLUDED.serial, ''), d.serial),
			unverified = d.unverified AND EXCLUDED.unverified,
			updated_at = now()
		WHERE NOT EXCLUDED.unverified OR d.unverified
		RETURNING `+deviceColumns+`, xmax = 0`,
		d.UDID, d.Name, d.Model, d.Platform, d.DeviceID, d.Status, d.Product, d.OSVersion, d.Serial, source, d.Unverified).
		Scan(append(deviceDest(&out), &created)...)
	if errors.Is(err, pgx.ErrNoRows) {
		// An unverified answer about a device already verified: left as it is.
		err = q.QueryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE udid = $1`, d.UDID).Scan(deviceDest(&out)...)
		return &out, false, err
	}
	if err != nil {
		return nil, false, err
	}
	return &out, created, nil
}

// RegisterAnswer records a device from a profile-service answer, using up its challenge (by
// hash) in the same transaction: errs.Invalid when the challenge was used already. Used
// challenges are kept until expires, when they would be refused anyway (expired ones are removed
// as new ones are recorded).
func (db *Devices) RegisterAnswer(ctx context.Context, challengeHash []byte, expires time.Time, d *distribution.Device) (*distribution.Device, error) {
	var out *distribution.Device
	err := db.Tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM udid_challenges WHERE expires_at < now()`); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO udid_challenges (challenge_hash, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			challengeHash, expires)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.New(errs.Invalid, "this answer's challenge was used already: download the profile again from /udid")
		}
		out, _, err = upsertDevice(ctx, tx, d)
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return out, nil
}

// ApproveDevice marks an unverified device as approved by an admin: it is exported from now on.
// errs.NotFound for an unknown device.
func (db *Devices) ApproveDevice(ctx context.Context, udid string) (*distribution.Device, error) {
	var d distribution.Device
	err := db.Pool.QueryRow(ctx, `UPDATE devices SET unverified = false, updated_at = CASE WHEN unverified THEN now() ELSE updated_at END
		WHERE udid = $1 RETURNING `+deviceColumns, udid).Scan(deviceDest(&d)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "device %s is not registered", udid)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &d, nil
}

// ListDevices returns a page of devices, newest first.
func (db *Devices) ListDevices(ctx context.Context, p distribution.Page) ([]distribution.Device, error) {
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

// profileDevices is never NULL.
func profileDevices(udids []string) []string {
	if udids == nil {
		return []string{}
	}
	return udids
}

// GetDevice returns the device with this (canonical) UDID, or errs.NotFound.
func (db *Devices) GetDevice(ctx context.Context, udid string) (*distribution.Device, error) {
	var d distribution.Device
	err := db.Pool.QueryRow(ctx, `SELECT `+deviceColumns+` FROM devices WHERE udid = $1`, udid).Scan(deviceDest(&d)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errs.New(errs.NotFound, "device %s is not registered", udid)
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &d, nil
}

// DeleteDevice deletes a device, or answers errs.NotFound.
func (db *Devices) DeleteDevice(ctx context.Context, udid string) error {
	tag, err := db.Pool.Exec(ctx, `DELETE FROM devices WHERE udid = $1`, udid)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "device %s is not registered", udid)
	}
	return nil
}

// ExportableDevices lists every device but those awaiting approval, oldest first.
func (db *Devices) ExportableDevices(ctx context.Context) ([]distribution.Device, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+deviceColumns+` FROM devices WHERE NOT unverified ORDER BY id`)
	if err != nil {
		return nil, dbErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (distribution.Device, error) {
		var d distribution.Device
		return d, r.Scan(deviceDest(&d)...)
	})
	return out, dbErr(err)
}

// ReleasesForDevice: see devices.DeviceStore. The GIN index on profile_devices answers the
// containment test.
func (db *Devices) ReleasesForDevice(ctx context.Context, udid string, limit int) ([]distribution.ReleaseContext, error) {
	rows, err := db.Pool.Query(ctx, `SELECT `+releaseContextColumns+releaseContextFrom+`
		WHERE r.platform = 'ios' AND (r.profile_devices @> ARRAY[$1] OR coalesce((r.profile->>'all_devices')::boolean, false))
		ORDER BY r.id DESC LIMIT $2`, udid, limit)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	var out []distribution.ReleaseContext
	for rows.Next() {
		var rc distribution.ReleaseContext
		if err := scanReleaseContext(rows, &rc); err != nil {
			return nil, dbErr(err)
		}
		out = append(out, rc)
	}
	return out, dbErr(rows.Err())
}

// ReleaseHasDevice reports whether a release's profile lists udid.
func (db *Devices) ReleaseHasDevice(ctx context.Context, releaseID int64, udid string) (bool, error) {
	var ok bool
	err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM releases WHERE id = $1 AND profile_devices @> ARRAY[$2])`, releaseID, udid).Scan(&ok)
	return ok, dbErr(err)
}
