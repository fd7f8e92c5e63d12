// Package httpapi is Slipway's HTTP interface: the gin router, middleware (request ids, access
// logs, recovery, metrics, auth), one file per resource, and the JSON views. Errors are rendered in
// one place (errors.go) from their errs.Kind.
package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/storage"
	"github.com/slipwayhq/slipway/pkg/store"
	"github.com/slipwayhq/slipway/pkg/web"
)

// Deps are what the HTTP layer needs.
type Deps struct {
	Config  *config.Config
	DB      *store.DB
	Storage storage.Backend
	Service *distribution.Service
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// Server answers Slipway's HTTP API.
type Server struct {
	cfg     *config.Config
	db      *store.DB
	storage storage.Backend
	svc     *distribution.Service
	metrics *metrics.Metrics
	log     *slog.Logger
	links   links.Links
	engine  *gin.Engine
	// uploadSlots bounds concurrent uploads on this replica (SLIPWAY_MAX_CONCURRENT_UPLOADS).
	uploadSlots chan struct{}
}

// New builds the router.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, db: d.DB, storage: d.Storage, svc: d.Service, metrics: d.Metrics, log: d.Log,
		links: links.Links{Base: d.Config.PublicURL}, uploadSlots: make(chan struct{}, d.Config.MaxConcurrentUploads)}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true
	_ = e.SetTrustedProxies(d.Config.TrustedProxies)
	e.Use(requestIDs, s.accessLog, s.recovery, s.bodyDeadline, apiHeaders)
	e.NoRoute(s.notFound)
	e.NoMethod(s.methodNotAllowed)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if s.metrics != nil {
		e.GET("/metrics", s.metricsHandler())
	}

	api := e.Group("/api")
	api.GET("/version", s.version)
	api.GET("/health", s.health)
	api.GET("/openapi.json", s.openAPI)
	api.GET("/apps", s.listApps)
	api.POST("/apps", s.requireToken(store.ScopeAdmin), s.createApp)
	api.GET("/apps/:id", s.getApp)
	api.PUT("/apps/:id", s.requireToken(store.ScopeAdmin), s.updateApp)
	api.DELETE("/apps/:id", s.requireToken(store.ScopeAdmin), s.destroyApp)
	api.POST("/apps/upload", s.upload("app", s.uploadApp))
	api.GET("/apps/versions", s.versions)
	api.GET("/apps/latest", s.latest)
	api.GET("/apps/version_exist", s.versionExist)
	api.POST("/debug_files/upload", s.upload("debug_file", s.uploadDebugFile))
	api.GET("/debug_files", s.listDebugFiles)
	api.GET("/debug_files/download", s.downloadDebugFileByVersion)
	api.GET("/debug_files/:id", s.requireToken(store.ScopeUpload), s.getDebugFile)
	api.PUT("/debug_files/:id", s.upload("debug_file", s.updateDebugFile))
	api.DELETE("/debug_files/:id", s.requireToken(store.ScopeAdmin), s.deleteDebugFile)

	e.GET("/download/releases/:id", s.downloadRelease)
	e.GET("/download/debug_files/:id", s.downloadDebugFile)
	e.GET("/releases/:id/icon", s.releaseIcon)
	e.GET("/channels/:slug/releases/:id/install", s.installManifest)
	e.GET("/objects/*key", s.serveObject)
	e.StaticFS("/static", http.FS(web.Static))
	web.New(web.Deps{Config: d.Config, DB: d.DB, Service: d.Service, Links: s.links, Log: d.Log}).Register(e)

	s.engine = e
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }
