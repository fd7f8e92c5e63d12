-- A release inserted without a checksum state is one a binary from before migration 000015 wrote
-- (every later binary names the state): during a rolling update, an old pod beside the new ones.
-- It was 'verified' by the column's default, so a desktop build it recorded had no SHA-512 and
-- was never verified: never in the feeds. Such a release is now 'unverified', and the verifier
-- computes its checksums from the stored bytes. The backfill does the same for the ones recorded
-- between migration 000015 and this one.
ALTER TABLE releases ALTER COLUMN checksum_state SET DEFAULT 'unverified';
