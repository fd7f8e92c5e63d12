package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/migrations"
	"github.com/slipwayhq/slipway/pkg/postgres"
	"github.com/slipwayhq/slipway/test/testenv"
)

// downToBefore reverts the migrations down to the one named name, included, and returns the
// version before it.
func downToBefore(t *testing.T, m *postgres.Migrator, name string) uint {
	t.Helper()
	all := m.Migrations()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Name == name {
			if err := m.Down(len(all) - i); err != nil {
				t.Fatal(err)
			}
			return all[i-1].Version
		}
	}
	t.Fatalf("no migration %s", name)
	return 0
}

// hangGuard bounds a wait that must end by itself; reaching it is a failure (a hang), not a
// measurement.
const hangGuard = 2 * time.Minute

// lockWaiters returns the backends waiting for a lock on relation (not granted).
func lockWaiters(t *testing.T, pool *pgxpool.Pool, relation string) []int32 {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT pid FROM pg_locks WHERE NOT granted AND relation = $1::regclass ORDER BY pid`, relation)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// waitFor polls cond until it holds, failing the test at the hang guard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A reader holds a lock on releases (as the pg_dump of the backup runbook does, in one long
// transaction) while `migrate up` runs the newest migration, whose ALTER TABLE releases needs an
// ACCESS EXCLUSIVE lock. Postgres queues every later query on releases behind that request; with
// lock_timeout the migration gives up after its timeout, so the queued query runs while the
// reader is still there, and the migration is retried, and applied once the reader is gone.
func TestMigrationGivesUpOnALockAndRetries(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	latest := m.Latest()
	prev := downToBefore(t, m, "checksum_default") // the newest migration that alters releases
	m.Close()

	reader, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx) //nolint:errcheck
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM releases`); err != nil {
		t.Fatal(err)
	}

	// Each retry stops in Sleep until the test lets it go on.
	retried := make(chan int, 100)
	goOn := make(chan struct{})
	var logs bytes.Buffer
	var logMu sync.Mutex
	logDB, err := postgres.Open(ctx, db.Pool.Config().ConnString(), postgres.Options{MaxConns: 4, Log: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer logDB.Close()
	attempts := 0
	mig, err := postgres.NewMigratorWith(logDB, postgres.MigrateOptions{LockTimeout: 2 * time.Second, Timeout: time.Hour,
		Sleep: func(time.Duration) { attempts++; retried <- attempts; <-goOn }})
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close()
	done := make(chan error, 1)
	go func() { done <- mig.Up() }()

	// Until one attempt has had a query queued behind it: the migrator waits for its lock, a
	// query of the service arrives and queues behind the migrator, the lock timeout ends the
	// migrator's statement, and the query runs, with the reader still holding its lock.
	for queued := false; !queued; {
		waitFor(t, "the migration waits for its lock on releases", func() bool { return len(lockWaiters(t, db.Pool, "releases")) == 1 })
		query := make(chan error, 1)
		go func() {
			var n int
			query <- db.Pool.QueryRow(ctx, `SELECT count(*) FROM releases`).Scan(&n)
		}()
		for {
			if n := len(lockWaiters(t, db.Pool, "releases")); n == 2 {
				queued = true
				break
			}
			select {
			case <-retried:
				// The migration gave up before the query queued behind it: try again.
				goOn <- struct{}{}
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
		if !queued {
			if err := <-query; err != nil {
				t.Fatal(err)
			}
			continue
		}
		select {
		case n := <-retried:
			t.Logf("attempt %d gave up on the lock", n)
		case err := <-done:
			t.Fatalf("Up ended (%v) while the reader held its lock", err)
		case <-time.After(hangGuard):
			t.Fatal("the migration never gave up waiting for its lock")
		}
		select {
		case err := <-query:
			if err != nil {
				t.Fatalf("the query queued behind the migration failed: %v", err)
			}
		case <-time.After(hangGuard):
			t.Fatal("the query queued behind the migration stays blocked after it gave up")
		}
		if v, dirty, err := postgres.ReadVersion(ctx, db); err != nil || dirty || v != prev {
			t.Fatalf("after the attempt gave up: version %d dirty=%v err=%v, want %d clean", v, dirty, err, prev)
		}
	}
	if err := reader.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	close(goOn) // every later Sleep returns at once
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Up after the reader ended: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Up did not end once the reader was gone")
	}
	if v, dirty, err := postgres.ReadVersion(ctx, db); err != nil || dirty || v != latest {
		t.Fatalf("version %d dirty=%v err=%v, want %d", v, dirty, err, latest)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "waited too long for a lock") {
		t.Errorf("no retry was logged: %s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Past MigrateOptions.Timeout, Up fails with what to do, and leaves the schema where it was, clean.
func TestMigrationLockRetriesEnd(t *testing.T) {
	ctx := context.Background()
	db := testenv.DB(t)
	m, err := postgres.NewMigrator(db)
	if err != nil {
		t.Fatal(err)
	}
	prev := downToBefore(t, m, "checksum_default") // its ALTER TABLE releases waits for the reader
	m.Close()
	reader, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx) //nolint:errcheck
	if _, err := reader.Exec(ctx, `SELECT FROM releases LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	sleeps := 0
	mig, err := postgres.NewMigratorWith(db, postgres.MigrateOptions{LockTimeout: 50 * time.Millisecond, Timeout: time.Nanosecond,
		Sleep: func(time.Duration) { sleeps++ }})
	if err != nil {
		t.Fatal(err)
	}
	defer mig.Close()
	err = mig.Up()
	if err == nil || !strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "lock timeout") {
		t.Fatalf("Up = %v, want it to give up on the lock", err)
	}
	if v, dirty, err := postgres.ReadVersion(ctx, db); err != nil || dirty || v != prev {
		t.Fatalf("version %d dirty=%v err=%v, want %d clean", v, dirty, err, prev)
	}
	if err := postgres.CheckSchema(ctx, db); err == nil || !strings.Contains(err.Error(), "migrate up") {
		t.Fatalf("CheckSchema = %v", err)
	}
}

// A backfill runs after its migration commits, in batches, each a transaction of its own with
// the lock timeout; one cut short (here a batch fails) keeps the batches done and the migration
// applied, holds back the migrations after it, and is finished by the next Up, which records it.
func TestBackfillRunsInBatchesOutsideTheMigration(t *testing.T) {
	ctx := context.Background()
	db := emptyDB(t)
	fsys := withMigrations(t, false, map[string]string{
		"000001_t.up.sql":   `CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL DEFAULT 0); INSERT INTO t SELECT g, 0 FROM generate_series(1, 2500) g;`,
		"000001_t.down.sql": `DROP TABLE t;`,
		// Each batch records itself (a statement trigger), so the test can count them.
		"000002_w.up.sql": `ALTER TABLE t ADD COLUMN w int NOT NULL DEFAULT 0; CREATE TABLE batches (n bigint);
			CREATE FUNCTION note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
				INSERT INTO batches SELECT count(*) FROM changed HAVING count(*) > 0; RETURN NULL; END $$;
			CREATE TRIGGER note AFTER UPDATE ON t REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION note();`,
		"000002_w.backfill.sql": `UPDATE t SET w = 1 WHERE id IN (SELECT id FROM t WHERE w = 0 ORDER BY id LIMIT 1000)`,
		"000002_w.down.sql":     `DROP TRIGGER note ON t; DROP FUNCTION note(); DROP TABLE batches; ALTER TABLE t DROP COLUMN w;`,
		"000003_x.up.sql":       `CREATE TABLE after_backfill (id int);`,
		"000003_x.down.sql":     `DROP TABLE after_backfill;`,
	})
	// The second batch fails: a row the backfill reaches refuses the change.
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE stopper (id int)`); err != nil {
		t.Fatal(err)
	}
	fsys["000001_t.up.sql"].Data = append(fsys["000001_t.up.sql"].Data, []byte(`
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.w = 1 AND EXISTS (SELECT 1 FROM stopper WHERE id = NEW.id) THEN RAISE EXCEPTION 'row % refuses', NEW.id; END IF;
			RETURN NEW; END $$;
		CREATE TRIGGER refuse BEFORE UPDATE ON t FOR EACH ROW EXECUTE FUNCTION refuse();`)...)
	fsys["000001_t.down.sql"].Data = []byte(`DROP TABLE t; DROP FUNCTION refuse();`)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO stopper VALUES (1500)`); err != nil {
		t.Fatal(err)
	}
	m, err := postgres.NewMigratorFSWith(db, fsys, postgres.MigrateOptions{Releases: []migrations.Release{}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Up(); err == nil || !strings.Contains(err.Error(), "row 1500 refuses") || !strings.Contains(err.Error(), "after 1000 rows") {
		t.Fatalf("Up = %v, want the second batch's failure", err)
	}
	mustVersion(t, m, 2) // the migration itself committed before its backfill
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM t WHERE w = 1`); n != 1000 {
		t.Fatalf("%d rows backfilled, want the first batch's 1000 kept", n)
	}
	if n := count(`SELECT count(*) FROM pg_tables WHERE tablename = 'after_backfill'`); n != 0 {
		t.Fatal("migration 3 ran before migration 2's backfill ended")
	}
	if err := postgres.CheckSchema(ctx, db); err == nil {
		t.Fatal("CheckSchema accepted a schema short of the binary's")
	}

	// A reader on t makes the next batch wait for its lock: it gives up and is retried.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM stopper`); err != nil {
		t.Fatal(err)
	}
	reader, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, `LOCK TABLE t IN SHARE MODE`); err != nil { // as a long writer-blocking reader
		t.Fatal(err)
	}
	retries := 0
	m2, err := postgres.NewMigratorFSWith(db, fsys, postgres.MigrateOptions{LockTimeout: 100 * time.Millisecond, Timeout: time.Hour, Releases: []migrations.Release{},
		Sleep: func(time.Duration) {
			if retries++; retries == 2 {
				if err := reader.Rollback(ctx); err != nil {
					t.Error(err)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if err := m2.Up(); err != nil {
		t.Fatal(err)
	}
	if retries < 2 {
		t.Errorf("%d retries, want the batch retried while the reader held t", retries)
	}
	mustVersion(t, m2, 3)
	if n := count(`SELECT count(*) FROM t WHERE w = 1`); n != 2500 {
		t.Fatalf("%d rows backfilled, want all 2500", n)
	}
	// Batches of at most 1000: 1000 before the failure, then 1000 and 500.
	if got := count(`SELECT count(*) FROM batches`); got != 3 {
		t.Errorf("%d batches recorded, want 3", got)
	}
	if n := count(`SELECT count(*) FROM schema_backfills WHERE version = 2`); n != 1 {
		t.Fatal("the backfill is not recorded done")
	}
	// Done is done: a later Up does not run it again; reverting its migration forgets it.
	if _, err := db.Pool.Exec(ctx, `UPDATE t SET w = 0 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := m2.Up(); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM t WHERE w = 0`); n != 1 {
		t.Fatal("a finished backfill ran again")
	}
	if err := m2.Down(2); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM schema_backfills`); n != 0 {
		t.Fatal("reverting the migration kept the record of its backfill")
	}
}

// The upgrade policy: from the schema of the release before the binary's, or later, or from an
// empty database; an older schema is refused with the release to go through, and nothing runs.
func TestUpgradeSkippingAReleaseIsRefused(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{}
	for i := 1; i <= 4; i++ {
		files[fmt.Sprintf("%06d_m%d.up.sql", i, i)] = fmt.Sprintf(`CREATE TABLE m%d (id int);`, i)
		files[fmt.Sprintf("%06d_m%d.down.sql", i, i)] = fmt.Sprintf(`DROP TABLE m%d;`, i)
	}
	releases := []migrations.Release{{Version: "0.1.0", Schema: 1}, {Version: "0.1.1", Schema: 1}, {Version: "0.2.0", Schema: 3}}
	for _, tc := range []struct {
		name     string
		from     uint
		binary   uint // the binary's newest migration
		refusal  string
		releases []migrations.Release
	}{
		{name: "empty database", from: 0, binary: 4},
		{name: "from the previous release", from: 3, binary: 4},
		{name: "from a release's schema, partly migrated", from: 2, binary: 3, refusal: ""},
		{name: "skipping a release", from: 1, binary: 4, refusal: "v0.2.0"},
		{name: "a released binary from the release before it", from: 1, binary: 3},
		{name: "no release yet", from: 1, binary: 4, releases: []migrations.Release{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := emptyDB(t)
			all := withMigrations(t, false, files)
			if tc.from > 0 {
				m0, err := postgres.NewMigratorFSWith(db, all, postgres.MigrateOptions{Releases: []migrations.Release{}})
				if err != nil {
					t.Fatal(err)
				}
				if err := m0.UpTo(tc.from); err != nil {
					t.Fatal(err)
				}
				m0.Close()
			}
			bin := withMigrations(t, false, nil)
			for name := range files {
				var v uint
				if _, err := fmt.Sscanf(name, "%06d", &v); err != nil {
					t.Fatal(err)
				}
				if v <= tc.binary {
					bin[name] = all[name]
				}
			}
			rel := releases
			if tc.releases != nil {
				rel = tc.releases
			}
			m, err := postgres.NewMigratorFSWith(db, bin, postgres.MigrateOptions{Releases: rel})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			err = m.Up()
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("Up = %v", err)
				}
				mustVersion(t, m, tc.binary)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.refusal) || !strings.Contains(err.Error(), "one release at a time") {
				t.Fatalf("Up = %v, want a refusal naming %s", err, tc.refusal)
			}
			mustVersion(t, m, tc.from)
			var n int
			if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'm_'`).Scan(&n); err != nil || n != int(tc.from) {
				t.Fatalf("%d tables (%v), want %d: the refused upgrade changed the schema", n, err, tc.from)
			}
		})
	}
}
