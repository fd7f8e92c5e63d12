ALTER TABLE channels DROP COLUMN feed_token_hash;
DROP INDEX IF EXISTS releases_unverified;
ALTER TABLE releases
    DROP COLUMN sha512, DROP COLUMN sha1, DROP COLUMN checksum_state, DROP COLUMN checksum_error,
    DROP COLUMN checksum_lease, DROP COLUMN ed_signature, DROP COLUMN tauri_signature, DROP COLUMN rollout_percent, DROP COLUMN critical;
