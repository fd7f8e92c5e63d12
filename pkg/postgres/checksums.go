package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// LeaseUnverified takes the oldest release whose checksums are still to be computed from its
// stored object and leases it for lease (another replica's verifier skips it meanwhile); nil when
// there is none. With unsigned, when there is none, it takes the oldest verified macOS release
// still to be signed (Slipway has a Sparkle key: a release marked at upload for signing, rolled
// out to someone, without a signature yet). A lease that ran out (its verifier died) is taken
// again. Each look-up has its own partial index (releases_unverified, releases_to_sign).
func (db *Releases) LeaseUnverified(ctx context.Context, lease time.Duration, unsigned bool) (*distribution.Release, error) {
	r, err := db.leaseChecksums(ctx, lease, `checksum_state IN ('pending', 'unverified')`)
	if r != nil || err != nil || !unsigned {
		return r, err
	}
	return db.leaseChecksums(ctx, lease, `platform = 'macos' AND checksum_state = 'verified' AND ed_signature = '' AND sparkle_sign AND rollout_percent > 0`)
}

// leaseChecksums leases the oldest release that where (a constant condition) selects.
func (db *Releases) leaseChecksums(ctx context.Context, lease time.Duration, where string) (*distribution.Release, error) {
	var r distribution.Release
	err := scanRelease(db.Pool.QueryRow(ctx, `UPDATE releases r SET checksum_lease = clock_timestamp() + $1::interval
		WHERE r.id = (SELECT id FROM releases WHERE `+where+`
			AND (checksum_lease IS NULL OR checksum_lease < clock_timestamp()) ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+releaseColumns, lease.String()), &r)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err)
	}
	return &r, nil
}

// RecordChecksums records what the verifier computed from a release's object: its checksums and
// state (verified or mismatch, with the reason), and the Sparkle signature Slipway made unless it
// is "" (a signature the release has, the uploader's, is never replaced). It reports false when
// the release is gone.
func (db *Releases) RecordChecksums(ctx context.Context, id int64, sha256, sha512, sha1, state, reason, edSignature string) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `UPDATE releases SET sha256 = $2, sha512 = $3, sha1 = $4, checksum_state = $5,
		checksum_error = $6, checksum_lease = NULL, ed_signature = CASE WHEN ed_signature = '' THEN $7 ELSE ed_signature END
		WHERE id = $1`, id, sha256, sha512, sha1, state, reason, edSignature)
	if err != nil {
		return false, dbErr(err)
	}
	return tag.RowsAffected() > 0, nil
}

// SetFeedToken records the hash of a channel's new feed token, or errs.NotFound.
func (db *Releases) SetFeedToken(ctx context.Context, channelID int64, hash string) error {
	tag, err := db.Pool.Exec(ctx, `UPDATE channels SET feed_token_hash = $2, updated_at = now() WHERE id = $1`, channelID, hash)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return errs.New(errs.NotFound, "channel %d not found", channelID)
	}
	return nil
}
