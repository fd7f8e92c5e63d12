ALTER TABLE channels DROP COLUMN appinstaller_hours;
