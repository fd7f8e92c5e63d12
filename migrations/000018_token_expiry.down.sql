-- Tokens that had expired would come back to life without the column: revoke them first.
UPDATE api_tokens SET revoked_at = expires_at WHERE revoked_at IS NULL AND expires_at IS NOT NULL AND expires_at <= now();
ALTER TABLE api_tokens DROP COLUMN expires_at;
