package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

// fills puts a row or two in every table a migration adds, and values in the columns it adds,
// using that version's schema. Every migration needs an entry (empty when it adds no table or
// column, with a comment saying so): TestMigrationsUpDownUpWithData fails without one.
var fills = map[uint]string{
	1: `
		INSERT INTO apps (id, name) VALUES (1, 'Harbor'), (2, 'Tools');
		INSERT INTO schemes (id, app_id, name) VALUES (1, 1, 'Adhoc'), (2, 2, 'Nightly');
		INSERT INTO channels (id, scheme_id, name, slug, device_type, bundle_id, password_hash, last_version) VALUES
			(1, 1, 'iOS', 'harbor-ios', 'ios', 'com.example.*', NULL, 2),
			(2, 1, 'Android', 'harbor-android', 'android', '*', 'argon2-hash', 1);
		INSERT INTO releases (id, channel_id, version, name, bundle_id, release_version, build_version, platform, format,
				size, sha256, object_key, filename, icon_key, icon_type, changelog) VALUES
			(1, 1, 1, 'Harbor', 'com.example.harbor', '1.0', '1', 'ios', 'ipa', 100, 'aa', 'packages/r1/Harbor.ipa', 'Harbor.ipa', 'icons/r1.png', 'image/png', '[{"message":"first"}]'),
			(2, 1, 2, 'Harbor', 'com.example.harbor', '1.0', '2', 'ios', 'ipa', 101, 'ab', 'packages/r2/Harbor.ipa', 'Harbor.ipa', NULL, NULL, '[]'),
			(3, 2, 1, 'Harbor', 'com.example.harbor', '1.0', '1', 'android', 'apk', 90, 'ac', 'packages/r3/Harbor.apk', 'Harbor.apk', NULL, NULL, '[]');
		INSERT INTO debug_files (id, app_id, channel_id, device_type, sha256, size, object_key, filename) VALUES
			(1, 1, 1, 'ios', 'da', 10, 'debug_files/d1.zip', 'Harbor.dSYM.zip');
		INSERT INTO debug_file_metadata (debug_file_id, uuid, type, object) VALUES (1, 'UUID-1', 'arm64', 'Harbor');
		INSERT INTO api_tokens (id, name, scope, token_hash) VALUES (1, 'ci', 'upload', '\x01'), (2, 'ops', 'admin', '\x02');
		INSERT INTO storage_objects (key, state) VALUES ('packages/crashed/x.ipa', 'pending');
		INSERT INTO upload_idempotency (token_id, key, release_id) VALUES (1, 'idem-1', 1);
		INSERT INTO password_failures (channel_id, client, failures) VALUES (2, '203.0.113.9', 3);`,
	2: `
		UPDATE schemes SET retained_builds = 5, new_build_callout = false WHERE id = 1;
		UPDATE channels SET download_filename_type = 'version_datetime' WHERE id = 1;
		INSERT INTO channels (id, scheme_id, name, slug, device_type, last_version) VALUES (3, 2, 'Linux', 'tools-linux', 'linux', 1);
		INSERT INTO releases (id, channel_id, version, platform, format, size, sha256, object_key, filename, icon_key, uploaded_by) VALUES
			(4, 3, 1, 'linux', 'deb', 5, 'ae', 'packages/r4/tools.deb', 'tools.deb', 'icons/r4.png', 1);
		UPDATE releases SET uploaded_by = 1 WHERE id = 2;
		INSERT INTO debug_files (id, app_id, channel_id, device_type, sha256, size, object_key, filename, md5) VALUES
			(2, 2, 3, 'linux', 'db', 7, 'debug_files/d2.zip', 'tools.sym.zip', 'md5-d2');
		INSERT INTO devices (udid, name, model) VALUES ('00008030-001A2B3C4D5E802E', 'Ann''s iPhone', 'iPhone15,2');`,
	3: ``, // triggers only
	4: `
		INSERT INTO storage_objects (key, state) VALUES ('packages/ups/big.ipa', 'pending');
		INSERT INTO upload_sessions (id, token_id, kind, object_key, storage_upload_id, filename, size, part_size, expires_at) VALUES
			('ups_` + strings.Repeat("a", 26) + `', 1, 'app', 'packages/ups/big.ipa', 'mpu-1', 'big.ipa', 100000000, 8388608, now() + interval '1 day');`,
	5: `
		INSERT INTO retention_policies (scheme_id, max_age_days) VALUES (1, 30);
		INSERT INTO retention_policies (channel_id, keep_builds) VALUES (1, 3);
		UPDATE releases SET pinned = true WHERE id = 1;
		INSERT INTO release_downloads (release_id, downloads) VALUES (1, 42);
		INSERT INTO webhooks (id, app_id, url, format, events, secret) VALUES (1, 1, 'https://hooks.example.com/x', 'slack', '{release.created}', 'whsec1');
		INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, payload) VALUES (1, 1, 'ev1', 'release.created', '{"a": 1}');
		INSERT INTO webhook_attempts (delivery_id, status_code, error) VALUES (1, 500, 'boom');`,
	6: `
		INSERT INTO releases (id, channel_id, version, platform, format, size, sha256, object_key, filename, profile_devices) VALUES
			(5, 1, 3, 'ios', 'ipa', 1, 'af', 'packages/r5/Harbor.ipa', 'Harbor.ipa', '{00008030-001A2B3C4D5E802E}');
		UPDATE channels SET last_version = 3 WHERE id = 1;`,
	7: `
		INSERT INTO users (id, subject, email, name, role) VALUES
			(1, 'https://idp.example.com|ann', 'ann@example.com', 'Ann', 'developer'), (2, NULL, '', 'admin', 'admin');
		INSERT INTO app_members (app_id, user_id) VALUES (1, 1);
		INSERT INTO user_sessions (id, user_id, expires_at) VALUES ('session-1', 1, now() + interval '1 day');
		INSERT INTO login_links (id, user_id, expires_at) VALUES ('link-1', 2, now() + interval '15 minutes');
		-- A developer's admin-scoped token: worth upload while its owner is known.
		INSERT INTO api_tokens (id, name, scope, token_hash, user_id) VALUES (3, 'ann-laptop', 'admin', '\x03', 1);
		INSERT INTO audit_log (user_id, action, target) VALUES (1, 'release.delete', 'release:2');`,
	8: `
		UPDATE webhooks SET robot_secret = 'SEC-1' WHERE id = 1;
		INSERT INTO webhooks (id, channel_id, url, format, events, secret, robot_secret) VALUES
			(2, 1, 'https://oapi.dingtalk.com/robot/send?access_token=x', 'dingtalk', '{release.created}', 'whsec2', 'SEC-2');`,
	9: `
		INSERT INTO console_forms (id, result_url) VALUES ('f1', 'https://slipway.example/console/apps/1'), ('f2', '');`,
	10: `
		INSERT INTO udid_challenges (challenge_hash, expires_at) VALUES ('\x0c', now() + interval '1 hour');
		INSERT INTO devices (udid, name, source, unverified) VALUES ('00008101-000A1B2C3D4E5F60', 'Unknown iPhone', 'profile', true);`,
	11: `
		INSERT INTO audit_log (user_id, action, target, actor_kind, actor_name, token_id, target_kind, target_id, app_id) VALUES
			(NULL, 'release.delete', 'Harbor 1.0 (1)', 'token', 'ci', 3, 'release', 9, 1);
		INSERT INTO release_tombstones (release_id, channel_id, app_name, release_version, build_version, actor_kind, actor_name, reason) VALUES
			(9, 1, 'Harbor', '1.0', '1', 'system', 'retention', 'keep_builds');`,
	12: `
		UPDATE releases SET platform_facts = '{"architectures": ["arm64"], "publisher": "Acme <dev@acme.example>", "properties": {"Revision": "1"}}' WHERE id = 4;
		UPDATE releases SET platform_facts = '{"permissions": ["android.permission.INTERNET"]}' WHERE id = 3;`,
	13: ``, // an index on audit_log's targets: no table or column
	14: `
		INSERT INTO release_insights (release_id, snapshot) VALUES (1, '{"schema": 1, "platform": "ios", "format": "ipa", "sizes": {"download": 100}}');
		UPDATE channels SET max_size_bytes = 50000000, max_growth_percent = 5.5, enforce_budget = true WHERE id = 1;`,
	15: `
		UPDATE releases SET sha512 = repeat('c', 128), sha1 = repeat('d', 40), checksum_state = 'verified',
			ed_signature = 'c2ln', tauri_signature = 'dGF1cmk=', rollout_percent = 40, critical = true WHERE id = 1;
		UPDATE releases SET checksum_state = 'mismatch', checksum_error = 'declared another', checksum_lease = now() WHERE id = 2;
		UPDATE channels SET feed_token_hash = repeat('e', 64) WHERE id = 1;`,
	16: ``, // an index of the unsigned macOS releases: no table or column
	17: ``, // a column's default only (and its backfill)
	18: `
		UPDATE api_tokens SET expires_at = now() + interval '90 days' WHERE id = 1;`,
	19: `
		INSERT INTO api_tokens (id, name, scope, token_hash, app_ids, abilities) VALUES (4, 'ci-one-app', 'upload', '\x04', '{1}', '{upload,read}');`,
	20: `
		UPDATE channels SET sparkle_signing = true WHERE id = 1;
		UPDATE releases SET sparkle_sign = true WHERE id = 1;`,
	21: `
		INSERT INTO users (id, subject, email, name, role, admin_by_groups) VALUES (3, 'https://idp.example.com|ops', 'ops@example.com', 'Ops', 'admin', true);`,
	// Channel 2 has a password: the down migration closes only tester-only channels without one.
	22: `
		INSERT INTO testers (id, email, name) VALUES (1, 'ada@example.com', 'Ada'), (2, 'bob@example.com', '');
		INSERT INTO tester_groups (id, alias, name) VALUES (1, 'qa', 'QA');
		INSERT INTO tester_group_members (group_id, tester_id) VALUES (1, 1), (1, 2);
		UPDATE channels SET tester_only = true WHERE id = 2;
		INSERT INTO channel_tester_groups (channel_id, group_id) VALUES (2, 1);
		INSERT INTO release_testers (release_id, tester_id, direct, opened_at, installed_at, mail, mail_kind) VALUES
			(1, 1, true, now(), now(), 'queued', 'invitation'), (1, 2, false, NULL, NULL, 'pending', 'new_build');
		INSERT INTO release_mailings (release_id, summary) VALUES (1, '{"+1.2 MB (+3%)"}');
		INSERT INTO release_distributions (release_id, emails, group_ids, notify, summary) VALUES (1, '{bob@example.com}', '{1}', true, '{}');
		INSERT INTO release_tester_groups (release_id, group_id) VALUES (1, 1);
		INSERT INTO tester_apps (tester_id, app_id, mail) VALUES (1, 1, 'daily');
		INSERT INTO tester_links (id_hash, tester_id, expires_at) VALUES ('l1', 1, now() + interval '20 minutes');
		INSERT INTO tester_link_requests (client) VALUES ('203.0.113.7');
		INSERT INTO tester_sessions (id_hash, tester_id, expires_at) VALUES ('s1', 1, now() + interval '30 days');
		INSERT INTO mail_outbox (id, kind, recipient, subject, text_body) VALUES ('invitation.r1.t1', 'invitation', 'ada@example.com', 'You are invited', 'Hello');
		INSERT INTO audit_log (action, target, actor_kind, actor_name, target_kind, target_id) VALUES
			('tester.sign_in', 'ada@example.com', 'tester', 'ada@example.com', 'tester', 1);`,
	// Indexes only: rows in the states they cover.
	23: `
		INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, state, attempts, last_error) VALUES ('new_build.r1.t2', 'new_build', 'bob@example.com', 'New build', '', 'failed', 3, 'smtp rcpt to: 550 no');
		INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, state, attempts, sent_at) VALUES ('sign_in.t1.1', 'sign_in', 'ada@example.com', 'Sign in', '', 'sent', 1, now());`,
	// Colleagues' invitations: one to the console, one to an app accepted, one withdrawn; a
	// colleague who came by one, with a mailed login link.
	24: `
		INSERT INTO users (id, subject, email, name, role) VALUES (4, 'email|cy@example.com', 'cy@example.com', '', 'developer');
		INSERT INTO user_invitations (secret_hash, email, role, app_id, invited_by, expires_at, accepted_at, user_id, revoked_at) VALUES
			('h1', 'dee@example.com', 'viewer', NULL, 3, now() + interval '7 days', NULL, NULL, NULL),
			('h2', 'cy@example.com', 'developer', 1, 3, now() + interval '7 days', now(), 4, NULL),
			('h3', 'eve@example.com', 'admin', NULL, 3, now() + interval '7 days', NULL, NULL, now());
		INSERT INTO login_links (id, user_id, expires_at, created_at) VALUES ('link-2', 4, now() + interval '15 minutes', now());`,
	// Channel 2 (bundle id *) holds the app of its builds; channel 1 chose a pattern.
	25: `
		UPDATE channels SET app_bundle_id = 'com.example.harbor' WHERE id = 2;
		UPDATE channels SET app_bundle_id = '*' WHERE id = 1;`,
	// Feedback on release 1: a tester's with a screenshot, resolved; an anonymous one, open; a
	// member who has feedback mailed.
	26: `
		INSERT INTO feedback (id, release_id, app_id, channel_id, tester_id, author_kind, author_name, author_email, body, device,
			os_version, locale, app_state, source, state, state_by, state_at) VALUES
			(1, 1, 1, 1, 1, 'tester', 'Ada', 'ada@example.com', 'The login button does nothing', 'iPhone15,2', 'iOS 18.1', 'en-GB',
				'{"screen": "login"}', 'api', 'resolved', 'Ops', now()),
			(2, 1, 1, 1, NULL, 'anonymous', '', '', 'Crashes on start', '', '', '', NULL, 'page', 'open', '', NULL);
		INSERT INTO feedback_screenshots (feedback_id, position, object_key, thumb_key, content_type, size, width, height) VALUES
			(1, 1, 'feedback/1/a.png', 'feedback/1/a-thumb.jpg', 'image/png', 1234, 1290, 2796);
		INSERT INTO feedback_attempts (channel_id, client) VALUES (1, '203.0.113.7');
		INSERT INTO app_members (app_id, user_id, feedback_mail) VALUES (1, 4, true);
		INSERT INTO audit_log (action, target, actor_kind, actor_name, target_kind, target_id) VALUES
			('feedback.create', 'Harbor 1.0 (1)', 'anonymous', 'anonymous', 'feedback', 2);`,
	// A feedback mail with its screenshot's thumbnail inline.
	27: `
		INSERT INTO mail_outbox (id, kind, recipient, subject, text_body, html_body, inline) VALUES ('feedback.1.ab', 'feedback', 'cy@example.com',
			'Feedback', 'text', '<img src="cid:s1@slipway">', '[{"cid": "s1@slipway", "key": "feedback/1/a-thumb.jpg", "content_type": "image/jpeg"}]');`,
	// A Linux channel whose APT repository lists the newest version of each package only.
	28: `
		UPDATE channels SET apt_newest_only = true WHERE id = 1;`,
	// A Windows channel whose App Installer file asks for a check at every start.
	29: `
		UPDATE channels SET appinstaller_hours = 0 WHERE id = 1;`,
}

// downEffects are the changes to surviving rows that a down migration makes on purpose: they turn
// the rows before it into the rows expected after it, checking what only got can say.
var downEffects = map[uint]func(t *testing.T, want, got tables){
	// Linux channels go, with their releases and debug files; their objects go to the collector.
	2: func(t *testing.T, want, got tables) {
		var keys []string
		gone := map[string]func(row) bool{
			"channels":            func(r row) bool { return r["device_type"] == "linux" },
			"releases":            func(r row) bool { return r["channel_id"] == float64(3) },
			"debug_files":         func(r row) bool { return r["channel_id"] == float64(3) },
			"debug_file_metadata": func(r row) bool { return r["debug_file_id"] == float64(2) },
		}
		for table, match := range gone {
			tb := want[table]
			tb.rows = slices.DeleteFunc(tb.rows, func(r row) bool {
				if !match(r) {
					return false
				}
				for _, k := range []string{"object_key", "icon_key"} {
					if key, ok := r[k].(string); ok && table != "channels" {
						keys = append(keys, key)
					}
				}
				return true
			})
			want[table] = tb
		}
		if len(keys) != 3 {
			t.Fatalf("the Linux channel's objects: %v, want its package, icon and debug file", keys)
		}
		objects := want["storage_objects"]
		for _, k := range keys {
			i := slices.IndexFunc(got["storage_objects"].rows, func(r row) bool { return r["key"] == k })
			if i < 0 || got["storage_objects"].rows[i]["state"] != "deleted" {
				t.Errorf("object %s of a deleted Linux release is not handed to the collector", k)
				continue
			}
			objects.rows = append(objects.rows, got["storage_objects"].rows[i])
		}
		want["storage_objects"] = objects
	},
	// Feedback goes; its screenshots' objects go to the collector.
	26: func(t *testing.T, want, got tables) {
		objects := want["storage_objects"]
		for _, k := range []string{"feedback/1/a.png", "feedback/1/a-thumb.jpg"} {
			i := slices.IndexFunc(got["storage_objects"].rows, func(r row) bool { return r["key"] == k })
			if i < 0 || got["storage_objects"].rows[i]["state"] != "deleted" {
				t.Errorf("screenshot object %s is not handed to the collector", k)
				continue
			}
			objects.rows = append(objects.rows, got["storage_objects"].rows[i])
		}
		want["storage_objects"] = objects
		for _, r := range want["audit_log"].rows {
			if r["actor_kind"] == "anonymous" {
				r["actor_kind"] = "system"
			}
		}
	},
	// Devices awaiting approval go: the schema before would export them to Apple.
	10: func(t *testing.T, want, got tables) {
		tb := want["devices"]
		tb.rows = slices.DeleteFunc(tb.rows, func(r row) bool { return r["udid"] == "00008101-000A1B2C3D4E5F60" })
		want["devices"] = tb
	},
	// Tokens limited to apps or abilities are revoked: without the limits they would reach every
	// app and do all their scope allows.
	19: func(t *testing.T, want, got tables) {
		for _, r := range want["api_tokens"].rows {
			if (r["app_ids"] == nil && r["abilities"] == nil) || r["revoked_at"] != nil {
				continue
			}
			i := slices.IndexFunc(got["api_tokens"].rows, func(g row) bool { return g["id"] == r["id"] })
			if i < 0 || got["api_tokens"].rows[i]["revoked_at"] == nil {
				t.Errorf("limited token %v survives the down migration unrevoked: it would reach every app", r["name"])
				continue
			}
			r["revoked_at"] = got["api_tokens"].rows[i]["revoked_at"]
		}
	},
	// What testers did stays in the audit trail, as the system's.
	22: func(t *testing.T, want, got tables) {
		for _, r := range want["audit_log"].rows {
			if r["actor_kind"] == "tester" {
				r["actor_kind"] = "system"
			}
		}
	},
	// Tokens owned by console users are revoked: without their owner they would exceed their rights.
	7: func(t *testing.T, want, got tables) {
		for _, r := range want["api_tokens"].rows {
			if r["user_id"] == nil || r["revoked_at"] != nil {
				continue
			}
			i := slices.IndexFunc(got["api_tokens"].rows, func(g row) bool { return g["id"] == r["id"] })
			if i < 0 || got["api_tokens"].rows[i]["revoked_at"] == nil {
				t.Errorf("console token %v (a developer's, admin-scoped) survives the down migration unrevoked: it would be an admin token", r["name"])
				continue
			}
			r["revoked_at"] = got["api_tokens"].rows[i]["revoked_at"]
		}
	},
}

type row = map[string]any

type table struct {
	cols []string
	rows []row
}

type tables map[string]table

// dump reads every table's rows (as JSON objects, sorted) and columns; schema_migrations aside.
func dump(t *testing.T, db *postgres.DB) tables {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT table_name, array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name NOT IN ('schema_migrations', 'schema_backfills') GROUP BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	out := tables{}
	for rows.Next() {
		var name string
		var cols []string
		if err := rows.Scan(&name, &cols); err != nil {
			t.Fatal(err)
		}
		out[name] = table{cols: cols}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for name, tb := range out {
		var raw []string
		if err := db.Pool.QueryRow(ctx, `SELECT coalesce(array_agg(to_jsonb(t)::text), '{}') FROM `+name+` t`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		for _, r := range raw {
			var v row
			if err := json.Unmarshal([]byte(r), &v); err != nil {
				t.Fatal(err)
			}
			tb.rows = append(tb.rows, v)
		}
		out[name] = tb
	}
	return out
}

// project keeps, of want, the tables and columns that exist in got.
func project(want, got tables) tables {
	out := tables{}
	for name, g := range got {
		w, ok := want[name]
		if !ok {
			continue
		}
		var rows []row
		for _, r := range w.rows {
			p := row{}
			for _, c := range g.cols {
				p[c] = r[c]
			}
			rows = append(rows, p)
		}
		out[name] = table{cols: g.cols, rows: rows}
	}
	return out
}

// sameRows compares the rows of the tables in want with got's, in any order.
func sameRows(t *testing.T, step string, want, got tables) {
	t.Helper()
	canon := func(rows []row) []string {
		var out []string
		for _, r := range rows {
			b, _ := json.Marshal(r)
			out = append(out, string(b))
		}
		sort.Strings(out)
		return out
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: table %s is gone", step, name)
			continue
		}
		if gw, gg := canon(w.rows), canon(project(tables{name: g}, tables{name: w})[name].rows); !slices.Equal(gw, gg) {
			t.Errorf("%s: table %s:\n got %v\nwant %v", step, name, gg, gw)
		}
	}
}

// schema describes everything a migration may create: columns (type, nullability, default),
// constraints, indexes, triggers, functions, sequences and types.
func schema(t *testing.T, db *postgres.DB) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = 'public' AND table_name NOT IN ('schema_migrations', 'schema_backfills')
		UNION ALL SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text NOT IN ('schema_migrations', 'schema_backfills')
		UNION ALL SELECT 'index ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT IN ('schema_migrations', 'schema_backfills')
		UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'function ' || oid::regprocedure::text || ' ' || md5(prosrc) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
		UNION ALL SELECT 'sequence ' || sequence_name FROM information_schema.sequences WHERE sequence_schema = 'public'
		UNION ALL SELECT 'type ' || typname FROM pg_type WHERE typnamespace = 'public'::regnamespace AND typtype IN ('e', 'd', 'c') AND typrelid = 0
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func sameSchema(t *testing.T, step string, want, got []string) {
	t.Helper()
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("%s: missing %s", step, s)
		}
	}
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("%s: left behind %s", step, s)
		}
	}
}

func mustVersion(t *testing.T, m *postgres.Migrator, want uint) {
	t.Helper()
	if v, dirty, err := m.Version(); err != nil || dirty || v != want {
		t.Fatalf("version %d dirty=%v err=%v, want %d clean", v, dirty, err, want)
	}
}

// TestMigrationsUpDownUpWithData checks that every migration really undoes itself, on a database
// with data: up one version at a time from empty, filling every table; then, from the newest
// version down to empty, each down migration restores the schema of the version before it
// (columns, constraints, indexes, triggers, functions) and keeps the rows of the tables that
// survive (less what it removes on purpose, downEffects), and applying the migration again on
// that data works and changes none of those rows.
func TestMigrationsUpDownUpWithData(t *testing.T) {
	db := testenv.DB(t)
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	all := m.Migrations()
	latest := m.Latest()
	mustVersion(t, m, latest)
	if err := m.Down(len(all)); err != nil {
		t.Fatalf("down to empty: %v", err)
	}
	mustVersion(t, m, 0)

	schemas := map[uint][]string{0: schema(t, db)}
	for _, mig := range all {
		if err := m.UpTo(mig.Version); err != nil {
			t.Fatalf("up to %s: %v", mig, err)
		}
		schemas[mig.Version] = schema(t, db)
		fill, ok := fills[mig.Version]
		if !ok {
			t.Fatalf("migration %s has no entry in fills: add rows for the tables and columns it adds", mig)
		}
		if _, err := db.Pool.Exec(context.Background(), fill); err != nil {
			t.Fatalf("filling version %s: %v", mig, err)
		}
		for name, tb := range dump(t, db) {
			if len(tb.rows) == 0 {
				t.Errorf("at version %s, table %s has no row: add one to fills", mig, name)
			}
		}
	}

	for i := len(all) - 1; i >= 0; i-- {
		mig := all[i]
		below := uint(0)
		if i > 0 {
			below = all[i-1].Version
		}
		if mig.Irreversible != "" {
			if _, err := m.DownPlan(1); err == nil || !strings.Contains(err.Error(), mig.Irreversible) {
				t.Fatalf("irreversible migration %s: DownPlan(1) = %v", mig, err)
			}
			t.Logf("migration %s is irreversible (%s): stopping there", mig, mig.Irreversible)
			return
		}
		before := dump(t, db)
		if err := m.Down(1); err != nil {
			t.Fatalf("down from %s with data: %v", mig, err)
		}
		mustVersion(t, m, below)
		after := dump(t, db)
		sameSchema(t, fmt.Sprintf("down from %s", mig), schemas[below], schema(t, db))
		if effect := downEffects[mig.Version]; effect != nil {
			effect(t, before, after)
		}
		sameRows(t, fmt.Sprintf("down from %s", mig), project(before, after), after)

		// Up again on the data the down left, then down again: both work, and neither touches
		// the surviving rows.
		if err := m.UpTo(mig.Version); err != nil {
			t.Fatalf("up again to %s on the reverted data: %v", mig, err)
		}
		sameSchema(t, fmt.Sprintf("up again to %s", mig), schemas[mig.Version], schema(t, db))
		sameRows(t, fmt.Sprintf("up again to %s", mig), after, dump(t, db))
		if err := m.Down(1); err != nil {
			t.Fatalf("down from %s again: %v", mig, err)
		}
		sameRows(t, fmt.Sprintf("down from %s again", mig), after, dump(t, db))
		if t.Failed() {
			t.FailNow()
		}
	}
	mustVersion(t, m, 0)
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	mustVersion(t, m, latest)
	sameSchema(t, "up from empty again", schemas[latest], schema(t, db))
}

// Every migration file runs as one implicit transaction (postgres.Migrator relies on it to undo a
// failed migration's version mark), so none may control transactions itself or use a statement
// that cannot run inside one; every version has an up and a down file, and a down file is either
// real SQL or marked irreversible and failing with its reason.
func TestMigrationFilesFollowTheRules(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := regexp.MustCompile(`(?is)^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|VACUUM|CREATE\s+DATABASE|DROP\s+DATABASE|ALTER\s+SYSTEM)\b|\bCONCURRENTLY\b`)
	files := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		files[name] = true
		b, _ := migrations.FS.ReadFile(name)
		body := stripSQL(string(b))
		for _, stmt := range strings.Split(body, ";") {
			if loc := forbidden.FindString(stmt); loc != "" {
				t.Errorf("%s: %q cannot run inside the file's one transaction (statement %q)", name, strings.TrimSpace(loc), strings.TrimSpace(stmt))
			}
		}
		if strings.HasSuffix(name, ".down.sql") {
			first, _, _ := strings.Cut(string(b), "\n")
			if reason, ok := strings.CutPrefix(strings.TrimSpace(first), postgres.IrreversibleMarker); ok {
				if !strings.Contains(string(b), "RAISE EXCEPTION") || !strings.Contains(string(b), strings.TrimSpace(reason)) {
					t.Errorf("%s is marked irreversible but does not RAISE EXCEPTION with its reason", name)
				}
			} else if strings.TrimSpace(body) == "" {
				t.Errorf("%s is empty: undo the up migration, or mark it %s REASON and raise", name, postgres.IrreversibleMarker)
			}
		}
	}
	for name := range files {
		up, isUp := strings.CutSuffix(name, ".up.sql")
		if isUp && !files[up+".down.sql"] {
			t.Errorf("%s has no down migration", name)
		}
		down, isDown := strings.CutSuffix(name, ".down.sql")
		if isDown && !files[down+".up.sql"] {
			t.Errorf("%s has no up migration", name)
		}
	}
}

// stripSQL removes comments, string literals and dollar-quoted bodies (a function's BEGIN and END
// are not transaction control).
func stripSQL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return b.String()
			}
			i += j + 2
		case s[i] == '$':
			tag := regexp.MustCompile(`^\$[A-Za-z_]*\$`).FindString(s[i:])
			if tag == "" {
				b.WriteByte(s[i])
				i++
				continue
			}
			j := strings.Index(s[i+len(tag):], tag)
			if j < 0 {
				return b.String()
			}
			b.WriteString(" 0 ")
			i += len(tag) + j + len(tag)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// withMigrations returns the embedded migrations plus (or, with base false, only) extra files.
func withMigrations(t *testing.T, base bool, extra map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	if base {
		entries, _ := fs.ReadDir(migrations.FS, ".")
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".sql") {
				b, _ := migrations.FS.ReadFile(e.Name())
				fsys[e.Name()] = &fstest.MapFile{Data: b}
			}
		}
	}
	for name, body := range extra {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

// emptyDB returns a store on a fresh database with no migration applied.
func emptyDB(t *testing.T) *postgres.DB {
	t.Helper()
	db := testenv.DB(t)
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Down(len(m.Migrations())); err != nil {
		t.Fatal(err)
	}
	return db
}

// A migration marked irreversible is refused before anything runs (no dirty flag, nothing
// changed), and its SQL refuses too, for tools that do not read the marker.
func TestIrreversibleMigrationIsRefused(t *testing.T) {
	const reason = "merged rows cannot be split again"
	db := emptyDB(t)
	fsys := withMigrations(t, false, map[string]string{
		"000001_t.up.sql":       `CREATE TABLE t (id int);`,
		"000001_t.down.sql":     `DROP TABLE t;`,
		"000002_merge.up.sql":   `ALTER TABLE t ADD COLUMN merged int;`,
		"000002_merge.down.sql": postgres.IrreversibleMarker + " " + reason + "\nDO $$ BEGIN RAISE EXCEPTION 'migration 2 cannot be reverted: " + reason + "'; END $$;\n",
	})
	m, err := postgres.NewMigratorFS(db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	if got := m.Migrations()[1].Irreversible; got != reason {
		t.Fatalf("Irreversible = %q", got)
	}
	for _, n := range []int{1, 2} {
		if err := m.Down(n); err == nil || !strings.Contains(err.Error(), reason) {
			t.Fatalf("Down(%d) = %v, want a refusal naming the reason", n, err)
		}
	}
	mustVersion(t, m, 2)
	if _, err := db.Pool.Exec(context.Background(), `SELECT merged FROM t`); err != nil {
		t.Fatalf("the column is gone: %v", err)
	}
	body, _ := fs.ReadFile(fsys, "000002_merge.down.sql")
	if _, err := db.Pool.Exec(context.Background(), string(body)); err == nil || !strings.Contains(err.Error(), reason) {
		t.Fatalf("running the down file directly: %v, want its reason", err)
	}
}

// A migration that Postgres refuses half-way is rolled back whole, and the version is left where
// the schema is, clean: the next start retries it instead of refusing a dirty database. The same
// holds for a down migration.
func TestRefusedMigrationLeavesNoDirtyFlag(t *testing.T) {
	db := emptyDB(t)
	ctx := context.Background()
	fsys := withMigrations(t, false, map[string]string{
		"000001_t.up.sql":     `CREATE TABLE t (id int);`,
		"000001_t.down.sql":   `DROP TABLE t;`,
		"000002_bad.up.sql":   `CREATE TABLE half (id int); ALTER TABLE t ADD COLUMN y int REFERENCES nowhere (id);`,
		"000002_bad.down.sql": `DROP TABLE half; ALTER TABLE t DROP COLUMN y;`,
	})
	m, err := postgres.NewMigratorFS(db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = m.Up()
	if err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("Up = %v, want the refusal, rolled back", err)
	}
	mustVersion(t, m, 1)
	var half *string
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('half')::text`).Scan(&half); err != nil || half != nil {
		t.Fatalf("the failed migration's first statement was kept: %v %v", half, err)
	}
	if err := m.Check(); err == nil || !strings.Contains(err.Error(), "migrate up") {
		t.Fatalf("Check = %v, want pending migrations", err)
	}

	// A down migration that fails (here, on data it refuses to drop) is rolled back too.
	fsys["000002_bad.up.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE half (id int);`)}
	fsys["000002_bad.down.sql"] = &fstest.MapFile{Data: []byte(`DROP TABLE half;
		DO $$ BEGIN IF EXISTS (SELECT 1 FROM t) THEN RAISE EXCEPTION 't has rows'; END IF; END $$;`)}
	m2, err := postgres.NewMigratorFS(db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.Up(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	if err := m2.Down(1); err == nil || !strings.Contains(err.Error(), "t has rows") || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("Down = %v", err)
	}
	mustVersion(t, m2, 2)
	if _, err := db.Pool.Exec(ctx, `SELECT FROM half`); err != nil {
		t.Fatalf("the refused down migration dropped its table: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM t`); err != nil {
		t.Fatal(err)
	}
	if err := m2.Down(1); err != nil {
		t.Fatal(err)
	}
	mustVersion(t, m2, 1)
}

// A migration interrupted (the process killed between marking the version dirty and finishing)
// leaves the dirty flag: Up refuses with the repair, Force clears it.
func TestDirtyFlagIsRepairedWithForce(t *testing.T) {
	db := testenv.DB(t)
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	latest := m.Latest()
	prev := m.Migrations()[len(m.Migrations())-2].Version
	if err := m.Down(1); err != nil {
		t.Fatal(err)
	}
	// What a migrator killed in the newest migration leaves: its version, dirty, and (its
	// transaction rolled back) the schema of the version before.
	if _, err := db.Pool.Exec(context.Background(), `UPDATE schema_migrations SET version = $1, dirty = true`, latest); err != nil {
		t.Fatal(err)
	}
	wantHint := fmt.Sprintf("slipway migrate force %d", prev)
	if err := m.Up(); err == nil || !strings.Contains(err.Error(), "dirty") || !strings.Contains(err.Error(), wantHint) {
		t.Fatalf("Up on a dirty schema = %v, want the repair (%s)", err, wantHint)
	}
	if err := m.Check(); err == nil || !strings.Contains(err.Error(), wantHint) {
		t.Fatalf("Check = %v", err)
	}
	if _, err := m.DownPlan(1); err == nil || !strings.Contains(err.Error(), "dirty") {
		t.Fatalf("DownPlan on a dirty schema = %v", err)
	}
	if err := m.Force(latest + 1); err == nil {
		t.Fatal("Force to a version the binary does not have succeeded")
	}
	if err := m.Force(prev); err != nil {
		t.Fatal(err)
	}
	mustVersion(t, m, prev)
	if err := m.Up(); err != nil {
		t.Fatal(err)
	}
	mustVersion(t, m, latest)
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
}

// futureMigration is what the next release could add under the expand/contract rule: a nullable
// column, a table, an index.
var futureMigration = map[string]string{
	"000900_future.up.sql": `ALTER TABLE apps ADD COLUMN future_note text;
		CREATE TABLE future_things (id bigserial PRIMARY KEY, app_id bigint REFERENCES apps (id) ON DELETE CASCADE);
		CREATE INDEX releases_future_idx ON releases (created_at);`,
	"000900_future.down.sql": `DROP INDEX releases_future_idx; DROP TABLE future_things; ALTER TABLE apps DROP COLUMN future_note;`,
}

// `helm rollback` across one release: the database was migrated by the next release (one more
// migration), and this binary, which does not have it, starts on it: Up changes nothing and warns,
// Check accepts it, and the store's queries work (reads and writes). A dirty newer schema is
// still refused.
func TestNewerSchemaIsServedAsItIs(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	db, err := postgres.Open(ctx, testenv.DatabaseURL(t), postgres.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	next, err := postgres.NewMigratorFS(db, withMigrations(t, true, futureMigration))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if err := next.Up(); err != nil {
		t.Fatal(err)
	}
	mustVersion(t, next, 900)

	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(); err != nil {
		t.Fatalf("Up on a newer schema: %v", err)
	}
	mustVersion(t, m, 900)
	if err := m.Check(); err != nil {
		t.Fatalf("Check on a newer schema: %v", err)
	}
	if !strings.Contains(logs.String(), "newer than this binary") || !strings.Contains(logs.String(), "schema_version=900") {
		t.Errorf("no warning about the newer schema: %q", logs.String())
	}
	if _, err := m.DownPlan(1); err == nil || !strings.Contains(err.Error(), "binary of the release") {
		t.Errorf("DownPlan on a newer schema = %v, want a pointer to the newer binary", err)
	}

	// The store works on it: writes and reads through the queries of this binary.
	app, err := db.CreateApp(ctx, "Rolled back")
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := db.CreateScheme(ctx, &distribution.Scheme{AppID: app.ID, Name: "Adhoc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateChannel(ctx, &distribution.Channel{SchemeID: scheme.ID, Name: "iOS", Slug: "rolled-back", DeviceType: "ios", BundleID: "*", DownloadFilenameType: "original"}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetApp(ctx, app.ID); err != nil || got.Name != "Rolled back" || len(got.Schemes) != 1 {
		t.Fatalf("GetApp = %+v, %v", got, err)
	}
	if _, _, err := db.CreateToken(ctx, "ci", distribution.ScopeUpload); err != nil {
		t.Fatal(err)
	}

	// A newer schema left dirty is not served: it needs the newer binary's repair.
	if _, err := db.Pool.Exec(ctx, `UPDATE schema_migrations SET dirty = true`); err != nil {
		t.Fatal(err)
	}
	if err := m.Up(); err == nil || !strings.Contains(err.Error(), "dirty") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Up on a dirty newer schema = %v", err)
	}
	if err := m.Check(); err == nil {
		t.Fatal("Check accepted a dirty newer schema")
	}
}
