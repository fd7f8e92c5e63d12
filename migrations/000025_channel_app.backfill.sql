-- Channels of '*' from before migration 000025 learn the bundle id their builds share; one whose
-- builds are of several apps takes any ('*'); one without builds learns from its next (''). Other
-- channels chose their bundle id ('*'). Batches of 1000, each a transaction of its own, until none
-- is left (store.Migrator).
UPDATE channels c SET app_bundle_id = CASE WHEN c.bundle_id <> '*' THEN '*' ELSE coalesce(
	(SELECT CASE WHEN count(DISTINCT r.bundle_id) = 1 THEN min(r.bundle_id) ELSE '*' END
	 FROM releases r WHERE r.channel_id = c.id HAVING count(*) > 0), '') END
WHERE c.id IN (SELECT id FROM channels WHERE app_bundle_id IS NULL LIMIT 1000);
