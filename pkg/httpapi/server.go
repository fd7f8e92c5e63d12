// Package httpapi is Slipway's HTTP interface: the gin router, middleware (request ids, access
// logs, recovery, metrics, auth), one file per resource, and the JSON views. Handlers reach data
// only through the domain (pkg/distribution); they return an error, which one wrapper renders
// (errors.go) with the status httperr gives its kind.
package httpapi

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution/service"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/problem"
	"github.com/slipwayhq/slipway/pkg/web"
)

// Deps are what the HTTP layer needs.
type Deps struct {
	Config  *config.Config
	Service *service.Service
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// Server answers Slipway's HTTP API.
type Server struct {
	cfg     *config.Config
	svc     *service.Service
	metrics *metrics.Metrics
	log     *slog.Logger
	links   links.Links
	engine  *gin.Engine
	// gate admits uploads: a few at once, the others in line (SLIPWAY_MAX_CONCURRENT_UPLOADS,
	// SLIPWAY_UPLOAD_QUEUE_LENGTH, SLIPWAY_UPLOAD_QUEUE_TIMEOUT).
	gate *uploadGate
	// conns logs every connection's end and counts the handlers running (HTTPServer).
	conns *connTracker
	// ready is the replica's readiness (health.go): starting, ready or shutting down.
	ready readiness
	// headerTimeout and idleTimeout are the connection timeouts (tests shorten them).
	headerTimeout, idleTimeout time.Duration
	// pages are the HTML pages (pkg/web); a browser following a deleted build's download link
	// gets its removal page.
	pages *web.Handler
}

// New builds the router.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, svc: d.Service, metrics: d.Metrics, log: d.Log,
		links:         links.Links{Base: d.Config.PublicURL},
		headerTimeout: defaultHeaderTimeout, idleTimeout: defaultIdleTimeout,
		conns: newConnTracker(d.Log, func(outcome string) {
			if d.Metrics != nil {
				d.Metrics.ConnectionsClosed.WithLabelValues(outcome).Inc()
			}
		}),
		gate: newUploadGate(d.Config.MaxConcurrentUploads, d.Config.UploadsPerToken, d.Config.UploadQueueLength, d.Config.UploadQueueTimeout, d.Metrics)}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	_ = e.SetTrustedProxies(d.Config.TrustedProxies)
	e.Use(requestIDs, s.accessLog, s.recovery, s.startupGate, s.bodyDeadline, apiHeaders)
	e.NoRoute(s.notFound)
	e.NoMethod(s.methodNotAllowed)

	h := s.handle
	// token lets in a request with a valid token, acting as it; what each route's use case lets
	// it do is the policy's (pkg/distribution/policy): an upload token's writes are refused there,
	// 403, as every other actor's.
	token := h(s.requireToken())

	// Every route but the pages refuses a NUL byte or invalid UTF-8 in its path or query with a
	// JSON 422; the pages check the same and answer with an HTML page.
	r := e.Group("", h(func(c *gin.Context) error { return problem.CheckRequestText(c.Request) }))
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	// With an internal port (SLIPWAY_INTERNAL_ADDR), /metrics and the detailed readiness are
	// served there only (Internal); without one, here.
	if d.Config.InternalAddr == "" {
		internal := gin.WrapH(s.Internal())
		r.GET("/metrics", internal)
		r.GET("/internal/readyz", internal)
	}

	api := r.Group("/api")
	api.GET("/version", s.version)
	api.GET("/health", h(s.health))
	api.GET("/openapi.json", h(s.openAPI))

	// The specification's endpoints.
	// Listing and reading apps need a token (they hand out channel keys); the reads by channel
	// key below stay public for the SDKs.
	api.GET("/apps", token, h(s.listApps))
	api.POST("/apps", token, h(s.createApp))
	api.GET("/apps/:id", token, h(s.getApp))
	api.PUT("/apps/:id", token, h(s.updateApp))
	api.DELETE("/apps/:id", token, h(s.destroyApp))
	api.POST("/apps/upload", s.upload("app", s.uploadApp))
	// The update check and its neighbours: from the read cache, with ETags, HEAD answered too.
	for path, handler := range map[string]func(*gin.Context) error{"/apps/versions": s.versions, "/apps/latest": s.latest,
		"/apps/version_exist": s.versionExist} {
		api.GET(path, h(handler))
		api.HEAD(path, h(handler))
	}
	// The desktop update feeds (feeds.go): from the read cache, with ETags, HEAD answered too.
	for path, handler := range map[string]func(*gin.Context) error{"/channels/:slug/appcast.xml": s.appcast,
		"/channels/:slug/electron/:file": s.electron, "/channels/:slug/tauri.json": s.tauriStatic,
		"/channels/:slug/tauri/:target/:arch/:current_version": s.tauri, "/channels/:slug/squirrel/RELEASES": s.squirrel,
		"/channels/:slug/app.appinstaller": s.appInstaller} {
		r.GET(path, h(handler))
		r.HEAD(path, h(handler))
	}
	// The package repositories of Linux channels (repos.go; DNF: rpm.go) and the key that signs
	// them: from the read cache, with ETags, HEAD answered too.
	for path, handler := range map[string]func(*gin.Context) error{"/keys/slipway.asc": s.installationKey,
		"/channels/:slug/apt/*file": s.aptFile, "/channels/:slug/rpm/repodata/:file": s.rpmRepodata,
		"/channels/:slug/rpm/packages/:id/:file": s.rpmPackage} {
		r.GET(path, h(handler))
		r.HEAD(path, h(handler))
	}
	api.POST("/debug_files/upload", s.upload("debug_file", s.uploadDebugFile))
	api.GET("/debug_files", h(s.listDebugFiles))
	api.GET("/debug_files/download", h(s.downloadDebugFileByVersion))
	api.GET("/debug_files/:id", token, h(s.getDebugFile))
	api.PUT("/debug_files/:id", s.upload("debug_file", s.updateDebugFile))
	api.DELETE("/debug_files/:id", token, h(s.deleteDebugFile))

	// Zealot 6's management API: every route needs a token; changes need an admin token (the
	// policy), except that an upload token may edit its own releases and sync devices.
	api.GET("/apps/:id/schemes", token, h(s.listSchemes))
	api.POST("/apps/:id/schemes", token, h(s.createScheme))
	api.GET("/schemes/:id", token, h(s.getScheme))
	api.PUT("/schemes/:id", token, h(s.updateScheme))
	api.PATCH("/schemes/:id", token, h(s.updateScheme))
	api.DELETE("/schemes/:id", token, h(s.deleteScheme))
	api.GET("/schemes/:id/channels", token, h(s.listChannels))
	api.POST("/schemes/:id/channels", token, h(s.createChannel))
	api.GET("/channels/:id", token, h(s.getChannel))
	api.PUT("/channels/:id", token, h(s.updateChannel))
	api.PATCH("/channels/:id", token, h(s.updateChannel))
	api.DELETE("/channels/:id", token, h(s.deleteChannel))
	api.POST("/channels/:id/feed_token", token, h(s.rotateFeedToken))
	api.GET("/releases/:id", token, h(s.getRelease))
	api.GET("/releases/:id/insights", token, h(s.releaseInsights))
	api.GET("/releases/:id/testers", token, h(s.releaseTesters))
	api.POST("/releases/:id/distribute", token, h(s.distributeRelease))
	api.GET("/groups", token, h(s.listGroups))
	api.POST("/groups", token, h(s.createGroup))
	api.DELETE("/groups/:alias", token, h(s.deleteGroup))
	api.POST("/groups/:alias/testers", token, h(s.addTesters))
	api.DELETE("/groups/:alias/testers/:email", token, h(s.removeTester))
	api.GET("/testers", token, h(s.listTesters))
	api.GET("/releases/:id/diff", token, h(s.releaseDiff))
	api.PUT("/releases/:id", token, h(s.updateRelease))
	api.PATCH("/releases/:id", token, h(s.updateRelease))
	api.DELETE("/releases/:id", token, h(s.deleteRelease))
	api.GET("/devices", token, h(s.listDevices))
	api.GET("/devices/export", token, h(s.exportDevices))
	api.GET("/devices/:udid", token, h(s.getDevice))
	api.DELETE("/devices/:udid", token, h(s.deleteDevice))
	api.POST("/devices/:udid/approve", token, h(s.approveDevice))
	api.PUT("/devices/:udid", token, h(s.syncDevice))
	api.PATCH("/devices/:udid", token, h(s.syncDevice))
	api.GET("/debug_files/exists/version", h(s.debugFileExistsVersion))
	api.GET("/debug_files/exists/binary", h(s.debugFileExistsBinary))
	api.GET("/debug_files/exists/uuid", h(s.debugFileExistsUUID))
	api.GET("/tokens", token, h(s.listTokens))
	api.POST("/tokens", token, h(s.createToken))
	api.DELETE("/tokens/:id", token, h(s.revokeToken))
	api.GET("/users/me", token, h(s.me))
	// Zealot's users and collaborators (people are made by signing in to the console).
	api.GET("/users", token, h(s.listUsers))
	api.POST("/users", token, h(s.createUser))
	api.GET("/users/search", token, h(s.searchUser))
	api.GET("/users/:id", token, h(s.getUser))
	api.PUT("/users/:id", token, h(s.updateUser))
	api.PATCH("/users/:id", token, h(s.updateUser))
	api.DELETE("/users/:id", token, h(s.deleteUser))
	api.POST("/users/:id/lock", token, h(s.lockUser(true)))
	api.DELETE("/users/:id/unlock", token, h(s.lockUser(false)))
	api.GET("/apps/:id/collaborators/:user_id", token, h(s.getCollaborator))
	api.POST("/apps/:id/collaborators", token, h(s.addCollaborator))
	api.PUT("/apps/:id/collaborators/:user_id", token, h(s.updateCollaborator))
	api.PATCH("/apps/:id/collaborators/:user_id", token, h(s.updateCollaborator))
	api.DELETE("/apps/:id/collaborators/:user_id", token, h(s.removeCollaborator))
	// Retention: policies of schemes and channels, and what they delete.
	api.GET("/schemes/:id/retention", token, h(s.getSchemeRetention))
	api.PUT("/schemes/:id/retention", token, h(s.setSchemeRetention))
	api.GET("/channels/:id/retention", token, h(s.getChannelRetention))
	api.PUT("/channels/:id/retention", token, h(s.setChannelRetention))
	api.GET("/channels/:id/retention/plan", token, h(s.planChannelRetention))
	api.POST("/channels/:id/retention/plan", token, h(s.planChannelRetention))
	api.GET("/retention/plan", token, h(s.planAllRetention))
	// Webhooks: their URLs carry chat services' access tokens, so reading them needs admin too.
	api.GET("/apps/:id/webhooks", token, h(s.listWebhooks("app")))
	api.POST("/apps/:id/webhooks", token, h(s.createWebhook("app")))
	api.GET("/channels/:id/webhooks", token, h(s.listWebhooks("channel")))
	api.POST("/channels/:id/webhooks", token, h(s.createWebhook("channel")))
	api.GET("/webhooks", token, h(s.listWebhooks("")))
	api.GET("/webhooks/:id", token, h(s.getWebhook))
	api.PUT("/webhooks/:id", token, h(s.updateWebhook))
	api.PATCH("/webhooks/:id", token, h(s.updateWebhook))
	api.DELETE("/webhooks/:id", token, h(s.deleteWebhook))
	api.GET("/webhooks/:id/deliveries", token, h(s.webhookDeliveries))
	api.POST("/webhooks/:id/test", token, h(s.testWebhook))

	// Resumable upload sessions for large builds.
	api.POST("/uploads", token, h(s.startSession))
	api.GET("/uploads/:session", token, h(s.getSession))
	api.PUT("/uploads/:session/parts/:part", h(s.putPart))
	api.POST("/uploads/:session/complete", token, h(s.completeSession))
	api.DELETE("/uploads/:session", token, h(s.abortSession))

	s.pages = web.New(web.Deps{Config: d.Config, Service: d.Service, Links: s.links, Log: d.Log})
	// A build's download, manifest and icon act as their visitor, as its pages do (web.Visitor:
	// a tester session, or a console session and the tester that person is): a channel open to
	// its testers only lets them in, and their install is recorded as theirs.
	visitor := s.pages.Visitor()
	r.GET("/download/releases/:id", visitor, h(s.downloadRelease))
	// The same download with the file name in its path, as update feeds link it.
	r.GET("/download/releases/:id/:filename", visitor, h(s.downloadRelease))
	r.GET("/download/debug_files/:id", h(s.downloadDebugFile))
	r.GET("/releases/:id/icon", visitor, h(s.releaseIcon))
	r.GET("/channels/:slug/releases/:id/install", visitor, h(s.installManifest))
	r.GET("/objects/*key", h(s.serveObject))
	// Feedback: sent by testers (a tester session), the team (a token or a console session) or,
	// on a channel open to anyone, anyone; read and managed by the app's members.
	fb := s.feedbackActor(visitor)
	api.POST("/releases/:id/feedback", fb, h(s.sendFeedback))
	api.POST("/feedback", fb, h(s.sendFeedbackByVersion))
	api.GET("/releases/:id/feedback", fb, h(s.releaseFeedback))
	api.GET("/apps/:id/feedback", fb, h(s.appFeedback))
	api.GET("/feedback/:id", fb, h(s.getFeedback))
	api.PATCH("/feedback/:id", fb, h(s.setFeedbackState))
	api.DELETE("/feedback/:id", fb, h(s.deleteFeedback))
	api.GET("/feedback/:id/screenshots/:n", fb, h(s.feedbackScreenshot))
	r.StaticFS("/static", http.FS(web.Static))
	s.pages.Register(e)

	s.engine = e
	return s
}

// handle adapts a handler that returns an error: a non-nil error is rendered (fail) and ends the
// request; nil lets the next handler of the route run.
func (s *Server) handle(fn func(c *gin.Context) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := fn(c); err != nil {
			s.fail(c, err)
		}
	}
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// The server's own timeouts. Headers must arrive within defaultHeaderTimeout of a request's first
// byte; a connection, new or kept alive, may stay silent for defaultIdleTimeout before that byte.
// The idle timeout is longer than clients' own (Go 90 s, Ruby's net/http 2 s), so a client closes
// an idle connection before the server does, and never starts a request on one being closed.
const (
	defaultHeaderTimeout = 10 * time.Second
	defaultIdleTimeout   = 120 * time.Second
)

// HTTPServer is the http.Server that serves s on SLIPWAY_ADDR: its timeouts, its requests'
// base context (base, which outlives a shutdown signal so that draining requests keep running),
// its error log, and the connection tracking that logs every connection's end.
func (s *Server) HTTPServer(base context.Context) *http.Server {
	srv := &http.Server{
		Addr:              s.cfg.Addr,
		Handler:           s,
		ReadHeaderTimeout: s.headerTimeout,
		IdleTimeout:       s.idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.conns.Track(srv)
	return srv
}

// Listener wraps ln for the server HTTPServer made: a connection reaches it only once its first
// byte has arrived, so the 10 s header timeout counts from the first byte, and a connection that
// sends nothing is closed after the idle timeout (2 min), as a kept-alive one is
// (firstByteListener).
func (s *Server) Listener(ln net.Listener) net.Listener {
	return newFirstByteListener(ln, s.idleTimeout, s.conns)
}

// InFlight is the number of requests being handled by the server HTTPServer made. Shutdown
// waits for it to reach zero: srv.Close does not wait for handlers, and a handler cut by it is
// still cleaning up (aborting a multipart upload, forgetting its pending object).
func (s *Server) InFlight() int64 { return s.conns.InFlight() }

// reqCtx is the context a handler hands to the domain: the request's own. A *gin.Context is
// pooled and serves the next request as soon as the handler returns, so it never leaves this
// package as a context.Context: code below may keep its context in a goroutine that outlives
// the request, and would then read another request's values and cancellation (`make lint` checks).
func reqCtx(c *gin.Context) context.Context { return c.Request.Context() }
