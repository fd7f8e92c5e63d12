-- Devices still awaiting approval are removed: the schema before this version would export them
-- to the Apple developer portal. Their owners can register again after upgrading.
DELETE FROM devices WHERE unverified;
ALTER TABLE devices DROP COLUMN unverified;
DROP TABLE udid_challenges;
