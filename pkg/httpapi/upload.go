package httpapi

import (
	"bufio"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/httperr"
)

// Bounds on the non-file fields of an upload form.
const (
	maxFieldBytes     = 1 << 20 // changelog and custom_fields may be long
	maxFormFieldBytes = 4 << 20 // all fields together
)

// multipartUpload is a streamed multipart upload: its fields, and its file already in storage.
type multipartUpload struct {
	fields map[string]string
	file   *uploads.StoredObject
	token  *distribution.Token
}

// idleBody moves the connection's read deadline forward before every read of an upload body, so
// a client may take as long as it needs in all but may not stall for more than idle at a time.
type idleBody struct {
	rc   io.ReadCloser
	ctl  *http.ResponseController
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	return b.rc.Read(p)
}

func (b *idleBody) Close() error { return b.rc.Close() }

// uploadHeaders is what an upload's headers tell, checked before it waits for a slot: a request
// that is not a multipart form, is over the limit, or carries a wrong token in its header is
// refused at once rather than after waiting in line.
type uploadHeaders struct {
	boundary string
	limit    int64
	// token is the token from the header or query, nil when the form carries it.
	token *distribution.Token
}

const uploadHeadersKey = "slipway.upload_headers"

func (s *Server) checkUploadHeaders(c *gin.Context) (*uploadHeaders, error) {
	ctx := reqCtx(c)
	r := c.Request
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return nil, errs.Invalidf("send the upload as multipart/form-data with the file in a \"file\" field")
	}
	h := &uploadHeaders{boundary: params["boundary"], limit: s.cfg.MaxUploadBytes + maxFormFieldBytes}
	if r.ContentLength > h.limit {
		return nil, errs.New(errs.TooLarge, "the upload is larger than the %d-byte limit", s.cfg.MaxUploadBytes)
	}
	if secret := headerOrQueryToken(c); secret != "" {
		if h.token, err = s.svc.Tokens.Authenticate(ctx, secret, distribution.ScopeUpload); err != nil {
			return nil, err
		}
	}
	c.Set(uploadHeadersKey, h)
	return h, nil
}

// readUpload streams a multipart upload: fields are read (bounded) in whatever order they come,
// and the one file part ("file") goes straight into storage as it arrives, under prefix. A token
// in the header or query was checked before the body is read (checkUploadHeaders); one in the
// form is checked when the form has been read, and the file is discarded if it is wrong.
func (s *Server) readUpload(c *gin.Context, prefix string) (*multipartUpload, error) {
	ctx := reqCtx(c)
	const fileField = "file"
	r := c.Request
	v, _ := c.Get(uploadHeadersKey)
	h := v.(*uploadHeaders)
	up := &multipartUpload{fields: map[string]string{}, token: h.token}
	var err error
	// r.Body itself is left as the server gave it: when the answer comes before the whole body
	// (413, 503), net/http recognises its own body type, reads a little more and half-closes the
	// connection before closing it, so the client reads the answer instead of a reset.
	body := http.MaxBytesReader(c.Writer, &idleBody{rc: r.Body, ctl: http.NewResponseController(c.Writer), idle: s.cfg.UploadIdleTimeout}, h.limit)
	// mime/multipart reads through a 4 KiB buffer unless handed a larger bufio.Reader: 256 KiB
	// cuts the read syscalls (and read-deadline moves) of a 256 MiB upload from ~65,000 to ~1,000.
	mr := multipart.NewReader(bufio.NewReaderSize(body, 256<<10), h.boundary)
	fieldBytes := 0
	fail := func(err error) (*multipartUpload, error) {
		if up.file != nil {
			s.svc.Objects.Discard(ctx, up.file.Key)
		}
		return nil, err
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return fail(errs.New(errs.TooLarge, "the upload is larger than the %d-byte limit", s.cfg.MaxUploadBytes))
			}
			return fail(errs.Wrap(errs.Invalid, err, "the multipart body is malformed or cut short"))
		}
		name := part.FormName()
		switch {
		case name == fileField:
			if up.file != nil {
				return fail(errs.Field(fileField, "must be sent once"))
			}
			up.file, err = s.svc.Objects.StoreUpload(ctx, prefix, part, part.FileName())
			if err != nil {
				return fail(err)
			}
		case name == "":
			// Not a form field: skip it.
		default:
			v, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
			if err != nil {
				return fail(errs.Wrap(errs.Invalid, err, "the multipart body is malformed or cut short"))
			}
			if len(v) > maxFieldBytes {
				return fail(errs.Field(name, "is longer than %d bytes", maxFieldBytes))
			}
			if fieldBytes += len(v); fieldBytes > maxFormFieldBytes {
				return fail(errs.New(errs.TooLarge, "the form fields are larger than %d bytes in all", maxFormFieldBytes))
			}
			if !httperr.CleanText(name) || !httperr.CleanText(string(v)) {
				return fail(errs.Field(httperr.SafeName(name), "holds a NUL byte or invalid UTF-8"))
			}
			if _, seen := up.fields[name]; !seen {
				up.fields[name] = string(v)
			}
		}
		part.Close()
	}
	if up.token == nil {
		if up.token, err = s.svc.Tokens.Authenticate(ctx, up.fields["token"], distribution.ScopeUpload); err != nil {
			return fail(err)
		}
	}
	if up.file == nil {
		return nil, errs.Field(fileField, "is required: attach the file in a %q form field", fileField)
	}
	return up, nil
}

// upload wraps an upload endpoint: it checks the headers, waits for one of the replica's upload
// slots (uploadGate: 429 only when the line is full or the wait too long), times the upload by
// outcome, and renders the error handle returns.
func (s *Server) upload(kind string, handle func(c *gin.Context) error) gin.HandlerFunc {
	return s.handle(func(c *gin.Context) (err error) {
		ctx := reqCtx(c)
		start := time.Now()
		defer func() {
			if s.metrics != nil {
				outcome := "ok"
				if err != nil {
					outcome = rejectedOrFailed(err)
				}
				s.metrics.UploadDuration.WithLabelValues(kind, outcome).Observe(time.Since(start).Seconds())
			}
		}()
		if _, err := s.checkUploadHeaders(c); err != nil {
			return err
		}
		err = func() error {
			release, err := s.gate.enter(ctx)
			if err != nil {
				return err
			}
			defer release()
			return handle(c)
		}()
		if k := errs.KindOf(err); err != nil && (k == errs.Unavailable || k == errs.Internal) {
			drainBody(c)
		}
		return err
	})
}

// Bounds of drainBody: long enough for a client on a fair link to finish sending, short enough
// that a client with gigabytes left cannot hold the connection.
const (
	drainTime  = 10 * time.Second
	drainBytes = 1 << 30
)

// drainBody reads and drops what is left of an upload's body after a failure that is not the
// client's (storage or database unavailable), outside the upload slot. Most clients (Ruby's
// net/http in fastlane, Go's, curl) write the whole body before reading the answer: closing with
// unread bytes makes the kernel reset the connection, and the reset can destroy the 503 before
// the client reads it. Reading on (RFC 9112, section 9.6) lets the client see the answer.
func drainBody(c *gin.Context) {
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(drainTime))
	_, _ = io.CopyN(io.Discard, c.Request.Body, drainBytes)
}

// uploadApp: POST /api/apps/upload → 201 with the full Release.
func (s *Server) uploadApp(c *gin.Context) error {
	ctx := reqCtx(c)
	idem := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if len(idem) > 255 {
		return errs.Field("Idempotency-Key", "must be at most 255 characters")
	}
	up, err := s.readUpload(c, uploads.PackagePrefix)
	if err != nil {
		return err
	}
	form := uploads.ReleaseFormOf(up.fields)
	rc, err := s.svc.Builds.CreateRelease(ctx, up.file, form, up.token.ID, idem)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, s.fullRelease(rc))
	return nil
}

func rejectedOrFailed(err error) string {
	switch errs.KindOf(err) {
	case errs.Internal, errs.Unavailable:
		return "failed"
	}
	return "rejected"
}
