DROP TABLE IF EXISTS upload_sessions;
