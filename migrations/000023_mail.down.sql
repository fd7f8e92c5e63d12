DROP INDEX mail_outbox_finished_idx;
DROP INDEX mail_outbox_failed_idx;
