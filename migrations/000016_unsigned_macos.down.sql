DROP INDEX IF EXISTS releases_unsigned_macos;
