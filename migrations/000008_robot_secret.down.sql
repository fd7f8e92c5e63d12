ALTER TABLE webhooks DROP COLUMN robot_secret;
