-- The checksum verifier, when the operator gave Slipway a Sparkle key, also takes verified macOS
-- releases that have no Sparkle signature, to sign them. This partial index keeps that
-- look-up from scanning every release on each poll.
CREATE INDEX releases_unsigned_macos ON releases (id) WHERE platform = 'macos' AND checksum_state = 'verified' AND ed_signature = '';
