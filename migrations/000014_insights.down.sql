ALTER TABLE channels
    DROP COLUMN enforce_budget,
    DROP COLUMN max_growth_percent,
    DROP COLUMN max_size_bytes;
DROP TABLE release_insights;
