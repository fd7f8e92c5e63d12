-- Desktop update feeds. Checksums the feeds carry are ones Slipway computed from the
-- stored bytes: SHA-512 (electron-updater) and SHA-1 (Squirrel) beside SHA-256. A release from a
-- resumable session, whose SHA-256 was the client's word, is 'unverified' until the verifier has
-- read its object once; 'mismatch' when the bytes do not match what the client declared (it is
-- then out of the feeds, and its downloads are refused with checksum_error). A desktop build's
-- SHA-512 and SHA-1 are computed by the verifier too (not while the upload streams in, which would
-- double its CPU time): it is 'pending' until then (its SHA-256 was computed as it streamed in). Desktop releases recorded before this
-- migration are made unverified by its backfill (000015_feeds.backfill.sql, in batches after this
-- file commits), so the verifier computes their checksums.
ALTER TABLE releases
    ADD COLUMN sha512          text        NOT NULL DEFAULT '' CHECK (sha512 ~ '^([0-9a-f]{128})?$'),
    ADD COLUMN sha1            text        NOT NULL DEFAULT '' CHECK (sha1 ~ '^([0-9a-f]{40})?$'),
    ADD COLUMN checksum_state  text        NOT NULL DEFAULT 'verified' CHECK (checksum_state IN ('verified', 'pending', 'unverified', 'mismatch')),
    ADD COLUMN checksum_error  text        NOT NULL DEFAULT '',
    ADD COLUMN checksum_lease  timestamptz,
    -- The Sparkle EdDSA signature of the package (base64 of 64 bytes): the CI's, or Slipway's.
    ADD COLUMN ed_signature    text        NOT NULL DEFAULT '',
    -- The Tauri updater's signature of the package (the .sig file the CI's tauri signer wrote).
    ADD COLUMN tauri_signature text        NOT NULL DEFAULT '',
    -- Staged rollout (percent of installs offered the update) and a critical (mandatory) update.
    ADD COLUMN rollout_percent integer     NOT NULL DEFAULT 100 CHECK (rollout_percent BETWEEN 0 AND 100),
    ADD COLUMN critical        boolean     NOT NULL DEFAULT false;

CREATE INDEX releases_unverified ON releases (id) WHERE checksum_state IN ('pending', 'unverified');

-- A channel with a password serves its feeds to holders of its feed token (updaters send no
-- cookies): the SHA-256 of the token is kept, the token is shown once when made or rotated.
ALTER TABLE channels ADD COLUMN feed_token_hash text NOT NULL DEFAULT '';
