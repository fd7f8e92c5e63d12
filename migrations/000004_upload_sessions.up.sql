-- Resumable upload sessions (POST /api/uploads): a client puts a large build's parts straight into
-- object storage (presigned S3 URLs) and asks the service to complete it. The session's object is
-- recorded as pending in storage_objects when the session starts, in the same transaction, so the
-- collector knows it; the collector leaves it alone while the session is open and unexpired, and
-- ends expired sessions (their multipart uploads are aborted when their key is deleted).
CREATE TABLE upload_sessions (
    id                text        PRIMARY KEY CHECK (id ~ '^ups_[0-9a-z]{26,}$'),
    token_id          bigint      NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    kind              text        NOT NULL CHECK (kind IN ('app', 'debug_file')),
    object_key        text        NOT NULL UNIQUE,
    storage_upload_id text        NOT NULL,
    filename          text        NOT NULL,
    size              bigint      NOT NULL CHECK (size > 0),
    sha256            text        NOT NULL DEFAULT '' CHECK (sha256 ~ '^([0-9a-f]{64})?$'),
    part_size         bigint      NOT NULL CHECK (part_size > 0),
    fields            jsonb       NOT NULL DEFAULT '{}',
    -- open → completing → completed; open → aborted or expired; completing → open (parts
    -- missing) or failed (the package was refused).
    state             text        NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'completing', 'completed', 'aborted', 'expired', 'failed')),
    result_id         bigint,
    error             text,
    expires_at        timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX upload_sessions_open_idx ON upload_sessions (expires_at) WHERE state IN ('open', 'completing');
