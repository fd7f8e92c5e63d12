-- Change notifications for the per-replica read cache (pkg/distribution, readcache.go): every
-- change to what GET /api/apps/latest, versions and version_exist (and the pages) show is
-- announced on the channel "slipway_changes", from the writing transaction itself, whoever writes
-- (Slipway, a migration or an operator's SQL). Payloads name what changed: 'c:<channel id>',
-- 's:<scheme id>', 'a:<app id>'. Postgres delivers a payload once per transaction however many
-- rows repeat it, and only when the transaction commits.

CREATE FUNCTION slipway_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'releases' THEN
        IF TG_OP <> 'INSERT' THEN
            PERFORM pg_notify('slipway_changes', 'c:' || OLD.channel_id);
        END IF;
        IF TG_OP <> 'DELETE' THEN
            PERFORM pg_notify('slipway_changes', 'c:' || NEW.channel_id);
        END IF;
    ELSIF TG_TABLE_NAME = 'channels' THEN
        PERFORM pg_notify('slipway_changes', 'c:' || OLD.id);
    ELSIF TG_TABLE_NAME = 'schemes' THEN
        PERFORM pg_notify('slipway_changes', 's:' || OLD.id);
    ELSIF TG_TABLE_NAME = 'apps' THEN
        PERFORM pg_notify('slipway_changes', 'a:' || OLD.id);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER releases_notify_change AFTER INSERT OR UPDATE OR DELETE ON releases
    FOR EACH ROW EXECUTE FUNCTION slipway_notify_change();
-- Updates announce themselves only when they change something a reader sees: an upload's bump of
-- last_version (the release row announces that upload) or a no-op touch of updated_at does not.
CREATE TRIGGER channels_notify_update AFTER UPDATE ON channels
    FOR EACH ROW WHEN ((OLD.scheme_id, OLD.name, OLD.slug, OLD.device_type, OLD.bundle_id, OLD.git_url, OLD.password_hash,
        OLD.download_filename_type) IS DISTINCT FROM (NEW.scheme_id, NEW.name, NEW.slug, NEW.device_type, NEW.bundle_id,
        NEW.git_url, NEW.password_hash, NEW.download_filename_type))
    EXECUTE FUNCTION slipway_notify_change();
CREATE TRIGGER channels_notify_delete AFTER DELETE ON channels
    FOR EACH ROW EXECUTE FUNCTION slipway_notify_change();
CREATE TRIGGER schemes_notify_update AFTER UPDATE ON schemes
    FOR EACH ROW WHEN ((OLD.app_id, OLD.name, OLD.new_build_callout, OLD.retained_builds)
        IS DISTINCT FROM (NEW.app_id, NEW.name, NEW.new_build_callout, NEW.retained_builds))
    EXECUTE FUNCTION slipway_notify_change();
CREATE TRIGGER schemes_notify_delete AFTER DELETE ON schemes
    FOR EACH ROW EXECUTE FUNCTION slipway_notify_change();
CREATE TRIGGER apps_notify_update AFTER UPDATE ON apps
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION slipway_notify_change();
CREATE TRIGGER apps_notify_delete AFTER DELETE ON apps
    FOR EACH ROW EXECUTE FUNCTION slipway_notify_change();
