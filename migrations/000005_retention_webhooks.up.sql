-- Retention, webhooks and install counts.

-- Retention policies of schemes and channels. A NULL field inherits (channel → scheme → the
-- replica's SLIPWAY_RETENTION_* defaults); 0 turns the rule off. A scheme's "keep the newest N" is
-- Zealot's schemes.retained_builds and is not repeated here.
CREATE TABLE retention_policies (
    id                   bigserial PRIMARY KEY,
    scheme_id            bigint UNIQUE REFERENCES schemes (id) ON DELETE CASCADE,
    channel_id           bigint UNIQUE REFERENCES channels (id) ON DELETE CASCADE,
    keep_builds          integer CHECK (keep_builds >= 0),
    max_age_days         integer CHECK (max_age_days >= 0),
    max_bytes            bigint  CHECK (max_bytes >= 0),
    expired_profile_days integer CHECK (expired_profile_days >= 0),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    CHECK ((scheme_id IS NULL) <> (channel_id IS NULL)),
    CHECK (scheme_id IS NULL OR keep_builds IS NULL)
);

-- A pinned release is never deleted by retention.
ALTER TABLE releases ADD COLUMN pinned boolean NOT NULL DEFAULT false;

-- Install counts, kept apart from releases so that counting neither announces a change to the
-- read caches (slipway_notify_change) nor races release edits on updated_at.
CREATE TABLE release_downloads (
    release_id bigint PRIMARY KEY REFERENCES releases (id) ON DELETE CASCADE,
    downloads  bigint NOT NULL DEFAULT 0 CHECK (downloads >= 0)
);

-- Webhooks of a channel or of an app (every channel of it).
CREATE TABLE webhooks (
    id         bigserial PRIMARY KEY,
    app_id     bigint REFERENCES apps (id) ON DELETE CASCADE,
    channel_id bigint REFERENCES channels (id) ON DELETE CASCADE,
    url        text    NOT NULL CHECK (length(url) <= 2048),
    format     text    NOT NULL CHECK (format IN ('slipway', 'slack', 'teams', 'discord', 'dingtalk', 'feishu', 'wecom')),
    events     text[]  NOT NULL CHECK (cardinality(events) > 0),
    secret     text    NOT NULL,
    enabled    boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((app_id IS NULL) <> (channel_id IS NULL))
);
CREATE INDEX webhooks_app_idx ON webhooks (app_id);
CREATE INDEX webhooks_channel_idx ON webhooks (channel_id);

-- The outbox: one row per event and webhook, written in the transaction that makes the event, so
-- a crash after the commit loses nothing. Replicas lease due rows (FOR UPDATE SKIP LOCKED), so two
-- never send one at the same time.
CREATE TABLE webhook_deliveries (
    id              bigserial PRIMARY KEY,
    webhook_id      bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        text   NOT NULL,
    event           text   NOT NULL,
    payload         jsonb  NOT NULL,
    state           text   NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    leased_until    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id DESC);

-- Every attempt of a delivery: when, the HTTP status (0 when none came), how long, what failed.
CREATE TABLE webhook_attempts (
    id           bigserial PRIMARY KEY,
    delivery_id  bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    status_code  integer NOT NULL DEFAULT 0,
    latency_ms   integer NOT NULL DEFAULT 0,
    error        text    NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id);
