-- A mail's inline images (a feedback report's screenshots), named by their objects: the mail
-- sender reads each from the bucket when it sends, so the outbox holds no image bytes. A list of
-- {"cid", "key", "content_type"}; [] for a mail without.
ALTER TABLE mail_outbox ADD COLUMN inline jsonb NOT NULL DEFAULT '[]';
