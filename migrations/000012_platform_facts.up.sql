-- HarmonyOS, Windows and Linux builds. A release keeps what its platform's package says
-- beyond the columns every platform shares (name, versions, min_os, target_sdk, device): the
-- architectures, the publisher, a one-line description, the permissions asked for, the debug
-- flag and the format's own facts (ProductCode, UpgradeCode, FileVersion, Release...). They are
-- only shown, never queried by, so one jsonb object keeps every query as it was; '{}' for
-- releases uploaded before and for files kept unparsed.
ALTER TABLE releases ADD COLUMN platform_facts jsonb NOT NULL DEFAULT '{}'
    CHECK (jsonb_typeof(platform_facts) = 'object' AND octet_length(platform_facts::text) <= 65536);
