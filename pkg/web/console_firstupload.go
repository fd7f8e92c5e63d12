package web

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/distribution/uploads"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/problem"
)

// The console's upload box without its script (docs/console.md, "The first upload"): a plain
// multipart POST of the box, from the console's home (the build makes its app, scheme and
// channel as the API's upload without channel_key does), an app's page (app_id: the build goes
// into that app) or a channel's page (channel_id). It behaves as the console's forms do: 303 to
// the new build's page with a flash, a refusal of the file said beside the box (422) with what
// was typed kept, and a form sent twice (its single-use form token is the upload's idempotency
// key) recording one build.
//
// It is the one console POST that is not a small urlencoded form (readConsoleForm): the file
// streams into storage as it arrives, as the API's upload does, never into memory or a temporary
// file. Nothing is stored before the session, the CSRF token and the policy's answer for the box's
// target have been checked: the box's hidden fields come before its file; nor, on a channel's
// page, once the file's first bytes say it is a build of another platform.

// uploadFormPath is the box's action.
const uploadFormPath = "/console/upload"

// uploadFormID names the upload box of the home and app pages; a channel page's box is
// "upload-<channel id>".
const uploadFormID = "upload-build"

// uploadBoxView is what the "upload-box" template needs.
type uploadBoxView struct {
	// FormID is the form's id and Suffix what the ids of its inputs end with.
	FormID, Suffix string
	CSRF, Base     string
	// Start is where the script starts its upload session.
	Start string
	// AppID or ChannelID is where the build goes (neither: the build makes its app).
	AppID, ChannelID int64
	// Accept filters the file picker; Accepts names what the box takes.
	Accept, Accepts string
	// Names offers the "Choose names" disclosure (the home page's box: its build may make an app).
	Names bool
	// Signatures offers the update feeds' signatures the API's upload takes (ed_signature,
	// tauri_signature): a box whose build may be a desktop one.
	Signatures bool
	// After is what the script does once the build is recorded: "build" opens the build's page,
	// "list" refreshes the page's builds list.
	After string
	Form  formState
}

// homeUploadBox is the console home's upload box.
func (h *Handler) homeUploadBox(csrf string, form formState) *uploadBoxView {
	return &uploadBoxView{FormID: uploadFormID, CSRF: csrf, Base: h.links.Base, Start: h.links.Base + "/console/uploads",
		Accepts: "an iOS, Android, macOS, HarmonyOS, Windows or Linux package",
		Names:   true, Signatures: true, After: "build", Form: form}
}

// appUploadBox is the upload box of an app's page.
func (h *Handler) appUploadBox(csrf string, appID int64, form formState) *uploadBoxView {
	v := h.homeUploadBox(csrf, form)
	v.AppID, v.Names = appID, false
	return v
}

// channelUploadBox is the upload box of a channel's page.
func (h *Handler) channelUploadBox(csrf string, ch consoleChannelView, form formState) *uploadBoxView {
	id := strconv.FormatInt(ch.ID, 10)
	return &uploadBoxView{FormID: "upload-" + id, Suffix: "-" + id, CSRF: csrf, Base: h.links.Base,
		Start: h.links.Base + "/console/channels/" + id + "/uploads", ChannelID: ch.ID, Accept: ch.Accept(), Accepts: ch.Accepts(),
		After: "list", Form: form, Signatures: distribution.DesktopPlatform(ch.DeviceType)}
}

// uploadTarget is where a box's build goes, as its hidden fields say.
type uploadTarget struct {
	formID           string
	appID, channelID int64
	channelKey       string
	// platform is the channel's platform (device type), when the box is a channel's.
	platform string
	// resource is what the policy is asked about: the app, or the installation (making one).
	resource policy.Resource
}

// target reads where the box's build goes and asks the policy whether the actor may upload there.
func (h *Handler) uploadTarget(c *gin.Context, fields url.Values) (*uploadTarget, error) {
	ctx := reqCtx(c)
	t := &uploadTarget{formID: uploadFormID, resource: policy.Installation}
	id := func(name, what string) (int64, error) {
		v := strings.TrimSpace(fields.Get(name))
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return 0, errs.New(errs.NotFound, "there is no such %s", what)
		}
		return n, nil
	}
	var err error
	if t.channelID, err = id("channel_id", "channel"); err != nil {
		return nil, err
	}
	if t.appID, err = id("app_id", "app"); err != nil {
		return nil, err
	}
	switch {
	case t.channelID != 0:
		cc, err := h.svc.Apps.ChannelByID(ctx, t.channelID)
		if err != nil {
			return nil, err
		}
		t.formID, t.channelKey, t.appID = "upload-"+strconv.FormatInt(t.channelID, 10), cc.Channel.Slug, 0
		t.platform = cc.Channel.DeviceType
		t.resource = policy.OnApp(cc.App.ID)
	case t.appID != 0:
		if _, err := h.svc.Apps.App(ctx, t.appID); err != nil {
			return nil, err
		}
		t.resource = policy.OnApp(t.appID)
	}
	return t, h.may(c, policy.Upload, t.resource)
}

// consoleUploadForm: POST /console/upload, the upload box without its script.
func (h *Handler) consoleUploadForm(c *gin.Context) error {
	ctx := reqCtx(c)
	session, err := c.Cookie(SessionCookie)
	if err != nil {
		return errs.New(errs.Unauthenticated, "sign in first")
	}
	u, err := h.svc.Logins.SessionUser(ctx, session)
	if err != nil {
		return err
	}
	actingAs(c, u)
	r := c.Request
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" || params["boundary"] == "" {
		return errs.New(errs.Unsupported, "the upload box is sent as multipart/form-data, with the build in its file field")
	}
	limit := h.cfg.MaxUploadBytes + maxConsoleFormBytes
	if r.ContentLength > limit {
		return errs.New(errs.TooLarge, "the build is larger than the %d-byte upload limit", h.cfg.MaxUploadBytes)
	}
	body := &idleBody{r: r.Body, ctl: http.NewResponseController(c.Writer), idle: h.cfg.UploadIdleTimeout}
	mr := multipart.NewReader(bufio.NewReaderSize(http.MaxBytesReader(c.Writer, body, limit), 256<<10), params["boundary"])
	fields := url.Values{}
	var (
		obj    *uploads.StoredObject
		target *uploadTarget
		tok    *distribution.Token
		read   int
	)
	fail := func(err error) error {
		if obj != nil {
			h.svc.Objects.Discard(ctx, obj.Key)
		}
		return err
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fail(uploadBodyError(err, h.cfg.MaxUploadBytes))
		}
		name := part.FormName()
		switch {
		case name == "file":
			if obj != nil {
				return fail(errs.Field("file", "must be sent once"))
			}
			// Before a byte of the file is stored: the CSRF token, who uploads, and where to.
			if !h.csrfValid(session, fields.Get("csrf")) {
				return errs.New(errs.Forbidden, "the form's CSRF token is missing or wrong; reload the page and try again")
			}
			if tok, err = h.svc.Tokens.UserUploadToken(ctx, u.ID); err != nil {
				return err
			}
			c.Request = c.Request.WithContext(distribution.WithActor(c.Request.Context(), distribution.UserActor(u).ConsoleUploader(tok)))
			ctx = reqCtx(c)
			if target, err = h.uploadTarget(c, fields); err != nil {
				return err
			}
			if part.FileName() == "" {
				// No file chosen: the browser sends an empty part.
				_, _ = io.Copy(io.Discard, part)
				continue
			}
			file := io.Reader(part)
			if target.platform != "" {
				// A channel's box: a build of another platform is refused from its first bytes,
				// before any of it is stored. Only a file that is no zip can be told so
				// (a zip's directory is at its end): the part's size is not known, the body's
				// length bounds it, and a claim that reads past the first bytes cannot say.
				br := bufio.NewReaderSize(part, sniffHeadBytes)
				head, err := br.Peek(sniffHeadBytes)
				size := r.ContentLength
				if errors.Is(err, io.EOF) {
					size = int64(len(head))
				}
				if (err == nil || errors.Is(err, io.EOF)) && size >= int64(len(head)) && len(head) > 0 {
					if err := otherPlatform(target.platform, head, nil, size); err != nil {
						return h.uploadRefused(c, session, u, target, fields, err)
					}
				}
				file = br
			}
			if obj, err = h.svc.Objects.StoreUpload(ctx, uploads.PackagePrefix, file, part.FileName()); err != nil {
				return h.uploadRefused(c, session, u, target, fields, err)
			}
		case name != "":
			v, err := io.ReadAll(io.LimitReader(part, int64(maxConsoleFormBytes-read+1)))
			if err != nil {
				return fail(uploadBodyError(err, h.cfg.MaxUploadBytes))
			}
			if read += len(v); read > maxConsoleFormBytes {
				return fail(errs.New(errs.TooLarge, "the upload box's fields are at most %d bytes", maxConsoleFormBytes))
			}
			if !problem.CleanText(name) || !problem.CleanText(string(v)) {
				return fail(errs.Field(problem.SafeName(name), "holds a NUL byte or invalid UTF-8"))
			}
			fields.Add(name, string(v))
		}
		part.Close()
	}
	if target == nil { // no file part at all
		if !h.csrfValid(session, fields.Get("csrf")) {
			return errs.New(errs.Forbidden, "the form's CSRF token is missing or wrong; reload the page and try again")
		}
		return errs.New(errs.Invalid, "the form has no file field: reload the page and choose a build")
	}
	if obj == nil {
		return h.uploadRefused(c, session, u, target, fields, errs.Field("file", "is missing: choose or drop a build first"))
	}
	var idem string
	if ft := fields.Get("form_token"); ft != "" {
		nonce, ok := h.formNonce(fields.Get("csrf"), ft)
		if !ok {
			return fail(errs.New(errs.Forbidden, "this form is too old to send; reload the page and choose the build again"))
		}
		idem = "console-form:" + nonce
	}
	form := uploads.ReleaseForm{ChannelKey: target.channelKey, AppID: target.appID, Source: "console",
		Changelog:   strings.TrimSpace(fields.Get("changelog")),
		EdSignature: fields.Get("ed_signature"), TauriSignature: fields.Get("tauri_signature"),
		// A build of another app than its channel holds is a question before it is kept:
		// refused, and the box offers to send it again with "Keep it anyway" ticked.
		AllowOtherBundleID: "false"}
	if fields.Get("allow_other_bundle_id") == "true" {
		form.AllowOtherBundleID = "true"
	}
	if target.channelKey == "" && target.appID == 0 {
		form.Name = strings.TrimSpace(fields.Get("name"))
	}
	rc, err := h.svc.Builds.CreateRelease(ctx, obj, form, tok.ID, idem) // discards obj on error
	if err != nil {
		return h.uploadRefused(c, session, u, target, fields, err)
	}
	h.setFlash(c, session, flash{Kind: "ok", Message: fmt.Sprintf("Uploaded %s into %s · %s · %s.", versionText(&rc.Release),
		rc.App.Name, rc.Scheme.Name, rc.Channel.Name)})
	c.Redirect(http.StatusSeeOther, h.buildURL(rc.ID))
	return nil
}

// uploadRefused answers a refused upload: a refusal of the file or of what was typed is shown
// beside the box on its page (422), with what was typed kept; anything else is an error page.
func (h *Handler) uploadRefused(c *gin.Context, session string, u *distribution.User, t *uploadTarget, fields url.Values, err error) error {
	switch errs.KindOf(err) {
	case errs.Invalid, errs.Conflict, errs.TooLarge:
	default:
		return err
	}
	f := &formCall{formID: t.formID, labels: map[string]fieldLabel{"name": {"name", "App name"}, "changelog": {"changelog", "Changelog"},
		"file": {"file", "The build"}, "ed_signature": {"ed_signature", "The Sparkle signature"}, "tauri_signature": {"tauri_signature", "The Tauri signature"}}}
	s := h.failedForm(c, f, err)
	if e, ok := errs.AsError(err); ok && e.Entry["allow_other_bundle_id"] != nil {
		// A build of another app: the refusal (naming both bundle ids) is the box's question.
		s.Field, s.Message = "allow_other_bundle_id", consoleWords(h.describe(c, err).Message)
	}
	s.Values = url.Values{}
	for _, k := range []string{"name", "changelog", "ed_signature", "tauri_signature"} {
		if v := fields.Get(k); v != "" {
			s.Values.Set(k, v)
		}
	}
	if s.Field != "" && !slices.Contains([]string{"name", "changelog", "file", "allow_other_bundle_id", "ed_signature", "tauri_signature"}, s.Field) {
		s.Field = "" // a field the box does not show: said above it
	}
	switch {
	case t.channelID != 0:
		return h.renderChannel(c, session, u, t.channelID, s, http.StatusUnprocessableEntity, nil)
	case t.appID != 0:
		return h.renderApp(c, session, u, t.appID, s, http.StatusUnprocessableEntity)
	}
	return h.renderHome(c, session, u, s, http.StatusUnprocessableEntity)
}

// idleBody moves the connection's read deadline forward by idle at each read, as the API's
// upload does (SLIPWAY_UPLOAD_IDLE_TIMEOUT): a browser may take as long as it needs in all, but
// not stall for longer than idle at a time.
type idleBody struct {
	r    io.ReadCloser
	ctl  *http.ResponseController
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.idle > 0 {
		_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	}
	return b.r.Read(p)
}

func (b *idleBody) Close() error { return b.r.Close() }

// uploadBodyError explains why the box's body could not be read.
func uploadBodyError(err error, max int64) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errs.New(errs.TooLarge, "the build is larger than the %d-byte upload limit", max)
	}
	return errs.Wrap(errs.Invalid, err, "the upload was cut short; choose the build and send it again")
}
