-- The count of mail given up (the console's and the metrics') reads these rows alone, not the
-- whole outbox of sent mail.
CREATE INDEX mail_outbox_failed_idx ON mail_outbox (created_at) WHERE state = 'failed';
-- The sender prunes finished mail oldest first.
CREATE INDEX mail_outbox_finished_idx ON mail_outbox ((coalesce(sent_at, created_at))) WHERE state IN ('sent', 'failed');
