DROP INDEX releases_profile_devices_idx;
ALTER TABLE releases DROP COLUMN profile_devices;
