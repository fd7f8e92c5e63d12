DROP INDEX IF EXISTS releases_to_sign;
ALTER TABLE releases DROP COLUMN sparkle_sign;
ALTER TABLE channels DROP COLUMN sparkle_signing;
