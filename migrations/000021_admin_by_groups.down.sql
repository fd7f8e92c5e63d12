ALTER TABLE users DROP COLUMN admin_by_groups;
