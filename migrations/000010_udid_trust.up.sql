-- UDID answers, so that a replayed answer is refused and a forged one reaches no export. A
-- challenge is used once: the callback records the hash of each challenge it accepts, until the
-- challenge would have expired anyway, and refuses one already recorded. A device whose answer's
-- signer does not chain to Apple's device CA is kept as unverified, out of the Apple developer
-- portal export, until an admin approves it. Devices known before this version (synced, registered
-- over the API or by a profile answer) stay as they were: exported.
CREATE TABLE udid_challenges (
    challenge_hash bytea       PRIMARY KEY,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX udid_challenges_expires_idx ON udid_challenges (expires_at);

ALTER TABLE devices ADD COLUMN unverified boolean NOT NULL DEFAULT false;
