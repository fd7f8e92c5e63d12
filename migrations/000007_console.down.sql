DROP TABLE audit_log;
DROP TABLE login_links;
DROP TABLE user_sessions;
DROP TABLE app_members;
DROP TABLE users;
