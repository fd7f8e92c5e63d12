DROP INDEX IF EXISTS debug_file_metadata_uuid_idx;
DROP INDEX IF EXISTS debug_files_sha256_idx;
ALTER TABLE debug_files DROP COLUMN IF EXISTS md5;
DROP TABLE IF EXISTS devices;
ALTER TABLE releases DROP COLUMN IF EXISTS updated_at, DROP COLUMN IF EXISTS uploaded_by;
DELETE FROM channels WHERE device_type = 'linux';
ALTER TABLE channels DROP CONSTRAINT channels_device_type_check;
ALTER TABLE channels
    ADD CONSTRAINT channels_device_type_check CHECK (device_type IN ('ios', 'android', 'macos', 'harmonyos', 'windows')),
    DROP COLUMN IF EXISTS download_filename_type;
ALTER TABLE schemes DROP COLUMN IF EXISTS retained_builds, DROP COLUMN IF EXISTS new_build_callout;
