// Package backgroundtest helps test a background component: run it, stop it, and fail when it
// does not stop.
package backgroundtest

import (
	"context"
	"testing"
	"time"

	"github.com/slipwayhq/slipway/pkg/background"
)

// StopTimeout is how long a stopped component may take to return from Run.
const StopTimeout = 10 * time.Second

// Run starts c.Run in a goroutine and returns a function that ends its context and returns what
// Run returned, failing the test when Run has not returned within StopTimeout.
func Run(t testing.TB, c background.Component) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return func() error {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(StopTimeout):
			t.Fatalf("%T did not return from Run within %s of its context ending", c, StopTimeout)
			return nil
		}
	}
}
