// Package gin stands in for github.com/gin-gonic/gin in the analyzer's tests.
package gin

import (
	"context"
	"net/http"
	"time"
)

// Context is gin's pooled request context.
type Context struct{ Request *http.Request }

func (c *Context) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *Context) Done() <-chan struct{}       { return nil }
func (c *Context) Err() error                  { return nil }
func (c *Context) Value(any) any               { return nil }

var _ context.Context = (*Context)(nil)
