package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
)

// Most endpoints have one shape: read their input from the request (a path id, a page, the fields
// sent), call one use case with it, and answer with the result's view. The helpers below are that
// shape, so such an endpoint says only what it reads, which use case it calls and how it answers:
//
//	return respond(c, http.StatusOK, pathID, s.svc.Apps.App, newAppView)
//
// Endpoints that do more (check a second thing, choose a status, set a header) are written out.

// reader reads an endpoint's input from its request; a bad input is the request's error (422).
type reader[T any] func(*gin.Context) (T, error)

// respond reads the input, calls the use case with it, and answers status with the view of what
// it returned.
func respond[In, Out, V any](c *gin.Context, status int, read reader[In], call func(context.Context, In) (Out, error), view func(Out) V) error {
	in, err := read(c)
	if err != nil {
		return err
	}
	out, err := call(reqCtx(c), in)
	if err != nil {
		return err
	}
	c.JSON(status, view(out))
	return nil
}

// respond2 is respond for a use case of two inputs (a path id and the fields sent), read in order.
func respond2[In1, In2, Out, V any](c *gin.Context, status int, read1 reader[In1], read2 reader[In2],
	call func(context.Context, In1, In2) (Out, error), view func(Out) V) error {
	in1, err := read1(c)
	if err != nil {
		return err
	}
	return respond(c, status, read2, func(ctx context.Context, in2 In2) (Out, error) { return call(ctx, in1, in2) }, view)
}

// respondDeleted reads what to delete, deletes it, and answers 200 with Zealot's {"mesage": "OK"}.
func respondDeleted[In any](c *gin.Context, read reader[In], del func(context.Context, In) error) error {
	in, err := read(c)
	if err != nil {
		return err
	}
	if err := del(reqCtx(c), in); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}

// each is the view of a list, made of the view of one item (a JSON array, [] when empty).
func each[T, V any](view func(*T) V) func([]T) []V {
	return func(items []T) []V {
		out := make([]V, 0, len(items))
		for i := range items {
			out = append(out, view(&items[i]))
		}
		return out
	}
}

// pathParam reads a path parameter as it is (the use case checks it).
func pathParam(name string) reader[string] {
	return func(c *gin.Context) (string, error) { return c.Param(name), nil }
}
