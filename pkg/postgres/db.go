// Package postgres is Slipway's Postgres layer (pgx v5): the schema's rows as Go types, the queries
// that fill them, and explicit transactions. Concurrency safety comes from constraints, row locks
// and advisory locks, never from "check, then insert".
package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// DB is Slipway's database: one pool of connections, and the store's parts on it. Each part
// holds the queries of one part of the domain (its tables); DB declares only what concerns the
// connection itself (Open, Ping, Writable, Tx), and the parts' methods are DB's by embedding, so
// a caller that needs several parts (the service's wiring, the commands, tests) holds one value.
type DB struct {
	*pool
	// conn is the pool's connection configuration (CreateIfMissing).
	conn *pgx.ConnConfig

	*Catalog
	*Releases
	*People
	*Devices
	*Audit
	*Events
	*Testers
	*Mail
	*Invitations
	*Feedback
}

// pool is what every part shares: the connections and the store's logger. Helpers two parts use
// are its methods.
type pool struct {
	Pool *pgxpool.Pool
	log  *slog.Logger
}

// The parts of the store, each on the one pool.
type (
	// Catalog holds apps, schemes, channels, their insights and channel passwords.
	Catalog struct{ *pool }
	// Releases holds releases, their checksums and uploads, debug files, the objects ledger,
	// upload sessions, retention and reconciliation with the bucket.
	Releases struct{ *pool }
	// People holds console users, their app memberships and sessions, and API tokens.
	People struct{ *pool }
	// Devices holds the registered devices (UDIDs).
	Devices struct{ *pool }
	// Audit holds the audit trail and the tombstones of deleted releases.
	Audit struct{ *pool }
	// Events holds webhooks, their deliveries (the outbox) and the change notifications.
	Events struct{ *pool }
	// Mail holds the mail outbox: mails written in the transaction of what causes them
	// (writeMail), leased and recorded by the mail sender.
	Mail struct{ *pool }
)

// newDB returns the store on p.
func newDB(p *pool, conn *pgx.ConnConfig) *DB {
	return &DB{pool: p, conn: conn, Catalog: &Catalog{p}, Releases: &Releases{p}, People: &People{p},
		Devices: &Devices{p}, Audit: &Audit{p}, Events: &Events{p}, Testers: &Testers{p}, Mail: &Mail{p},
		Invitations: &Invitations{p}, Feedback: &Feedback{p}}
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
	pgPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return newDB(&pool{Pool: pgPool, log: opts.Log}, cfg.ConnConfig), nil
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
	if isReadOnly(data.Err) {
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
	if !IsMissingDatabase(err) {
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
	if err != nil && !isDuplicateDatabase(err) { // another replica won the race
		return fmt.Errorf("creating database %q: %w", cfg.Database, err)
	}
	return nil
}

// Tx runs fn in a transaction, committing when it returns nil and rolling back otherwise.
func (db *pool) Tx(ctx context.Context, fn func(tx pgx.Tx) error) error {
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
