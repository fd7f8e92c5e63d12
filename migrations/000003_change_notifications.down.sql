DROP TRIGGER IF EXISTS apps_notify_delete ON apps;
DROP TRIGGER IF EXISTS apps_notify_update ON apps;
DROP TRIGGER IF EXISTS schemes_notify_delete ON schemes;
DROP TRIGGER IF EXISTS schemes_notify_update ON schemes;
DROP TRIGGER IF EXISTS channels_notify_delete ON channels;
DROP TRIGGER IF EXISTS channels_notify_update ON channels;
DROP TRIGGER IF EXISTS releases_notify_change ON releases;
DROP FUNCTION IF EXISTS slipway_notify_change();
