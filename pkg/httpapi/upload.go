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
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/store"
)

// Bounds on the non-file fields of an upload form.
const (
	maxFieldBytes     = 1 << 20 // changelog and custom_fields may be long
	maxFormFieldBytes = 4 << 20 // all fields together
)

// multipartUpload is a streamed multipart upload: its fields, and its file already in storage.
type multipartUpload struct {
	fields map[string]string
	file   *distribution.StoredObject
	token  *store.Token
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

// acquireUploadSlot bounds concurrent uploads per replica, so memory stays bounded: beyond the
// cap the client gets 429 with Retry-After. It returns the release function.
func (s *Server) acquireUploadSlot() (func(), error) {
	select {
	case s.uploadSlots <- struct{}{}:
		if s.metrics != nil {
			s.metrics.UploadsActive.Inc()
		}
		return func() {
			<-s.uploadSlots
			if s.metrics != nil {
				s.metrics.UploadsActive.Dec()
			}
		}, nil
	default:
		return nil, errs.New(errs.TooManyRequests, "this server is receiving its maximum of %d uploads; retry shortly", cap(s.uploadSlots))
	}
}

// readUpload streams a multipart upload: fields are read (bounded) in whatever order they come,
// and the one file part (fileField) goes straight into storage as it arrives, under prefix. A
// token in the header or query is checked before the body is read; one in the form is checked
// when the form has been read, and the file is discarded if it is wrong.
func (s *Server) readUpload(c *gin.Context, fileField, prefix, scope string) (*multipartUpload, error) {
	r := c.Request
	mediaType, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return nil, errs.Invalidf("send the upload as multipart/form-data with the file in a %q field", fileField)
	}
	limit := s.cfg.MaxUploadBytes + maxFormFieldBytes
	if r.ContentLength > limit {
		return nil, errs.New(errs.TooLarge, "the upload is larger than the %d-byte limit", s.cfg.MaxUploadBytes)
	}
	up := &multipartUpload{fields: map[string]string{}}
	if secret := headerOrQueryToken(c); secret != "" {
		if up.token, err = s.authenticate(c, secret, scope); err != nil {
			return nil, err
		}
	}
	// r.Body itself is left as the server gave it: when the answer comes before the whole body
	// (413, 503), net/http recognises its own body type, reads a little more and half-closes the
	// connection before closing it, so the client reads the answer instead of a reset.
	body := http.MaxBytesReader(c.Writer, &idleBody{rc: r.Body, ctl: http.NewResponseController(c.Writer), idle: s.cfg.UploadIdleTimeout}, limit)
	// mime/multipart reads through a 4 KiB buffer unless handed a larger bufio.Reader: 256 KiB
	// cuts the read syscalls (and read-deadline moves) of a 256 MiB upload from ~65,000 to ~1,000.
	mr := multipart.NewReader(bufio.NewReaderSize(body, 256<<10), params["boundary"])
	fieldBytes := 0
	fail := func(err error) (*multipartUpload, error) {
		if up.file != nil {
			s.svc.Discard(c, up.file.Key)
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
			up.file, err = s.svc.StoreUpload(c, prefix, part, part.FileName())
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
			if _, seen := up.fields[name]; !seen {
				up.fields[name] = string(v)
			}
		}
		part.Close()
	}
	if up.token == nil {
		if up.token, err = s.authenticate(c, up.fields["token"], scope); err != nil {
			return fail(err)
		}
	}
	if up.file == nil {
		return nil, errs.Field(fileField, "is required: attach the file in a %q form field", fileField)
	}
	return up, nil
}

// upload wraps an upload endpoint: it takes one of the replica's upload slots (429 beyond the
// cap), times the upload by outcome, and renders the error handle returns.
func (s *Server) upload(kind string, handle func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		release, err := s.acquireUploadSlot()
		if err == nil {
			err = handle(c)
			release()
		}
		outcome := "ok"
		if err != nil {
			outcome = rejectedOrFailed(err)
			s.fail(c, err)
		}
		if s.metrics != nil {
			s.metrics.UploadDuration.WithLabelValues(kind, outcome).Observe(time.Since(start).Seconds())
		}
	}
}

// uploadApp: POST /api/apps/upload → 201 with the full Release.
func (s *Server) uploadApp(c *gin.Context) error {
	idem := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if len(idem) > 255 {
		return errs.Field("Idempotency-Key", "must be at most 255 characters")
	}
	up, err := s.readUpload(c, "file", "packages", store.ScopeUpload)
	if err != nil {
		return err
	}
	f := up.fields
	form := distribution.ReleaseForm{
		ChannelKey: f["channel_key"], Name: f["name"], ReleaseType: f["release_type"], Source: f["source"],
		Changelog: f["changelog"], Branch: f["branch"], GitCommit: f["git_commit"], CIURL: f["ci_url"],
		CustomFields: f["custom_fields"], Password: f["password"],
		ReleaseVersion: f["release_version"], BuildVersion: f["build_version"], BundleID: f["bundle_id"],
	}
	rc, err := s.svc.CreateRelease(c, up.file, form, up.token.ID, idem)
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
