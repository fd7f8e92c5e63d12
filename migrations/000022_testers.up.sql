-- Testers are people: an email address (lower-cased, trimmed) with an optional name.
CREATE TABLE testers (
    id         bigserial PRIMARY KEY,
    email      text NOT NULL UNIQUE,
    name       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Groups of testers, shared across apps ("qa" tests many apps).
CREATE TABLE tester_groups (
    id         bigserial PRIMARY KEY,
    alias      text NOT NULL UNIQUE,
    name       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tester_group_members (
    group_id  bigint NOT NULL REFERENCES tester_groups (id) ON DELETE CASCADE,
    tester_id bigint NOT NULL REFERENCES testers (id) ON DELETE CASCADE,
    added_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, tester_id)
);
CREATE INDEX tester_group_members_tester_idx ON tester_group_members (tester_id);

-- A channel with tester groups is open to their testers only. tester_only stays true when its
-- last group is deleted (the channel closes rather than opening to everyone); only setting its
-- groups to none makes it public (or password-protected) again.
ALTER TABLE channels ADD COLUMN tester_only boolean NOT NULL DEFAULT false;
CREATE TABLE channel_tester_groups (
    channel_id bigint NOT NULL REFERENCES channels (id) ON DELETE CASCADE,
    group_id   bigint NOT NULL REFERENCES tester_groups (id) ON DELETE CASCADE,
    PRIMARY KEY (channel_id, group_id)
);
CREATE INDEX channel_tester_groups_group_idx ON channel_tester_groups (group_id);

-- Who a release went to, and what they did with it: invited (distributed to them), opened (the
-- release page), installed (the manifest or the package fetched with their session or link).
-- direct: the tester was named for this build (testers=), not reached through a group.
-- mail: what was sent for it: none (notify false, or the tester chose none), pending (to be
-- written to the outbox by the mailing component, as mail_kind says), queued (a mail in the
-- outbox), digest (waiting for the tester's daily digest), digested.
CREATE TABLE release_testers (
    release_id   bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    tester_id    bigint NOT NULL REFERENCES testers (id) ON DELETE CASCADE,
    direct       boolean NOT NULL DEFAULT false,
    invited_at   timestamptz NOT NULL DEFAULT now(),
    opened_at    timestamptz,
    installed_at timestamptz,
    mail         text NOT NULL DEFAULT 'none' CHECK (mail IN ('none', 'pending', 'queued', 'digest', 'digested')),
    mail_kind    text NOT NULL DEFAULT '' CHECK (mail_kind IN ('', 'invitation', 'new_build')),
    PRIMARY KEY (release_id, tester_id)
);
CREATE INDEX release_testers_pending_idx ON release_testers (release_id) WHERE mail = 'pending';
-- A distribution waiting to be expanded into release_testers rows and pending mails by the
-- mailing component: the upload's transaction records only this (and the groups and named
-- testers it names), so the upload does not wait for a group's size.
CREATE TABLE release_distributions (
    id         bigserial PRIMARY KEY,
    release_id bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    emails     text[] NOT NULL DEFAULT '{}',
    group_ids  bigint[] NOT NULL DEFAULT '{}',
    notify     boolean NOT NULL,
    summary    text[],
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX release_distributions_release_idx ON release_distributions (release_id);

-- What the mails of a release's distribution say beyond the release itself: the summary of
-- what changed since the channel's previous build, as its upload found it.
CREATE TABLE release_mailings (
    release_id bigint PRIMARY KEY REFERENCES releases (id) ON DELETE CASCADE,
    summary    text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX release_testers_tester_idx ON release_testers (tester_id);
CREATE INDEX release_testers_digest_idx ON release_testers (tester_id) WHERE mail = 'digest';

-- The groups a release was distributed to beyond its channel's (an upload's groups): their
-- testers may install it while they are in them.
CREATE TABLE release_tester_groups (
    release_id bigint NOT NULL REFERENCES releases (id) ON DELETE CASCADE,
    group_id   bigint NOT NULL REFERENCES tester_groups (id) ON DELETE CASCADE,
    PRIMARY KEY (release_id, group_id)
);
CREATE INDEX release_tester_groups_group_idx ON release_tester_groups (group_id);

-- Each tester's mail choice per app. The row is made with the tester's invitation to the app
-- (its existence is what makes the next build a "new build" mail rather than an invitation).
CREATE TABLE tester_apps (
    tester_id  bigint NOT NULL REFERENCES testers (id) ON DELETE CASCADE,
    app_id     bigint NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    mail       text NOT NULL DEFAULT 'every' CHECK (mail IN ('every', 'daily', 'none')),
    invited_at timestamptz NOT NULL DEFAULT now(),
    digest_at  timestamptz,
    PRIMARY KEY (tester_id, app_id)
);

-- A tester's sign-in links (single use, short-lived) and sessions (days), by the SHA-256 of
-- their secret.
CREATE TABLE tester_links (
    id_hash    text PRIMARY KEY,
    tester_id  bigint NOT NULL REFERENCES testers (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
CREATE INDEX tester_links_tester_idx ON tester_links (tester_id);
-- Requests for sign-in links by client address, to bound how many one client asks for (the
-- answer is the same for every address, so these are counted whether or not a tester exists).
CREATE TABLE tester_link_requests (
    client       text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tester_link_requests_client_idx ON tester_link_requests (client, requested_at);
CREATE TABLE tester_sessions (
    id_hash    text PRIMARY KEY,
    tester_id  bigint NOT NULL REFERENCES testers (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    revoked_at timestamptz
);
CREATE INDEX tester_sessions_tester_idx ON tester_sessions (tester_id);

-- The mail outbox: a mail is written in the transaction of what causes it and sent by the mail
-- sender (pkg/distribution/mailer). id is the Message-ID's local part, so a retried send is the
-- same message. state: pending (due at next_attempt_at), sending (leased by one replica until
-- lease_until), sent, failed (given up after its attempts).
CREATE TABLE mail_outbox (
    id              text PRIMARY KEY,
    kind            text NOT NULL,
    recipient       text NOT NULL,
    subject         text NOT NULL,
    text_body       text NOT NULL,
    html_body       text NOT NULL DEFAULT '',
    headers         jsonb NOT NULL DEFAULT '{}',
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    lease_until     timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    sent_at         timestamptz
);
CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at) WHERE state IN ('pending', 'sending');

-- Testers act (they sign in, choose their mail, unsubscribe): the audit trail and the tombstones
-- name them as actors. Loosening a CHECK breaks no binary before this one (they never write
-- 'tester'); NOT VALID skips a scan of rows that all pass it.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_kind_check,
    ADD CONSTRAINT audit_log_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system', 'tester')) NOT VALID;
ALTER TABLE release_tombstones DROP CONSTRAINT release_tombstones_actor_kind_check,
    ADD CONSTRAINT release_tombstones_actor_kind_check CHECK (actor_kind IN ('user', 'token', 'system', 'tester')) NOT VALID;
