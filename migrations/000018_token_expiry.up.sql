-- API tokens can expire: a token with an expires_at in the past is refused as a revoked one is.
-- NULL: it never expires (every token made before this migration, and those made without one).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
