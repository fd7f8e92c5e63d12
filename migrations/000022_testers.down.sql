-- Tester-only channels would open to everyone without the column: give them a password nobody
-- knows first (an admin sets a new one).
UPDATE channels SET password_hash = '$2a$10$invalidinvalidinvalidinvalidinvalidinvalidinvalidinval'
    WHERE tester_only AND password_hash IS NULL;
-- What testers did is kept, as the system's.
UPDATE audit_log SET actor_kind = 'system' WHERE actor_kind = 'tester';
UPDATE release_tombstones SET actor_kind = 'system' WHERE actor_kind = 'tester';
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check,
    ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system'));
ALTER TABLE release_tombstones DROP CONSTRAINT release_tombstones_actor_kind_check,
    ADD CONSTRAINT release_tombstones_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system'));
DROP TABLE mail_outbox;
DROP TABLE tester_sessions;
DROP TABLE tester_link_requests;
DROP TABLE tester_links;
DROP TABLE tester_apps;
DROP TABLE release_distributions;
DROP TABLE release_mailings;
DROP TABLE release_tester_groups;
DROP TABLE release_testers;
DROP TABLE channel_tester_groups;
ALTER TABLE channels DROP COLUMN tester_only;
DROP TABLE tester_group_members;
DROP TABLE tester_groups;
DROP TABLE testers;
