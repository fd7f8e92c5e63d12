// Package errs is Slipway's one error type: an error carrying a Kind, which the HTTP layer maps to
// a status code in exactly one place (httpapi). Domain packages (parsers, use cases, stores) return
// *Error for conditions a client can act on; anything else is treated as internal.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies an error by what the caller can do about it.
type Kind int

const (
	// Internal is a bug or an unexpected failure; clients see "internal error" and a request id.
	Internal Kind = iota
	// Invalid is bad input: a missing or malformed parameter, an unparseable package (422).
	Invalid
	// NotFound is an unknown app, channel, release or debug file (404).
	NotFound
	// Conflict is a duplicate, such as the same debug file uploaded twice (409).
	Conflict
	// Unauthenticated is a missing or wrong token (401).
	Unauthenticated
	// Forbidden is a valid token whose scope does not allow the operation (403).
	Forbidden
	// TooLarge is a body over the configured limit (413).
	TooLarge
	// Unavailable is a dependency (database, object storage) that cannot be reached (503).
	Unavailable
	// TooManyRequests is a request refused because the replica is at capacity (429).
	TooManyRequests
	// Unsupported is a body of a media type the endpoint does not take (415).
	Unsupported
)

// Error is an error with a Kind and a message safe to show to clients.
type Error struct {
	Kind Kind
	// Msg is shown to the client as is: it must not contain secrets, SQL or storage keys.
	Msg string
	// Entry optionally names invalid fields and what is wrong with each (validation errors).
	Entry map[string][]string
	// Err is the underlying cause, logged but never shown to clients.
	Err error
	// RetryAfter tells a client when to try again (TooManyRequests, Unavailable); 0 for a default.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error of the given kind with a formatted message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of the given kind with a client-safe message and a hidden cause.
func Wrap(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// Invalidf is shorthand for New(Invalid, ...), the most common error of parsers.
func Invalidf(format string, args ...any) *Error { return New(Invalid, format, args...) }

// Field returns an Invalid error naming one form field, rendered with an "entry" object.
func Field(field, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{Kind: Invalid, Msg: field + " " + msg, Entry: map[string][]string{field: {msg}}}
}

// KindOf returns the Kind of the first *Error in err's chain, or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err carries the given kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }

// AsError returns the first *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
