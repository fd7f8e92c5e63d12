-- Slipway's Sparkle signing is switched on per channel by an admin (channels.sparkle_signing), and
-- decided per release at upload (releases.sparkle_sign: the channel signed and the uploader was
-- allowed to have its builds signed). Nothing is signed unless both say so: every existing
-- channel and release starts with signing off.
ALTER TABLE channels ADD COLUMN sparkle_signing boolean NOT NULL DEFAULT false;
ALTER TABLE releases ADD COLUMN sparkle_sign boolean NOT NULL DEFAULT false;
-- The verifier's look-up of what is still to sign: builds marked at upload, rolled out to someone.
CREATE INDEX releases_to_sign ON releases (id)
	WHERE platform = 'macos' AND checksum_state = 'verified' AND ed_signature = '' AND sparkle_sign AND rollout_percent > 0;
