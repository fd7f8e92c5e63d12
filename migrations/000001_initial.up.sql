-- Apps > schemes > channels > releases, debug files, API tokens and storage bookkeeping.
-- Concurrency rests on constraints: unique channel slug, unique (channel, version), unique scheme
-- name per app, unique debug-file content per app, and cascading foreign keys.

CREATE TABLE apps (
    id         bigserial PRIMARY KEY,
    name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX apps_name_idx ON apps (name);

CREATE TABLE schemes (
    id         bigserial PRIMARY KEY,
    app_id     bigint      NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, name)
);

CREATE TABLE channels (
    id            bigserial PRIMARY KEY,
    scheme_id     bigint      NOT NULL REFERENCES schemes (id) ON DELETE CASCADE,
    name          text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    slug          text        NOT NULL UNIQUE CHECK (slug ~ '^[A-Za-z0-9_-]{1,64}$'),
    device_type   text        NOT NULL CHECK (device_type IN ('ios', 'android', 'macos', 'harmonyos', 'windows')),
    bundle_id     text        NOT NULL DEFAULT '*',
    git_url       text,
    password_hash text,
    -- last_version is the per-channel release sequence; an upload takes the next one with
    -- UPDATE ... RETURNING, which serialises concurrent uploads to one channel for an instant.
    last_version  integer     NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channels_scheme_idx ON channels (scheme_id);

CREATE TABLE releases (
    id              bigserial PRIMARY KEY,
    channel_id      bigint      NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    version         integer     NOT NULL,
    name            text        NOT NULL DEFAULT '',  -- the app name parsed from the package
    bundle_id       text        NOT NULL DEFAULT '',
    release_version text        NOT NULL DEFAULT '',
    build_version   text        NOT NULL DEFAULT '',
    release_type    text        NOT NULL DEFAULT '',
    source          text        NOT NULL DEFAULT 'api',
    branch          text        NOT NULL DEFAULT '',
    git_commit      text        NOT NULL DEFAULT '',
    ci_url          text        NOT NULL DEFAULT '',
    changelog       jsonb       NOT NULL DEFAULT '[]',
    custom_fields   jsonb       NOT NULL DEFAULT '[]',
    platform        text        NOT NULL,             -- ios, android, macos
    format          text        NOT NULL,             -- ipa, apk, aab, macos-zip, pkg, dmg
    device          text        NOT NULL DEFAULT '',  -- iphone, ipad, universal, phone, watch, ...
    min_os          text        NOT NULL DEFAULT '',
    target_sdk      text        NOT NULL DEFAULT '',
    -- profile: the provisioning profile's team, name, expiry and device count (Apple only).
    profile         jsonb,
    size            bigint      NOT NULL CHECK (size >= 0),
    sha256          text        NOT NULL,
    object_key      text        NOT NULL UNIQUE,
    filename        text        NOT NULL,
    icon_key        text,
    icon_type       text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (channel_id, version)
);
CREATE INDEX releases_lookup_idx ON releases (channel_id, bundle_id, release_version, build_version);
CREATE INDEX releases_commit_idx ON releases (channel_id, bundle_id, git_commit);

CREATE TABLE debug_files (
    id              bigserial PRIMARY KEY,
    app_id          bigint      NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    channel_id      bigint      NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    device_type     text        NOT NULL,
    release_version text        NOT NULL DEFAULT '',
    build_version   text        NOT NULL DEFAULT '',
    sha256          text        NOT NULL,
    size            bigint      NOT NULL CHECK (size >= 0),
    object_key      text        NOT NULL UNIQUE,
    filename        text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    -- The same content uploaded twice for one app is a 409.
    UNIQUE (app_id, sha256)
);
CREATE INDEX debug_files_channel_idx ON debug_files (channel_id, created_at DESC);

CREATE TABLE debug_file_metadata (
    id            bigserial PRIMARY KEY,
    debug_file_id bigint      NOT NULL REFERENCES debug_files (id) ON DELETE CASCADE,
    uuid          text        NOT NULL DEFAULT '',
    type          text        NOT NULL DEFAULT '',
    object        text        NOT NULL DEFAULT '',
    data          jsonb       NOT NULL DEFAULT '{}',
    size          bigint      NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX debug_file_metadata_file_idx ON debug_file_metadata (debug_file_id);

CREATE TABLE api_tokens (
    id           bigserial PRIMARY KEY,
    name         text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    scope        text        NOT NULL CHECK (scope IN ('upload', 'admin')),
    token_hash   bytea       NOT NULL UNIQUE, -- SHA-256 of the token; the token itself is never stored
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE UNIQUE INDEX api_tokens_active_name_idx ON api_tokens (name) WHERE revoked_at IS NULL;

-- storage_objects is the bookkeeping the collector works from: a 'pending' row is written before
-- an upload streams into storage and removed in the transaction that records the release; a
-- 'deleted' row is written in the transaction that removes the row owning an object. The collector
-- deletes 'deleted' objects, and 'pending' ones older than a grace period (a crashed upload).
CREATE TABLE storage_objects (
    key        text PRIMARY KEY,
    state      text        NOT NULL CHECK (state IN ('pending', 'deleted')),
    created_at timestamptz NOT NULL DEFAULT now(),
    attempts   integer     NOT NULL DEFAULT 0,
    last_error text
);
CREATE INDEX storage_objects_state_idx ON storage_objects (state, created_at);

-- An Idempotency-Key header makes a retried upload return the first upload's release.
CREATE TABLE upload_idempotency (
    token_id   bigint      NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    key        text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    release_id bigint      NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (token_id, key)
);

-- Failed channel-password attempts, shared by all replicas, to slow down guessing.
CREATE TABLE password_failures (
    channel_id bigint      NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    client     text        NOT NULL,
    failures   integer     NOT NULL DEFAULT 0,
    last_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel_id, client)
);
