-- UDID collection: the devices a release's provisioning profile lists, so that a
-- device's page can show what it can install and a release page can tell a registered device
-- whether it is in the profile. Releases uploaded before this version have an empty list.
ALTER TABLE releases ADD COLUMN profile_devices text[] NOT NULL DEFAULT '{}';
CREATE INDEX releases_profile_devices_idx ON releases USING gin (profile_devices);
