package web

import (
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/config"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/store"
)

// Deps are what the pages need.
type Deps struct {
	Config  *config.Config
	DB      *store.DB
	Service *distribution.Service
	Links   links.Links
	Log     *slog.Logger
}

// Handler serves the pages.
type Handler struct {
	cfg   *config.Config
	db    *store.DB
	svc   *distribution.Service
	links links.Links
	log   *slog.Logger
}

// New returns the pages' handler.
func New(d Deps) *Handler {
	return &Handler{cfg: d.Config, db: d.DB, svc: d.Service, links: d.Links, log: d.Log}
}

// Register adds the pages' routes to the router (httpapi owns the router and its middleware).
func (h *Handler) Register(e *gin.Engine) {
}
