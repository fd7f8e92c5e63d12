-- What changed in a build. Each release's insights snapshot (pkg/insights.Snapshot as
-- JSON: identity, minimum OS, architectures, permissions, entitlements, signing and the size
-- breakdown) lives in a table of its own, so that filling it in later (the first request for an
-- older release, `slipway insights backfill`) neither touches the release row (whose updates
-- announce a change to the read cache) nor widens every release read.
CREATE TABLE release_insights (
    release_id bigint      PRIMARY KEY REFERENCES releases (id) ON DELETE CASCADE,
    snapshot   jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Size budgets per channel (all optional): a maximum download size in bytes, a maximum growth in
-- percent over the channel's previous build, and whether crossing one refuses the upload (422)
-- instead of warning.
ALTER TABLE channels
    ADD COLUMN max_size_bytes     bigint           CHECK (max_size_bytes > 0),
    ADD COLUMN max_growth_percent double precision CHECK (max_growth_percent > 0),
    ADD COLUMN enforce_budget     boolean          NOT NULL DEFAULT false;
