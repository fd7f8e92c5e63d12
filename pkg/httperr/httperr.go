// Package httperr decides what an HTTP client sees of an error: its status, message, validation
// entry and Retry-After. It is the one place an errs.Kind becomes a status; the JSON API
// (httpapi) and the pages (web) both render from it.
package httperr

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
)

// Problem is the client-facing view of an error.
type Problem struct {
	Kind   errs.Kind
	Status int
	// Message is safe to show: the error's own message for client-facing kinds, a generic text
	// otherwise. Internal errors must be logged by the caller with the request id.
	Message string
	Entry   map[string][]string
	// RetryAfter is the Retry-After header value in seconds (0: no header).
	RetryAfter int
}

// Internal reports whether the error is a bug or unexpected failure, to be logged.
func (p Problem) Internal() bool { return p.Kind == errs.Internal }

// Describe classifies err. Unreachable dependencies that were not wrapped as such (a dropped
// database connection, a refused storage connection, a timeout) and cancelled requests count as
// Unavailable.
func Describe(err error) Problem {
	p := Problem{Kind: errs.KindOf(err)}
	cancelled := false
	if p.Kind == errs.Internal {
		var netErr net.Error
		cancelled = errors.Is(err, context.Canceled)
		if cancelled || store.IsUnavailable(err) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
			p.Kind = errs.Unavailable
		}
	}
	p.Status = Status(p.Kind)
	var e *errs.Error
	switch {
	case p.Kind == errs.Internal:
		p.Message = "internal error"
	case errors.As(err, &e) && e.Kind == p.Kind:
		p.Message, p.Entry = e.Msg, e.Entry
		if e.RetryAfter > 0 {
			p.RetryAfter = int(math.Ceil(e.RetryAfter.Seconds()))
		}
	case cancelled:
		// The request's context ended: the client went away, or the server is shutting down and
		// its drain timeout is over. Either way another try (on another replica) may succeed.
		p.Message = "the request was cancelled (the server may be shutting down); retry"
	case p.Kind == errs.Unavailable:
		p.Message = "a dependency is unavailable; retry later"
	default:
		p.Message = http.StatusText(p.Status)
	}
	if p.RetryAfter == 0 {
		switch p.Kind {
		case errs.Unavailable:
			p.RetryAfter = 5
		case errs.TooManyRequests:
			p.RetryAfter = 2
		}
	}
	return p
}

// Status maps an error kind to its HTTP status.
func Status(kind errs.Kind) int {
	switch kind {
	case errs.Invalid:
		return http.StatusUnprocessableEntity
	case errs.NotFound:
		return http.StatusNotFound
	case errs.Conflict:
		return http.StatusConflict
	case errs.Unauthenticated:
		return http.StatusUnauthorized
	case errs.Forbidden:
		return http.StatusForbidden
	case errs.TooLarge:
		return http.StatusRequestEntityTooLarge
	case errs.Unavailable:
		return http.StatusServiceUnavailable
	case errs.TooManyRequests:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}
