DROP INDEX login_links_user_idx;
ALTER TABLE login_links DROP COLUMN created_at;
DROP TABLE user_invitations;
