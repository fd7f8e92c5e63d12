package problem

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slipwayhq/slipway/pkg/errs"
)

func TestDescribe(t *testing.T) {
	slow := errs.New(errs.TooManyRequests, "too many wrong passwords; try again in 16 seconds")
	slow.RetryAfter = 15200 * time.Millisecond
	cases := []struct {
		err        error
		status     int
		message    string
		retryAfter int
	}{
		{errs.Field("name", "can't be blank"), 422, "name can't be blank", 0},
		{fmt.Errorf("wrapped: %w", errs.New(errs.NotFound, "app 3 not found")), 404, "app 3 not found", 0},
		{slow, 429, "too many wrong passwords; try again in 16 seconds", 16},
		{errs.New(errs.TooManyRequests, "busy"), 429, "busy", 2},
		{errs.Wrap(errs.Unavailable, fmt.Errorf("dial tcp: refused"), "the database is unavailable; retry later"), 503, "the database is unavailable; retry later", 5},
		{&net.OpError{Op: "dial", Err: fmt.Errorf("refused")}, 503, "a dependency is unavailable; retry later", 5},
		// The store classifies database errors where they arise; one that escaped it is a bug.
		{&pgconn.PgError{Code: "57P01"}, 500, "internal error", 0},
		{fmt.Errorf("put: %w", context.Canceled), 503, "the request was cancelled (the server may be shutting down); retry", 5},
		{fmt.Errorf("SELECT * FROM secret_table failed at s3://bucket/key"), 500, "internal error", 0},
	}
	for _, c := range cases {
		p := Describe(c.err)
		if p.Status != c.status || p.Message != c.message || p.RetryAfter != c.retryAfter {
			t.Errorf("Describe(%v) = %+v", c.err, p)
		}
	}
	if p := Describe(errs.Field("name", "x")); p.Entry["name"][0] != "x" {
		t.Errorf("entry lost: %+v", p)
	}
}
