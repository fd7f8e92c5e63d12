package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/problem"
)

// Deps are what the pages need.
type Deps struct {
	Config  *config.Config
	Service *service.Service
	Links   links.Links
	Log     *slog.Logger
}

// Handler serves the pages.
type Handler struct {
	cfg   *config.Config
	svc   *service.Service
	links links.Links
	log   *slog.Logger
	// pages are the parsed templates, each parsed when first rendered (parsePage): a replica that
	// only takes uploads and update checks never holds them.
	pages   map[string]*template.Template
	pagesMu sync.Mutex
	funcs   template.FuncMap
	// limiter bounds device registrations per client address (udid.go).
	limiter *rateLimiter
	// oidc is the console's identity provider, discovered on first use (console.go).
	oidc oidcClient
	// scriptPolicy is the Content-Security-Policy of console pages with the upload script, made
	// on first use (it names storage's origin).
	scriptPolicy     string
	scriptPolicyOnce sync.Once
}

//go:embed templates
var templateFS embed.FS

// pageNames are the templates under templates/, each rendered inside layout.html with the parts
// several pages share (templates/parts/).
var pageNames = []string{"release", "channel", "password", "error", "udid", "device", "signin", "console", "tokens", "audit", "app",
	"webhook", "devices", "users", "gone", "console-channel", "console-release", "tester-signin", "tester-home", "unsubscribe", "button", "colleague-signin", "guide",
	"console-testers",
	// Feedback, the team's side (console_feedback.go).
	"console-feedback",
}

// New returns the pages' handler. Each page's templates are parsed when it is first rendered; a
// broken template is a programming error (TestTemplatesParse parses every page), so it panics.
func New(d Deps) *Handler {
	h := &Handler{cfg: d.Config, svc: d.Service, links: d.Links, log: d.Log, pages: map[string]*template.Template{},
		limiter: newRateLimiter(callbackLimit, callbackWindow)}
	h.funcs = template.FuncMap{"formFields": h.formFields, "plural": plural, "platformName": platformName}
	return h
}

// parsePage returns the parsed templates of the page name, parsing them on first use.
func (h *Handler) parsePage(name string) *template.Template {
	h.pagesMu.Lock()
	defer h.pagesMu.Unlock()
	t, ok := h.pages[name]
	if !ok {
		t = template.Must(template.New("layout.html").Funcs(h.funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html",
			"templates/parts/*.html"))
		h.pages[name] = t
	}
	return t
}

// Register adds the pages' routes to the router (httpapi owns the router and its middleware).
// The pages answer POST too: that is the password form of a protected channel (see gate).
func (h *Handler) Register(e *gin.Engine) {
	// The public pages act as their visitor (a tester or console session, else anonymous).
	v := h.Visitor()
	e.GET("/", v, h.page(h.root))
	e.GET("/docs", h.page(h.guidePage))
	e.GET("/docs/:name", h.page(h.guidePage))
	e.GET("/channels/:slug", v, h.page(h.channelPage))
	e.POST("/channels/:slug", v, h.page(h.channelPage))
	e.GET("/channels/:slug/releases/:id", v, h.page(h.releasePage))
	e.POST("/channels/:slug/releases/:id", v, h.page(h.releasePage))
	// Feedback from the release page and the tester's home (feedback_page.go).
	e.POST("/channels/:slug/releases/:id/feedback", v, h.page(h.releaseFeedback))
	e.POST("/t/feedback/:id/delete", v, h.page(h.testerDeleteFeedback))
	e.GET("/channels/:slug/releases/:id/qrcode", v, h.json(h.qrcode))
	e.GET("/t", v, h.page(h.testerHome))
	e.GET("/t/signin", v, h.page(h.testerSignIn))
	e.POST("/t/signin", h.page(h.testerRequestLink))
	e.GET("/t/in/:secret", h.page(h.testerLink))
	e.POST("/t/in/:secret", h.page(h.testerUseLink))
	e.POST("/t/signout", h.page(h.testerSignOut))
	e.POST("/t/apps/:id/mail", v, h.page(h.testerSetMail))
	// One-click unsubscribe needs no session: it reads no cookie.
	e.GET("/t/unsubscribe/:token", h.page(h.unsubscribePage))
	e.POST("/t/unsubscribe/:token", h.page(h.unsubscribe))
	e.GET("/console/testers", h.page(h.consoleTesters))
	e.POST("/console/testers/groups", h.form(h.consoleCreateGroup))
	e.POST("/console/testers/groups/:alias/delete", h.form(h.consoleDeleteGroup))
	e.POST("/console/testers/groups/:alias/testers", h.form(h.consoleAddTesters))
	e.POST("/console/testers/groups/:alias/remove", h.form(h.consoleRemoveTester))
	e.POST("/console/channels/:id/testers", h.form(h.consoleSetChannelGroups))
	e.GET("/udid", h.page(h.udidIndex))
	e.GET("/udid/profile", h.json(h.udidProfile))
	e.POST("/udid/callback", h.json(h.udidCallback))
	e.GET("/udid/:udid", h.page(h.devicePage))
	e.GET("/console", h.page(h.consoleHome))
	e.GET("/console/login", h.page(h.consoleLogin))
	e.GET("/console/callback", h.page(h.consoleCallback))
	e.GET("/console/login-link", h.page(h.consoleLoginLink))
	e.GET("/console/login/email", h.page(h.colleagueSignIn))
	e.POST("/console/login/email", h.page(h.colleagueRequestLink))
	e.GET("/console/signin/:secret", h.page(h.colleagueLink))
	e.POST("/console/signin/:secret", h.page(h.colleagueUseLink))
	e.GET("/console/invitations/:secret", h.page(h.invitationPage))
	e.POST("/console/invitations/:secret", h.page(h.acceptInvitation))
	e.POST("/console/users/invitations", h.form(h.consoleInvite))
	e.POST("/console/users/invitations/:id/withdraw", h.form(h.consoleWithdrawInvitation))
	e.POST("/console/logout", h.page(h.consoleLogout))
	e.GET("/console/tokens", h.page(h.consoleTokens))
	e.POST("/console/tokens", h.form(h.consoleCreateToken))
	e.POST("/console/tokens/:id/revoke", h.form(h.consoleRevokeToken))
	e.GET("/console/audit", h.page(h.consoleAudit))
	e.GET("/console/apps/:id", h.page(h.consoleApp))
	e.GET("/console/channels/:id", h.page(h.consoleChannel))
	e.GET("/console/releases/:id", h.page(h.consoleRelease))
	e.POST("/console/apps/:id/channels", h.form(h.consoleCreateChannel))
	e.POST("/console/apps/:id/members", h.form(h.consoleAddMember))
	e.POST("/console/channels/:id/retention", h.form(h.consoleSetRetention))
	e.POST("/console/channels/:id/feed_token", h.form(h.consoleRotateFeedToken))
	e.POST("/console/channels/:id/signing", h.form(h.consoleSetSigning))
	e.POST("/console/channels/:id/appinstaller", h.form(h.consoleSetAppInstaller))
	e.POST("/console/channels/:id/apt", h.form(h.consoleSetAPT))
	e.POST("/console/releases/:id/updates", h.form(h.consoleSetUpdates))
	e.POST("/console/channels/:id/webhooks", h.form(h.consoleCreateWebhook))
	e.POST("/console/apps/:id/webhooks", h.form(h.consoleCreateAppWebhook))
	e.POST("/console/releases/:id", h.form(h.consoleUpdateRelease))
	e.POST("/console/apps", h.form(h.consoleCreateApp))
	e.POST("/console/apps/:id", h.form(h.consoleRenameApp))
	e.POST("/console/schemes/:id", h.form(h.consoleRenameScheme))
	e.POST("/console/schemes/:id/delete", h.form(h.consoleDeleteScheme))
	e.POST("/console/apps/:id/delete", h.form(h.consoleDeleteApp))
	e.POST("/console/apps/:id/members/:user/remove", h.form(h.consoleRemoveMember))
	e.POST("/console/channels/:id", h.form(h.consoleUpdateChannel))
	e.POST("/console/channels/:id/delete", h.form(h.consoleDeleteChannel))
	e.POST("/console/releases/:id/pin", h.form(h.consolePinRelease))
	e.POST("/console/releases/:id/delete", h.form(h.consoleDeleteRelease))
	e.GET("/console/webhooks/:id", h.page(h.consoleWebhook))
	e.POST("/console/webhooks/:id", h.form(h.consoleUpdateWebhook))
	e.POST("/console/webhooks/:id/test", h.form(h.consoleTestWebhook))
	e.POST("/console/webhooks/:id/enabled", h.form(h.consoleEnableWebhook))
	e.POST("/console/webhooks/:id/delete", h.form(h.consoleDeleteWebhook))
	e.GET("/console/devices", h.page(h.consoleDevices))
	e.GET("/console/devices/export", h.page(h.consoleExportDevices))
	e.POST("/console/devices/:udid/delete", h.form(h.consoleDeleteDevice))
	e.POST("/console/devices/:udid/approve", h.form(h.consoleApproveDevice))
	e.GET("/console/users", h.page(h.consoleUsers))
	e.POST("/console/users/:id", h.form(h.consoleUpdateUser))
	e.POST("/console/channels/:id/uploads", h.json(h.consoleStartUpload))
	e.POST("/console/uploads", h.json(h.consoleStartFirstUpload))
	e.POST(uploadFormPath, h.page(h.consoleUploadForm))
	e.GET("/console/uploads/:session", h.json(h.consoleUploadSession))
	e.POST("/console/uploads/:session/complete", h.json(h.consoleCompleteUpload))
	// Feedback, the team's side: the app's inbox, a report's state and deletion, the mail choice.
	e.GET("/console/apps/:id/feedback", h.page(h.consoleFeedback))
	e.POST("/console/apps/:id/feedback-mail", h.form(h.consoleFeedbackMail))
	e.POST("/console/feedback/:id/state", h.form(h.consoleSetFeedbackState))
	e.POST("/console/feedback/:id/delete", h.form(h.consoleDeleteFeedback))
}

// backURLKey names the context value a page handler sets to give its error page a "back" link.
const backURLKey = "slipway.back_url"

// page adapts a page handler that returns an error: the error is answered as an HTML page. A
// NUL byte or invalid UTF-8 in the path or query is refused first (422), as the API does.
func (h *Handler) page(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := checked(c, fn); err != nil {
			h.failPage(c, err, c.GetString(backURLKey))
		}
	}
}

// json adapts a handler fetched by programs (the QR code): its error is the API's JSON body.
func (h *Handler) json(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := checked(c, fn); err != nil {
			h.failJSON(c, err)
		}
	}
}

func checked(c *gin.Context, fn func(c *gin.Context) error) error {
	if err := problem.CheckRequestText(c.Request); err != nil {
		return err
	}
	// The upload box's own POST streams its file into storage itself (console_firstupload.go);
	// the start of an upload session reads its larger form once its caller is checked.
	if c.Request.Method == http.MethodPost && strings.HasPrefix(c.Request.URL.Path, "/console/") && c.Request.URL.Path != uploadFormPath && !startsUpload(c) {
		if err := readConsoleForm(c); err != nil {
			return err
		}
	}
	return fn(c)
}

// startsUpload says whether the request starts an upload session (consoleStartUpload,
// consoleStartFirstUpload).
func startsUpload(c *gin.Context) bool {
	return c.FullPath() == "/console/channels/:id/uploads" || c.FullPath() == "/console/uploads"
}

// maxConsoleFormBytes bounds the body of every console POST. The console's forms are a few
// fields (the longest, a release's changelog); builds never come this way (the upload script
// PUTs them to upload sessions).
const maxConsoleFormBytes = 64 << 10

// readConsoleForm reads a console POST's body before its handler runs, within limits: at most
// maxConsoleFormBytes, urlencoded only (a multipart body would be spooled to temporary files by
// net/http past 32 MiB of it). An announced length over the limit is refused before a byte is
// read; a longer body without one is cut at the limit. Either is 413, a multipart or other body
// 415, so nothing large is read or written anywhere before the session and CSRF token are
// checked.
func readConsoleForm(c *gin.Context) error { return readConsoleFormWithin(c, maxConsoleFormBytes) }

// readConsoleFormWithin is readConsoleForm with another limit: the start of an upload session
// (startUploadBytes), read once its session and CSRF token have been checked.
func readConsoleFormWithin(c *gin.Context, limit int64) error {
	r := c.Request
	if r.ContentLength > limit {
		return errs.New(errs.TooLarge, "a console form is at most %d bytes (builds are uploaded from the app's page, or with slipway upload)", limit)
	}
	if r.ContentLength == 0 {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return errs.New(errs.Unsupported, "console forms are sent as application/x-www-form-urlencoded (builds are uploaded from the app's page, or with slipway upload)")
	}
	r.Body = http.MaxBytesReader(c.Writer, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return errs.New(errs.TooLarge, "a console form is at most %d bytes (builds are uploaded from the app's page, or with slipway upload)", limit)
		}
		return errs.Wrap(errs.Invalid, err, "the form could not be read")
	}
	return nil
}

// page is what layout.html renders; Body is the page template's own data.
type page struct {
	Title string
	OG    *openGraph
	Crumb *crumb
	// Nav is the console's header (signed-in pages); Crumbs its breadcrumbs; Flash the message
	// the last form left for this page.
	Nav       *consoleNav
	Crumbs    []crumb
	Flash     *flash
	Assets    assets
	MainClass string
	// Script is the URL of the page's script ("" for none: most pages run no script at all).
	Script string
	// PageScript is a public page's own script, which may call nothing (the release page's fills
	// its feedback form's device fields); the page works without it.
	PageScript string
	Body       any
}

// openGraph are the tags link previews (Slack, messengers) read.
type openGraph struct {
	Title, Description, URL, Image string
}

type crumb struct{ Text, URL string }

type assets struct{ CSS, FontAwesome, FontAwesomeShims, Icon, Forms string }

func (h *Handler) assets() assets {
	return assets{
		CSS:              h.links.Static("slipway.css"),
		FontAwesome:      h.links.Static("fontawesome/css/all.min.css"),
		FontAwesomeShims: h.links.Static("fontawesome/css/v4-shims.min.css"),
		Icon:             h.links.Base + links.DefaultIconPath,
		Forms:            h.links.Static("forms.js"),
	}
}

// contentSecurityPolicy allows the page's own styles and fonts, no script at all, and images
// from anywhere: icons are redirects to presigned object URLs or a CDN.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; font-src 'self'; img-src * data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// consoleSecurityPolicy is contentSecurityPolicy plus the service's own scripts (the console's
// forms.js, which disables a form's buttons once it is sent; the release page's feedback.js),
// nothing inline, connecting nowhere.
const consoleSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; font-src 'self'; img-src * data:; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// scriptSecurityPolicy is contentSecurityPolicy plus the console's own script, which may call the
// service and PUT upload parts to storage's origin (presigned S3 URLs), nothing else.
func (h *Handler) scriptSecurityPolicy(c *gin.Context) string {
	ctx := reqCtx(c)
	h.scriptPolicyOnce.Do(func() {
		connect := "'self'"
		if o := h.svc.Sessions.PartUploadOrigin(ctx); o != "" {
			connect += " " + o
		}
		h.scriptPolicy = "default-src 'none'; script-src 'self'; connect-src " + connect + "; style-src 'self'; font-src 'self'; " +
			"img-src * data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
	})
	return h.scriptPolicy
}

// render writes a page. Protected pages are never stored by caches; the others are revalidated,
// since a channel's newest releases change. Referrer-Policy keeps the channel key (the unguessable
// part of the URL) out of requests to git hosts and CI.
func (h *Handler) render(c *gin.Context, status int, name string, p page, private bool) {
	ctx := reqCtx(c)
	p.Assets = h.assets()
	var buf bytes.Buffer
	if err := h.parsePage(name).ExecuteTemplate(&buf, "layout", p); err != nil {
		h.log.ErrorContext(ctx, "rendering a page", slog.String("page", name), slog.String("error", err.Error()))
		c.Data(http.StatusInternalServerError, "text/plain; charset=utf-8", []byte("internal error\n"))
		return
	}
	hd := c.Writer.Header()
	if private {
		hd.Set("Cache-Control", "private, no-store")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	if p.Script != "" {
		hd.Set("Content-Security-Policy", h.scriptSecurityPolicy(c))
	} else if p.Nav != nil || p.PageScript != "" {
		hd.Set("Content-Security-Policy", consoleSecurityPolicy)
	} else {
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
	}
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Content-Type-Options", "nosniff")
	c.Data(status, "text/html; charset=utf-8", buf.Bytes())
}

// describe is what a client may see of err (httperr, shared with the API); internal errors are
// logged here with the request id, which the client is shown.
func (h *Handler) describe(c *gin.Context, err error) problem.Problem {
	ctx := reqCtx(c)
	p := problem.Describe(err)
	if p.Internal() {
		id := c.Writer.Header().Get("X-Request-ID")
		h.log.ErrorContext(ctx, "internal error", slog.String("request_id", id), slog.String("error", err.Error()))
		p.Message = "internal error (request " + id + ")"
	}
	if p.RetryAfter > 0 {
		c.Header("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	return p
}

// failPage answers err as an HTML page with the status of its kind.
func (h *Handler) failPage(c *gin.Context, err error, back string) {
	p := h.describe(c, err)
	status, msg := p.Status, p.Message
	heading := http.StatusText(status)
	if status == http.StatusNotFound {
		heading = "Not found"
	}
	v := errorView{Heading: heading, Message: msg, BackURL: back, BackText: "Back to the channel"}
	pg := page{Title: heading + " · Slipway", Body: v}
	// A console page's error keeps the console's header and a way back.
	if strings.HasPrefix(c.Request.URL.Path, "/console/") && c.Request.URL.Path != "/console/login" && c.Request.URL.Path != "/console/callback" {
		if session, err := c.Cookie(SessionCookie); err == nil {
			if u, err := h.svc.Logins.SessionUser(reqCtx(c), session); err == nil {
				actingAs(c, u)
				pg.Nav = h.nav(c, session, u)
			}
		}
		v.BackURL, v.BackText = h.links.Base+"/console", "Back to the console"
		pg.Body = v
	}
	h.render(c, status, "error", pg, true)
	c.Abort()
}

type errorView struct{ Heading, Message, BackURL, BackText string }

// failJSON answers err as the API's {"error": ...} body (the QR code is fetched by programs).
func (h *Handler) failJSON(c *gin.Context, err error) {
	p := h.describe(c, err)
	body := gin.H{"error": p.Message}
	if len(p.Entry) > 0 {
		body["entry"] = p.Entry
	}
	c.Header("Cache-Control", "no-store")
	c.AbortWithStatusJSON(p.Status, body)
}

// reqCtx is the context a handler hands to the domain: the request's own. A *gin.Context is
// pooled and serves the next request as soon as the handler returns, so it never leaves this
// package as a context.Context: code below may keep its context in a goroutine that outlives
// the request, and would then read another request's values and cancellation (`make lint` checks).
func reqCtx(c *gin.Context) context.Context { return c.Request.Context() }
