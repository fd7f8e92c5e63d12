// Package store is Slipway's Postgres layer (pgx v5): the schema's rows as Go types, the queries
// that fill them, and explicit transactions. Concurrency safety comes from constraints, row locks
// and advisory locks, never from "check, then insert".
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// DB is a pool of connections to Slipway's database.
type DB struct {
	Pool *pgxpool.Pool
	log  *slog.Logger
	// conn is the pool's connection configuration (CreateIfMissing).
	conn *pgx.ConnConfig
}

// Options tune Open.
type Options struct {
	// CreateDatabase creates the database named in the URL when it does not exist (commands do
	// this so the first run needs no set-up). Open then fails when the server is unreachable;
	// serve opens without it and calls CreateIfMissing until the server answers.
	CreateDatabase bool
	// MaxConns caps the pool (0: pgxpool's default, max(4, cores)).
	MaxConns int32
	// Log receives the store's own warnings (a schema newer than the binary); nil: slog.Default.
	Log *slog.Logger
}

// Open connects to the database at url, creating it first when asked and permitted.
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database URL: %s", redactParseError(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A database that does not answer must turn into a prompt 503, not a hanging request.
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	cfg.HealthCheckPeriod = 15 * time.Second
	// After a failover, a connection may be left on a server that no longer accepts writes (the
	// demoted primary, back as a standby). A connection that gets read_only_sql_transaction is
	// dropped when it returns to the pool, so the next one is made afresh: with
	// target_session_attrs=read-write in the URL, to the new primary.
	cfg.ConnConfig.Tracer = readOnlyTracer{}
	cfg.AfterRelease = func(c *pgx.Conn) bool { return !markedReadOnly(c.PgConn()) }
	if opts.CreateDatabase {
		if err := createDatabase(ctx, cfg.ConnConfig); err != nil {
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return &DB{Pool: pool, log: opts.Log, conn: cfg.ConnConfig}, nil
}

// CreateIfMissing creates the database named in the URL when it does not exist and the server lets
// us; it fails when the server is unreachable (errs.Unavailable). The pool itself connects lazily,
// so a DB opened without Options.CreateDatabase exists before the server answers.
func (db *DB) CreateIfMissing(ctx context.Context) error {
	err := createDatabase(ctx, db.conn)
	if err != nil && IsUnavailable(err) {
		return errs.Wrap(errs.Unavailable, err, "the database is unavailable")
	}
	return err
}

// Close releases all connections.
func (db *DB) Close() { db.Pool.Close() }

// Ping checks that the database answers. A standby answers too: see Writable.
func (db *DB) Ping(ctx context.Context) error { return dbErr(db.Pool.Ping(ctx)) }

// Writable reports whether the database accepts writes: nil on a primary; errs.Unavailable on a
// standby (pg_is_in_recovery, as a demoted primary is after a failover) or a database whose
// transactions are read-only (default_transaction_read_only), and when it cannot be reached.
// Ping succeeds in both cases while every write fails with SQLSTATE 25006. The connection it
// checked is dropped when read-only, so the pool makes a new one (see Open).
func (db *DB) Writable(ctx context.Context) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return dbErr(err)
	}
	defer conn.Release()
	var standby bool
	var readOnly string
	err = conn.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('transaction_read_only')`).Scan(&standby, &readOnly)
	if err != nil {
		return dbErr(err)
	}
	switch {
	case standby:
		markReadOnly(conn.Conn().PgConn())
		return errs.Wrap(errs.Unavailable, distribution.ErrReadOnly, "the database is a standby (in recovery) and refuses writes; a failover may be under way")
	case readOnly == "on":
		markReadOnly(conn.Conn().PgConn())
		return errs.Wrap(errs.Unavailable, distribution.ErrReadOnly, "the database refuses writes (transaction_read_only is on)")
	}
	return nil
}

// readOnlyKey marks, in a connection's CustomData, a connection found read-only.
const readOnlyKey = "slipway.read_only"

func markReadOnly(c *pgconn.PgConn) { c.CustomData()[readOnlyKey] = true }

func markedReadOnly(c *pgconn.PgConn) bool { return c.CustomData()[readOnlyKey] == true }

// readOnlyTracer marks a connection on which a statement failed with read_only_sql_transaction.
type readOnlyTracer struct{}

func (readOnlyTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (readOnlyTracer) TraceQueryEnd(_ context.Context, c *pgx.Conn, data pgx.TraceQueryEndData) {
	if isCode(data.Err, "25006") {
		markReadOnly(c.PgConn())
	}
}

// createDatabase connects to the server's maintenance database and creates cfg's database when it
// does not exist. A missing permission is not an error here: the connection that follows reports
// the real problem.
func createDatabase(ctx context.Context, cfg *pgx.ConnConfig) error {
	probe, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return probe.Close(ctx)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return fmt.Errorf("database: %w", err)
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("database %q is missing and the server's postgres database is unreachable: %w", cfg.Database, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{cfg.Database}.Sanitize())
	if err != nil && !isCode(err, "42P04") { // duplicate_database: another replica won the race
		return fmt.Errorf("creating database %q: %w", cfg.Database, err)
	}
	return nil
}

// Tx runs fn in a transaction, committing when it returns nil and rolling back otherwise.
func (db *DB) Tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		return dbErr(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	if err := fn(tx); err != nil {
		return dbErr(err)
	}
	return dbErr(tx.Commit(ctx))
}

// querier is satisfied by the pool and by a transaction, so queries can run in either.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// dbErr classifies a database error once, where it arises: failures to reach the database (and a
// database that cannot write, during a failover) become errs.Unavailable (503 with Retry-After),
// as do transactions the database aborted in a conflict with another (serialization failure,
// deadlock), which a retry resolves; values the database refuses (NUL bytes, invalid UTF-8,
// check constraints) become errs.Invalid; the rest are left as they are (internal). Errors that
// are already *errs.Error pass through.
func dbErr(err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if IsUnavailable(err) {
		return errs.Wrap(errs.Unavailable, err, "the database is unavailable; retry later")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "40001", "40P01": // serialization_failure, deadlock_detected: the other transaction won
			e := errs.Wrap(errs.Unavailable, err, "the database ended the transaction in a conflict with another; retry")
			e.RetryAfter = time.Second
			return e
		case "22021", "22P05": // character_not_in_repertoire, untranslatable_character: NUL or bad UTF-8
			return errs.Wrap(errs.Invalid, err, "a parameter holds a NUL byte or invalid UTF-8")
		case "22001", "22003": // string_data_right_truncation, numeric_value_out_of_range
			return errs.Wrap(errs.Invalid, err, "a parameter is too long or out of range")
		case "23514": // check_violation: a value the schema refuses (the domain checks first)
			return errs.Wrap(errs.Invalid, err, "a parameter has a value that is not allowed")
		}
	}
	return err
}

// IsUnavailable reports whether err means the database could not be reached, went away or cannot
// write (a standby, during a failover), as opposed to a query that the database refused.
func IsUnavailable(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		// Class 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot
		// connect now; 53300: too many connections; 25006: read_only_sql_transaction, a write on
		// a connection left on a demoted primary (or a read-only database).
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" ||
			pgErr.Code == "57P03" || pgErr.Code == "53300" || pgErr.Code == "25006"
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	case errors.Is(err, pgx.ErrTxClosed), errors.Is(err, net.ErrClosed):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") ||
		strings.Contains(msg, "connection reset") || strings.Contains(msg, "broken pipe")
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// isUniqueViolation reports a unique constraint violation, optionally on the named constraint.
func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && (constraint == "" || pgErr.ConstraintName == constraint)
}

// isForeignKeyViolation reports a foreign key violation (the referenced row is gone).
func isForeignKeyViolation(err error) bool { return isCode(err, "23503") }

// redactParseError keeps a URL parse error from echoing a password.
func redactParseError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "://"); i >= 0 {
		return "cannot parse the URL"
	}
	return msg
}

// RedactURL returns a database or storage URL without its password, for logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
