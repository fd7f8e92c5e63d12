-- Colleagues arrive by invitation: an admin invites someone to the console with a
-- role, an admin or an app's member invites someone to one app. The mailed link is kept by its
-- secret's hash and spent once; accepting it (or a first sign-in with the identity provider
-- under the same verified email) makes the user, or raises an existing one to the role.
CREATE TABLE user_invitations (
    id          bigserial PRIMARY KEY,
    secret_hash text NOT NULL UNIQUE,
    email       text NOT NULL CHECK (length(email) BETWEEN 3 AND 320),
    role        text NOT NULL CHECK (role IN ('admin', 'developer', 'viewer')),
    app_id      bigint REFERENCES apps (id) ON DELETE CASCADE,      -- NULL: the console as a whole
    invited_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    user_id     bigint REFERENCES users (id) ON DELETE SET NULL,   -- who accepted it
    revoked_at  timestamptz
);
CREATE INDEX user_invitations_open_idx ON user_invitations (email) WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- Login links are also mailed now (to colleagues who came by invitation): how many a user got
-- lately bounds how many more they get. (tester_link_requests counts every client's requests
-- for a mailed link, of either kind.)
ALTER TABLE login_links ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX login_links_user_idx ON login_links (user_id, created_at);
