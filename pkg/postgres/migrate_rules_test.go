package postgres_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/postgres"
)

// ContractMarker starts a comment that allows, in the statement it precedes, a step that breaks
// the binary of the release before (a contract step of expand/contract). It names the release
// from which no binary uses what the step removes or tightens, and says why:
//
//	-- slipway:contract: v0.2.0: releases.old_state is unread since v0.2.0 (000031 added state)
//	ALTER TABLE releases DROP COLUMN old_state;
//
// The rule (docs/operations.md, "Expand and contract"): release N stops using it (and expands:
// adds what replaces it, writes both), release N+1 removes it. So the release named must be
// published (migrations.Releases) and older than the migration's own release: a migration is
// in the release after the newest one whose schema is below it.
const contractMarker = "-- slipway:contract:"

// preRelease are the contract steps of migrations written before the first release, when no
// older binary could run beside them: each file with its count of such statements. The list only
// shrinks; a new contract step anywhere needs a marker.
var preRelease = map[string]int{
	"000002_management.up.sql": 3, // DROP and ADD CONSTRAINT on channels, SET NOT NULL on releases.updated_at
	// Loosening the actor_kind CHECKs of audit_log and release_tombstones (drop, and add the wider
	// one NOT VALID): no contract step, but the checker cannot tell a wider CHECK from a narrower.
	"000022_testers.up.sql": 2,
	// The same CHECK of audit_log loosened again, for anonymous feedback senders.
	"000026_feedback.up.sql": 1,
}

// contractStep returns why a statement of an up migration would break the previous release's
// binary running beside it, or "".
func contractStep(stmt string) string {
	s := strings.Join(strings.Fields(strings.ToUpper(stmt)), " ")
	switch {
	case regexp.MustCompile(`\bDROP\b`).MatchString(s):
		return "DROP removes what the previous release's binary may still use"
	case regexp.MustCompile(`\bRENAME\b`).MatchString(s):
		return "RENAME breaks every query of the previous release's binary that names it"
	case strings.Contains(s, "SET NOT NULL"):
		return "SET NOT NULL refuses the rows the previous release's binary writes without the column"
	case regexp.MustCompile(`\bALTER COLUMN \S+ (SET DATA )?TYPE\b`).MatchString(s):
		return "changing a column's type rewrites the table and may refuse the previous binary's values"
	case regexp.MustCompile(`\bADD CONSTRAINT\b`).MatchString(s) && !strings.Contains(s, "NOT VALID"):
		return "a new constraint on existing rows may refuse what the previous release's binary writes"
	case regexp.MustCompile(`\bADD (COLUMN )?\S+ [^,]*\bNOT NULL\b`).MatchString(s) && !addColumnsHaveDefaults(s):
		return "a NOT NULL column without a DEFAULT refuses the previous release's inserts"
	}
	return ""
}

// addColumnsHaveDefaults reports whether every NOT NULL column an ALTER TABLE adds has a DEFAULT.
func addColumnsHaveDefaults(s string) bool {
	for _, part := range strings.Split(s, ",") {
		if strings.Contains(part, " ADD ") && strings.Contains(part, "NOT NULL") && !strings.Contains(part, "DEFAULT") {
			return false
		}
	}
	return true
}

// rewritesRows reports a statement that changes existing rows: in an up migration it holds the
// DDL's locks for as long as it runs; it belongs in the migration's backfill file.
func rewritesRows(stmt string) bool {
	s := strings.ToUpper(strings.TrimSpace(stmt))
	return strings.HasPrefix(s, "UPDATE ") || strings.HasPrefix(s, "DELETE ") || strings.HasPrefix(s, "WITH ")
}

// preReleaseRewrites are the files written before the first release that rewrite rows inside
// their DDL transaction (small tables then); the list only shrinks.
var preReleaseRewrites = map[string]int{
	"000002_management.up.sql":       1, // releases.updated_at
	"000011_audit_tombstones.up.sql": 4, // audit_log's actor columns
}

// releaseOf is the release a migration belongs to: the first whose schema includes it, "" when
// it is not released yet.
func releaseOf(v uint, releases []migrations.Release) string {
	for _, r := range releases {
		if r.Schema >= v {
			return r.Version
		}
	}
	return ""
}

// checkExpandContract applies the expand/contract rule to one up migration's SQL.
func checkExpandContract(name string, v uint, sql string, releases []migrations.Release, allowed int) []string {
	var problems []string
	steps := 0
	for _, stmt := range splitStatements(sql) {
		why := contractStep(stripSQL(stmt))
		if why == "" {
			continue
		}
		i := strings.Index(stmt, contractMarker)
		if i < 0 {
			steps++
			if steps > allowed {
				problems = append(problems, fmt.Sprintf("%s: %q: %s; expand and contract over two releases, and mark the contract step %s vX.Y.Z: why (docs/operations.md, \"Expand and contract\")",
					name, oneLine(stripSQL(stmt)), why, contractMarker))
			}
			continue
		}
		rest := strings.TrimSpace(stmt[i+len(contractMarker):])
		named, _, _ := strings.Cut(rest, ":")
		named = strings.TrimPrefix(strings.TrimSpace(named), "v")
		idx := slices.IndexFunc(releases, func(r migrations.Release) bool { return r.Version == named })
		switch {
		case idx < 0:
			problems = append(problems, fmt.Sprintf("%s: the contract step names v%s, which is not a published release (migrations.Releases)", name, named))
		case releases[idx].Schema >= v:
			problems = append(problems, fmt.Sprintf("%s: the contract step names v%s, which carries this migration: the release that stops using it must come before", name, named))
		}
	}
	return problems
}

// splitStatements splits SQL on the semicolons outside comments, strings and dollar quotes,
// keeping each statement's comments.
func splitStatements(sql string) []string {
	var out []string
	start := 0
	stripped := []byte(stripSQLKeepingOffsets(sql))
	for i, c := range stripped {
		if c == ';' {
			out = append(out, sql[start:i])
			start = i + 1
		}
	}
	if strings.TrimSpace(stripSQL(sql[start:])) != "" {
		out = append(out, sql[start:])
	}
	return out
}

// stripSQLKeepingOffsets blanks comments, strings and dollar-quoted bodies with spaces, so that
// offsets into the result are offsets into s.
func stripSQLKeepingOffsets(s string) string {
	b := []byte(s)
	blank := func(from, to int) {
		for k := from; k < to && k < len(b); k++ {
			if b[k] != '\n' {
				b[k] = ' '
			}
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				j = len(s) - i
			}
			blank(i, i+j)
			i += j
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			blank(i, i+j+2)
			i += j + 2
		case s[i] == '$':
			tag := regexp.MustCompile(`^\$[A-Za-z_]*\$`).FindString(s[i:])
			if tag == "" {
				i++
				continue
			}
			j := strings.Index(s[i+len(tag):], tag)
			if j < 0 {
				j = len(s) - i - len(tag)
			}
			blank(i, i+len(tag)+j+len(tag))
			i += len(tag) + j + len(tag)
		default:
			i++
		}
	}
	return string(b)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Every migration follows expand/contract (a release's schema serves the binary of the release
// before, which runs beside it during a rolling update and after `helm rollback`): no DROP,
// RENAME, SET NOT NULL, type change, new constraint on existing rows or NOT NULL column without a
// default, unless marked as the contract step of a two-release dance; no rewrite of existing rows
// inside the DDL transaction (that is the backfill file's job); and every backfill file is one
// batched statement.
func TestMigrationsExpandAndContract(t *testing.T) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	first := uint(0)
	if len(migrations.Releases) > 0 {
		first = migrations.Releases[0].Schema
	}
	for _, e := range entries {
		name := e.Name()
		b, _ := migrations.FS.ReadFile(name)
		var v uint
		if _, err := fmt.Sscanf(name, "%06d", &v); err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".up.sql"):
			for _, p := range checkExpandContract(name, v, string(b), migrations.Releases, preRelease[name]) {
				t.Error(p)
			}
			rewrites := 0
			for _, stmt := range splitStatements(string(b)) {
				if rewritesRows(stripSQL(stmt)) {
					rewrites++
				}
			}
			if rewrites > preReleaseRewrites[name] {
				t.Errorf("%s rewrites existing rows inside its DDL transaction (holding its locks meanwhile): move the UPDATE or DELETE into %s, which runs in batches after the migration commits",
					name, strings.TrimSuffix(name, ".up.sql")+postgres.BackfillSuffix)
			}
			if (preRelease[name] > 0 || preReleaseRewrites[name] > 0) && first > 0 && v > first {
				t.Errorf("%s is in the allowances of migrations from before the first release but is not one", name)
			}
		case strings.HasSuffix(name, postgres.BackfillSuffix):
			stmts := splitStatements(string(b))
			if len(stmts) != 1 {
				t.Errorf("%s holds %d statements, want one (run again and again until it changes no row)", name, len(stmts))
				continue
			}
			body := strings.ToUpper(stripSQL(stmts[0]))
			if !rewritesRows(body) || !strings.Contains(body, " LIMIT ") {
				t.Errorf("%s must be one UPDATE or DELETE of at most a batch of rows (a LIMIT in its row selection)", name)
			}
			if contractStep(body) != "" || regexp.MustCompile(`\b(CREATE|ALTER)\b`).MatchString(body) {
				t.Errorf("%s holds DDL: that belongs in the up migration", name)
			}
			if _, err := fs.Stat(migrations.FS, strings.TrimSuffix(name, postgres.BackfillSuffix)+".up.sql"); err != nil {
				t.Errorf("%s has no up migration", name)
			}
		}
	}
}

// The rule refuses what it must and accepts a marked contract step only after its release.
func TestExpandContractChecker(t *testing.T) {
	releases := []migrations.Release{{Version: "0.1.0", Schema: 17}, {Version: "0.2.0", Schema: 20}}
	for _, tc := range []struct {
		sql  string
		want string
	}{
		{`ALTER TABLE releases DROP COLUMN old_state;`, "DROP"},
		{`DROP TABLE old_things;`, "DROP"},
		{`DROP INDEX releases_x;`, "DROP"},
		{`ALTER TABLE releases RENAME COLUMN a TO b;`, "RENAME"},
		{`ALTER TABLE apps RENAME TO applications;`, "RENAME"},
		{`ALTER TABLE releases ALTER COLUMN note SET NOT NULL;`, "SET NOT NULL"},
		{`ALTER TABLE releases ALTER COLUMN size TYPE int;`, "type"},
		{`ALTER TABLE releases ADD CONSTRAINT size_positive CHECK (size > 0);`, "constraint"},
		{`ALTER TABLE releases ADD COLUMN note text NOT NULL;`, "DEFAULT"},
		{`ALTER TABLE releases ADD COLUMN a text NOT NULL DEFAULT '', ADD COLUMN b int NOT NULL;`, "DEFAULT"},
		{"-- slipway:contract: v0.3.0: unused since then\nALTER TABLE releases DROP COLUMN old_state;", "not a published release"},
		{"-- slipway:contract: v0.2.0: unused since v0.2.0\nALTER TABLE releases DROP COLUMN old_state;", "carries this migration"},
	} {
		got := strings.Join(checkExpandContract("000019_x.up.sql", 19, tc.sql, releases, 0), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: got %q, want a problem mentioning %q", tc.sql, got, tc.want)
		}
	}
	for _, ok := range []string{
		`ALTER TABLE releases ADD COLUMN note text NOT NULL DEFAULT '' CHECK (note <> 'x');`,
		`ALTER TABLE releases ADD COLUMN note text;`,
		`CREATE TABLE things (id bigserial PRIMARY KEY, name text NOT NULL);`,
		`CREATE INDEX releases_note ON releases (note);`,
		`ALTER TABLE releases ADD CONSTRAINT x CHECK (size > 0) NOT VALID;`,
		`ALTER TABLE releases ALTER COLUMN checksum_state SET DEFAULT 'unverified';`,
		`CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DROP TABLE x; END $$;`,
		"-- the DROP of old columns comes in v0.3.0\nALTER TABLE releases ADD COLUMN note text;",
		"-- slipway:contract: v0.1.0: old_state is unused since v0.1.0 (000015 added checksum_state)\nALTER TABLE releases DROP COLUMN old_state;",
	} {
		if got := checkExpandContract("000019_x.up.sql", 19, ok, releases, 0); len(got) > 0 {
			t.Errorf("%q refused: %v", ok, got)
		}
	}
	if got := checkExpandContract("000019_x.up.sql", 19, "ALTER TABLE a DROP COLUMN b; ALTER TABLE a DROP COLUMN c;", releases, 1); len(got) != 1 {
		t.Errorf("an allowance of one let %d through: %v", 2-len(got), got)
	}
}
