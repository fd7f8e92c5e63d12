-- Which builds a Linux channel's APT repository lists: every build the channel offers (false,
-- the default: apt picks the highest version, an older one stays installable by version), or only
-- the newest version of each package and architecture (true).
ALTER TABLE channels ADD COLUMN apt_newest_only boolean NOT NULL DEFAULT false;
