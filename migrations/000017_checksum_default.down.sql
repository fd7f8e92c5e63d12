ALTER TABLE releases ALTER COLUMN checksum_state SET DEFAULT 'verified';
