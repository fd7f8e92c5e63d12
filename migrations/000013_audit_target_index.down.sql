DROP INDEX IF EXISTS audit_log_target;
