package postgres

import (
	"bufio"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/slipwayhq/slipway/migrations"
)

// IrreversibleMarker starts the first line of a .down.sql that must not run: the rest of the line
// says why (e.g. "-- slipway:irreversible: the old format cannot hold ..."). Migrator.Down
// refuses such a migration before touching the database; the file's SQL must also fail (RAISE
// EXCEPTION with the same reason), so that other tools refuse it too.
const IrreversibleMarker = "-- slipway:irreversible:"

// Migration is one schema version the binary carries.
type Migration struct {
	Version uint
	// Name is the file name's description: "robot_secret" for 000008_robot_secret.up.sql.
	Name string
	// Irreversible is why its down migration refuses to run; "" when it can be reverted.
	Irreversible string
	// Backfill is the SQL of its NNN_name.backfill.sql file, "" when it has none: one statement
	// that changes at most a batch of rows (it has a LIMIT) and fewer each time, run again and
	// again, each time in a transaction of its own, until it changes none. See Migrator.
	Backfill string
}

// BackfillSuffix ends the name of a migration's backfill file (000017_name.backfill.sql).
const BackfillSuffix = ".backfill.sql"

// MigrateOptions tune a Migrator. The zero value means the defaults below.
type MigrateOptions struct {
	// LockTimeout is Postgres' lock_timeout for every migration statement and backfill batch
	// (default 5 s): a statement that waits longer for a lock (behind a long reader, a pg_dump)
	// gives up, so the queries queued behind it wait no longer than that.
	LockTimeout time.Duration
	// Timeout bounds the retries of a migration that gave up on a lock (default 3 min): they
	// wait 1 s, 2 s, 4 s... up to 30 s between attempts; past it, Up fails (and changes nothing
	// more). It must stay below whatever runs the migrator's own deadline (the chart's Job).
	Timeout time.Duration
	// Releases are the published releases, oldest first (default migrations.Releases): Up
	// refuses a database whose schema is older than the release before this binary's.
	Releases []migrations.Release
	// Sleep waits between retries (tests); nil: time.Sleep.
	Sleep func(time.Duration)
}

func (o MigrateOptions) withDefaults() MigrateOptions {
	if o.LockTimeout <= 0 {
		o.LockTimeout = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.Releases == nil {
		o.Releases = migrations.Releases
	}
	if o.Sleep == nil {
		o.Sleep = time.Sleep
	}
	return o
}

func (m Migration) String() string { return fmt.Sprintf("%d (%s)", m.Version, m.Name) }

// Migrator applies the embedded schema migrations. It holds a Postgres advisory lock of its own
// from the start of Up to its end (and golang-migrate one per step), so replicas starting
// together apply each migration, and its backfill, once and in order.
//
// Each migration file runs as one implicit transaction (golang-migrate sends it as a single
// simple-protocol query), so a migration that Postgres refuses leaves nothing of itself behind.
// golang-migrate still marks the version dirty; the Migrator puts the version back to where the
// schema really is and returns the error, so that a failed migration never leaves a database that
// every later start refuses. Only an interrupted migration (the process killed, the connection
// lost) leaves the dirty flag, for an operator to check and clear with Force.
//
// Every migration file runs with SET LOCAL lock_timeout (MigrateOptions.LockTimeout): an ALTER
// TABLE that waits behind a long reader gives up after a few seconds instead of making every
// query on that table queue behind it. The migration is then rolled back whole, as any refused
// one, and Up tries again after a backoff, until MigrateOptions.Timeout.
//
// A migration may come with a backfill (NNN_name.backfill.sql): rows to rewrite after the DDL,
// which would hold the DDL's ACCESS EXCLUSIVE lock for as long as it ran were it in the same
// file. Up runs it after the migration commits, batch by batch, each batch a transaction of its
// own with the same lock_timeout, until a batch changes nothing; then it records it done
// (schema_backfills) and only then goes on to the next migration, which may rely on it. A
// backfill cut short (the process killed) is finished by the next Up. Meanwhile the schema
// serves both the old and the new binary (the expand/contract rule, docs/operations.md), so a
// backfill in progress is never an outage.
//
// A database whose version is newer than the newest migration the binary carries, with the dirty
// flag clear, is accepted as it is: by the expand/contract rule (docs/decisions.md), a release's
// schema still serves the release before it, so `helm rollback` across one release keeps
// working. Up then logs a warning and changes nothing. A database older than the release before
// this binary's is refused (the upgrade policy: one release at a time, CHANGELOG.md).
type Migrator struct {
	m          *migrate.Migrate
	db         *sql.DB
	pool       *DB
	log        *slog.Logger
	opts       MigrateOptions
	migrations []Migration // by version
}

// NewMigrator prepares the embedded migrations for the database behind pool.
func NewMigrator(db *DB) (*Migrator, error) { return NewMigratorFS(db, migrations.FS) }

// NewMigratorWith is NewMigrator with options (the commands pass SLIPWAY_MIGRATE_*).
func NewMigratorWith(db *DB, opts MigrateOptions) (*Migrator, error) {
	return NewMigratorFSWith(db, migrations.FS, opts)
}

// NewMigratorFS prepares the migrations in fsys (NNN_name.up.sql and NNN_name.down.sql files) for
// the database: tests use it to play an older or a newer release's migrations.
func NewMigratorFS(db *DB, fsys fs.FS) (*Migrator, error) {
	return NewMigratorFSWith(db, fsys, MigrateOptions{})
}

// NewMigratorFSWith is NewMigratorFS with options.
func NewMigratorFSWith(db *DB, fsys fs.FS, opts MigrateOptions) (*Migrator, error) {
	opts = opts.withDefaults()
	list, err := readMigrations(fsys)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	files, err := iofs.New(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	src := lockTimeoutSource{Driver: files, timeout: opts.LockTimeout}
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	driver, err := pgxmigrate.WithInstance(sqlDB, &pgxmigrate.Config{})
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("migrations: %w", dbErr(err))
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("migrations: %w", err)
	}
	log := db.log
	if log == nil {
		log = slog.Default()
	}
	return &Migrator{m: m, db: sqlDB, pool: db, log: log, opts: opts, migrations: list}, nil
}

// lockTimeoutSource is the migration files with SET LOCAL lock_timeout before each one's SQL.
// SET LOCAL lasts until the end of the file's implicit transaction: the connection, which goes
// back to the pool, keeps no setting.
type lockTimeoutSource struct {
	source.Driver
	timeout time.Duration
}

func (s lockTimeoutSource) ReadUp(v uint) (io.ReadCloser, string, error) {
	return s.wrap(s.Driver.ReadUp(v))
}

func (s lockTimeoutSource) ReadDown(v uint) (io.ReadCloser, string, error) {
	return s.wrap(s.Driver.ReadDown(v))
}

func (s lockTimeoutSource) wrap(r io.ReadCloser, id string, err error) (io.ReadCloser, string, error) {
	if err != nil {
		return r, id, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(strings.NewReader(lockTimeoutSQL(s.timeout)+"\n"), r), r}, id, nil
}

// lockTimeoutSQL sets lock_timeout for the transaction it runs in.
func lockTimeoutSQL(d time.Duration) string {
	return fmt.Sprintf("SET LOCAL lock_timeout = '%dms';", max(d.Milliseconds(), 1))
}

// readMigrations lists the versions in fsys, with each down migration's irreversible marker.
func readMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	byVersion := map[uint]*Migration{}
	backfills := map[uint]string{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), BackfillSuffix); ok {
			num, _, _ := strings.Cut(name, "_")
			v, err := strconv.ParseUint(num, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: a backfill file is named NNN_name%s", e.Name(), BackfillSuffix)
			}
			b, err := fs.ReadFile(fsys, e.Name())
			if err != nil {
				return nil, err
			}
			backfills[uint(v)] = string(b)
			continue
		}
		p, err := source.Parse(e.Name())
		if err != nil {
			continue // not a migration (embed.go)
		}
		mig := byVersion[p.Version]
		if mig == nil {
			mig = &Migration{Version: p.Version, Name: p.Identifier}
			byVersion[p.Version] = mig
		}
		if p.Direction == source.Down {
			f, err := fsys.Open(e.Name())
			if err != nil {
				return nil, err
			}
			first, _ := bufio.NewReader(f).ReadString('\n')
			f.Close()
			if reason, ok := strings.CutPrefix(strings.TrimSpace(first), IrreversibleMarker); ok {
				mig.Irreversible = strings.TrimSpace(reason)
				if mig.Irreversible == "" {
					return nil, fmt.Errorf("%s: %s needs a reason", e.Name(), IrreversibleMarker)
				}
			}
		}
	}
	for v, sql := range backfills {
		mig := byVersion[v]
		if mig == nil {
			return nil, fmt.Errorf("backfill %d has no migration", v)
		}
		mig.Backfill = sql
	}
	list := make([]Migration, 0, len(byVersion))
	for _, mig := range byVersion {
		list = append(list, *mig)
	}
	slices.SortFunc(list, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	return list, nil
}

// Migrations returns the migrations the binary carries, oldest first.
func (m *Migrator) Migrations() []Migration { return slices.Clone(m.migrations) }

// Latest is the newest version the binary carries: the schema it was written for.
func (m *Migrator) Latest() uint {
	if len(m.migrations) == 0 {
		return 0
	}
	return m.migrations[len(m.migrations)-1].Version
}

// index returns the position of version v among the migrations, or -1 (v = 0: none applied).
func (m *Migrator) index(v uint) int {
	return slices.IndexFunc(m.migrations, func(mig Migration) bool { return mig.Version == v })
}

// prev is the version before v (0 when v is the first), as golang-migrate's Force takes it
// (-1: no migration applied).
func (m *Migrator) prev(v uint) int {
	i := m.index(v)
	if i <= 0 {
		return -1
	}
	return int(m.migrations[i-1].Version)
}

// Up applies every pending migration, each followed by its backfill. See Migrator for what it
// does with a lock it cannot get, a migration that fails and a database newer than the binary.
func (m *Migrator) Up() error { return m.UpContext(context.Background()) }

// UpContext is Up, stopping between attempts and batches when ctx ends.
func (m *Migrator) UpContext(ctx context.Context) error { return m.upTo(ctx, m.Latest()) }

// UpTo applies the pending migrations up to and including version v (tests, and operators who
// move one release at a time).
func (m *Migrator) UpTo(v uint) error {
	if m.index(v) < 0 {
		return fmt.Errorf("this binary has no migration %d", v)
	}
	return m.upTo(context.Background(), v)
}

func (m *Migrator) upTo(ctx context.Context, target uint) error {
	conn, unlock, err := m.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	cur, dirty, err := m.Version()
	if err != nil {
		return err
	}
	switch {
	case dirty:
		return m.dirtyError(cur)
	case cur > m.Latest():
		// Another release's schema, newer than this binary (a rollback): serve it as it is.
		m.log.Warn("the database schema is newer than this binary's migrations; serving it as it is, without migrating (expand/contract: a release's schema serves the release before it)",
			slog.Uint64("schema_version", uint64(cur)), slog.Uint64("binary_version", uint64(m.Latest())))
		return nil
	case cur > target:
		return fmt.Errorf("the schema is at version %d, past %d: use Down to revert", cur, target)
	}
	if err := m.checkUpgrade(cur); err != nil {
		return err
	}
	deadline := time.Now().Add(m.opts.Timeout)
	// A backfill an earlier Up left unfinished comes first: later migrations may rely on it.
	for _, mig := range m.migrations {
		if mig.Version > cur {
			break
		}
		if err := m.backfill(ctx, conn, mig, deadline); err != nil {
			return err
		}
	}
	for _, mig := range m.migrations {
		if mig.Version <= cur || mig.Version > target {
			continue
		}
		if err := m.step(ctx, mig, deadline); err != nil {
			return err
		}
		if err := m.backfill(ctx, conn, mig, deadline); err != nil {
			return err
		}
	}
	return nil
}

// migrateLockID is the advisory lock Up holds throughout (golang-migrate's own, taken for each
// step, is another): two migrators never interleave steps and backfills.
const migrateLockID = 7465_0001

// lock takes the migrator's advisory lock on a connection of its own (golang-migrate holds
// another), waiting for another migrator to finish; the backfills run on it; unlock releases both.
func (m *Migrator) lock(ctx context.Context) (conn *pgxpool.Conn, unlock func(), err error) {
	conn, err = m.pool.Pool.Acquire(ctx)
	if err != nil {
		return nil, nil, dbErr(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockID); err != nil {
		conn.Release()
		return nil, nil, dbErr(err)
	}
	return conn, func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLockID); err != nil {
			conn.Conn().Close(context.WithoutCancel(ctx)) //nolint:errcheck // closing it ends the lock too
		}
		conn.Release()
	}, nil
}

// step applies migration mig, retrying with backoff while it gives up on a lock (lock_timeout),
// until deadline.
func (m *Migrator) step(ctx context.Context, mig Migration, deadline time.Time) error {
	return m.retry(ctx, deadline, "migration "+mig.String(), func() error {
		err := m.m.Migrate(mig.Version)
		if err == nil || errors.Is(err, migrate.ErrNoChange) {
			return nil
		}
		return m.failed(err)
	})
}

// retry runs fn until it succeeds, fails for another reason than a lock timeout, or deadline
// (or ctx) ends the backoff: 1 s, then doubling up to 30 s.
func (m *Migrator) retry(ctx context.Context, deadline time.Time, what string, fn func() error) error {
	delay := time.Second
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !isMigrationLockTimeout(err) {
			return err
		}
		wait := min(delay, time.Until(deadline))
		if wait <= 0 || ctx.Err() != nil {
			return fmt.Errorf("%s gave up: for %s it could not get its locks within %s (SLIPWAY_MIGRATE_LOCK_TIMEOUT) at each of %d attempts; "+
				"a long transaction holds them (see pg_stat_activity), end it or run `slipway migrate up` again later: %w",
				what, m.opts.Timeout, m.opts.LockTimeout, attempt, err)
		}
		m.log.Warn(what+" waited too long for a lock and was rolled back; retrying (queries were not kept waiting behind it)",
			slog.Int("attempt", attempt), slog.Duration("lock_timeout", m.opts.LockTimeout), slog.Duration("retry_in", wait))
		m.opts.Sleep(wait)
		delay = min(2*delay, 30*time.Second)
	}
}

// isMigrationLockTimeout reports a statement cancelled by lock_timeout (lock_not_available), also inside
// golang-migrate's database.Error, which does not unwrap.
func isMigrationLockTimeout(err error) bool {
	var de database.Error
	if errors.As(err, &de) {
		err = de.OrigErr
	}
	return isLockNotAvailable(err)
}

// failed turns golang-migrate's error for a step into ours, putting the version back where the
// schema is when Postgres rolled the migration back.
func (m *Migrator) failed(err error) error {
	v, dirty, verr := m.Version()
	if verr != nil {
		return fmt.Errorf("migrating up: %w", errors.Join(err, verr))
	}
	var wasDirty migrate.ErrDirty
	if errors.As(err, &wasDirty) {
		return m.dirtyError(v)
	}
	if dirty && refusedByPostgres(err) {
		// Migration v's transaction was rolled back: the schema is still at the version before.
		prev := m.prev(v)
		if ferr := m.m.Force(prev); ferr != nil {
			return fmt.Errorf("migration %d failed: %w; resetting the version to %d also failed (%v): %s", v, err, max(prev, 0), ferr, m.dirtyHint(v))
		}
		return fmt.Errorf("migration %s failed and was rolled back; the schema is still at version %d: %w", m.describe(v), max(prev, 0), err)
	}
	if dirty {
		return fmt.Errorf("migration %d was interrupted: %w; %s", v, err, m.dirtyHint(v))
	}
	return fmt.Errorf("migrating up: %w", err)
}

// backfillBatches bounds one backfill's batches: a statement that never stops changing rows (no
// LIMIT, or one that rewrites the rows it selects again) is a bug, not a long backfill.
const backfillBatches = 1_000_000

// backfill runs mig's backfill to the end unless schema_backfills says it is done, then records
// it done.
func (m *Migrator) backfill(ctx context.Context, db *pgxpool.Conn, mig Migration, deadline time.Time) error {
	if mig.Backfill == "" {
		return nil
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_backfills (version bigint PRIMARY KEY, done_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("backfill of migration %s: %w", mig, dbErr(err))
	}
	var done bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_backfills WHERE version = $1)`, mig.Version).Scan(&done); err != nil {
		return fmt.Errorf("backfill of migration %s: %w", mig, dbErr(err))
	}
	if done {
		return nil
	}
	start, rows := time.Now(), int64(0)
	for batch := 1; ; batch++ {
		if batch > backfillBatches {
			return fmt.Errorf("backfill of migration %s did not end after %d batches: it must change fewer rows each time", mig, backfillBatches)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("backfill of migration %s stopped after %d rows (the next `migrate up` finishes it): %w", mig, rows, err)
		}
		var n int64
		err := m.retry(ctx, deadline, fmt.Sprintf("backfill of migration %s (batch %d)", mig, batch), func() error {
			tx, err := db.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
			if _, err := tx.Exec(ctx, lockTimeoutSQL(m.opts.LockTimeout)); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, mig.Backfill)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
			return tx.Commit(ctx)
		})
		if err != nil {
			return fmt.Errorf("backfill of migration %s, after %d rows (the next `migrate up` goes on with it): %w", mig, rows, dbErr(err))
		}
		rows += n
		if n == 0 {
			break
		}
		if batch%100 == 0 {
			m.log.Info("backfilling", slog.String("migration", mig.String()), slog.Int64("rows", rows))
		}
	}
	if _, err := db.Exec(ctx, `INSERT INTO schema_backfills (version) VALUES ($1) ON CONFLICT DO NOTHING`, mig.Version); err != nil {
		return fmt.Errorf("backfill of migration %s: %w", mig, dbErr(err))
	}
	m.log.Info("backfill done", slog.String("migration", mig.String()), slog.Int64("rows", rows), slog.Duration("took", time.Since(start)))
	return nil
}

// forgetBackfill removes the record that migration v's backfill ran, when v is reverted: applied
// again, it needs its backfill again.
func (m *Migrator) forgetBackfill(v uint) error {
	_, err := m.pool.Pool.Exec(context.Background(), `DELETE FROM schema_backfills WHERE version >= $1`, v)
	if isUndefinedTable(err) { // no backfill ever ran here
		return nil
	}
	return dbErr(err)
}

// checkUpgrade enforces the upgrade policy (CHANGELOG.md, "Upgrading"): a database is migrated
// from the schema of the release before this binary's, or a later one, or from nothing; one
// older than that must first be migrated by that release, whose binary knows what the releases
// between expect.
func (m *Migrator) checkUpgrade(cur uint) error {
	if cur == 0 {
		return nil
	}
	prev, ok := previousRelease(m.opts.Releases, m.Latest())
	if !ok || cur >= prev.Schema {
		return nil
	}
	from := "an unreleased build"
	for _, r := range m.opts.Releases {
		if r.Schema <= cur {
			from = "v" + r.Version
		}
	}
	return fmt.Errorf("the schema is at version %d (%s), older than v%s's (%d): this release upgrades only from v%s or later, one release at a time; "+
		"run `slipway migrate up` with v%s's binary first (CHANGELOG.md, \"Upgrading\")", cur, from, prev.Version, prev.Schema, prev.Version, prev.Version)
}

// previousRelease is the newest release whose schema is older than latest: the release this
// binary upgrades from (for a released binary, the one before it; for a build past the last
// release, that release).
func previousRelease(releases []migrations.Release, latest uint) (migrations.Release, bool) {
	var prev migrations.Release
	ok := false
	for _, r := range releases {
		if r.Schema < latest && (!ok || r.Schema >= prev.Schema) {
			prev, ok = r, true
		}
	}
	return prev, ok
}

// refusedByPostgres reports whether err is the SQL of a migration file refused by the server:
// then the file's implicit transaction was rolled back and nothing of it remains. golang-migrate
// returns database.Error by value from running a file (its bookkeeping returns a pointer).
func refusedByPostgres(err error) bool {
	var de database.Error
	if !errors.As(err, &de) || !strings.HasPrefix(de.Err, "migration failed") {
		return false
	}
	var pgErr *pgconn.PgError
	return errors.As(de.OrigErr, &pgErr)
}

// DownPlan returns the migrations Down(n) would revert, newest first, or why it would refuse: a
// dirty schema, a schema newer than the binary, fewer applied migrations than n, or an
// irreversible migration among them. It changes nothing.
func (m *Migrator) DownPlan(n int) ([]Migration, error) {
	if n < 1 {
		return nil, fmt.Errorf("revert at least one migration (got %d)", n)
	}
	v, dirty, err := m.Version()
	if err != nil {
		return nil, err
	}
	if dirty {
		return nil, m.dirtyError(v)
	}
	if v > m.Latest() {
		return nil, fmt.Errorf("the schema is at version %d, newer than this binary's newest migration %d: revert it with the binary of the release that applied it (its `slipway migrate down`)", v, m.Latest())
	}
	if v == 0 {
		return nil, errors.New("no migration is applied: nothing to revert")
	}
	i := m.index(v)
	if i < 0 {
		return nil, fmt.Errorf("the schema is at version %d, which this binary does not carry", v)
	}
	if n > i+1 {
		return nil, fmt.Errorf("the schema is at version %d, %d migrations from empty: cannot revert %d", v, i+1, n)
	}
	var plan []Migration
	for j := i; j > i-n; j-- {
		mig := m.migrations[j]
		if mig.Irreversible != "" {
			return nil, fmt.Errorf("migration %s cannot be reverted: %s", mig, mig.Irreversible)
		}
		plan = append(plan, mig)
	}
	return plan, nil
}

// Down reverts the n most recent migrations, one at a time, after checking (DownPlan) that each
// can be. A down migration that Postgres refuses leaves the schema and the version as they were
// before that step.
func (m *Migrator) Down(n int) error {
	plan, err := m.DownPlan(n)
	if err != nil {
		return err
	}
	for _, mig := range plan {
		if v, _, err := m.Version(); err != nil || v != mig.Version {
			return fmt.Errorf("reverting: the schema moved to version %d while reverting (another migrator?): %v", v, err)
		}
		err := m.m.Steps(-1)
		if err == nil {
			if err := m.forgetBackfill(mig.Version); err != nil {
				return fmt.Errorf("reverted migration %s, but not the record of its backfill: %w", mig, err)
			}
			continue
		}
		v, dirty, verr := m.Version()
		if verr == nil && dirty && refusedByPostgres(err) {
			if ferr := m.m.Force(int(mig.Version)); ferr != nil {
				return fmt.Errorf("reverting migration %s failed: %w; resetting the version to %d also failed (%v): run `slipway migrate force %d`", mig, err, mig.Version, ferr, mig.Version)
			}
			return fmt.Errorf("reverting migration %s failed and was rolled back; the schema is still at version %d: %w", mig, mig.Version, err)
		}
		if verr == nil && dirty {
			return fmt.Errorf("reverting migration %s was interrupted: %w; the schema is at version %d if its down migration was rolled back (the usual case: check that what it removes is still there), else at %d: run `slipway migrate force` with the one it is at", mig, err, mig.Version, v)
		}
		return fmt.Errorf("reverting migration %s: %w", mig, err)
	}
	return nil
}

// Force records version v (0: no migration applied) as the schema's version and clears the dirty
// flag, running nothing: the repair after an interrupted migration, once the operator has checked
// which version the schema is really at.
func (m *Migrator) Force(v uint) error {
	if v != 0 && m.index(v) < 0 {
		return fmt.Errorf("this binary has no migration %d (its newest is %d): force a newer release's version with that release's binary", v, m.Latest())
	}
	target := int(v)
	if v == 0 {
		target = database.NilVersion
	}
	return m.m.Force(target)
}

// Version returns the applied version and whether a failed migration left the schema dirty.
func (m *Migrator) Version() (uint, bool, error) {
	v, dirty, err := m.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return v, dirty, dbErr(err)
}

// Check reports whether this binary can serve the database's schema as it is: nil when the
// schema is at the binary's newest migration, or newer (another release's; see Migrator), and
// clean. Otherwise the error says what is missing: pending migrations, or a dirty flag to repair.
func (m *Migrator) Check() error {
	v, dirty, err := m.Version()
	switch {
	case err != nil:
		return err
	case dirty:
		return m.dirtyError(v)
	case v < m.Latest():
		return fmt.Errorf("the schema is at version %d; this binary needs %d: run `slipway migrate up`", v, m.Latest())
	}
	return nil
}

// dirtyError explains a dirty flag found at version v and how to clear it.
func (m *Migrator) dirtyError(v uint) error {
	return fmt.Errorf("the schema is dirty at version %d: a migration was interrupted (docs/operations.md, \"A failed migration\"); %s", v, m.dirtyHint(v))
}

func (m *Migrator) dirtyHint(v uint) string {
	if v > m.Latest() {
		return fmt.Sprintf("version %d is newer than this binary (%d): repair it with the binary of the release that has it", v, m.Latest())
	}
	prev := max(m.prev(v), 0)
	return fmt.Sprintf("an interrupted `migrate up` is rolled back, so the schema is at version %d unless migration %s's changes are there: "+
		"run `slipway migrate force %d` (or `force %d` if they are), then `slipway migrate up`; after an interrupted `migrate down`, force the version the schema is at",
		prev, m.describe(v), prev, v)
}

func (m *Migrator) describe(v uint) string {
	if i := m.index(v); i >= 0 {
		return m.migrations[i].String()
	}
	return fmt.Sprint(v)
}

// Close releases the migrator's connection (not the pool it came from). The migrate instance holds
// a pooled connection until it is closed; without this, closing the pool would wait forever.
func (m *Migrator) Close() error {
	srcErr, dbErr := m.m.Close()
	return errors.Join(srcErr, dbErr, m.db.Close())
}

// ReadVersion reads the schema's version and dirty flag without changing anything: unlike
// NewMigrator, it creates no schema_migrations table in a database that has none (version 0).
// Commands that only use the schema call it, so that pointing one at the wrong database leaves
// that database as it was.
func ReadVersion(ctx context.Context, db *DB) (version uint, dirty bool, err error) {
	var v int64
	err = db.Pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations LIMIT 1`).Scan(&v, &dirty)
	switch {
	case errors.Is(err, pgx.ErrNoRows), isUndefinedTable(err): // no row, or no table: nothing applied
		return 0, false, nil
	case err != nil:
		return 0, false, schemaReadErr(db, err)
	case v < 0:
		return 0, dirty, nil
	}
	return uint(v), dirty, nil
}

// CheckSchema is Migrator.Check, read-only (ReadVersion): nil when this binary can use the
// database's schema as it is; otherwise what to do about it (migrate, repair a dirty flag, or
// point SLIPWAY_DATABASE_URL at the right database).
func CheckSchema(ctx context.Context, db *DB) error {
	list, err := readMigrations(migrations.FS)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	latest := list[len(list)-1].Version
	v, dirty, err := ReadVersion(ctx, db)
	switch {
	case err != nil:
		return err
	case dirty:
		return fmt.Errorf("the schema is dirty at version %d: a migration was interrupted; `slipway migrate version` says how to repair it (docs/operations.md, \"A failed migration\")", v)
	case v == 0:
		return fmt.Errorf("database %q has no Slipway schema: run `slipway migrate up` (or serve with SLIPWAY_MIGRATE_ON_START=true), or check SLIPWAY_DATABASE_URL", db.conn.Database)
	case v < latest:
		return fmt.Errorf("the schema is at version %d; this binary needs %d: run `slipway migrate up` first", v, latest)
	}
	return nil
}

// IsMissingDatabase reports whether err says the database named in the URL does not exist.

// schemaReadErr explains a failure to read the schema's version; a missing database gets a
// sentence of its own (SLIPWAY_CREATE_DATABASE), the rest dbErr's classification.
func schemaReadErr(db *DB, err error) error {
	if IsMissingDatabase(err) {
		return fmt.Errorf("database %q does not exist on the server: check SLIPWAY_DATABASE_URL, or create it (`slipway migrate up` with SLIPWAY_CREATE_DATABASE=true does): %w", db.conn.Database, err)
	}
	return dbErr(err)
}
