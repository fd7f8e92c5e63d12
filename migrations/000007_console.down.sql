DROP TABLE audit_log;
-- A token made in the console never exceeds its user's rights (store.Authenticate); without the
-- owner column, the older schema would let it act with its full scope (a developer's or a
-- disabled user's admin-scoped token would become an admin token). Such tokens are revoked.
UPDATE api_tokens SET revoked_at = now() WHERE user_id IS NOT NULL AND revoked_at IS NULL;
ALTER TABLE api_tokens DROP COLUMN user_id;
DROP TABLE login_links;
DROP TABLE user_sessions;
DROP TABLE app_members;
DROP TABLE users;
