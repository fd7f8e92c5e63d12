-- Limited tokens would reach every app and do all their scope allows without the columns: revoke
-- them first.
UPDATE api_tokens SET revoked_at = now() WHERE revoked_at IS NULL AND (app_ids IS NOT NULL OR abilities IS NOT NULL);
ALTER TABLE api_tokens DROP COLUMN abilities, DROP COLUMN app_ids;
