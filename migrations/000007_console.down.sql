DROP TABLE audit_log;
ALTER TABLE api_tokens DROP COLUMN user_id;
DROP TABLE login_links;
DROP TABLE user_sessions;
DROP TABLE app_members;
DROP TABLE users;
