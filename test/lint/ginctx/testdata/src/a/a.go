package a

import (
	"context"
	"log/slog"

	"github.com/gin-gonic/gin"
)

type service struct{}

func (service) Get(ctx context.Context, id int64) error    { return nil }
func (service) Many(ctx context.Context, ids ...any) error { return nil }
func (service) Contexts(ctxs ...context.Context) error     { return nil }
func (service) Name(name string, v any) error              { return nil }

type job struct{ ctx context.Context }

func handler(c *gin.Context, s service, log *slog.Logger) context.Context {
	_ = s.Get(c, 1)                        // want `a \*gin.Context is used as a context.Context`
	_ = s.Get(c.Request.Context(), 1)      // fine
	_ = s.Many(c, c)                       // want `a \*gin.Context is used`
	_ = s.Contexts(c.Request.Context(), c) // want `a \*gin.Context is used`
	_ = s.Name("c", c)                     // fine: not a context parameter
	log.InfoContext(c, "hi")               // want `a \*gin.Context is used`
	var ctx context.Context = c            // want `a \*gin.Context is used`
	ctx = c                                // want `a \*gin.Context is used`
	_ = context.Context(c)                 // want `a \*gin.Context is used`
	_ = job{ctx: c}                        // want `a \*gin.Context is used`
	_ = job{c}                             // want `a \*gin.Context is used`
	_ = ctx
	go func() context.Context {
		return c // want `a \*gin.Context is used`
	}()
	return c // want `a \*gin.Context is used`
}

func notAHandler(ctx context.Context, s service) error { return s.Get(ctx, 2) }
