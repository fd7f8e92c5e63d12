-- Feedback: what a tester (or, on a channel open to anyone, an anonymous client) reports about
-- one build, from its release page or from inside the app, with up to a few screenshots. A
-- build's feedback goes with it (retention, delete); app_id is kept beside release_id so that
-- an app's inbox is one index scan.
CREATE TABLE feedback (
    id           bigserial PRIMARY KEY,
    release_id   bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    app_id       bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    channel_id   bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    tester_id    bigint REFERENCES testers (id) ON DELETE SET NULL,
    user_id      bigint REFERENCES users (id) ON DELETE SET NULL,
    author_kind  text NOT NULL CHECK (author_kind IN ('tester', 'user', 'token', 'anonymous')),
    author_name  text NOT NULL DEFAULT '' CHECK (length(author_name) <= 320),
    author_email text NOT NULL DEFAULT '' CHECK (length(author_email) <= 320),
    body         text NOT NULL CHECK (length(body) BETWEEN 1 AND 10000),
    device       text NOT NULL DEFAULT '' CHECK (length(device) <= 200),
    os_version   text NOT NULL DEFAULT '' CHECK (length(os_version) <= 200),
    locale       text NOT NULL DEFAULT '' CHECK (length(locale) <= 64),
    app_state    jsonb,
    source       text NOT NULL CHECK (source IN ('page', 'api')),
    state        text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'resolved')),
    state_by     text NOT NULL DEFAULT '',
    state_at     timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feedback_app_idx ON feedback (app_id, id DESC);
CREATE INDEX feedback_release_idx ON feedback (release_id, id DESC);
CREATE INDEX feedback_tester_idx ON feedback (tester_id, id DESC) WHERE tester_id IS NOT NULL;

-- A screenshot re-encoded without metadata, and its thumbnail: two objects in the bucket.
CREATE TABLE feedback_screenshots (
    feedback_id  bigint NOT NULL REFERENCES feedback (id) ON DELETE CASCADE,
    position     int NOT NULL CHECK (position BETWEEN 1 AND 5),
    object_key   text NOT NULL UNIQUE,
    thumb_key    text NOT NULL UNIQUE,
    content_type text NOT NULL CHECK (content_type IN ('image/png', 'image/jpeg')),
    size         bigint NOT NULL,
    width        int NOT NULL,
    height       int NOT NULL,
    PRIMARY KEY (feedback_id, position)
);

-- However a screenshot's row goes (its feedback deleted, its build deleted by a person or by
-- retention, its app destroyed), its objects go to the collector in the same transaction.
CREATE FUNCTION feedback_screenshot_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO storage_objects (key, state) VALUES (OLD.object_key, 'deleted'), (OLD.thumb_key, 'deleted')
        ON CONFLICT (key) DO UPDATE SET state = 'deleted';
    RETURN OLD;
END $$;
CREATE TRIGGER feedback_screenshot_gone AFTER DELETE ON feedback_screenshots
    FOR EACH ROW EXECUTE FUNCTION feedback_screenshot_gone();

-- Reports from clients without credentials (a channel open to anyone), counted per client and
-- per channel over a quarter hour, reserved before the body is read.
CREATE TABLE feedback_attempts (
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    client     text NOT NULL,
    at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feedback_attempts_idx ON feedback_attempts (channel_id, at);

-- An app's members choose whether feedback on its builds is mailed to them.
ALTER TABLE app_members ADD COLUMN feedback_mail boolean NOT NULL DEFAULT false;

-- Anonymous senders are recorded in the audit trail as such. Loosening a CHECK breaks no binary
-- before this one (they never write 'anonymous'); NOT VALID skips a scan of rows that all pass it.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check,
    ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system', 'tester', 'anonymous')) NOT VALID;
