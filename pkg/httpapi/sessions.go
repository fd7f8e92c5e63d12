package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Resumable upload sessions (distribution/sessions.go): POST /api/uploads starts one, the client
// PUTs the parts where the answer says, GET shows what is done, POST .../complete records the
// release, DELETE aborts.

// sessionFields are the form fields a session keeps for its completion: the upload's.
var sessionFields = []string{"channel_key", "name", "release_type", "source", "changelog", "branch", "git_commit", "ci_url",
	"custom_fields", "password", "release_version", "build_version", "bundle_id", "ed_signature", "tauri_signature", "rollout", "critical",
	"testers", "groups", "notify", "allow_other_bundle_id"}

type sessionPartView struct {
	Number int    `json:"number"`
	Size   int64  `json:"size"`
	Done   bool   `json:"done"`
	URL    string `json:"url,omitempty"`
}

type sessionView struct {
	ID        string            `json:"id"`
	Kind      string            `json:"kind"`
	Filename  string            `json:"filename"`
	Size      int64             `json:"size"`
	SHA256    string            `json:"sha256"`
	PartSize  int64             `json:"part_size"`
	State     string            `json:"state"`
	ExpiresAt string            `json:"expires_at"`
	CreatedAt string            `json:"created_at"`
	Parts     []sessionPartView `json:"parts"`
	ResultID  *int64            `json:"result_id"`
	Error     *string           `json:"error"`
}

func (s *Server) sessionView(sess *distribution.UploadSession, parts []uploads.SessionPart) sessionView {
	v := sessionView{ID: sess.ID, Kind: sess.Kind, Filename: sess.Filename, Size: sess.Size, SHA256: sess.SHA256, PartSize: sess.PartSize,
		State: sess.State, ExpiresAt: s.timestamp(sess.ExpiresAt), CreatedAt: s.timestamp(sess.CreatedAt), Parts: make([]sessionPartView, len(parts))}
	for i, p := range parts {
		v.Parts[i] = sessionPartView(p)
	}
	if sess.ResultID != 0 {
		v.ResultID = &sess.ResultID
	}
	if sess.Error != "" {
		v.Error = &sess.Error
	}
	return v
}

// startSession: POST /api/uploads (kind, filename, size, sha256 and the upload's fields) → 201.
func (s *Server) startSession(c *gin.Context) error {
	ctx := reqCtx(c)
	var req struct {
		Kind     string `param:"kind"`
		Filename string `param:"filename"`
		SHA256   string `param:"sha256"`
		Size     *int   `param:"size"`
	}
	if err := bind(c, &req); err != nil {
		return err
	}
	if req.Size == nil {
		return errs.Field("size", "is required: the file's size in bytes")
	}
	in := uploads.NewSession{Kind: req.Kind, Filename: req.Filename, SHA256: req.SHA256, Size: int64(*req.Size), Fields: map[string]string{}}
	// The upload's own fields (those of a proxied upload's form) pass through by name.
	p, err := readParams(c)
	if err != nil {
		return err
	}
	for _, name := range sessionFields {
		v, err := p.optJSONText(name)
		if err != nil {
			return err
		}
		if v != nil {
			in.Fields[name] = *v
		}
	}
	sess, parts, err := s.svc.Sessions.StartSession(ctx, in)
	if err != nil {
		return err
	}
	c.JSON(http.StatusCreated, s.sessionView(sess, parts))
	return nil
}

// getSession: GET /api/uploads/:id, with the parts done and where to put the others.
func (s *Server) getSession(c *gin.Context) error {
	ctx := reqCtx(c)
	sess, parts, err := s.svc.Sessions.Session(ctx, c.Param("session"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.sessionView(sess, parts))
	return nil
}

// putPart: PUT /api/uploads/:id/parts/:n?t=SIGNATURE, a part of a session on a backend that
// takes parts itself (filesystem). The signature in the URL is the credential, as a presigned S3
// URL's is. The body streams to storage; it waits for an upload slot like any upload.
func (s *Server) putPart(c *gin.Context) error {
	ctx := reqCtx(c)
	n, err := strconv.Atoi(c.Param("part"))
	if err != nil {
		return errs.Field("part", "must be a part number")
	}
	if c.Request.ContentLength < 0 {
		return errs.New(errs.Invalid, "send the part with a Content-Length")
	}
	sess, err := s.svc.Sessions.CheckPart(ctx, c.Param("session"), n, c.Query("t"), c.Request.ContentLength)
	if err != nil {
		return err
	}
	release, err := s.gate.enter(ctx, sess.TokenID)
	if err != nil {
		return err
	}
	defer release()
	body := s.uploadBody(c)
	body.admitted()
	if err := s.svc.Sessions.PutPart(ctx, sess, n, body, c.GetHeader("Content-MD5")); err != nil {
		return err
	}
	c.JSON(http.StatusOK, gin.H{"number": n, "size": c.Request.ContentLength})
	return nil
}

// completeSession: POST /api/uploads/:id/complete (optionally with the file's sha256) → 201 with
// the release (or debug file), as the upload answers; again for a completed session. The session
// is counted in slipway_upload_duration_seconds (via="session"), from its start, as an upload in
// one request is: once, when it completes or its package is refused. Its parse waits for the
// replica's parse-memory budget as every upload's does (uploads.Builds.Parses), so completions
// at once cannot take more memory than proxied uploads can.
func (s *Server) completeSession(c *gin.Context) (err error) {
	ctx := reqCtx(c)
	var req struct {
		SHA256 string `param:"sha256"`
	}
	if err := bind(c, &req); err != nil {
		return err
	}
	sum := req.SHA256
	if s.metrics != nil {
		if sess, serr := s.svc.Sessions.OwnSession(ctx, c.Param("session")); serr == nil && sess.State == distribution.SessionOpen {
			defer func() {
				outcome := "ok"
				if err != nil {
					outcome = rejectedOrFailed(err)
				}
				kind := "app"
				if sess.Kind == distribution.SessionDebugFile {
					kind = "debug_file"
				}
				s.metrics.UploadDuration.WithLabelValues(kind, outcome, "session").Observe(time.Since(sess.CreatedAt).Seconds())
			}()
		}
	}
	res, err := s.svc.Sessions.CompleteSession(ctx, c.Param("session"), sum)
	if err != nil {
		return err
	}
	if res.DebugFile != nil {
		c.JSON(http.StatusCreated, s.debugFileView(res.DebugFile))
	} else {
		if res.Release.News != nil {
			if w := s.aptReplaces(ctx, res.Release); w != "" {
				res.Release.News.Warnings = append(res.Release.News.Warnings, w)
			}
		}
		c.JSON(http.StatusCreated, s.fullRelease(res.Release))
	}
	return nil
}

// abortSession: DELETE /api/uploads/:id ends an open session and deletes what was put.
func (s *Server) abortSession(c *gin.Context) error {
	ctx := reqCtx(c)
	if err := s.svc.Sessions.AbortSession(ctx, c.Param("session")); err != nil {
		return err
	}
	c.JSON(http.StatusOK, deleted)
	return nil
}
