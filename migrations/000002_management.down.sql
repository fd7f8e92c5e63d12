DROP INDEX IF EXISTS debug_file_metadata_uuid_idx;
DROP INDEX IF EXISTS debug_files_sha256_idx;
ALTER TABLE debug_files DROP COLUMN IF EXISTS md5;
DROP TABLE IF EXISTS devices;
ALTER TABLE releases DROP COLUMN IF EXISTS updated_at, DROP COLUMN IF EXISTS uploaded_by;
-- The older schema has no Linux channels: they go, with their releases and debug files (the
-- foreign keys cascade), and the objects those owned are handed to the collector, as any delete
-- does, so that nothing is left in the bucket without a row.
INSERT INTO storage_objects (key, state)
    SELECT r.object_key, 'deleted' FROM releases r JOIN channels c ON c.id = r.channel_id WHERE c.device_type = 'linux'
    UNION SELECT r.icon_key, 'deleted' FROM releases r JOIN channels c ON c.id = r.channel_id
        WHERE c.device_type = 'linux' AND r.icon_key IS NOT NULL
    UNION SELECT d.object_key, 'deleted' FROM debug_files d JOIN channels c ON c.id = d.channel_id WHERE c.device_type = 'linux'
    ON CONFLICT (key) DO UPDATE SET state = 'deleted';
DELETE FROM channels WHERE device_type = 'linux';
ALTER TABLE channels DROP CONSTRAINT channels_device_type_check;
ALTER TABLE channels
    ADD CONSTRAINT channels_device_type_check CHECK (device_type IN ('ios', 'android', 'macos', 'harmonyos', 'windows')),
    DROP COLUMN IF EXISTS download_filename_type;
ALTER TABLE schemes DROP COLUMN IF EXISTS retained_builds, DROP COLUMN IF EXISTS new_build_callout;
