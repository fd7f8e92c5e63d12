package store

import (
	"errors"
	"fmt"
	"io"
	"testing"

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
		{&pgconn.PgError{Code: "57P01"}, errs.Unavailable},                  // admin shutdown
		{&pgconn.PgError{Code: "08006"}, errs.Unavailable},                  // connection failure
		{&pgconn.PgError{Code: "53300"}, errs.Unavailable},                  // too many connections
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), errs.Unavailable},     // connection cut
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
