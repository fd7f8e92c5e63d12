package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/formdata"
	"github.com/slipwayhq/slipway/pkg/problem"
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

// uploadBody is an upload's body as the server reads it. Each read moves the connection's read
// deadline forward by idle, so a client may take as long as it needs in all but may not stall for
// more than idle at a time; and once the upload holds a slot (admitted), each span of idle after
// its first must bring minRate bytes per second on average, so a trickle cannot hold a slot for
// hours (16 connections sending a byte every 30 s would hold every slot of a replica).
type uploadBody struct {
	rc      io.ReadCloser
	ctl     interface{ SetReadDeadline(time.Time) error }
	idle    time.Duration
	minRate int64
	now     func() time.Time
	// window is the start of the span being measured (zero until admitted), and got the bytes
	// read since it began.
	window time.Time
	got    int64
	cut    func(rate int64) // logs the cut
}

// uploadBody wraps c's request body for an upload or a part.
func (s *Server) uploadBody(c *gin.Context) *uploadBody {
	ctx, id := reqCtx(c), requestID(c)
	return &uploadBody{rc: c.Request.Body, ctl: http.NewResponseController(c.Writer), idle: s.cfg.UploadIdleTimeout,
		minRate: s.cfg.UploadMinRate, now: time.Now, cut: func(rate int64) {
			s.log.WarnContext(ctx, "upload cut: it arrived slower than the minimum rate", slog.String("request_id", id),
				slog.Int64("bytes_per_second", rate), slog.Int64("minimum", s.cfg.UploadMinRate))
		}}
}

// admitted starts the minimum-rate clock: the upload has its slot, and a span of idle as grace.
func (b *uploadBody) admitted() { b.window = b.now().Add(b.idle) }

func (b *uploadBody) Read(p []byte) (int, error) {
	_ = b.ctl.SetReadDeadline(b.now().Add(b.idle))
	n, err := b.rc.Read(p)
	if b.minRate <= 0 || b.window.IsZero() {
		return n, err
	}
	now := b.now()
	if now.Before(b.window) { // the grace
		return n, err
	}
	b.got += int64(n)
	if span := now.Sub(b.window); span >= b.idle {
		if rate := b.got * int64(time.Second) / int64(span); rate < b.minRate {
			b.cut(rate)
			return n, errs.New(errs.Invalid, "the upload arrived at %d bytes per second, slower than this server's minimum of %d; retry on a faster link, or use an upload session (slipway upload)", rate, b.minRate)
		}
		b.window, b.got = now, 0
	}
	return n, err
}

func (b *uploadBody) Close() error { return b.rc.Close() }

// uploadForm is a multipart upload being read: the fields read so far, the token, and the reader,
// positioned after the last part read. The upload wrapper opens it and reads until the token;
// the endpoint reads the rest once the upload has its slot.
type uploadForm struct {
	body       *uploadBody
	mr         *formdata.Reader
	fields     map[string]string
	fieldBytes int
	token      *distribution.Token
}

const uploadFormKey = "slipway.upload_form"

// preAuthBytes bounds the form fields read before the token: every Zealot client sends the token
// first (fastlane's plugin, the Gradle plugins, upload scripts) or in a header.
const preAuthBytes = 64 << 10

// errTokenAfterFile is the answer to an upload whose file comes before any credential.
var errTokenAfterFile = errs.New(errs.Unauthenticated, "send your token before the file: in the Authorization header "+
	"(Authorization: Token ...), the token query parameter, or a token form field placed before the file field")

// openUpload checks an upload's headers and finds its token, before it waits for a slot and
// before a byte of its file is stored (an upload without a token once took a slot and
// streamed 1.8 GB into storage before its 401): a request that is not a multipart form, is over
// the limit, or has no valid token before its file is refused at once. A token in the header or
// query is checked without reading the body; otherwise the form is read up to its token field,
// at most preAuthBytes of it.
func (s *Server) openUpload(c *gin.Context) (*uploadForm, error) {
	ctx := reqCtx(c)
	r := c.Request
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return nil, errs.Invalidf("send the upload as multipart/form-data with the file in a \"file\" field")
	}
	limit := s.cfg.MaxUploadBytes + maxFormFieldBytes
	if r.ContentLength > limit {
		return nil, errs.New(errs.TooLarge, "the upload is larger than the %d-byte limit", s.cfg.MaxUploadBytes)
	}
	f := &uploadForm{fields: map[string]string{}}
	if secret := headerOrQueryToken(c); secret != "" {
		if f.token, err = s.svc.Tokens.Authenticate(ctx, secret); err != nil {
			return nil, err
		}
	}
	// r.Body itself is left as the server gave it: when the answer comes before the whole body
	// (413, 503), net/http recognises its own body type, reads a little more and half-closes the
	// connection before closing it, so the client reads the answer instead of a reset.
	f.body = s.uploadBody(c)
	// formdata reads the file part's bytes from the body straight into the storage's buffers
	// (8 MiB parts, 1 MiB file writes), in reads as large as the socket has data for.
	f.mr = formdata.NewReader(http.MaxBytesReader(c.Writer, f.body, limit), params["boundary"])
	for f.token == nil {
		part, err := f.mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errs.New(errs.Unauthenticated, "no token: send it in the Authorization header (Authorization: Token ...) or a token form field")
		}
		if err != nil {
			return nil, s.formError(err)
		}
		name := part.FormName()
		switch {
		case name == "":
			// Not a form field: skipped, but its bytes count against the bound on what is read
			// before the token, as a field's do (else a nameless part could stream gigabytes).
			n, err := io.Copy(io.Discard, io.LimitReader(part, int64(preAuthBytes-f.fieldBytes+1)))
			if err != nil {
				return nil, s.formError(err)
			}
			if f.fieldBytes += int(n); f.fieldBytes > preAuthBytes {
				return nil, errs.New(errs.Unauthenticated, "no token in the form's first %d bytes: send it in the Authorization header or as the form's first field", preAuthBytes)
			}
		case name == "file" || part.FileName() != "":
			return nil, errTokenAfterFile
		default:
			if err := f.readField(name, part); err != nil {
				return nil, err
			}
			if f.fieldBytes > preAuthBytes {
				return nil, errs.New(errs.Unauthenticated, "no token in the form's first %d bytes: send it in the Authorization header or as the form's first field", preAuthBytes)
			}
			if name == "token" {
				if f.token, err = s.svc.Tokens.Authenticate(ctx, f.fields["token"]); err != nil {
					return nil, err
				}
			}
		}
		part.Close()
	}
	c.Set(uploadFormKey, f)
	c.Request = c.Request.WithContext(distribution.WithActor(c.Request.Context(), distribution.TokenActor(f.token)))
	return f, nil
}

// readField reads a form field (bounded) into f.fields; the first value of a name wins.
func (f *uploadForm) readField(name string, part *formdata.Part) error {
	v, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
	if err != nil {
		return formErrorOf(err)
	}
	if len(v) > maxFieldBytes {
		return errs.Field(name, "is longer than %d bytes", maxFieldBytes)
	}
	if f.fieldBytes += len(v); f.fieldBytes > maxFormFieldBytes {
		return errs.New(errs.TooLarge, "the form fields are larger than %d bytes in all", maxFormFieldBytes)
	}
	if !problem.CleanText(name) || !problem.CleanText(string(v)) {
		return errs.Field(problem.SafeName(name), "holds a NUL byte or invalid UTF-8")
	}
	if _, seen := f.fields[name]; !seen {
		f.fields[name] = string(v)
	}
	return nil
}

// formError explains why the multipart body could not be read.
func (s *Server) formError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errs.New(errs.TooLarge, "the upload is larger than the %d-byte limit", s.cfg.MaxUploadBytes)
	}
	return formErrorOf(err)
}

func formErrorOf(err error) error {
	if e, ok := errs.AsError(err); ok { // the body explains itself (too slow)
		return e
	}
	return errs.Wrap(errs.Invalid, err, "the multipart body is malformed or cut short")
}

// readUpload reads the rest of an upload the wrapper opened (openUpload): fields are read
// (bounded) in whatever order they come, and the one file part ("file") goes straight into
// storage as it arrives, under prefix.
func (s *Server) readUpload(c *gin.Context, prefix string) (*multipartUpload, error) {
	ctx := reqCtx(c)
	const fileField = "file"
	v, _ := c.Get(uploadFormKey)
	f := v.(*uploadForm)
	up := &multipartUpload{fields: f.fields, token: f.token}
	fail := func(err error) (*multipartUpload, error) {
		if up.file != nil {
			s.svc.Objects.Discard(ctx, up.file.Key)
		}
		return nil, err
	}
	for {
		part, err := f.mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(s.formError(err))
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
			if err := f.readField(name, part); err != nil {
				return fail(err)
			}
		}
		part.Close()
	}
	if up.file == nil {
		return nil, errs.Field(fileField, "is required: attach the file in a %q form field", fileField)
	}
	return up, nil
}

// upload wraps an upload endpoint: it checks the headers and the token (openUpload), waits for
// one of the replica's upload slots (uploadGate: 429 only when the line is full or the wait too
// long), times the upload by outcome, and renders the error handle returns.
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
				s.metrics.UploadDuration.WithLabelValues(kind, outcome, "request").Observe(time.Since(start).Seconds())
			}
		}()
		f, err := s.openUpload(c)
		if err != nil {
			return err
		}
		err = func() error {
			release, err := s.gate.enter(ctx, f.token.ID)
			if err != nil {
				return err
			}
			defer release()
			f.body.admitted()
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

// drainBody reads and drops what is left of the request's body (c.Request.Body, the server's,
// so past any limit a handler read it through) after an upload failed for a reason that is not
// the client's (storage or database unavailable), outside the upload slot, or a feedback report
// was refused. Most clients (Ruby's
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
	if rc.News != nil {
		if w := s.aptReplaces(ctx, rc); w != "" {
			rc.News.Warnings = append(rc.News.Warnings, w)
		}
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
