-- The console's people: users made on their first sign-in (or by a login link),
-- their sessions (kept here so that signing out or removing a user ends them on every replica),
-- one-time login links for installations without an identity provider, and an audit log.
CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    subject     text UNIQUE,                         -- the identity provider's "iss|sub"; NULL for local users
    email       text NOT NULL DEFAULT '' CHECK (length(email) <= 320),
    name        text NOT NULL DEFAULT '' CHECK (length(name) <= 255),
    role        text NOT NULL DEFAULT 'viewer' CHECK (role IN ('admin', 'developer', 'viewer')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    last_login  timestamptz,
    disabled_at timestamptz
);

-- Per-app membership, as Zealot's collaborators: a developer manages the apps they belong to.
CREATE TABLE app_members (
    app_id  bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (app_id, user_id)
);
CREATE INDEX app_members_user_idx ON app_members (user_id);

CREATE TABLE user_sessions (
    id         text PRIMARY KEY,                      -- SHA-256 of the cookie's secret
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX user_sessions_user_idx ON user_sessions (user_id);

CREATE TABLE login_links (
    id         text PRIMARY KEY,                      -- SHA-256 of the link's secret
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);

-- API tokens made in the console belong to a user and never exceed that user's rights (see
-- store.Authenticate); tokens made by the CLI belong to nobody, as before.
ALTER TABLE api_tokens ADD COLUMN user_id bigint REFERENCES users (id) ON DELETE CASCADE;

CREATE TABLE audit_log (
    id      bigserial PRIMARY KEY,
    at      timestamptz NOT NULL DEFAULT now(),
    user_id bigint REFERENCES users (id) ON DELETE SET NULL,
    action  text NOT NULL,
    target  text NOT NULL DEFAULT '',
    detail  jsonb NOT NULL DEFAULT '{}'
);
