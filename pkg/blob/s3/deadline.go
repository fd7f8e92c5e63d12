package s3

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

// DefaultRequestTimeout bounds one HTTP request to S3, from sending it to reading the whole
// response. An 8 MiB part takes well under a second on a healthy link; two minutes leaves room for
// slow links while turning a hung S3 (a stopped process, a network partition) into an error, a
// 503 for the client, instead of an upload that holds its slot forever.
const DefaultRequestTimeout = 2 * time.Minute

// deadlineClient gives every request the SDK sends (every attempt of every operation) its own
// deadline. Writing a request body to a peer that stopped reading blocks without end, and no
// transport timeout covers it, so the deadline must be a context one. It lasts until the response
// body is closed, since GetObject's body is read after Do returns.
type deadlineClient struct {
	next    aws.HTTPClient
	timeout time.Duration
	// observe, when set, gets each request's time to its response headers (Config.ObserveRequest).
	observe func(operation string, d time.Duration)
}

func (d deadlineClient) Do(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), d.timeout)
	start := time.Now()
	r := req.WithContext(ctx)
	wholeBodyOf(r)
	resp, err := d.next.Do(r)
	if d.observe != nil {
		op := awsmiddleware.GetOperationName(req.Context())
		if op == "" {
			op = "other"
		}
		d.observe(op, time.Since(start))
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose releases a request's deadline once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
