DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
DROP TABLE release_downloads;
ALTER TABLE releases DROP COLUMN pinned;
DROP TABLE retention_policies;
