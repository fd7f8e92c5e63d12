package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/storage"
	"github.com/slipwayhq/slipway/pkg/store"
)

// statusOf maps an error kind to its HTTP status: the one place this mapping lives.
func statusOf(kind errs.Kind) int {
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

// classify returns err's kind, treating unreachable dependencies that were not wrapped as such
// (a dropped database connection, a refused storage connection) as Unavailable.
func classify(err error) errs.Kind {
	kind := errs.KindOf(err)
	if kind != errs.Internal {
		return kind
	}
	var netErr net.Error
	if store.IsUnavailable(err) || errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) {
		return errs.Unavailable
	}
	return errs.Internal
}

// fail renders err as {"error": ...} with the status of its kind and aborts the request. Internal
// errors are logged with the request id and shown to the client only as "internal error".
func (s *Server) fail(c *gin.Context, err error) {
	kind := classify(err)
	status := statusOf(kind)
	body := gin.H{}
	var e *errs.Error
	switch {
	case kind == errs.Internal:
		s.log.ErrorContext(c, "internal error", slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		body["error"] = "internal error"
		body["request_id"] = requestID(c)
	case errors.As(err, &e) && e.Kind == kind:
		body["error"] = e.Msg
		if len(e.Entry) > 0 {
			body["entry"] = e.Entry
		}
	case kind == errs.Unavailable:
		body["error"] = "a dependency is unavailable; retry later"
	default:
		body["error"] = http.StatusText(status)
	}
	switch kind {
	case errs.Unavailable:
		s.log.WarnContext(c, "dependency unavailable", slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		if s.metrics != nil {
			s.metrics.Unavailable.Inc()
		}
		c.Header("Retry-After", "5")
	case errs.TooManyRequests:
		c.Header("Retry-After", "2")
	case errs.Unauthenticated:
		c.Header("WWW-Authenticate", `Token realm="slipway"`)
	}
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(status, body)
}

func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
