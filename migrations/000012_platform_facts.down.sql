ALTER TABLE releases DROP COLUMN platform_facts;
