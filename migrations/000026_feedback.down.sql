-- The screenshots' objects go to the collector before their rows go.
INSERT INTO storage_objects (key, state)
    SELECT object_key, 'deleted' FROM feedback_screenshots UNION ALL SELECT thumb_key, 'deleted' FROM feedback_screenshots
    ON CONFLICT (key) DO UPDATE SET state = 'deleted';
ALTER TABLE app_members DROP COLUMN feedback_mail;
DROP TABLE feedback_attempts;
DROP TABLE feedback_screenshots;
DROP FUNCTION feedback_screenshot_gone();
DROP TABLE feedback;

-- What anonymous senders did stays in the audit trail, as the system's.
UPDATE audit_log SET actor_kind = 'system' WHERE actor_kind = 'anonymous';
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check,
    ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system', 'tester')) NOT VALID;
