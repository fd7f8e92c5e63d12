-- API tokens can be limited to apps and to abilities, as App Center's app tokens were: a CI
-- runner's token then reaches only the apps it builds, and only to upload. NULL: no limit (every
-- token made before this migration, and those made without one). The ids are not foreign keys:
-- a limit outlives its app (ids are never reused), so a token whose apps are all destroyed may
-- do nothing rather than everything.
ALTER TABLE api_tokens
    ADD COLUMN app_ids bigint[] CHECK (app_ids IS NULL OR cardinality(app_ids) BETWEEN 1 AND 100),
    ADD COLUMN abilities text[] CHECK (abilities IS NULL OR (cardinality(abilities) >= 1 AND abilities <@ ARRAY['read', 'upload', 'devices']::text[]));
