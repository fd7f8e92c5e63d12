-- One audit trail for every actor: a row names its actor (a console user, an API token
-- by name and id, never its secret, or the system: retention, gc, cli) and its target by kind, id
-- and name as it was, with the target's app for the audit page's filter.
ALTER TABLE audit_log
    ADD COLUMN actor_kind  text   NOT NULL DEFAULT 'user' CHECK (actor_kind IN ('user', 'token', 'system')),
    ADD COLUMN actor_name  text   NOT NULL DEFAULT '',
    ADD COLUMN token_id    bigint,
    ADD COLUMN target_kind text   NOT NULL DEFAULT '',
    ADD COLUMN target_id   bigint,
    ADD COLUMN app_id      bigint;

-- Rows written before: a user's (named as the user is now), or an admin token's (user_id NULL,
-- the token's name in detail); other rows without a user were a token's or a deleted user's.
UPDATE audit_log a SET actor_name = coalesce(nullif(u.name, ''), u.email, '') FROM users u WHERE u.id = a.user_id;
UPDATE audit_log SET actor_kind = 'token', actor_name = detail->>'token' WHERE user_id IS NULL AND detail ? 'token';
UPDATE audit_log SET actor_name = '(unknown)' WHERE user_id IS NULL AND NOT detail ? 'token';
UPDATE audit_log SET app_id = (detail->>'app_id')::bigint WHERE detail ? 'app_id' AND jsonb_typeof(detail->'app_id') = 'number';

CREATE INDEX audit_log_app ON audit_log (app_id, id) WHERE app_id IS NOT NULL;
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_at ON audit_log (at);

-- Gone builds: a deleted release leaves a tombstone, so its public page and install link answer
-- 410 with who removed it and when, and a link to the channel's newest build. A table of its own
-- (not a deleted_at column on releases) keeps every query on releases as it is; the tombstone goes
-- with its channel (there is no newest build to point to then).
CREATE TABLE release_tombstones (
    release_id      bigint PRIMARY KEY,
    channel_id      bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    app_name        text NOT NULL,
    release_version text NOT NULL,
    build_version   text NOT NULL,
    deleted_at      timestamptz NOT NULL DEFAULT now(),
    -- retention, or the actor who deleted it (user, token)
    actor_kind      text NOT NULL CHECK (actor_kind IN ('user', 'token', 'system')),
    actor_name      text NOT NULL DEFAULT '',
    reason          text NOT NULL DEFAULT ''
);
CREATE INDEX release_tombstones_channel ON release_tombstones (channel_id);
