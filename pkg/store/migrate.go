package store

import (
	"bufio"
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/pgconn"
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
}

func (m Migration) String() string { return fmt.Sprintf("%d (%s)", m.Version, m.Name) }

// Migrator applies the embedded schema migrations. golang-migrate holds a Postgres advisory lock
// while it works, so replicas starting together apply each migration once.
//
// Each migration file runs as one implicit transaction (golang-migrate sends it as a single
// simple-protocol query), so a migration that Postgres refuses leaves nothing of itself behind.
// golang-migrate still marks the version dirty; the Migrator puts the version back to where the
// schema really is and returns the error, so that a failed migration never leaves a database that
// every later start refuses. Only an interrupted migration (the process killed, the connection
// lost) leaves the dirty flag, for an operator to check and clear with Force.
//
// A database whose version is newer than the newest migration the binary carries, with the dirty
// flag clear, is accepted as it is: by the expand/contract rule (docs/decisions.md), a release's
// schema still serves the release before it, so `helm rollback` across one release keeps
// working. Up then logs a warning and changes nothing.
type Migrator struct {
	m          *migrate.Migrate
	db         *sql.DB
	log        *slog.Logger
	migrations []Migration // by version
}

// NewMigrator prepares the embedded migrations for the database behind pool.
func NewMigrator(db *DB) (*Migrator, error) { return NewMigratorFS(db, migrations.FS) }

// NewMigratorFS prepares the migrations in fsys (NNN_name.up.sql and NNN_name.down.sql files) for
// the database: tests use it to play an older or a newer release's migrations.
func NewMigratorFS(db *DB, fsys fs.FS) (*Migrator, error) {
	list, err := readMigrations(fsys)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	src, err := iofs.New(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
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
	return &Migrator{m: m, db: sqlDB, log: log, migrations: list}, nil
}

// readMigrations lists the versions in fsys, with each down migration's irreversible marker.
func readMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	byVersion := map[uint]*Migration{}
	for _, e := range entries {
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

// Up applies every pending migration. See Migrator for what it does with a migration that fails
// and with a database newer than the binary.
func (m *Migrator) Up() error {
	return m.up(func() error { return m.m.Up() })
}

// UpTo applies the pending migrations up to and including version v (tests, and operators who
// move one release at a time).
func (m *Migrator) UpTo(v uint) error {
	if m.index(v) < 0 {
		return fmt.Errorf("this binary has no migration %d", v)
	}
	cur, _, err := m.Version()
	if err != nil {
		return err
	}
	if cur > v {
		return fmt.Errorf("the schema is at version %d, past %d: use Down to revert", cur, v)
	}
	return m.up(func() error { return m.m.Migrate(v) })
}

func (m *Migrator) up(run func() error) error {
	err := run()
	if err == nil || errors.Is(err, migrate.ErrNoChange) {
		return nil
	}
	v, dirty, verr := m.Version()
	if verr != nil {
		return fmt.Errorf("migrating up: %w", errors.Join(err, verr))
	}
	if !dirty && v > m.Latest() {
		// Another release's schema, newer than this binary (a rollback): serve it as it is.
		m.log.Warn("the database schema is newer than this binary's migrations; serving it as it is, without migrating (expand/contract: a release's schema serves the release before it)",
			slog.Uint64("schema_version", uint64(v)), slog.Uint64("binary_version", uint64(m.Latest())))
		return nil
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
