package httpapi

import (
	"log/slog"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/problem"
)

// fail renders err as {"error": ...} with the status of its kind (httperr) and aborts the
// request. Internal errors are logged with the request id and shown to the client only as
// "internal error" with that id.
func (s *Server) fail(c *gin.Context, err error) {
	ctx := reqCtx(c)
	p := problem.Describe(err)
	body := gin.H{"error": p.Message}
	if len(p.Entry) > 0 {
		body["entry"] = p.Entry
	}
	switch p.Kind {
	case errs.Internal:
		s.log.ErrorContext(ctx, "internal error", slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		body["request_id"] = requestID(c)
	case errs.Unavailable:
		s.log.WarnContext(ctx, "dependency unavailable", slog.String("request_id", requestID(c)), slog.String("error", err.Error()))
		if s.metrics != nil {
			s.metrics.Unavailable.Inc()
		}
	case errs.Unauthenticated:
		if c.Writer.Header().Get("WWW-Authenticate") == "" { // the repositories challenge for Basic (repos.go)
			c.Header("WWW-Authenticate", `Token realm="slipway"`)
		}
	}
	if p.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(p.Status, body)
}
