package uploader

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// DefaultMaxAttempts is how many times an upload is sent, at most, when the server is busy.
const DefaultMaxAttempts = 6

// Waits between attempts: doubling from firstRetryWait up to maxRetryWait, or the server's
// Retry-After when it asks for longer (bounded by maxRetryWait too).
const (
	firstRetryWait = 2 * time.Second
	maxRetryWait   = 2 * time.Minute
)

// retry runs send until it succeeds, fails for good, or MaxAttempts are spent. A busy or
// restarting server (429, 502, 503, 504) is always worth another try: it recorded nothing. A
// connection that failed before an answer is retried only when idempotent is set, as the server
// may have recorded the upload before the connection broke: the Idempotency-Key then makes the
// retry return that release instead of a second one.
func (c *Client) retry(ctx context.Context, idempotent bool, send func() error) error {
	attempts := or(c.MaxAttempts, DefaultMaxAttempts)
	wait := firstRetryWait
	for attempt := 1; ; attempt++ {
		err := send()
		if err == nil || attempt >= attempts || !retryable(err, idempotent) || ctx.Err() != nil {
			return err
		}
		d := wait
		var api *APIError
		if errors.As(err, &api) && api.RetryAfter > d {
			d = api.RetryAfter
		}
		d = min(d, maxRetryWait)
		if c.OnRetry != nil {
			c.OnRetry(attempt+1, d, err)
		}
		sleep := c.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if serr := sleep(ctx, d); serr != nil {
			return err
		}
		wait = min(wait*2, maxRetryWait)
	}
}

func retryable(err error, idempotent bool) bool {
	var api *APIError
	if errors.As(err, &api) {
		switch api.Status {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true // nothing reached the server
	}
	var opErr *net.OpError
	return idempotent && (errors.As(err, &opErr) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrStalled))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newIdempotencyKey returns a random key for one upload's attempts.
func newIdempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "slipway-cli-" + hex.EncodeToString(b)
}
