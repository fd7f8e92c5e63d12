-- The management API (Zealot 6's schemes, channels, releases and devices endpoints).

-- Schemes: Zealot's new_build_callout and retained_builds (kept builds per channel, 0 = all).
ALTER TABLE schemes
    ADD COLUMN new_build_callout boolean NOT NULL DEFAULT true,
    ADD COLUMN retained_builds   integer NOT NULL DEFAULT 0 CHECK (retained_builds >= 0);

-- Channels: every device type Zealot allows, and how downloaded files are named.
ALTER TABLE channels DROP CONSTRAINT channels_device_type_check;
ALTER TABLE channels
    ADD CONSTRAINT channels_device_type_check CHECK (device_type IN ('ios', 'android', 'macos', 'harmonyos', 'windows', 'linux')),
    ADD COLUMN download_filename_type text NOT NULL DEFAULT 'original'
        CHECK (download_filename_type IN ('original', 'version_datetime'));

-- Releases: which token uploaded each build (an upload token may edit its own uploads), and when
-- it was last edited.
ALTER TABLE releases
    ADD COLUMN uploaded_by bigint REFERENCES api_tokens (id) ON DELETE SET NULL,
    ADD COLUMN updated_at  timestamptz;
UPDATE releases SET updated_at = created_at;
ALTER TABLE releases ALTER COLUMN updated_at SET NOT NULL, ALTER COLUMN updated_at SET DEFAULT now();

-- Devices: Apple devices by UDID, from fastlane's zealot_sync_devices (PUT /api/devices/:udid),
-- the API, or (later) the UDID profile service. product, os_version and serial are what a
-- profile-service answer carries.
CREATE TABLE devices (
    id         bigserial PRIMARY KEY,
    udid       text        NOT NULL UNIQUE CHECK (udid ~ '^([0-9A-F]{8}-[0-9A-F]{16}|[0-9a-f]{40}|[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12})$'),
    name       text        NOT NULL DEFAULT '' CHECK (length(name) <= 255),
    model      text        NOT NULL DEFAULT '' CHECK (length(model) <= 255),
    platform   text        NOT NULL DEFAULT '' CHECK (length(platform) <= 64),
    device_id  text        NOT NULL DEFAULT '' CHECK (length(device_id) <= 64),
    status     text        NOT NULL DEFAULT '' CHECK (length(status) <= 64),
    product    text        NOT NULL DEFAULT '' CHECK (length(product) <= 64),
    os_version text        NOT NULL DEFAULT '' CHECK (length(os_version) <= 64),
    serial     text        NOT NULL DEFAULT '' CHECK (length(serial) <= 64),
    source     text        NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'profile')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Lookups crash tools make (GET /api/debug_files/exists/{uuid,binary}): a debug file by a Mach-O
-- UUID, or by its archive's checksum, MD5 as Zealot computes it (NULL for files uploaded before).
ALTER TABLE debug_files ADD COLUMN md5 text;
CREATE INDEX debug_files_md5_idx ON debug_files (md5);
CREATE INDEX debug_files_sha256_idx ON debug_files (sha256);
CREATE INDEX debug_file_metadata_uuid_idx ON debug_file_metadata (uuid);
