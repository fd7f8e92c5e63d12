package web

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/appinfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The console's web upload (static/console.js): the script starts a resumable upload session
// for the chosen channel, PUTs the file's parts straight to where the session says (presigned S3
// URLs, or the service's own signed part URLs on filesystem storage) with progress, and completes
// the session, which parses and records the build as every upload is. These three calls answer
// JSON and take the CSRF token in the X-CSRF-Token header.

// csrfHeader carries the CSRF token of the console's script calls.
const csrfHeader = "X-CSRF-Token"

type uploadPartJSON struct {
	Number int    `json:"number"`
	Size   int64  `json:"size"`
	Done   bool   `json:"done"`
	URL    string `json:"url,omitempty"`
}

type uploadSessionJSON struct {
	ID       string           `json:"id"`
	PartSize int64            `json:"part_size"`
	State    string           `json:"state"`
	Parts    []uploadPartJSON `json:"parts"`
}

func uploadSessionOf(sess *distribution.UploadSession, parts []uploads.SessionPart) uploadSessionJSON {
	v := uploadSessionJSON{ID: sess.ID, PartSize: sess.PartSize, State: sess.State, Parts: make([]uploadPartJSON, len(parts))}
	for i, p := range parts {
		v.Parts[i] = uploadPartJSON(p)
	}
	return v
}

// consoleScriptUser checks the session cookie and the X-CSRF-Token header of a script's call.
func (h *Handler) consoleScriptUser(c *gin.Context) (*distribution.User, error) {
	ctx := reqCtx(c)
	session, err := c.Cookie(SessionCookie)
	if err != nil {
		return nil, errs.New(errs.Unauthenticated, "sign in first")
	}
	u, err := h.svc.Logins.SessionUser(ctx, session)
	if err != nil {
		return nil, err
	}
	if !h.csrfValid(session, c.GetHeader(csrfHeader)) {
		return nil, errs.New(errs.Forbidden, "the CSRF token is missing or wrong; reload the page and try again")
	}
	actingAs(c, u)
	return u, nil
}

// consoleUploader checks a script's call (consoleScriptUser) and makes the request act as the
// user uploading with their console upload token: the session and the release it makes are that
// token's, so only the user can see or complete it; what they may upload into is their role's.
func (h *Handler) consoleUploader(c *gin.Context) (context.Context, error) {
	u, err := h.consoleScriptUser(c)
	if err != nil {
		return nil, err
	}
	tok, err := h.svc.Tokens.UserUploadToken(reqCtx(c), u.ID)
	if err != nil {
		return nil, err
	}
	c.Request = c.Request.WithContext(distribution.WithActor(c.Request.Context(), distribution.UserActor(u).ConsoleUploader(tok)))
	return reqCtx(c), nil
}

// startUploadBytes bounds the body of a session's start: the box's fields, and the file's first
// and last bytes in base64.
const startUploadBytes = maxConsoleFormBytes + maxSniffBytes/3*4 + 4

// startUploader is consoleUploader for the start of a session, whose form (larger than the other
// console forms: it holds the file's first and last bytes) is read once the session and the CSRF
// token have been checked, so nothing past a console form's 64 KiB is read before them.
func (h *Handler) startUploader(c *gin.Context) (context.Context, error) {
	ctx, err := h.consoleUploader(c)
	if err != nil {
		return nil, err
	}
	return ctx, readConsoleFormWithin(c, startUploadBytes)
}

// consoleUploadFields are the form fields a console upload passes on to its session.
var consoleUploadFields = []string{"changelog", "release_type", "branch", "git_commit", "ci_url", "ed_signature", "tauri_signature"}

// consoleStartUpload: POST /console/channels/:id/uploads (filename, size, changelog) → 201 with
// the session and where to put its parts.
func (h *Handler) consoleStartUpload(c *gin.Context) error {
	ctx, err := h.startUploader(c)
	if err != nil {
		return err
	}
	chID, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || chID <= 0 {
		return errs.New(errs.NotFound, "there is no such channel")
	}
	cc, err := h.svc.Apps.ChannelByID(ctx, chID)
	if err != nil {
		return err
	}
	if err := refuseOtherPlatform(c, cc.Channel.DeviceType); err != nil {
		return err
	}
	return h.startUpload(ctx, c, uploads.NewSession{Fields: map[string]string{"channel_key": cc.Channel.Slug}})
}

// maxSniffBytes bounds the file's bytes the script sends when it starts a session (head and tail
// together, before base64): the first 4 KiB, and the last bytes from a zip's central directory
// on (the last 4 KiB of another file), unless the directory is larger.
const maxSniffBytes = 512 << 10

// sniffHeadBytes is how much of the start of a file the box without script looks at.
const sniffHeadBytes = 4096

// refuseOtherPlatform refuses a build of another platform than the channel's from the file's
// first and last bytes the script sent (head, tail: base64), before a part of it is uploaded
// (refusing it once the whole file had been sent wasted the upload). The claims are pkg/appinfo's
// (ClaimPlatform); whatever they cannot say for sure from those bytes is left to the session's
// completion, which parses the whole build as every upload does.
func refuseOtherPlatform(c *gin.Context, channelPlatform string) error {
	size, err := strconv.ParseInt(strings.TrimSpace(c.PostForm("size")), 10, 64)
	if err != nil || c.PostForm("head") == "" {
		return nil // startUpload says what is wrong with the size; an older page sends no bytes
	}
	head, err1 := base64.StdEncoding.DecodeString(c.PostForm("head"))
	tail, err2 := base64.StdEncoding.DecodeString(c.PostForm("tail"))
	if err1 != nil || err2 != nil || len(head)+len(tail) > maxSniffBytes {
		return errs.Field("head", "must be the file's first bytes (and tail its last), base64, at most %d bytes together", maxSniffBytes)
	}
	return otherPlatform(channelPlatform, head, tail, size)
}

// otherPlatform refuses, in the user's words, a file of size bytes whose first (head) and last
// (tail) bytes say it is a build of another platform than channelPlatform; nil when they say
// it is not, or cannot say.
func otherPlatform(channelPlatform string, head, tail []byte, size int64) error {
	p, ok := appinfo.ClaimPlatform(head, tail, size)
	if !ok || string(p) == channelPlatform {
		return nil
	}
	return errs.New(errs.Invalid, "this channel takes %s builds, and this file is %s build: upload it on %s channel, or on the console's home, which finds or makes one",
		platformName(channelPlatform), distribution.WithArticle(platformName(string(p))), distribution.WithArticle(platformName(string(p))))
}

// consoleStartFirstUpload: POST /console/uploads (filename, size, changelog; app_id, or a chosen
// app name) → 201 with the session: the upload box of the console's home (and of an app's page,
// with app_id), whose build makes its app (or goes into app_id), scheme and channel as the API's
// upload without channel_key does.
func (h *Handler) consoleStartFirstUpload(c *gin.Context) error {
	ctx, err := h.startUploader(c)
	if err != nil {
		return err
	}
	in := uploads.NewSession{Fields: map[string]string{}}
	if v := strings.TrimSpace(c.PostForm("app_id")); v != "" {
		if in.AppID, err = strconv.ParseInt(v, 10, 64); err != nil || in.AppID <= 0 {
			return errs.New(errs.NotFound, "there is no such app")
		}
	} else if name := strings.TrimSpace(c.PostForm("name")); name != "" {
		in.Fields["name"] = name
	}
	return h.startUpload(ctx, c, in)
}

// startUpload starts the console's upload session in: the file's name and size, and the upload
// box's fields.
func (h *Handler) startUpload(ctx context.Context, c *gin.Context, in uploads.NewSession) error {
	size, err := strconv.ParseInt(strings.TrimSpace(c.PostForm("size")), 10, 64)
	if err != nil {
		return errs.Field("size", "must be the file's size in bytes")
	}
	in.Kind, in.Filename, in.Size = distribution.SessionApp, c.PostForm("filename"), size
	in.Fields["source"] = "console"
	for _, k := range consoleUploadFields {
		if v := strings.TrimSpace(c.PostForm(k)); v != "" {
			in.Fields[k] = v
		}
	}
	// A build of another app than the channel holds is a question before it is kept:
	// refused, and the upload box offers "Keep it anyway", which starts again with true.
	in.Fields["allow_other_bundle_id"] = "false"
	if strings.TrimSpace(c.PostForm("allow_other_bundle_id")) == "true" {
		in.Fields["allow_other_bundle_id"] = "true"
	}
	sess, parts, err := h.svc.Sessions.StartSession(ctx, in)
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusCreated, uploadSessionOf(sess, parts))
	return nil
}

// consoleUploadSession: GET /console/uploads/:session, the parts done and fresh URLs for the rest.
func (h *Handler) consoleUploadSession(c *gin.Context) error {
	ctx, err := h.consoleUploader(c)
	if err != nil {
		return err
	}
	sess, parts, err := h.svc.Sessions.Session(ctx, c.Param("session"))
	if err != nil {
		return err
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, uploadSessionOf(sess, parts))
	return nil
}

// consoleCompleteUpload: POST /console/uploads/:session/complete → 201 with the release recorded.
func (h *Handler) consoleCompleteUpload(c *gin.Context) error {
	ctx, err := h.consoleUploader(c)
	if err != nil {
		return err
	}
	res, err := h.svc.Sessions.CompleteSession(ctx, c.Param("session"), "")
	if err != nil {
		return err
	}
	rc := res.Release
	if rc == nil {
		return errs.New(errs.Invalid, "this upload session is not a build's")
	}
	c.Header("Cache-Control", "no-store")
	var warnings []string
	if rc.News != nil {
		warnings = rc.News.Warnings
	}
	c.JSON(http.StatusCreated, gin.H{
		"release_id": rc.ID,
		// warnings are what the upload kept that the uploader should look at (a build of another
		// app, kept because they said so).
		"warnings": warnings,
		"version":  versionText(&rc.Release),
		"app_url":  h.appURL(rc.App.ID),
		// console_url is the build's console page, where the upload box's "Show it" goes.
		"console_url": h.buildURL(rc.ID),
		"url":         h.links.Release(rc.Channel.Slug, rc.ID),
	})
	return nil
}
