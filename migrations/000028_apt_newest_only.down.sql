ALTER TABLE channels DROP COLUMN apt_newest_only;
