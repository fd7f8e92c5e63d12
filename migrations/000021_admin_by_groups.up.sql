-- An admin role given by SLIPWAY_OIDC_ADMIN_GROUPS at a sign-in is the groups': the next sign-in
-- outside them takes it back. A role given in the console (or by the CLI) is not (false).
-- Every user made before this migration keeps their role as given by hand.
ALTER TABLE users ADD COLUMN admin_by_groups boolean NOT NULL DEFAULT false;
