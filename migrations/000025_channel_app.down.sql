ALTER TABLE channels DROP COLUMN IF EXISTS app_bundle_id;
