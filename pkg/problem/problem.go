// Package problem decides what an HTTP client sees of an error: its status, message, validation
// entry and Retry-After. It is the one place an errs.Kind becomes a status; the JSON API
// (httpapi) and the pages (web) both render from it.
package problem

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/slipwayhq/slipway/pkg/errs"
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

// Describe classifies err. Errors get their kind where they arise (the store, the storage
// backends, the domain's rules); what is left unclassified and still means "could not reach it"
// (a network error, a timeout) or a cancelled request counts as Unavailable.
func Describe(err error) Problem {
	p := Problem{Kind: errs.KindOf(err)}
	cancelled := false
	if p.Kind == errs.Internal {
		var netErr net.Error
		cancelled = errors.Is(err, context.Canceled)
		if cancelled || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
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
	case errs.Unsupported:
		return http.StatusUnsupportedMediaType
	default:
		return http.StatusInternalServerError
	}
}

// CheckRequestText refuses a request whose path or query holds a NUL byte or invalid UTF-8
// (errs.Invalid, so 422): such a value could only ever reach the database as an error. The API
// and the pages both call it before their handlers, and render its error their own way.
func CheckRequestText(r *http.Request) error {
	if !CleanText(r.URL.Path) {
		return errs.Invalidf("the path holds a NUL byte or invalid UTF-8")
	}
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			if !CleanText(k) || !CleanText(v) {
				return errs.Field(SafeName(k), "holds a NUL byte or invalid UTF-8")
			}
		}
	}
	return nil
}

// CleanText reports whether s is valid UTF-8 without NUL bytes.
func CleanText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// SafeName is a parameter name fit to echo in an error: no NUL, valid UTF-8, at most 60 bytes,
// "query" when nothing is left.
func SafeName(name string) string {
	name = strings.ReplaceAll(name, "\x00", "")
	if len(name) > 60 {
		name = name[:60]
	}
	if name = strings.ToValidUTF8(name, ""); name == "" {
		return "query"
	}
	return name
}
