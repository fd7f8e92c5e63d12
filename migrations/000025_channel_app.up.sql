-- The app a channel holds. A channel made without a bundle id (bundle_id '*', as an
-- upload without channel_key makes it) learns the bundle id of its first build: a build of
-- another app is then announced (a warning in the upload's answer, a question in the console),
-- never offered as the channel's newest build, and counted apart by retention.
--   '':   made without a bundle id and no build yet: its first build's is learned;
--   '*':  it takes any app: its bundle_id was chosen (an id, a pattern, or '*' on purpose), or its
--         builds were of several apps already when this column came;
--   NULL: not known (a channel a binary from before recorded): read as '*' until the backfill;
--   else: the bundle id learned.
ALTER TABLE channels ADD COLUMN app_bundle_id text CHECK (app_bundle_id IS NULL OR length(app_bundle_id) <= 255);
