-- A build's console page names who uploaded it: the "release.upload" audit row of that release.
-- The lookup by target (a page of builds at once) is indexed.
CREATE INDEX audit_log_target ON audit_log (target_kind, target_id) WHERE target_id IS NOT NULL;
