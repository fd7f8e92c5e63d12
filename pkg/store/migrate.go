package store

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/slipwayhq/slipway/migrations"
)

// Migrator applies the embedded schema migrations. golang-migrate holds a Postgres advisory lock
// while it works, so replicas starting together apply each migration once.
type Migrator struct {
	m  *migrate.Migrate
	db *sql.DB
}

// NewMigrator prepares migrations for the database behind pool.
func NewMigrator(db *DB) (*Migrator, error) {
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	driver, err := pgxmigrate.WithInstance(sqlDB, &pgxmigrate.Config{})
	if err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("migrations: %w", dbErr(err))
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return &Migrator{m: m, db: sqlDB}, nil
}

// Up applies every pending migration.
func (m *Migrator) Up() error {
	if err := m.m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrating up: %w", err)
	}
	return nil
}

// Down reverts the most recent migration.
func (m *Migrator) Down() error {
	if err := m.m.Steps(-1); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrating down: %w", err)
	}
	return nil
}

// Version returns the applied version and whether a failed migration left the schema dirty.
func (m *Migrator) Version() (uint, bool, error) {
	v, dirty, err := m.m.Version()
	if errors.Is(err, migrate.ErrNilVersion) {
		return 0, false, nil
	}
	return v, dirty, err
}

// Close releases the migrator's connection (not the pool it came from). The migrate instance holds
// a pooled connection until it is closed; without this, closing the pool would wait forever.
func (m *Migrator) Close() error {
	srcErr, dbErr := m.m.Close()
	return errors.Join(srcErr, dbErr, m.db.Close())
}
