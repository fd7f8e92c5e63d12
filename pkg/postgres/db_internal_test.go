package postgres

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slipwayhq/slipway/pkg/errs"
)

// TestDBErrClassifies checks that database errors get their kind here, once: the HTTP layer only
// maps kinds to statuses.
func TestDBErrClassifies(t *testing.T) {
	cases := []struct {
		err  error
		kind errs.Kind
	}{
		{&pgconn.PgError{Code: "57P01"}, errs.Unavailable},               // admin shutdown
		{&pgconn.PgError{Code: "08006"}, errs.Unavailable},               // connection failure
		{&pgconn.PgError{Code: "53300"}, errs.Unavailable},               // too many connections
		{&pgconn.PgError{Code: "25006"}, errs.Unavailable},               // read-only: a demoted primary
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), errs.Unavailable},  // connection cut
		{fmt.Errorf("write: %w", syscall.ECONNRESET), errs.Unavailable},  // reset by a proxy
		{fmt.Errorf("write: %w", syscall.EPIPE), errs.Unavailable},       // the server went away
		{fmt.Errorf("exec: %w", pgconn.ErrConnClosed), errs.Unavailable}, // pgx closed it earlier
		// Decided by the error's type, never its text: a message that only says so is a bug.
		{errors.New("connection reset by peer"), errs.Internal},
		{errors.New("conn closed"), errs.Internal},
		{&pgconn.PgError{Code: "22021"}, errs.Invalid},                      // NUL byte / bad UTF-8
		{&pgconn.PgError{Code: "23514", ConstraintName: "x"}, errs.Invalid}, // check constraint
		{&pgconn.PgError{Code: "42P01"}, errs.Internal},                     // undefined table: a bug
		{errs.New(errs.NotFound, "app 1 not found"), errs.NotFound},
	}
	for _, c := range cases {
		if got := errs.KindOf(dbErr(c.err)); got != c.kind {
			t.Errorf("dbErr(%v) kind %v, want %v", c.err, got, c.kind)
		}
	}
	if dbErr(nil) != nil {
		t.Error("dbErr(nil) != nil")
	}
	var pgErr *pgconn.PgError
	if err := dbErr(&pgconn.PgError{Code: "22021", Message: "invalid byte sequence"}); !errors.As(err, &pgErr) {
		t.Error("the cause is kept for the log")
	}
}

// TestFailoverSQLSTATEs: what a client sees during a Postgres failover or restart is a 503 with
// Retry-After (errs.Unavailable), one SQLSTATE at a time, never a 500.
func TestFailoverSQLSTATEs(t *testing.T) {
	for code, what := range map[string]string{
		"25006": "read_only_sql_transaction: a write on a connection left on the demoted primary, now a standby",
		"57P01": "admin_shutdown: the server is stopping (a switchover, pg_terminate_backend)",
		"57P02": "crash_shutdown: another backend crashed and the server is restarting",
		"57P03": "cannot_connect_now: the server is starting up or in recovery",
		"08000": "connection_exception",
		"08001": "sqlclient_unable_to_establish_sqlconnection",
		"08003": "connection_does_not_exist",
		"08004": "sqlserver_rejected_establishment_of_sqlconnection",
		"08006": "connection_failure",
		"08P01": "protocol_violation",
		"53300": "too_many_connections: the new primary is flooded by every replica reconnecting",
		"40001": "serialization_failure: retrying the transaction succeeds",
		"40P01": "deadlock_detected: retrying the transaction succeeds",
	} {
		err := dbErr(fmt.Errorf("query: %w", &pgconn.PgError{Code: code, Message: what}))
		e, ok := errs.AsError(err)
		if !ok || e.Kind != errs.Unavailable {
			t.Errorf("SQLSTATE %s (%s): kind %v, want Unavailable (503 with Retry-After)", code, what, errs.KindOf(err))
			continue
		}
		if strings.Contains(e.Msg, what) {
			t.Errorf("SQLSTATE %s: the client message shows the server's: %q", code, e.Msg)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != code {
			t.Errorf("SQLSTATE %s: the cause is not kept for the log", code)
		}
	}
	// A conflict is worth retrying at once.
	if e, _ := errs.AsError(dbErr(&pgconn.PgError{Code: "40001"})); e.RetryAfter != time.Second {
		t.Errorf("serialization failure: Retry-After %v, want 1s", e.RetryAfter)
	}
	// Constraint violations and other refusals stay what they are.
	for _, code := range []string{"23505", "23503", "42601", "25P02"} {
		if kind := errs.KindOf(dbErr(&pgconn.PgError{Code: code})); kind == errs.Unavailable {
			t.Errorf("SQLSTATE %s classified Unavailable", code)
		}
	}
}
