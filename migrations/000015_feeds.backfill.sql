-- Desktop releases recorded before migration 000015 have no SHA-512 or SHA-1: unverified, the
-- verifier computes them (a verified desktop release always has its SHA-512). Batches of 1000,
-- each a transaction of its own, until none is left (store.Migrator).
UPDATE releases SET checksum_state = 'unverified'
WHERE id IN (SELECT id FROM releases
             WHERE platform IN ('macos', 'windows', 'linux') AND checksum_state = 'verified' AND sha512 = ''
             LIMIT 1000);
