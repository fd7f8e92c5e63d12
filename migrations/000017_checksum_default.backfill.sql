-- Desktop releases that a binary from before migration 000015 recorded after it (the column's old
-- default made them 'verified' without a SHA-512): unverified, the verifier computes them. Batches of 1000,
-- each a transaction of its own, until none is left (store.Migrator).
UPDATE releases SET checksum_state = 'unverified'
WHERE id IN (SELECT id FROM releases
             WHERE platform IN ('macos', 'windows', 'linux') AND checksum_state = 'verified' AND sha512 = ''
             LIMIT 1000);
