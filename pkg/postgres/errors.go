package postgres

// The one place that reads Postgres's error codes (SQLSTATEs, named by pgerrcode): what each
// means to Slipway is decided here, once, and the rest of the store asks these functions.

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slipwayhq/slipway/pkg/errs"
)

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
		case pgerrcode.SerializationFailure, pgerrcode.DeadlockDetected: // the other transaction won
			e := errs.Wrap(errs.Unavailable, err, "the database ended the transaction in a conflict with another; retry")
			e.RetryAfter = time.Second
			return e
		case pgerrcode.CharacterNotInRepertoire, pgerrcode.UntranslatableCharacter: // NUL or bad UTF-8
			return errs.Wrap(errs.Invalid, err, "a parameter holds a NUL byte or invalid UTF-8")
		case pgerrcode.StringDataRightTruncationDataException, pgerrcode.NumericValueOutOfRange:
			return errs.Wrap(errs.Invalid, err, "a parameter is too long or out of range")
		case pgerrcode.CheckViolation: // a value the schema refuses (the domain checks first)
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
		switch pgErr.Code {
		case pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow,
			pgerrcode.TooManyConnections, pgerrcode.ReadOnlySQLTransaction:
			return true
		}
		return pgerrcode.IsConnectionException(pgErr.Code)
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case pgconn.SafeToRetry(err), pgconn.Timeout(err):
		return true
	}
	// The connection went away under a query: closed by pgx after an earlier failure, or cut by
	// the network (the server, a proxy or a failover in between).
	for _, gone := range []error{pgx.ErrTxClosed, pgconn.ErrConnClosed, net.ErrClosed, io.ErrUnexpectedEOF, io.EOF,
		syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.EPIPE} {
		if errors.Is(err, gone) {
			return true
		}
	}
	return false
}

func isCode(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// isUniqueViolation reports a unique constraint violation, optionally on the named constraint.
func isUniqueViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UniqueViolation && (constraint == "" || pgErr.ConstraintName == constraint)
}

// isForeignKeyViolation reports a foreign key violation (the referenced row is gone).
func isForeignKeyViolation(err error) bool { return isCode(err, pgerrcode.ForeignKeyViolation) }

// IsMissingDatabase reports that the database named in the URL does not exist.
func IsMissingDatabase(err error) bool { return isCode(err, pgerrcode.InvalidCatalogName) }

// isUndefinedTable reports a query on a table that does not exist (yet).
func isUndefinedTable(err error) bool { return isCode(err, pgerrcode.UndefinedTable) }

// isLockNotAvailable reports a statement that gave up waiting for a lock (lock_timeout).
func isLockNotAvailable(err error) bool { return isCode(err, pgerrcode.LockNotAvailable) }

// isReadOnly reports a write refused by a server that does not accept writes (a standby, a
// demoted primary, a read-only database).
func isReadOnly(err error) bool { return isCode(err, pgerrcode.ReadOnlySQLTransaction) }

// isDuplicateDatabase reports a CREATE DATABASE that another replica won.
func isDuplicateDatabase(err error) bool { return isCode(err, pgerrcode.DuplicateDatabase) }
